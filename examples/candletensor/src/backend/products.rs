//! The kernels of `addmm` and `pow.Scalar` (Core ATen; issue 30), composed of the backend's
//! own kernels (`mm`, `mul.Scalar`, `add.Tensor`, `expand`, `pow.Tensor_Tensor`), which
//! bring PyTorch's dtype rules, and of `cumsum`, `prod` and `prod.dim_int`, composed of
//! candle's `narrow`, `add`, `mul` and `cat` (candle's own `cumsum` is a product with a
//! triangular matrix, where an infinite element makes the sums before it NaN).

use super::R;
use super::dtype::{as_i64, cast_to, ce, promoted, wrapped};
use crate::tensor::CandleTensor as C;
use autograd::runtime::Tensor as _;
use autograd::types::{Scalar, ScalarType};
use autograd_opset::dtype::{self as rules, Kind};
use autograd_opset::shape::norm_dim;
use autograd_opset::{Backend, meta};
use candle_core::Tensor;

/// A Scalar factor as the result's kind (PyTorch converts `alpha`/`beta` to the result's
/// dtype: an integer result truncates them).
fn factor(k: Kind, s: Scalar) -> Scalar {
    match k {
        Kind::Float => Scalar::Float(s.to_f64()),
        _ => Scalar::Int(rules::converted_scalar(Kind::Int, s) as i64),
    }
}

/// `beta * self + alpha * (mat1 @ mat2)`, `self` broadcast to the product's shape and not
/// read when `beta` is 0 (PyTorch: its NaNs do not propagate).
pub(super) fn addmm(self_: &C, mat1: &C, mat2: &C, beta: Scalar, alpha: Scalar) -> R<C> {
    let size = meta::addmm(
        (self_.shape(), self_.dtype()),
        (mat1.shape(), mat1.dtype()),
        (mat2.shape(), mat2.dtype()),
    )?;
    let product = <C as Backend>::mm(mat1, mat2)?;
    let k = Kind::of(product.dtype());
    let (beta, alpha) = (factor(k, beta), factor(k, alpha));
    let product = match alpha.to_f64() == 1.0 {
        true => product,
        false => <C as Backend>::mul_scalar(&product, alpha)?,
    };
    if beta.to_f64() == 0.0 {
        return Ok(product);
    }
    let size: Vec<i64> = size.iter().map(|&d| d as i64).collect();
    let input = <C as Backend>::expand(self_, &size, false)?;
    <C as Backend>::add_tensor(&product, &input, beta)
}

/// `base ** exponent` with a Scalar base: the base as a wrapped number (PyTorch's
/// `wrapped_scalar_tensor`; a float base in a float exponent's dtype) to the power of each
/// element.
pub(super) fn pow_scalar(base: Scalar, exponent: &C) -> R<C> {
    let mut b = wrapped(base)?;
    if Kind::of(exponent.dtype()) == Kind::Float && matches!(base, Scalar::Float(_)) {
        b = promoted(&b, exponent.t.dtype())?;
    }
    <C as Backend>::pow_tensor_tensor(&b, exponent)
}

/// `t` (cast to `dtype`) as a cumulative or product result: floats as they are, integers
/// and booleans as `I64` (PyTorch's integral promotion to `Long`).
fn accumulated(t: &C, dtype: Option<ScalarType>) -> R<Tensor> {
    let t = cast_to(t, dtype)?;
    Ok(match Kind::of(t.dtype()) {
        Kind::Float => t.t,
        _ => as_i64(&t)?.t,
    })
}

/// `cumsum`: the running sum along `dim`, one slice at a time (PyTorch's order).
pub(super) fn cumsum(self_: &C, dim: i64, dtype: Option<ScalarType>) -> R<C> {
    cumulative(self_, dim, dtype, false)
}

/// `cumprod`: the running product along `dim`, one slice at a time (PyTorch's order).
pub(super) fn cumprod(self_: &C, dim: i64, dtype: Option<ScalarType>) -> R<C> {
    cumulative(self_, dim, dtype, true)
}

/// The running sums (`prod` false) or products along `dim`, one slice at a time; a `bool`
/// result is PyTorch's not-implemented error of the kernel.
fn cumulative(self_: &C, dim: i64, dtype: Option<ScalarType>, prod: bool) -> R<C> {
    let nd = self_.shape().len();
    let ax = norm_dim(dim, nd.max(1))?;
    if dtype == Some(ScalarType::Bool) {
        let kernel = match prod {
            false => rules::kernel::CUMSUM,
            true => rules::kernel::CUMPROD,
        };
        return Err(rules::not_implemented(kernel, "bool"));
    }
    let t = accumulated(self_, dtype)?;
    let n = if nd == 0 { 0 } else { t.dims()[ax] };
    if n <= 1 {
        return Ok(C::new(t));
    }
    let mut acc = ce(t.narrow(ax, 0, 1))?;
    let mut parts = vec![acc.clone()];
    for i in 1..n {
        let next = ce(t.narrow(ax, i, 1))?;
        acc = ce(if prod { acc.mul(&next) } else { acc.add(&next) })?;
        parts.push(acc.clone());
    }
    Ok(C::new(ce(Tensor::cat(&parts, ax))?))
}

/// `prod.dim_int`: the product along `dim`, one slice at a time from 1 (1 for an empty
/// dim).
pub(super) fn prod_dim_int(self_: &C, dim: i64, keepdim: bool, dtype: Option<ScalarType>) -> R<C> {
    let nd = self_.shape().len();
    let ax = norm_dim(dim, nd.max(1))?;
    let t = accumulated(self_, dtype)?;
    if nd == 0 {
        return as_requested(C::new(t), dtype);
    }
    let mut shape = t.dims().to_vec();
    shape[ax] = 1;
    let mut acc = ce(Tensor::ones(shape, t.dtype(), t.device()))?;
    for i in 0..t.dims()[ax] {
        acc = ce(acc.mul(&ce(t.narrow(ax, i, 1))?))?;
    }
    let r = C::new(match keepdim {
        true => acc,
        false => ce(acc.squeeze(ax))?,
    });
    as_requested(r, dtype)
}

/// A product asked for as `bool` is a boolean (PyTorch casts the product back: all).
fn as_requested(r: C, dtype: Option<ScalarType>) -> R<C> {
    match dtype {
        Some(ScalarType::Bool) => <C as Backend>::ne_scalar(&r, Scalar::Int(0)),
        _ => Ok(r),
    }
}

/// `prod`: the product of every element (a 0-d tensor; 1 for an empty tensor).
pub(super) fn prod(self_: &C, dtype: Option<ScalarType>) -> R<C> {
    let flat = C::new(ce(accumulated(self_, dtype)?.flatten_all())?);
    let r = prod_dim_int(&flat, 0, false, None)?;
    as_requested(C::new(ce(r.t.reshape(()))?), dtype)
}

/// `sort`: the indices in PyTorch's order (`meta::sort_indices`, on the values as `f64`
/// on the host: exact for integers below 2^53), the values gathered by them with candle's
/// `gather` (elements moved: exact for every dtype).
pub(super) fn sort(self_: &C, dim: i64, descending: bool) -> R<(C, C)> {
    let keys: Vec<f64> = ce(ce(self_.t.to_dtype(candle_core::DType::F64))?
        .flatten_all()
        .and_then(|t| t.to_vec1::<f64>()))?;
    let order = meta::sort_indices(&keys, self_.shape(), dim, descending)?;
    let indices = C::new(ce(Tensor::from_vec(
        order,
        self_.shape(),
        self_.t.device(),
    ))?);
    if self_.shape().is_empty() {
        return Ok((self_.clone(), indices));
    }
    Ok((
        <C as Backend>::gather(self_, dim, &indices, false)?,
        indices,
    ))
}
