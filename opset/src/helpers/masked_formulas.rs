//! The helpers of the masked family's entries (issue 30). Compiled twice, as
//! `formulas.rs`: over `Variable<T>` and over raw tensors.

use super::*;

/// `masked_fill.Tensor`'s gradient for `value`: the sum of `grad` where `mask` is set
/// (PyTorch's `masked_fill_backward`; its `where(mask, grad, 0).sum()` form, the values of
/// `grad.masked_select(mask).sum()`).
pub fn masked_fill_backward<T: Backend>(grad: &V<T>, mask: &V<T>) -> Res<V<T>> {
    let kept = where_self(mask, grad, &zeros_of(grad))?;
    sum(&kept, None)
}
