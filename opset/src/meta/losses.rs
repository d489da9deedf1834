//! `nll_loss_forward` and `nll_loss_backward`: PyTorch's meta functions (`LossNLL.cpp`) and
//! the per-element target check of its CPU kernels.

use super::R;
use crate::error::{Error, check};
use crate::shape::check_nll_1d_target;

/// `target.size(0)` of PyTorch, for a target of rank 0 or 1.
fn target_size0(target: &[usize]) -> R<usize> {
    target
        .first()
        .copied()
        .ok_or_else(|| Error::index("Dimension specified as 0 but tensor has no dimensions"))
}

/// The checks both meta functions open with: a 1-D or 2-D input, a 0-D or 1-D target and
/// one target per row.
fn nll_common(input: &[usize], target: &[usize], one_dim_targets: bool) -> R<()> {
    check(!input.is_empty() && input.len() <= 2, || {
        "input tensor should be 1D or 2D".into()
    })?;
    check(target.len() <= 1, || {
        "0D or 1D target tensor expected, multi-target not supported".into()
    })?;
    if one_dim_targets {
        check_nll_1d_target(input, target)?;
    }
    let no_batch_dim =
        input.len() == 1 && (target.is_empty() || (one_dim_targets && target[0] == 1));
    if no_batch_dim || input[0] == target_size0(target)? {
        return Ok(());
    }
    Err(Error::runtime(format!(
        "size mismatch (got input: {input:?}, target: {target:?})"
    )))
}

/// `nll_loss_forward`: the number of classes (the input's last dim).
///
/// A 1-D input is one sample, with a 0-D target or a 1-D target of one element (PyTorch's
/// `ValueError` for a longer one); a 2-D input `(N, C)` takes `N` targets.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::nll_loss_forward(&[4, 3], &[4], Some(&[3])), Ok(3));
/// let e = meta::nll_loss_forward(&[4, 3], &[2], None).unwrap_err();
/// assert_eq!(e.to_string(), "size mismatch (got input: [4, 3], target: [2])");
/// ```
pub fn nll_loss_forward(input: &[usize], target: &[usize], weight: Option<&[usize]>) -> R<usize> {
    nll_common(input, target, true)?;
    let c = input[input.len() - 1];
    if let Some(w) = weight {
        check(w.len() == 1 && w[0] == c, || {
            format!(
                "weight tensor should be defined either for all {c} classes or no classes but got weight tensor of shape: {w:?}"
            )
        })?;
    }
    Ok(c)
}

/// `nll_loss_backward`'s arguments by their shapes.
#[derive(Debug, Clone, Copy)]
pub struct NllBackward<'a> {
    /// The incoming gradient.
    pub grad_output: &'a [usize],
    /// The forward's input.
    pub input: &'a [usize],
    /// The forward's target.
    pub target: &'a [usize],
    /// The class weight, if any.
    pub weight: Option<&'a [usize]>,
    /// PyTorch's reduction code: 0 none, 1 mean, 2 sum.
    pub reduction: i64,
    /// The forward's second output.
    pub total_weight: &'a [usize],
}

/// `nll_loss_backward`: the number of classes. Unlike the forward, PyTorch's meta function
/// takes a 1-D target beside a 1-D input only when the input's size equals the target's (so
/// the gradient of `nll_loss` of a `(C)` input and a `(1)` target is a size mismatch, as in
/// PyTorch 2.15).
///
/// ```
/// use autograd_opset::meta::{self, NllBackward};
/// let a = NllBackward {
///     grad_output: &[], input: &[4, 3], target: &[4], weight: None, reduction: 1,
///     total_weight: &[2],
/// };
/// let e = meta::nll_loss_backward(a).unwrap_err();
/// assert_eq!(e.to_string(), "expected total_weight to be a  single element tensor, got: [2] (2 elements)");
/// ```
pub fn nll_loss_backward(a: NllBackward<'_>) -> R<usize> {
    nll_common(a.input, a.target, false)?;
    let numel = |s: &[usize]| s.iter().product::<usize>();
    check(numel(a.total_weight) == 1, || {
        format!(
            "expected total_weight to be a  single element tensor, got: {:?} ({} elements)",
            a.total_weight,
            numel(a.total_weight)
        )
    })?;
    let c = a.input[a.input.len() - 1];
    if let Some(w) = a.weight {
        check(numel(w) == c, || {
            "weight tensor should be defined either for all or no classes".into()
        })?;
    }
    let g = a.grad_output;
    if a.reduction == 0 && a.input.len() == 2 {
        let n = a.input[0];
        check(g.len() == 1 && g[0] == n, || {
            format!(
                "Expected a tensor of dimension 1 and tensor.size[0] == {n} but got: dimension {} and tensor.size[0] = {}",
                g.len(),
                g.first().copied().unwrap_or(1)
            )
        })?;
    } else {
        check(g.len() <= 1 && numel(g) == 1, || {
            format!("Expected a single element grad_output tensor, but got: {g:?}")
        })?;
    }
    Ok(c)
}

/// One element of `nll_loss`'s target: the class (below `classes`), or `None` for
/// `ignore_index`; PyTorch's `IndexError` otherwise.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::nll_target(2.0, 3, -100), Ok(Some(2)));
/// assert_eq!(meta::nll_target(-100.0, 3, -100), Ok(None));
/// assert_eq!(meta::nll_target(3.0, 3, -100).unwrap_err().to_string(), "Target 3 is out of bounds.");
/// ```
pub fn nll_target(t: f64, classes: usize, ignore_index: i64) -> R<Option<usize>> {
    if t as i64 == ignore_index {
        return Ok(None);
    }
    super::index_below(t, classes)
        .map(Some)
        .map_err(|_| Error::index(format!("Target {} is out of bounds.", t as i64)))
}
