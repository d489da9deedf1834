//! `nonzero`, `masked_scatter` and `masked_scatter_backward` (Core ATen; issue 30): the op
//! set's `meta::geom` functions check the arguments and give the positions; the kernels
//! move the elements (exact for every dtype).

use crate::storage::FloatTensor;
use crate::tensor::{Data, Element, NdTensor};
use autograd_opset::error::Error;
use autograd_opset::meta;
use ndarray::{ArcArray, ArrayView, IxDyn};

type R<T> = Result<T, Error>;
type T<E> = NdTensor<E>;

fn array<X>(v: Vec<X>, shape: &[usize]) -> R<ArcArray<X, IxDyn>> {
    ArcArray::from_shape_vec(IxDyn(shape), v).map_err(|e| Error::internal("ndarray", e))
}

/// Whether each element (row-major) is nonzero (NaN is).
fn set_elements<E: Element>(t: &T<E>) -> Vec<bool> {
    match t.data() {
        Data::Float(a) => a.arr().iter().map(|x| x.as_f64() != 0.0).collect(),
        Data::Int(a) => a.iter().map(|x| *x != 0).collect(),
        Data::Bool(a) => a.iter().copied().collect(),
    }
}

/// `nonzero`: the `i64` coordinates of the nonzero elements, `[n, ndim]`.
pub(super) fn nonzero<E: Element>(self_: &T<E>) -> R<T<E>> {
    let (coords, shape) = meta::nonzero(self_.shape(), &set_elements(self_));
    Ok(NdTensor::from_data(Data::int(array(coords, &shape)?)))
}

/// The elements of `x` at `at`, or of `src` at `from`'s `Some` (row-major, `shape`).
fn scatter<X: Copy>(
    x: &ArrayView<'_, X, IxDyn>,
    at: &[usize],
    src: &ArrayView<'_, X, IxDyn>,
    from: &[Option<usize>],
) -> Vec<X> {
    let (xs, ss): (Vec<X>, Vec<X>) = (x.iter().copied().collect(), src.iter().copied().collect());
    at.iter()
        .zip(from)
        .map(|(&p, k)| k.map_or(xs[p], |k| ss[k]))
        .collect()
}

/// `masked_scatter`: `self` broadcast with the mask, the source's elements in order where
/// the mask is set.
pub(super) fn masked_scatter<E: Element>(self_: &T<E>, mask: &T<E>, source: &T<E>) -> R<T<E>> {
    let shape = meta::masked_scatter(
        (self_.shape(), self_.dtype()),
        (mask.shape(), mask.dtype()),
        source.dtype(),
    )?;
    let numel = source.shape().iter().product();
    let from = meta::masked_scatter_sources(&shape, mask.shape(), &set_elements(mask), numel)?;
    let at = meta::broadcast_positions(self_.shape(), &shape);
    Ok(NdTensor::from_data(match (self_.data(), source.data()) {
        (Data::Float(x), Data::Float(s)) => Data::Float(FloatTensor::from_row_major(
            scatter(x.arr(), &at, s.arr(), &from),
            &shape,
        )),
        (Data::Int(x), Data::Int(s)) => {
            Data::int(array(scatter(&x.view(), &at, &s.view(), &from), &shape)?)
        }
        (Data::Bool(x), Data::Bool(s)) => {
            Data::bool(array(scatter(&x.view(), &at, &s.view(), &from), &shape)?)
        }
        _ => {
            return Err(Error::internal(
                "ndtensor",
                "masked_scatter of unequal dtypes",
            ));
        }
    }))
}

/// The elements of `x` at `picked`, then `zero` up to `shape`'s count.
fn picked<X: Copy>(x: &ArrayView<'_, X, IxDyn>, picked: &[usize], zero: X, n: usize) -> Vec<X> {
    let xs: Vec<X> = x.iter().copied().collect();
    let mut v: Vec<X> = picked.iter().map(|&p| xs[p]).collect();
    v.resize(n, zero);
    v
}

/// `masked_scatter_backward`: the gradient's elements where the mask is set, zeros after
/// them, viewed as `sizes`.
pub(super) fn masked_scatter_backward<E: Element>(
    grad: &T<E>,
    mask: &T<E>,
    sizes: &[i64],
) -> R<T<E>> {
    let (at, shape) = meta::masked_scatter_backward(
        grad.shape(),
        (mask.shape(), mask.dtype()),
        &set_elements(mask),
        sizes,
    )?;
    let n = shape.iter().product();
    Ok(NdTensor::from_data(match grad.data() {
        Data::Float(x) => Data::Float(FloatTensor::from_row_major(
            picked(x.arr(), &at, E::zero(), n),
            &shape,
        )),
        Data::Int(x) => Data::int(array(picked(&x.view(), &at, 0, n), &shape)?),
        Data::Bool(x) => Data::bool(array(picked(&x.view(), &at, false, n), &shape)?),
    }))
}
