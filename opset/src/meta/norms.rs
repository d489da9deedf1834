//! The layer and group normalization kernels' checks (issue 30): PyTorch's
//! `_check_layer_norm_inputs` (`layer_norm.cpp`) and `native_group_norm`'s checks
//! (`group_norm.cpp`), and the shapes the backward kernels read.

use crate::error::{Error, check};

type R<T> = Result<T, Error>;

/// A layer norm's rows: `m` rows (the leading dims) of `n` elements (the normalized dims).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerNormRows {
    pub m: usize,
    pub n: usize,
}

/// PyTorch's `_check_layer_norm_inputs`: a non-empty `normalized_shape` that the input's
/// trailing dims match, and a weight and bias of that shape; the rows it normalizes.
pub fn layer_norm(
    input: &[usize],
    normalized_shape: &[i64],
    weight: Option<&[usize]>,
    bias: Option<&[usize]>,
) -> R<LayerNormRows> {
    crate::shape::check_layer_norm(input, normalized_shape, weight, bias)?;
    let axis = input.len() - normalized_shape.len();
    Ok(LayerNormRows {
        m: input[..axis].iter().product(),
        n: input[axis..].iter().product(),
    })
}

/// The shape of `native_layer_norm`'s `mean` and `rstd`: the input's leading dims, then a 1
/// for each normalized dim (PyTorch's CPU kernel).
pub fn layer_norm_stat_shape(input: &[usize], normalized_ndim: usize) -> Vec<usize> {
    let axis = input.len() - normalized_ndim;
    (0..input.len())
        .map(|d| if d < axis { input[d] } else { 1 })
        .collect()
}

/// `native_layer_norm_backward`'s checks: the forward's ([`layer_norm`]), then (the op
/// set's words; PyTorch's kernel reads them without a check) a `grad_out` of the input's
/// shape and one `mean` and `rstd` value per row.
pub fn layer_norm_backward(
    grad_out: &[usize],
    input: &[usize],
    normalized_shape: &[i64],
    stats: [usize; 2],
    weight: Option<&[usize]>,
    bias: Option<&[usize]>,
) -> R<LayerNormRows> {
    let rows = layer_norm(input, normalized_shape, weight, bias)?;
    check(grad_out == input, || {
        format!("grad_out of shape {grad_out:?} for an input of shape {input:?}")
    })?;
    for (name, n) in [("mean", stats[0]), ("rstd", stats[1])] {
        check(n == rows.m, || {
            format!("{name} should contain {} elements not {n}", rows.m)
        })?;
    }
    Ok(rows)
}

// ---- group normalization

/// A tensor argument of the group norm checks: its shape and dtype name.
pub type GnArg<'a> = (&'a [usize], &'a str);

/// A group norm's layout as its kernel reads the flat input: `n` samples of `c` channels of
/// `hxw` elements, the channels in `group` groups (each sample's group is one row of
/// `c / group * hxw` contiguous elements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupNormLayout {
    pub n: usize,
    pub c: usize,
    pub hxw: usize,
    pub group: usize,
}

impl GroupNormLayout {
    /// The rows (`n * group`): one mean and one `rstd` each.
    pub fn rows(&self) -> usize {
        self.n * self.group
    }
    /// The elements of a row (`c / group * hxw`).
    pub fn row_len(&self) -> usize {
        self.c / self.group * self.hxw
    }
    /// The channel of flat element `i`.
    pub fn channel(&self, i: usize) -> usize {
        (i / self.hxw.max(1)) % self.c.max(1)
    }
}

/// PyTorch's failed `TORCH_CHECK(cond)` without a message.
fn improve(cond: &str) -> Error {
    Error::runtime(format!(
        "Expected {cond} to be true, but got false.  (Could this error message be improved?  \
         If so, please report an enhancement request to PyTorch.)"
    ))
}

/// PyTorch's `check_group_norm_inputs` (`group_norm.cpp`): a positive number of groups
/// dividing the `c` channels, and a weight and bias of `c` elements in one dim.
pub fn check_group_norm_inputs(
    input: &[usize],
    weight: Option<&[usize]>,
    bias: Option<&[usize]>,
    c: i64,
    num_groups: i64,
) -> R<()> {
    check(num_groups > 0, || {
        format!("Expected num groups to be greater than 0, got {num_groups}")
    })?;
    check(c % num_groups == 0, || {
        format!(
            "Expected number of channels in input to be divisible by num_groups, but got input \
             of shape {input:?} and num_groups={num_groups}"
        )
    })?;
    let vector = |t: &[usize]| t.len() == 1 && t[0] as i64 == c;
    for (name, t) in [("weight", weight), ("bias", bias)] {
        if let Some(t) = t {
            check(vector(t), || {
                format!(
                    "Expected {name} to be a vector of size equal to the number of channels in \
                     input, but got {name} of shape {t:?} and input of shape {input:?}"
                )
            })?;
        }
    }
    Ok(())
}

/// `native_group_norm`'s checks in PyTorch 2.15's order: positive `C` and `HxW`,
/// [`check_group_norm_inputs`], the mixed-dtype rules, the statistics' shape `[N, group]`;
/// then (unless `N` is 0: `None`, PyTorch returns empty results without a kernel) the
/// kernel's dtype, the input's `N * C * HxW` elements and the parameters' dtype.
pub fn native_group_norm(
    input: GnArg,
    weight: Option<GnArg>,
    bias: Option<GnArg>,
    [n, c, hxw, group]: [i64; 4],
) -> R<Option<GroupNormLayout>> {
    check(c > 0, || {
        format!("Expected number of channels to be greater than 0, got {c}")
    })?;
    check(hxw > 0, || {
        format!("Expected HxW to be greater than 0, got {hxw}")
    })?;
    check_group_norm_inputs(input.0, weight.map(|t| t.0), bias.map(|t| t.0), c, group)?;
    let dtypes = [weight.map(|t| t.1), bias.map(|t| t.1)];
    let mixed = crate::dtype::check_mixed_norm(input.1, &dtypes)?;
    crate::shape::new_shape(&[n, group])?;
    if n == 0 {
        return Ok(None);
    }
    crate::dtype::check_floats(input.1, crate::dtype::kernel::GROUP_NORM)?;
    let numel = input.0.iter().product::<usize>() as i64;
    if numel != n * c * hxw {
        return Err(improve("X.numel() == N * C * HxW"));
    }
    if !mixed {
        crate::dtype::check_same_dtype(input.1, &dtypes)?;
    }
    Ok(Some(layout(n, c, hxw, group)))
}

/// The layout of checked arguments.
fn layout(n: i64, c: i64, hxw: i64, group: i64) -> GroupNormLayout {
    let u = |x: i64| x.max(0) as usize;
    GroupNormLayout {
        n: u(n),
        c: u(c),
        hxw: u(hxw),
        group: u(group),
    }
}

/// `native_group_norm_backward`'s arguments: `grad_out`, the input, the saved `mean` and
/// `rstd`, and the weight.
pub struct GroupNormBackwardArgs<'a> {
    pub grad_out: GnArg<'a>,
    pub input: GnArg<'a>,
    pub mean: GnArg<'a>,
    pub rstd: GnArg<'a>,
    pub weight: Option<GnArg<'a>>,
}

/// `native_group_norm_backward`'s checks in PyTorch 2.15's order: `grad_out` of the input's
/// dtype, the mixed-dtype rules of the statistics; then (unless `N` is 0: `None`, PyTorch
/// returns zeros) the kernel's dtype, the element counts, the weight's dtype; and (the op
/// set's, where PyTorch's kernel reads out of bounds) `check_group_norm_inputs`'s group
/// checks.
pub fn native_group_norm_backward(
    a: &GroupNormBackwardArgs,
    [n, c, hxw, group]: [i64; 4],
) -> R<Option<GroupNormLayout>> {
    check(a.input.1 == a.grad_out.1, || {
        "Expected scalar types of X and dY are same.".into()
    })?;
    let mixed = crate::dtype::check_mixed_norm(a.input.1, &[Some(a.mean.1), Some(a.rstd.1)])?;
    if n == 0 {
        return Ok(None);
    }
    crate::dtype::check_floats(a.input.1, crate::dtype::kernel::GROUP_NORM_BACKWARD)?;
    let numel = |t: GnArg| t.0.iter().product::<usize>() as i64;
    let counts = [
        (
            numel(a.grad_out) == n * c * hxw,
            "dY.numel() == N * C * HxW",
        ),
        (numel(a.input) == n * c * hxw, "X.numel() == N * C * HxW"),
        (numel(a.mean) == n * group, "mean.numel() == N * group"),
        (numel(a.rstd) == n * group, "rstd.numel() == N * group"),
        (
            a.weight.is_none_or(|w| numel(w) == c),
            "!gamma.defined() || gamma.numel() == C",
        ),
    ];
    if let Some((_, cond)) = counts.iter().find(|(ok, _)| !ok) {
        return Err(improve(cond));
    }
    if !mixed {
        crate::dtype::check_same_dtype(a.input.1, &[a.weight.map(|w| w.1)])?;
    }
    check_group_norm_inputs(a.input.0, None, None, c, group)?;
    Ok(Some(layout(n, c, hxw, group)))
}
