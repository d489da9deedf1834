//! `scatter_reduce.two` (Core ATen; issue 30): the op set's `meta::scatter_reduce_checked`
//! checks the arguments and gives the positions; `meta::scatter_reduce_values` reduces the
//! row-major elements (floating-point dtypes in `f64`, integers and booleans in `i64` with
//! PyTorch's wrapping arithmetic and floored mean).

use crate::storage::FloatTensor;
use crate::tensor::{Data, Element, NdTensor};
use autograd_opset::error::Error;
use autograd_opset::meta::{self, Reduce};
use ndarray::{ArcArray, IxDyn};

type R<T> = Result<T, Error>;

fn array<X>(v: Vec<X>, shape: &[usize]) -> R<ArcArray<X, IxDyn>> {
    ArcArray::from_shape_vec(IxDyn(shape), v).map_err(|e| Error::internal("ndarray", e))
}

/// `scatter_reduce.two`: `self` with `src`'s elements reduced into the positions `index`
/// gives along `dim` (`sum`, `prod`, `mean`, `amax`, `amin`), starting from `self`'s
/// element with `include_self`, else from the first element scattered there.
pub(super) fn scatter_reduce<E: Element>(
    self_: &NdTensor<E>,
    dim: i64,
    index: &NdTensor<E>,
    src: &NdTensor<E>,
    reduce: &str,
    include_self: bool,
) -> R<NdTensor<E>> {
    let i = super::advanced::scatter_index(index)?;
    let (r, plan) = meta::scatter_reduce_checked(
        (self_.shape(), self_.dtype()),
        dim,
        (index.shape(), &i),
        (src.shape(), src.dtype()),
        reduce,
    )?;
    let shape = self_.shape();
    let ints = |r: Reduce, x: Vec<i64>, s: Vec<i64>| {
        meta::scatter_reduce_values(&x, &s, &plan, r, include_self)
    };
    Ok(NdTensor::from_data(match (self_.data(), src.data()) {
        (Data::Float(x), Data::Float(s)) => {
            let xs: Vec<f64> = x.arr().iter().map(|v| v.as_f64()).collect();
            let ss: Vec<f64> = s.arr().iter().map(|v| v.as_f64()).collect();
            let v = meta::scatter_reduce_values(&xs, &ss, &plan, r, include_self);
            Data::Float(FloatTensor::from_row_major(
                v.into_iter().map(E::of).collect(),
                shape,
            ))
        }
        (Data::Int(x), Data::Int(s)) => {
            let v = ints(r, x.iter().copied().collect(), s.iter().copied().collect());
            Data::int(array(v, shape)?)
        }
        (Data::Bool(x), Data::Bool(s)) => {
            let wide = |a: &ArcArray<bool, IxDyn>| a.iter().map(|&b| i64::from(b)).collect();
            let v = ints(r, wide(x), wide(s));
            Data::bool(array(v.into_iter().map(|b| b != 0).collect(), shape)?)
        }
        _ => {
            return Err(Error::internal(
                "ndtensor",
                "scatter_reduce: dtypes checked above",
            ));
        }
    }))
}
