//! The helpers of the grid-sampling, distance and `masked_scatter` entries (issue 30).
//! Compiled twice, as `formulas.rs`: over `Variable<T>` and over raw tensors.

use super::*;
use autograd::types::Scalar;

/// `self.masked_fill(mask, value)` (PyTorch's `masked_fill.Scalar`, out of place): `value`
/// where `mask` is set, `self` elsewhere, of `self`'s dtype, `self` and `mask` broadcast.
pub fn masked_fill<T: Backend>(self_: &V<T>, mask: &V<T>, value: Scalar) -> Res<V<T>> {
    let fill = add_scalar(&zeros_of(self_), value, 1)?;
    where_self(mask, &fill, self_)
}
