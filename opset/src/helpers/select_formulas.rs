//! The selection family's helpers (issue 30): `clamp` with tensor bounds (PyTorch's
//! `clamp_backward`, `clamp_backward_min_max` and `clamp_jvp`). PyTorch 2.15's bodies are not
//! in its wheel; its behaviour, which the `select` fixtures record, is PyTorch's main-branch
//! code with one change: where `self` ties with a bound (and `min < max`), the gradient is
//! split in halves between `self` and that bound, as `maximum`'s is. Compiled twice, as
//! `formulas.rs`: over `Variable<T>` and over raw tensors.

use super::*;
use autograd::types::Scalar;

/// `g / 2` (the share of a tie).
fn halved<T: Backend>(g: &V<T>) -> Res<V<T>> {
    mul_scalar(g, Scalar::Float(0.5))
}

/// `g` where neither mask holds, `g / 2` where `half` does, zero where `none` does.
fn passed<T: Backend>(g: &V<T>, none: &V<T>, half: &V<T>) -> Res<V<T>> {
    let kept = where_self(half, &halved(g)?, g)?;
    where_self(none, &zeros_of(g), &kept)
}

/// `g` where `all` holds, `g / 2` where `half` does, zero elsewhere.
fn taken<T: Backend>(g: &V<T>, all: &V<T>, half: &V<T>) -> Res<V<T>> {
    let part = where_self(half, &halved(g)?, &zeros_of(g))?;
    where_self(all, g, &part)
}

/// `self == bound` where the bounds are in order (`min < max`): a tie that splits.
fn tie<T: Backend>(self_: &V<T>, bound: &V<T>, lo: &V<T>, hi: &V<T>) -> Res<V<T>> {
    logical_and(&eq_tensor(self_, bound)?, &lt_tensor(lo, hi)?)
}

/// Backward of `clamp.Tensor` for `self`: the gradient where `min <= self <= max` (NaN
/// included), halved at a bound it ties with (when `min < max`), zero outside.
pub fn clamp_backward_tensor<T: Backend>(
    grad: &V<T>,
    self_: &V<T>,
    min: Option<&V<T>>,
    max: Option<&V<T>>,
) -> Res<V<T>> {
    match (min, max) {
        (Some(lo), Some(hi)) => {
            let out = logical_or(&lt_tensor(self_, lo)?, &gt_tensor(self_, hi)?)?;
            let half = logical_or(&tie(self_, lo, lo, hi)?, &tie(self_, hi, lo, hi)?)?;
            passed(grad, &out, &half)
        }
        (Some(lo), None) => passed(grad, &lt_tensor(self_, lo)?, &eq_tensor(self_, lo)?),
        (None, Some(hi)) => passed(grad, &gt_tensor(self_, hi)?, &eq_tensor(self_, hi)?),
        (None, None) => Ok(grad.clone()),
    }
}

/// Backward of `clamp.Tensor` for `min` and `max` (those `grad_input_mask` asks for): a
/// bound takes the gradient where it is the result (`min` only when `min <= max`; `max`
/// also wherever `max < min`), half of it at a tie with `self`. With one bound, it takes the
/// gradient where `self` is not past it (NaN included).
pub fn clamp_backward_min_max<T: Backend>(
    grad: &V<T>,
    self_: &V<T>,
    min: Option<&V<T>>,
    max: Option<&V<T>>,
    grad_input_mask: [bool; 2],
) -> Res<Grads2<T>> {
    match (min, max) {
        (Some(lo), Some(hi)) => {
            let ordered = le_tensor(lo, hi)?;
            let g_min = grad_input_mask[0]
                .then(|| {
                    let below = logical_and(&lt_tensor(self_, lo)?, &ordered)?;
                    taken(grad, &below, &tie(self_, lo, lo, hi)?)
                })
                .transpose()?;
            let g_max = grad_input_mask[1]
                .then(|| {
                    let above = logical_and(&gt_tensor(self_, hi)?, &ordered)?;
                    let all = logical_or(&above, &lt_tensor(hi, lo)?)?;
                    taken(grad, &all, &tie(self_, hi, lo, hi)?)
                })
                .transpose()?;
            Ok((g_min, g_max))
        }
        (Some(lo), None) if grad_input_mask[0] => {
            let g = passed(grad, &gt_tensor(self_, lo)?, &eq_tensor(self_, lo)?)?;
            Ok((Some(g), None))
        }
        (None, Some(hi)) if grad_input_mask[1] => {
            let g = passed(grad, &lt_tensor(self_, hi)?, &eq_tensor(self_, hi)?)?;
            Ok((None, Some(g)))
        }
        _ => Ok((None, None)),
    }
}

/// The tangent of a bound that has a primal (zeros when it has none, PyTorch's ZeroTensor).
fn bound_tangent<T: Backend>(p: &V<T>, t: Option<&V<T>>) -> V<T> {
    t.cloned().unwrap_or_else(|| zeros_of(p))
}

/// `(a + b) / 2`: the tangent at a tie.
fn mean_of<T: Backend>(a: &V<T>, b: &V<T>) -> Res<V<T>> {
    halved(&add_tensor(a, b, Scalar::Int(1))?)
}

/// Forward derivative of `clamp.Tensor`: the tangent of whichever of `self`, `min`, `max`
/// the result is (`max`'s wherever `min > max`), the mean of two at a tie.
pub fn clamp_jvp<T: Backend>(
    self_p: &V<T>,
    self_t: &V<T>,
    min_p: Option<&V<T>>,
    min_t: Option<&V<T>>,
    max_p: Option<&V<T>>,
    max_t: Option<&V<T>>,
) -> Res<V<T>> {
    match (min_p, max_p) {
        (Some(lo), Some(hi)) => {
            let (lo_t, hi_t) = (bound_tangent(lo, min_t), bound_tangent(hi, max_t));
            let at_hi = where_self(&tie(self_p, hi, lo, hi)?, &mean_of(self_t, &hi_t)?, self_t)?;
            let at_lo = where_self(&tie(self_p, lo, lo, hi)?, &mean_of(self_t, &lo_t)?, &at_hi)?;
            let above = where_self(&gt_tensor(self_p, hi)?, &hi_t, &at_lo)?;
            let below = where_self(&lt_tensor(self_p, lo)?, &lo_t, &above)?;
            where_self(&gt_tensor(lo, hi)?, &hi_t, &below)
        }
        (Some(lo), None) => {
            let lo_t = bound_tangent(lo, min_t);
            let at = where_self(&eq_tensor(self_p, lo)?, &mean_of(self_t, &lo_t)?, &lo_t)?;
            where_self(&gt_tensor(self_p, lo)?, self_t, &at)
        }
        (None, Some(hi)) => {
            let hi_t = bound_tangent(hi, max_t);
            let at = where_self(&eq_tensor(self_p, hi)?, &mean_of(self_t, &hi_t)?, &hi_t)?;
            where_self(&lt_tensor(self_p, hi)?, self_t, &at)
        }
        (None, None) => Ok(self_t.clone()),
    }
}
