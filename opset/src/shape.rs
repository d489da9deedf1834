//! Shapes and dims as PyTorch checks them, for kernels and composites alike; errors in
//! PyTorch's words ([`Error`]).

use crate::error::{Error, check};

type R<T> = Result<T, Error>;

/// A PyTorch dimension (`-1` is the last) as an axis of a rank-`nd` tensor (a 0-d tensor
/// accepts 0 and -1, as in PyTorch).
pub fn norm_dim(d: i64, nd: usize) -> R<usize> {
    let n = nd.max(1) as i64;
    let i = if d < 0 { d + n } else { d };
    if !(0..n).contains(&i) {
        return Err(Error::index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {d})",
            -n,
            n - 1
        )));
    }
    Ok(i as usize)
}

/// PyTorch's reductions over a dim list keep the reduced dims in a 64-bit mask
/// (`dim_list_to_bitset`): more dims is an error.
pub const MAX_MASK_DIMS: usize = 64;

/// Sorted, distinct axes of `dim` (`None` or `[]`: all). A 0-d tensor accepts dims 0 and -1
/// (PyTorch treats it as having one dimension of size 1 there) and has no axis to reduce.
/// A dim listed twice is PyTorch's error, and so is a tensor of more than 64 dims unless
/// `dim` is `[]` (PyTorch builds no mask for an empty list).
pub fn reduce_axes(dim: Option<&[i64]>, nd: usize) -> R<Vec<usize>> {
    check(
        nd <= MAX_MASK_DIMS || dim.is_some_and(<[i64]>::is_empty),
        || format!("only tensors with up to {MAX_MASK_DIMS} dims are supported"),
    )?;
    match dim {
        Some(d) if !d.is_empty() => {
            let v = distinct_dims(d, nd)?;
            Ok(if nd == 0 { Vec::new() } else { v })
        }
        _ => Ok((0..nd).collect()),
    }
}

/// The dims of a dim list, normalized and sorted; PyTorch refuses a dim listed twice.
pub fn distinct_dims(d: &[i64], nd: usize) -> R<Vec<usize>> {
    let mut v = Vec::with_capacity(d.len());
    for x in d {
        let a = norm_dim(*x, nd)?;
        if v.contains(&a) {
            return Err(Error::runtime(format!(
                "dim {a} appears multiple times in the list of dims"
            )));
        }
        v.push(a);
    }
    v.sort_unstable();
    Ok(v)
}

/// The broadcast shape of two shapes, or PyTorch's error naming the first dim that differs.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> R<Vec<usize>> {
    let n = a.len().max(b.len());
    let at = |s: &[usize], i: usize| {
        if i + s.len() >= n {
            s[i + s.len() - n]
        } else {
            1
        }
    };
    // From the last dim, as PyTorch's `infer_size`, so the error names the same dim.
    let mut out = vec![0; n];
    for i in (0..n).rev() {
        out[i] = match (at(a, i), at(b, i)) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            (x, y) => {
                return Err(Error::runtime(format!(
                    "The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {i}"
                )));
            }
        };
    }
    Ok(out)
}

/// The class dim of `cross_entropy`'s input: 0 for `(C)`, else 1.
pub fn class_dim(nd: usize) -> usize {
    usize::from(nd >= 2)
}

/// An in-place op's result must keep `self`'s shape: PyTorch's error for an operand that
/// broadcasts `self` larger (raised before the dtype cast into `self`).
pub fn check_inplace_shape(self_: &[usize], result: &[usize]) -> R<()> {
    check(self_ == result, || {
        format!("output with shape {self_:?} doesn't match the broadcast shape {result:?}")
    })
}

/// A shape with at most one `-1`, resolved for `numel` elements (PyTorch's `infer_size`).
pub fn infer_shape(shape: &[i64], numel: usize) -> R<Vec<usize>> {
    let mut inferred = None;
    let mut known = 1usize;
    for (i, d) in shape.iter().enumerate() {
        match *d {
            -1 if inferred.is_some() => {
                return Err(Error::runtime("only one dimension can be inferred"));
            }
            -1 => inferred = Some(i),
            d if d < 0 => {
                return Err(Error::runtime(format!(
                    "invalid shape dimension {d} at index {i} of shape {shape:?}"
                )));
            }
            d => known = known.saturating_mul(d as usize),
        }
    }
    let invalid = || {
        Error::runtime(format!(
            "shape '{shape:?}' is invalid for input of size {numel}"
        ))
    };
    let mut out: Vec<usize> = shape.iter().map(|d| (*d).max(0) as usize).collect();
    match inferred {
        Some(i) if known > 0 && numel.is_multiple_of(known) => out[i] = numel / known,
        // Any size fits the -1 of an empty tensor whose other dims hold 0.
        Some(_) if known == 0 && numel == 0 => {
            return Err(Error::runtime(format!(
                "cannot reshape tensor of 0 elements into shape {shape:?} because the unspecified dimension size -1 can be any value and is ambiguous"
            )));
        }
        None if known == numel => {}
        _ => return Err(invalid()),
    }
    Ok(out)
}

/// `view`'s extra condition: PyTorch's `computeStride` must find strides for `shape` over
/// the input's strides, or the view is refused (a copy would be needed; `reshape` makes it).
pub fn view_compatible(old_shape: &[usize], old_strides: &[isize], new_shape: &[usize]) -> bool {
    if old_shape.is_empty() || old_shape.iter().product::<usize>() == 0 {
        return true;
    }
    // Walk the old dims from the last, grouping dims that are contiguous with each other;
    // each group must be covered exactly by a run of new dims.
    let mut view_d = new_shape.len() as isize - 1;
    let mut chunk_base_stride = *old_strides.last().unwrap_or(&1);
    let mut tensor_numel: usize = 1;
    let mut view_numel: usize = 1;
    for tensor_d in (0..old_shape.len()).rev() {
        tensor_numel *= old_shape[tensor_d];
        let boundary = tensor_d == 0
            || (old_shape[tensor_d - 1] != 1
                && old_strides[tensor_d - 1] != tensor_numel as isize * chunk_base_stride);
        if boundary {
            while view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d as usize] == 1) {
                view_numel *= new_shape[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return false;
            }
            if tensor_d > 0 {
                chunk_base_stride = old_strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    view_d == -1
}

/// `mm`'s checks, in PyTorch's words.
pub fn check_mm(a: &[usize], b: &[usize]) -> R<()> {
    check(a.len() == 2, || {
        format!("mm: self must be a matrix, got {}-D tensor", a.len())
    })?;
    check(b.len() == 2, || {
        format!("mm: mat2 must be a matrix, got {}-D tensor", b.len())
    })?;
    check(a[1] == b[0], || {
        format!(
            "mm: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            a[0], a[1], b[0], b[1]
        )
    })
}

/// A shape given as sizes; a negative size is PyTorch's error.
pub fn new_shape(size: &[i64]) -> R<Vec<usize>> {
    size.iter()
        .map(|d| {
            usize::try_from(*d).map_err(|_| {
                Error::runtime(format!(
                    "Trying to create tensor with negative dimension {d}: {size:?}"
                ))
            })
        })
        .collect()
}

/// `expand`'s target shape (`-1` keeps a size), with PyTorch's checks.
pub fn expanded_shape(shape: &[usize], size: &[i64]) -> R<Vec<usize>> {
    let (nd, k) = (shape.len(), size.len());
    check(k >= nd, || {
        format!(
            "expand(torch.DoubleTensor{{{shape:?}}}, size={size:?}): the number of sizes provided ({k}) must be greater or equal to the number of dimensions in the tensor ({nd})"
        )
    })?;
    let off = k - nd;
    let mut out = Vec::with_capacity(k);
    for (i, d) in size.iter().enumerate() {
        let existing = (i >= off).then(|| shape[i - off]);
        let s = match (*d, existing) {
            (-1, Some(e)) => e,
            (d, None) if d < 0 => {
                return Err(Error::runtime(format!(
                    "The expanded size of the tensor ({d}) isn't allowed in a leading, non-existing dimension {i}"
                )));
            }
            (d, Some(e)) if e != 1 && d != e as i64 => {
                return Err(Error::runtime(format!(
                    "The expanded size of the tensor ({d}) must match the existing size ({e}) at non-singleton dimension {i}.  Target sizes: {size:?}.  Tensor sizes: {shape:?}"
                )));
            }
            (d, _) => new_shape(&[d])?[0],
        };
        out.push(s);
    }
    Ok(out)
}

pub fn out_of_bounds(v: i64, ax: usize, n: usize) -> Error {
    Error::runtime(format!(
        "index {v} is out of bounds for dimension {ax} with size {n}"
    ))
}

/// Whether `cat` skips an input of this shape: PyTorch's legacy empty tensor, 1-d with no
/// elements (`cat_should_skip_tensor`), which may meet tensors of any shape.
pub fn cat_skips(shape: &[usize]) -> bool {
    shape == [0]
}

/// `cat`'s first checks, in PyTorch's words (a non-empty list, no 0-d tensor), and the axis,
/// wrapped against the first input `cat` does not skip ([`cat_skips`]; 0 when it skips them
/// all, as PyTorch's `legacy_cat_wrap_dim`). `cat.out` checks `out`'s dtype after them.
pub fn cat_axis(shapes: &[&[usize]], dim: i64) -> R<usize> {
    check(!shapes.is_empty(), || {
        "torch.cat(): expected a non-empty list of Tensors".into()
    })?;
    for (i, s) in shapes.iter().enumerate() {
        check(!s.is_empty(), || {
            format!("zero-dimensional tensor (at position {i}) cannot be concatenated")
        })?;
    }
    match shapes.iter().find(|s| !cat_skips(s)) {
        Some(first) => norm_dim(dim, first.len()),
        None => Ok(0),
    }
}

/// `cat`'s checks on the inputs' shapes, in PyTorch's words ([`cat_axis`]'s, then the ranks
/// and sizes of the inputs it does not skip); the axis.
pub fn check_cat(shapes: &[&[usize]], dim: i64) -> R<usize> {
    let ax = cat_axis(shapes, dim)?;
    let mut kept = shapes.iter().enumerate().filter(|(_, s)| !cat_skips(s));
    let Some((_, first)) = kept.next() else {
        return Ok(ax);
    };
    let nd = first.len();
    for (i, s) in kept {
        check(s.len() == nd, || {
            format!(
                "Tensors must have same number of dimensions: got {nd} and {}",
                s.len()
            )
        })?;
        for d in (0..nd).filter(|d| *d != ax) {
            check(s[d] == first[d], || {
                format!(
                    "Sizes of tensors must match except in dimension {ax}. Expected size {} but got size {} for tensor number {i} in the list.",
                    first[d], s[d]
                )
            })?;
        }
    }
    Ok(ax)
}

/// A reduction that selects an element (`argmax`, `max.dim`, `amax`) needs one to select
/// from: `axis` `None` for a reduction over all elements.
pub fn check_nonempty_reduction(name: &str, axis: Option<usize>, shape: &[usize]) -> R<()> {
    match axis {
        None if shape.contains(&0) => Err(Error::index(format!(
            "{name}(): Expected reduction dim to be specified for input.numel() == 0."
        ))),
        Some(ax) if !shape.is_empty() && shape[ax] == 0 => Err(Error::index(format!(
            "{name}(): Expected reduction dim {ax} to have non-zero size."
        ))),
        _ => Ok(()),
    }
}

/// `amax`'s checks: PyTorch's message for an empty input reduced over all its dims (`dim`
/// empty), else [`check_nonempty_reduction`] per reduced axis.
pub fn check_amax(dim: &[i64], axes: &[usize], shape: &[usize]) -> R<()> {
    check_extremum("amax", dim, axes, shape)
}

/// `amin`'s checks, as [`check_amax`]'s.
pub fn check_amin(dim: &[i64], axes: &[usize], shape: &[usize]) -> R<()> {
    check_extremum("amin", dim, axes, shape)
}

fn check_extremum(name: &str, dim: &[i64], axes: &[usize], shape: &[usize]) -> R<()> {
    if dim.is_empty() && shape.contains(&0) {
        return Err(Error::index(format!(
            "{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
        )));
    }
    for ax in axes {
        check_nonempty_reduction(name, Some(*ax), shape)?;
    }
    Ok(())
}

/// `nll_loss_forward`'s check of a 1-D target beside a 1-D input (one sample, one target;
/// PyTorch raises a `ValueError`, reported here as a runtime error with its message).
pub fn check_nll_1d_target(input: &[usize], target: &[usize]) -> R<()> {
    if input.len() == 1 && target.len() == 1 && target[0] != 1 {
        return Err(Error::runtime(format!(
            "For 1D input, 1D target must have size 1, but got target size: {}",
            target[0]
        )));
    }
    Ok(())
}

/// `index_add`'s checks, in the order of PyTorch's `index_func_meta_impl`: a vector of
/// indices, `ax` within `source` (or 0), one index per slice of `source` along `ax`, and
/// `source` shaped like `self` without `ax` (whole shapes when either is 0-d).
pub fn check_index_add(self_: &[usize], ax: usize, index: &[usize], source: &[usize]) -> R<()> {
    if index.len() > 1 {
        return Err(Error::index(format!(
            "index_add_(): Index is supposed to be a vector, but got dim: {} with type: Long and size: {index:?}",
            index.len()
        )));
    }
    let count: usize = index.iter().product();
    check(ax == 0 || ax < source.len(), || {
        format!(
            "index_add_(): Indexing dim {ax} is out of bounds of the source tensor with dim {}",
            source.len()
        )
    })?;
    // PyTorch's message reads `source.size(dim)`, itself an error for a 0-d source.
    if source.is_empty() && count != 1 {
        return Err(Error::index(
            "Dimension specified as 0 but tensor has no dimensions",
        ));
    }
    let n = if source.is_empty() { 1 } else { source[ax] };
    check(count == n, || {
        format!(
            "index_add_(): Number of indices ({count}) should be equal to source.size(dim): ({n}), for dim: {ax}"
        )
    })?;
    let (mut a, mut b) = (self_.to_vec(), source.to_vec());
    if !a.is_empty() && !b.is_empty() {
        a.remove(ax);
        b.remove(ax);
    }
    check(a == b, || {
        format!(
            "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = {self_:?} source.shape = {source:?}"
        )
    })
}

/// `index_select` of a 0-d tensor takes exactly one index (PyTorch's message otherwise).
pub fn check_index_select_0d(self_: &[usize], count: usize) -> R<()> {
    check(!self_.is_empty() || count == 1, || {
        format!("index_select(): Index to scalar can have only 1 value, got {count} value(s)")
    })
}

/// `gather` / `scatter_add`'s shape checks (PyTorch's `gather_shape_check` /
/// `scatter_shape_check`); `src` is `scatter_add`'s.
pub fn check_gather_shapes(
    self_: &[usize],
    ax: usize,
    index: &[usize],
    src: Option<&[usize]>,
) -> R<()> {
    // PyTorch checks nothing about an empty index (`gather`'s and `scatter`'s meta functions
    // return before `gather_shape_check`): the result is empty, or `self` unchanged.
    if index.contains(&0) {
        return Ok(());
    }
    let nd = self_.len().max(1);
    let ind = index.len().max(1);
    let what = if src.is_some() { "self" } else { "input" };
    check(ind == nd, || {
        format!("Index tensor must have the same number of dimensions as {what} tensor")
    })?;
    if let Some(s) = src {
        check(s.len().max(1) == ind, || {
            "Index tensor must have the same number of dimensions as src tensor".into()
        })?;
    }
    let size = |t: &[usize], d: usize| t.get(d).copied().unwrap_or(1);
    for d in 0..nd {
        let ok_self = d == ax || size(index, d) <= size(self_, d);
        let ok_src = src.is_none_or(|s| size(index, d) <= size(s, d));
        if !(ok_self && ok_src) {
            return Err(Error::runtime(match src {
                None => format!(
                    "Size does not match at dimension {d} expected index {index:?} to be no larger than self {self_:?} apart from dimension {ax}"
                ),
                Some(s) => format!(
                    "Expected index {index:?} to be no larger than self {self_:?} apart from dimension {ax} and to be no larger size than src {s:?}"
                ),
            }));
        }
    }
    Ok(())
}

/// `layer_norm`'s checks on the shapes of the input, weight and bias, in PyTorch's words.
pub fn check_layer_norm(
    input: &[usize],
    normalized_shape: &[i64],
    weight: Option<&[usize]>,
    bias: Option<&[usize]>,
) -> R<()> {
    let k = normalized_shape.len();
    check(k > 0, || {
        format!(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = {normalized_shape:?}"
        )
    })?;
    let matches =
        |s: &[usize]| s.len() == k && s.iter().zip(normalized_shape).all(|(a, b)| *a as i64 == *b);
    check(
        k <= input.len() && matches(&input[input.len() - k..]),
        || {
            let star: Vec<String> = normalized_shape.iter().map(i64::to_string).collect();
            format!(
                "Given normalized_shape={normalized_shape:?}, expected input with shape [*, {}], but got input of size{input:?}",
                star.join(", ")
            )
        },
    )?;
    for (name, s) in [("weight", weight), ("bias", bias)] {
        if let Some(s) = s {
            check(matches(s), || {
                format!(
                    "Expected {name} to be of same shape as normalized_shape, but got {name} of shape {s:?} and normalized_shape = {normalized_shape:?}"
                )
            })?;
        }
    }
    Ok(())
}

/// `slice` bounds with PyTorch's defaults, negative values and clamping.
pub fn slice_bounds(n: i64, start: Option<i64>, end: Option<i64>) -> (i64, i64) {
    let fix = |x: i64| if x < 0 { (x + n).max(0) } else { x.min(n) };
    let s = fix(start.unwrap_or(0));
    let e = fix(end.unwrap_or(n)).max(s);
    (s, e)
}
