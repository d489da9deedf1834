//! Advanced indexing (`index.Tensor`, `index_put`): the op set's `meta::index_tensor` /
//! `meta::index_put` check the indices and give the row-major positions in `self`; the
//! kernels move the elements there (exact for every dtype) or add them (`accumulate=true`:
//! floats and `i64` added, booleans or-ed as PyTorch's `+` of booleans).

use crate::storage::FloatTensor;
use crate::tensor::{Data, Element, NdTensor};
use autograd::types::Scalar;
use autograd_opset::dtype::{self as rules, IndexUse};
use autograd_opset::error::Error;
use autograd_opset::meta::{self, Index};
use ndarray::{ArcArray, ArrayView, IxDyn};

type R<T> = Result<T, Error>;

/// The host copy of one index: `i64` elements, a mask, or another dtype.
enum Host {
    Long(Vec<usize>, Vec<i64>),
    Mask(Vec<usize>, Vec<bool>),
    Invalid,
}

fn host<E: Element>(indices: &[Option<NdTensor<E>>]) -> Vec<Option<Host>> {
    indices
        .iter()
        .map(|i| {
            i.as_ref().map(|t| {
                let shape = t.shape().to_vec();
                match t.data() {
                    Data::Int(a) => Host::Long(shape, a.iter().copied().collect()),
                    Data::Bool(a) => Host::Mask(shape, a.iter().copied().collect()),
                    Data::Float(_) => Host::Invalid,
                }
            })
        })
        .collect()
}

fn views(h: &[Option<Host>]) -> Vec<Option<Index<'_>>> {
    h.iter()
        .map(|i| {
            i.as_ref().map(|i| match i {
                Host::Long(s, d) => Index::Long(s, d),
                Host::Mask(s, d) => Index::Mask(s, d),
                Host::Invalid => Index::Invalid,
            })
        })
        .collect()
}

fn array<T>(v: Vec<T>, shape: &[usize]) -> R<ArcArray<T, IxDyn>> {
    ArcArray::from_shape_vec(IxDyn(shape), v).map_err(|e| Error::internal("ndarray", e))
}

/// `index.Tensor`: the elements of `self` at the positions, in the result's shape.
pub(super) fn index_tensor<E: Element>(
    self_: &NdTensor<E>,
    indices: &[Option<NdTensor<E>>],
) -> R<NdTensor<E>> {
    let h = host(indices);
    let a = meta::index_tensor(self_.shape(), &views(&h))?;
    fn pick<T: Copy>(v: &ArrayView<'_, T, IxDyn>, offsets: &[usize]) -> Vec<T> {
        let flat: Vec<T> = v.iter().copied().collect();
        offsets.iter().map(|&o| flat[o]).collect()
    }
    Ok(NdTensor::from_data(match self_.data() {
        Data::Float(x) => Data::Float(FloatTensor::from_row_major(
            pick(x.arr(), &a.offsets),
            &a.shape,
        )),
        Data::Int(x) => Data::int(array(pick(&x.view(), &a.offsets), &a.shape)?),
        Data::Bool(x) => Data::bool(array(pick(&x.view(), &a.offsets), &a.shape)?),
    }))
}

/// `self`'s elements with `values` (broadcast to `shape`) written, or combined with `add`,
/// at `offsets` in order: with repeated positions and no `add` the last write wins.
fn put<T: Copy>(
    x: &ArrayView<'_, T, IxDyn>,
    offsets: &[usize],
    values: &ArrayView<'_, T, IxDyn>,
    shape: &[usize],
    add: Option<fn(T, T) -> T>,
) -> R<ArcArray<T, IxDyn>> {
    let mut out: Vec<T> = x.iter().copied().collect();
    let v = values
        .broadcast(IxDyn(shape))
        .ok_or_else(|| Error::internal("ndarray", format!("cannot broadcast to {shape:?}")))?;
    for (&o, &y) in offsets.iter().zip(v.iter()) {
        out[o] = match add {
            Some(f) => f(out[o], y),
            None => y,
        };
    }
    array(out, x.shape())
}

/// `index_put`: `self` with `values` written at the positions, or added (`accumulate`).
/// With repeated positions and `accumulate=false` the last write wins (what PyTorch's CPU
/// kernel does, serially; PyTorch documents the result as undefined).
pub(super) fn index_put<E: Element>(
    self_: &NdTensor<E>,
    indices: &[Option<NdTensor<E>>],
    values: &NdTensor<E>,
    accumulate: bool,
) -> R<NdTensor<E>> {
    let h = host(indices);
    let a = meta::index_put(
        self_.shape(),
        &views(&h),
        values.shape(),
        self_.dtype(),
        values.dtype(),
    )?;
    let (o, s) = (&a.offsets, &a.shape);
    Ok(NdTensor::from_data(match (self_.data(), values.data()) {
        (Data::Float(x), Data::Float(v)) => {
            let add: Option<fn(E, E) -> E> = accumulate.then_some(|p, q| p + q);
            let r = put(x.arr(), o, v.arr(), s, add)?;
            Data::Float(FloatTensor::from_row_major(
                r.iter().copied().collect(),
                x.shape(),
            ))
        }
        (Data::Int(x), Data::Int(v)) => {
            let add: Option<fn(i64, i64) -> i64> = accumulate.then_some(i64::wrapping_add);
            Data::int(put(&x.view(), o, &v.view(), s, add)?)
        }
        (Data::Bool(x), Data::Bool(v)) => {
            let add: Option<fn(bool, bool) -> bool> = accumulate.then_some(|p, q| p || q);
            Data::bool(put(&x.view(), o, &v.view(), s, add)?)
        }
        _ => {
            return Err(Error::internal(
                "ndtensor",
                "index_put: dtypes checked above",
            ));
        }
    }))
}

/// `self`'s elements with `at`'s writes (`(position in self, element of values)`, in order:
/// the last write to a position stays).
fn written<T: Copy>(
    x: &ArrayView<'_, T, IxDyn>,
    at: &[(usize, usize)],
    values: &[T],
) -> R<ArcArray<T, IxDyn>> {
    let mut out: Vec<T> = x.iter().copied().collect();
    for &(to, from) in at {
        out[to] = values[from];
    }
    array(out, x.shape())
}

/// The `i64` elements of `scatter`'s index, or PyTorch's dtype error.
pub(super) fn scatter_index<E: Element>(index: &NdTensor<E>) -> R<Vec<i64>> {
    rules::check_index(IndexUse::Scatter, index.dtype())?;
    match index.data() {
        Data::Int(a) => Ok(a.iter().copied().collect()),
        _ => Err(Error::internal(
            "ndtensor",
            "scatter: index dtype checked above",
        )),
    }
}

/// `scatter.src`: `self` with `src`'s elements written where `index` says along `dim` (the
/// last write to a position stays, as PyTorch's CPU kernel does).
pub(super) fn scatter_src<E: Element>(
    self_: &NdTensor<E>,
    dim: i64,
    index: &NdTensor<E>,
    src: &NdTensor<E>,
) -> R<NdTensor<E>> {
    let i = scatter_index(index)?;
    rules::check_scatter_src(self_.dtype(), src.dtype())?;
    let at = meta::scatter(self_.shape(), dim, index.shape(), &i, Some(src.shape()))?;
    Ok(NdTensor::from_data(match (self_.data(), src.data()) {
        (Data::Float(x), Data::Float(s)) => {
            let r = written(x.arr(), &at, &s.to_vec())?;
            Data::Float(FloatTensor::from_row_major(
                r.iter().copied().collect(),
                x.shape(),
            ))
        }
        (Data::Int(x), Data::Int(s)) => Data::int(written(
            &x.view(),
            &at,
            &s.iter().copied().collect::<Vec<_>>(),
        )?),
        (Data::Bool(x), Data::Bool(s)) => Data::bool(written(
            &x.view(),
            &at,
            &s.iter().copied().collect::<Vec<_>>(),
        )?),
        _ => return Err(Error::internal("ndtensor", "scatter: dtypes checked above")),
    }))
}

/// `scatter.value`: `self` with `value` (converted to `self`'s dtype) written where `index`
/// says along `dim`.
pub(super) fn scatter_value<E: Element>(
    self_: &NdTensor<E>,
    dim: i64,
    index: &NdTensor<E>,
    value: Scalar,
) -> R<NdTensor<E>> {
    let i = scatter_index(index)?;
    let at = meta::scatter(self_.shape(), dim, index.shape(), &i, None)?;
    let v = rules::converted_scalar(rules::Kind::of(self_.dtype()), value);
    Ok(NdTensor::from_data(match self_.data() {
        Data::Float(x) => {
            let r = written(x.arr(), &at, &[E::of(v)])?;
            Data::Float(FloatTensor::from_row_major(
                r.iter().copied().collect(),
                x.shape(),
            ))
        }
        Data::Int(x) => Data::int(written(&x.view(), &at, &[v as i64])?),
        Data::Bool(x) => Data::bool(written(&x.view(), &at, &[v != 0.0])?),
    }))
}
