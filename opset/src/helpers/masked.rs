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

/// `clamp_min` and `clamp_max` (Scalar bound): `clamp` with one bound (PyTorch's
/// `clamp_min_scalar`/`clamp_max_scalar` kernels: `result_type(self, bound)`, NaN from the
/// input or the bound), booleans refused with the kernel's own name (`kernel`).
fn clamp_one<T: Backend>(
    self_: &T,
    min: Option<Scalar>,
    max: Option<Scalar>,
    kernel: &str,
) -> Result<T, T::Error> {
    let kind = crate::dtype::clamp_kind(crate::dtype::Kind::of(self_.dtype()), min, max);
    crate::dtype::check_not_bool(kind, kernel)?;
    let r = T::clamp(self_, min, max)?;
    // A NaN bound makes every element NaN (PyTorch's `max`/`min` of the kernel).
    match min.or(max) {
        Some(Scalar::Float(b)) if b.is_nan() => {
            let shape: Vec<i64> = r.shape().iter().map(|&d| d as i64).collect();
            T::full(&shape, Scalar::Float(b), scalar_type(&r), None, None, None)
        }
        _ => Ok(r),
    }
}

/// `clamp_min` (Scalar bound): `clamp` with a lower bound alone (PyTorch's `clamp_min_scalar`
/// kernel: `result_type(self, min)`, NaN from the input or the bound; booleans refused).
pub fn decomposed_clamp_min<T: Backend>(self_: &T, min: Scalar) -> Result<T, T::Error> {
    clamp_one(self_, Some(min), None, crate::dtype::kernel::CLAMP_MIN)
}

/// `clamp_max` (Scalar bound): `clamp` with an upper bound alone (PyTorch's `clamp_max_scalar`
/// kernel: `result_type(self, max)`, NaN from the input or the bound; booleans refused).
pub fn decomposed_clamp_max<T: Backend>(self_: &T, max: Scalar) -> Result<T, T::Error> {
    clamp_one(self_, None, Some(max), crate::dtype::kernel::CLAMP_MAX)
}

/// `clamp_min.Tensor`: `maximum` (PyTorch's kernel over the broadcast and promoted
/// operands: NaN from either, booleans allowed).
pub fn decomposed_clamp_min_tensor<T: Backend>(self_: &T, min: &T) -> Result<T, T::Error> {
    T::maximum(self_, min)
}

/// `clamp_max.Tensor`: `minimum`, as [`decomposed_clamp_min_tensor`].
pub fn decomposed_clamp_max_tensor<T: Backend>(self_: &T, max: &T) -> Result<T, T::Error> {
    T::minimum(self_, max)
}

/// `x.options()` where a formula runs on a tensor that is not a saved input (`grad.options()`
/// in `clamp_min`'s entry, `self_t.options()` in its forward formula): the
/// [`TensorOptions`](autograd::types::TensorOptions) of its dtype, for both value types.
pub trait OptionsOf {
    /// The tensor's options (its dtype; strided, on the backend's device).
    fn options(&self) -> autograd::types::TensorOptions;
}

impl<X: super::ScalarTypeOf> OptionsOf for X {
    fn options(&self) -> autograd::types::TensorOptions {
        autograd::types::TensorOptions::of(self.scalar_type())
    }
}

/// `value` as the kernel reads it for operands of kind `kind` (PyTorch's
/// `value.to<scalar_t>()`: truncated for integers).
fn value_for(kind: crate::dtype::Kind, value: Scalar) -> Scalar {
    match kind {
        crate::dtype::Kind::Float => value,
        _ => Scalar::Int(value.to_i64()),
    }
}

/// `TensorIterator`'s broadcast of the three operands, in its order (PyTorch's size error
/// names the shape so far as tensor a).
fn check_ternary_shapes<T: Backend>(
    self_: &T,
    tensor1: &T,
    tensor2: &T,
) -> Result<(), crate::Error> {
    let s = crate::shape::broadcast_shape(self_.shape(), tensor1.shape())?;
    crate::shape::broadcast_shape(&s, tensor2.shape()).map(drop)
}

/// `addcmul`: `self + value * tensor1 * tensor2` over the three broadcast and promoted
/// operands, in PyTorch's kernel's order (`value * t1`, times `t2`, plus `self`); booleans
/// refused as `addcmul_cpu_out` does, `value` truncated for integers.
pub fn decomposed_addcmul<T: Backend>(
    self_: &T,
    tensor1: &T,
    tensor2: &T,
    value: Scalar,
) -> Result<T, T::Error> {
    check_ternary_shapes(self_, tensor1, tensor2)?;
    let kind = crate::dtype::promoted_kind(&[self_.dtype(), tensor1.dtype(), tensor2.dtype()]);
    crate::dtype::check_not_bool(kind, crate::dtype::kernel::ADDCMUL)?;
    let scaled = T::mul_scalar(tensor1, value_for(kind, value))?;
    let product = T::mul_tensor(&scaled, tensor2)?;
    T::add_tensor(self_, &product, Scalar::Int(1))
}

/// `addcdiv`: `self + value * tensor1 / tensor2` (PyTorch's order: `value * t1`, divided by
/// `t2`, plus `self`); integer or boolean `tensor1` and `tensor2` are PyTorch's error.
pub fn decomposed_addcdiv<T: Backend>(
    self_: &T,
    tensor1: &T,
    tensor2: &T,
    value: Scalar,
) -> Result<T, T::Error> {
    meta::addcdiv(tensor1.dtype(), tensor2.dtype())?;
    check_ternary_shapes(self_, tensor1, tensor2)?;
    let kind = crate::dtype::promoted_kind(&[self_.dtype(), tensor1.dtype(), tensor2.dtype()]);
    let scaled = T::mul_scalar(tensor1, value_for(kind, value))?;
    let quotient = T::div_tensor(&scaled, tensor2)?;
    T::add_tensor(self_, &quotient, Scalar::Int(1))
}

/// `lerp`'s checks in PyTorch's order: `end`'s dtype (and `weight`'s, a tensor), the
/// broadcast shapes, then the floating-point kernel (`kernel` names it).
fn check_lerp<T: Backend>(
    self_: &T,
    end: &T,
    weight: Option<&T>,
    kernel: &str,
) -> Result<(), crate::Error> {
    meta::lerp_dtype(self_.dtype(), end.dtype(), "end")?;
    if let Some(w) = weight {
        meta::lerp_dtype(self_.dtype(), w.dtype(), "weight")?;
        check_ternary_shapes(self_, end, w)?;
    } else {
        crate::shape::broadcast_shape(self_.shape(), end.shape())?;
    }
    crate::dtype::check_floats(self_.dtype(), kernel)
}

/// `lerp.Scalar`: PyTorch's kernel, `self + weight * (end - self)` for `|weight| < 0.5`,
/// else `end - (end - self) * (1 - weight)` (exact at both ends).
pub fn decomposed_lerp_scalar<T: Backend>(
    self_: &T,
    end: &T,
    weight: Scalar,
) -> Result<T, T::Error> {
    check_lerp(self_, end, None, "lerp_kernel_scalar")?;
    let diff = T::sub_tensor(end, self_, Scalar::Int(1))?;
    let w = weight.to_f64();
    if w.abs() < 0.5 {
        T::add_tensor(self_, &T::mul_scalar(&diff, weight)?, Scalar::Int(1))
    } else {
        T::sub_tensor(
            end,
            &T::mul_scalar(&diff, Scalar::Float(1.0 - w))?,
            Scalar::Int(1),
        )
    }
}

/// `lerp.Tensor`: [`decomposed_lerp_scalar`]'s two forms, chosen per element by
/// `|weight| < 0.5` (a NaN weight takes the second: NaN).
pub fn decomposed_lerp_tensor<T: Backend>(self_: &T, end: &T, weight: &T) -> Result<T, T::Error> {
    check_lerp(self_, end, Some(weight), "lerp_kernel_tensor")?;
    let one = Scalar::Int(1);
    let diff = T::sub_tensor(end, self_, one)?;
    let small = T::lt_scalar(&T::abs(weight)?, Scalar::Float(0.5))?;
    let near_self = T::add_tensor(self_, &T::mul_tensor(weight, &diff)?, one)?;
    // `1 - weight`, as `-(weight - 1)` (the same rounding).
    let rest = T::neg(&T::sub_scalar(weight, one, one)?)?;
    let near_end = T::sub_tensor(end, &T::mul_tensor(&diff, &rest)?, one)?;
    T::where_self(&small, &near_self, &near_end)
}
