//! The masked family's default kernels (issue 30): `masked_fill` over `where`, written
//! over other kernels as PyTorch's `CompositeExplicitAutograd` kernels are.

use super::Backend;
use crate::meta;
use autograd::types::{Scalar, ScalarType};

/// The dtype of a tensor as a [`ScalarType`].
fn scalar_type<T: Backend>(t: &T) -> Option<ScalarType> {
    ScalarType::from_name(t.dtype())
}

/// `masked_fill.Scalar`: `value` where `mask` is set, `self` elsewhere, over `self` and
/// `mask` broadcast (PyTorch's `expand_outplace(mask, self)`, then `masked_fill_` of the
/// copy). The value is converted to `self`'s dtype as PyTorch's `value.to<scalar_t>()`
/// (`2.7` in an `i64` tensor is `2`, NaN there an error), then `where` keeps NaNs and
/// infinities as they are.
pub fn decomposed_masked_fill_scalar<T: Backend>(
    self_: &T,
    mask: &T,
    value: Scalar,
) -> Result<T, T::Error> {
    crate::shape::broadcast_shape(mask.shape(), self_.shape())?;
    meta::masked_fill_mask(mask.dtype())?;
    let fill = T::full(&[], value, scalar_type(self_), None, None, None)?;
    T::where_self(mask, &fill, self_)
}

/// `masked_fill.Tensor`: [`decomposed_masked_fill_scalar`] with the 0-d `value`'s number
/// (PyTorch's `value.item()`), after the broadcast and `value`'s rank are checked in
/// PyTorch's order.
pub fn decomposed_masked_fill_tensor<T: Backend>(
    self_: &T,
    mask: &T,
    value: &T,
) -> Result<T, T::Error> {
    crate::shape::broadcast_shape(mask.shape(), self_.shape())?;
    meta::masked_fill_value(value.shape().len())?;
    decomposed_masked_fill_scalar(self_, mask, T::_local_scalar_dense(value)?)
}
