//! The kernels of `addmm` and `pow.Scalar` (Core ATen; issue 30), composed of the backend's
//! own kernels (`mm`, `mul.Scalar`, `add.Tensor`, `expand`, `pow.Tensor_Tensor`), which
//! bring PyTorch's dtype rules.

use super::R;
use super::dtype::{promoted, wrapped};
use crate::tensor::CandleTensor as C;
use autograd::runtime::Tensor as _;
use autograd::types::Scalar;
use autograd_opset::dtype::{self as rules, Kind};
use autograd_opset::{Backend, meta};

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
