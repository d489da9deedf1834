//! The normalization ops' checks: `batch_norm`'s (PyTorch's `_batch_norm_impl_index`) and
//! the `_native_batch_norm_legit` kernels' (PyTorch's `batch_norm_cpu`).

use crate::error::{Error, check};
use crate::shape::norm_dim;

type R<T> = Result<T, Error>;

/// The channel count of a batch norm's input (its dim 1): PyTorch's `input.sizes()[1]`,
/// "Dimension out of range" for fewer than two dims.
pub fn batch_norm_channels(input: &[usize]) -> R<usize> {
    Ok(input[norm_dim(1, input.len())?])
}

/// PyTorch's `check_dims_match_num_input_features`.
fn features(name: &str, expected: usize, actual: Option<usize>, training: bool) -> R<()> {
    match actual {
        Some(n) => check(n == expected, || {
            format!("{name} should contain {expected} elements not {n}")
        }),
        None if !training && name.starts_with("running") => Err(Error::runtime(format!(
            "{name} must be defined in evaluation mode"
        ))),
        None => Ok(()),
    }
}

/// `batch_norm`'s checks, in PyTorch's order (after the empty-input early return): each
/// statistic and affine parameter has one element per channel, and evaluation needs the
/// running statistics. The arguments are the element counts of the tensors given.
pub fn batch_norm(
    num_features: usize,
    running_mean: Option<usize>,
    running_var: Option<usize>,
    weight: Option<usize>,
    bias: Option<usize>,
    training: bool,
) -> R<()> {
    features("running_mean", num_features, running_mean, training)?;
    features("running_var", num_features, running_var, training)?;
    features("weight", num_features, weight, training)?;
    features("bias", num_features, bias, training)
}

/// The element counts of the per-channel tensors a batch norm kernel reads (`None`: not
/// given or not read). PyTorch's kernels do not check them (its `batch_norm` composite
/// does, with these words); the op set's kernels do, so a mismatch is an error, not a
/// wrong read.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChannelSizes {
    pub weight: Option<usize>,
    pub bias: Option<usize>,
    pub running_mean: Option<usize>,
    pub running_var: Option<usize>,
    pub save_mean: Option<usize>,
    pub save_invstd: Option<usize>,
}

/// Each given per-channel tensor has one element per channel (`batch_norm`'s words).
fn per_channel(c: usize, s: &ChannelSizes) -> R<()> {
    let named = [
        ("weight", s.weight),
        ("bias", s.bias),
        ("running_mean", s.running_mean),
        ("running_var", s.running_var),
        ("save_mean", s.save_mean),
        ("save_invstd", s.save_invstd),
    ];
    for (name, n) in named {
        if let Some(n) = n {
            check(n == c, || {
                format!("{name} should contain {c} elements not {n}")
            })?;
        }
    }
    Ok(())
}

/// A statistic `native_batch_norm_backward` reads in its mode.
#[derive(Clone, Copy, Debug)]
pub enum Stat {
    RunningMean,
    RunningVar,
    SaveMean,
    SaveInvstd,
}

/// `t`, the statistic `which`, or an error when it is not given (PyTorch reads an undefined
/// tensor there).
pub fn batch_norm_stat<X>(t: Option<X>, which: Stat) -> R<X> {
    let name = match which {
        Stat::RunningMean => "running_mean",
        Stat::RunningVar => "running_var",
        Stat::SaveMean => "save_mean",
        Stat::SaveInvstd => "save_invstd",
    };
    t.ok_or_else(|| Error::runtime(format!("{name} must be defined")))
}

/// The `_native_batch_norm_legit` kernels' checks: the channel count, the per-channel
/// tensors' sizes ([`ChannelSizes`]); in training, an input with elements (PyTorch's
/// `batch_norm_cpu` computes statistics over them).
pub fn batch_norm_legit(input: &[usize], sizes: &ChannelSizes, training: bool) -> R<usize> {
    let c = batch_norm_channels(input)?;
    per_channel(c, sizes)?;
    let numel: usize = input.iter().product();
    check(!training || numel > 0, || {
        format!("input tensor must have at least one element, but got input_sizes = {input:?}")
    })?;
    Ok(c)
}

/// `var.correction`'s dims (PyTorch's reduction dims, wrapped; all dims for `None`).
pub fn var(shape: &[usize], dim: Option<&[i64]>) -> R<Vec<usize>> {
    crate::shape::reduce_axes(dim, shape.len())
}

/// `var.correction`'s dtype: floating point only (PyTorch's `std_var_stat`).
pub fn var_dtype(dtype: &str) -> R<()> {
    check(
        crate::dtype::Kind::of(dtype) == crate::dtype::Kind::Float,
        || "std and var only support floating point and complex dtypes".into(),
    )
}

/// `_native_batch_norm_legit.no_stats` in evaluation: there are no statistics to use.
pub fn batch_norm_no_stats(training: bool) -> R<()> {
    check(training, || {
        "running_mean must be defined in evaluation mode".into()
    })
}

/// `native_batch_norm_backward`'s checks and channel count: PyTorch's `input.size(1)`,
/// which words a 0-d input apart; then, as the forward's, the per-channel tensors' sizes,
/// and a `grad_out` of the input's shape (PyTorch reads it as one).
pub fn batch_norm_backward_channels(
    grad_out: &[usize],
    input: &[usize],
    sizes: &ChannelSizes,
) -> R<usize> {
    if input.is_empty() {
        return Err(Error::index(
            "Dimension specified as 1 but tensor has no dimensions",
        ));
    }
    let c = batch_norm_channels(input)?;
    per_channel(c, sizes)?;
    check(grad_out == input, || {
        format!("grad_out of shape {grad_out:?} for an input of shape {input:?}")
    })?;
    Ok(c)
}
