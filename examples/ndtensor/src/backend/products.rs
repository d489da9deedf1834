//! The kernels of `addmm` and `pow.Scalar` (Core ATen; issue 30), composed of the backend's
//! own kernels (`mm`, `mul.Scalar`, `add.Tensor`, `expand`, `pow.Tensor_Tensor`), which
//! bring PyTorch's dtype rules.

use super::R;
use super::dtype::scalar_tensor;
use crate::tensor::{Element, NdTensor};
use autograd::types::Scalar;
use autograd_opset::dtype::{self as rules, Kind};
use autograd_opset::{Backend, meta};

type T<E> = NdTensor<E>;

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
pub(super) fn addmm<E: Element>(
    self_: &T<E>,
    mat1: &T<E>,
    mat2: &T<E>,
    beta: Scalar,
    alpha: Scalar,
) -> R<T<E>> {
    let size = meta::addmm(
        (self_.shape(), self_.dtype()),
        (mat1.shape(), mat1.dtype()),
        (mat2.shape(), mat2.dtype()),
    )?;
    let product = T::mm(mat1, mat2)?;
    let k = Kind::of(product.dtype());
    let (beta, alpha) = (factor(k, beta), factor(k, alpha));
    let product = match alpha.to_f64() == 1.0 {
        true => product,
        false => T::mul_scalar(&product, alpha)?,
    };
    if beta.to_f64() == 0.0 {
        return Ok(product);
    }
    let size: Vec<i64> = size.iter().map(|&d| d as i64).collect();
    let input = T::expand(self_, &size, false)?;
    T::add_tensor(&product, &input, beta)
}

/// `base ** exponent` with a Scalar base: the base as a wrapped number (PyTorch's
/// `wrapped_scalar_tensor`) to the power of each element.
pub(super) fn pow_scalar<E: Element>(base: Scalar, exponent: &T<E>) -> R<T<E>> {
    T::pow_tensor_tensor(&scalar_tensor(base), exponent)
}
