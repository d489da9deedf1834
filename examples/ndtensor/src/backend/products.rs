//! The kernels of `addmm` and `pow.Scalar` (Core ATen; issue 30), composed of the backend's
//! own kernels (`mm`, `mul.Scalar`, `add.Tensor`, `expand`, `pow.Tensor_Tensor`), which
//! bring PyTorch's dtype rules, and of `cumsum`, `prod` and `prod.dim_int` (loops over the
//! elements along an axis) and `sort` (PyTorch's order, `meta::sort_indices`).

use super::R;
use super::dtype::{cast_to, int_tensor, ints, scalar_tensor, wide};
use crate::tensor::{Data, Element, NdTensor};
use autograd::types::{Scalar, ScalarType};
use autograd_opset::dtype::{self as rules, Kind};
use autograd_opset::shape::norm_dim;
use autograd_opset::{Backend, meta};
use ndarray::{Array, Axis, IxDyn};

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

/// `t` (cast to `dtype`) as the kind of a cumulative or product result: floats as they
/// are, integers and booleans as `i64` (PyTorch's integral promotion to `Long`).
fn accumulated<E: Element>(t: &T<E>, dtype: Option<ScalarType>) -> Acc<E> {
    let t = cast_to(t, dtype);
    match t.data() {
        Data::Float(a) => Acc::Float(a.arr().to_owned()),
        _ => Acc::Int(ints(&t).to_owned()),
    }
}

/// The elements of a cumulative or product result, by kind.
enum Acc<E> {
    Float(Array<E, IxDyn>),
    Int(Array<i64, IxDyn>),
}

/// `cumsum`: sums along `dim` from the start (in `f64` for floats, as PyTorch's CPU kernel
/// accumulates in its `acc_type`; wrapping `i64` for integers).
pub(super) fn cumsum<E: Element>(self_: &T<E>, dim: i64, dtype: Option<ScalarType>) -> R<T<E>> {
    cumulative(self_, dim, dtype, Cumulative::Sum)
}

/// `cumprod`: products along `dim` from the start, accumulated as [`cumsum`]'s sums.
pub(super) fn cumprod<E: Element>(self_: &T<E>, dim: i64, dtype: Option<ScalarType>) -> R<T<E>> {
    cumulative(self_, dim, dtype, Cumulative::Prod)
}

/// The running operation of a cumulative kernel.
#[derive(Clone, Copy, PartialEq)]
enum Cumulative {
    Sum,
    Prod,
}

/// The running sums or products along `dim` (in `f64` for floats; wrapping `i64` for
/// integers); a `bool` result is PyTorch's not-implemented error of the kernel.
fn cumulative<E: Element>(
    self_: &T<E>,
    dim: i64,
    dtype: Option<ScalarType>,
    op: Cumulative,
) -> R<T<E>> {
    let nd = self_.shape().len();
    let ax = norm_dim(dim, nd.max(1))?;
    if dtype == Some(ScalarType::Bool) {
        let kernel = match op {
            Cumulative::Sum => rules::kernel::CUMSUM,
            Cumulative::Prod => rules::kernel::CUMPROD,
        };
        return Err(rules::not_implemented(kernel, "bool"));
    }
    let sum = op == Cumulative::Sum;
    Ok(match accumulated(self_, dtype) {
        Acc::Float(a) if nd > 0 => {
            let mut w = a.mapv(Element::as_f64);
            match sum {
                true => w.accumulate_axis_inplace(Axis(ax), |&p, c| *c += p),
                false => w.accumulate_axis_inplace(Axis(ax), |&p, c| *c *= p),
            }
            T::from_array(w.mapv(E::of))
        }
        Acc::Float(a) => T::from_array(a),
        Acc::Int(mut a) => {
            if nd > 0 {
                match sum {
                    true => a.accumulate_axis_inplace(Axis(ax), |&p, c| *c = c.wrapping_add(p)),
                    false => a.accumulate_axis_inplace(Axis(ax), |&p, c| *c = c.wrapping_mul(p)),
                }
            }
            int_tensor(a)
        }
    })
}

/// `prod.dim_int`: the product along `dim` (1 for an empty one; wrapping `i64` for
/// integers).
pub(super) fn prod_dim_int<E: Element>(
    self_: &T<E>,
    dim: i64,
    keepdim: bool,
    dtype: Option<ScalarType>,
) -> R<T<E>> {
    let nd = self_.shape().len();
    let ax = norm_dim(dim, nd.max(1))?;
    let keep = |r: T<E>| -> R<T<E>> {
        match keepdim && nd > 0 {
            true => T::unsqueeze(&r, ax as i64),
            false => Ok(r),
        }
    };
    let r = match accumulated(self_, dtype) {
        Acc::Float(a) if nd > 0 => {
            keep(T::from_array(
                a.fold_axis(Axis(ax), E::one(), |&p, &x| p * x),
            ))
        }
        Acc::Float(a) => Ok(T::from_array(a)),
        Acc::Int(a) if nd > 0 => keep(int_tensor(
            a.fold_axis(Axis(ax), 1, |&p, &x| p.wrapping_mul(x)),
        )),
        Acc::Int(a) => Ok(int_tensor(a)),
    }?;
    as_requested(r, dtype)
}

/// `prod`: the product of every element (a 0-d tensor; 1 for an empty tensor).
pub(super) fn prod<E: Element>(self_: &T<E>, dtype: Option<ScalarType>) -> R<T<E>> {
    let at = IxDyn(&[]);
    let r = match accumulated(self_, dtype) {
        Acc::Float(a) => {
            T::from_array(Array::from_elem(at, a.iter().fold(E::one(), |p, &x| p * x)))
        }
        Acc::Int(a) => int_tensor(Array::from_elem(
            at,
            a.iter().fold(1i64, |p, &x| p.wrapping_mul(x)),
        )),
    };
    as_requested(r, dtype)
}

/// A product asked for as `bool` is a boolean (PyTorch casts the product back: all).
fn as_requested<E: Element>(r: T<E>, dtype: Option<ScalarType>) -> R<T<E>> {
    match dtype {
        Some(ScalarType::Bool) => T::ne_scalar(&r, Scalar::Int(0)),
        _ => Ok(r),
    }
}

/// `sort`: the indices in PyTorch's order (`meta::sort_indices`, on the values as `f64`:
/// exact for integers below 2^53), the values gathered by them (elements moved: exact for
/// every dtype).
pub(super) fn sort<E: Element>(self_: &T<E>, dim: i64, descending: bool) -> R<(T<E>, T<E>)> {
    let keys: Vec<f64> = wide(self_).arr().iter().copied().collect();
    let order = meta::sort_indices(&keys, self_.shape(), dim, descending)?;
    let at = Array::from_shape_vec(IxDyn(self_.shape()), order).expect("one index per element");
    let indices = int_tensor(at);
    if self_.shape().is_empty() {
        return Ok((self_.clone(), indices));
    }
    Ok((T::gather(self_, dim, &indices, false)?, indices))
}
