//! Advanced indexing (`index.Tensor`, `index_put`): the op set's `meta::index_tensor` /
//! `meta::index_put` check the indices (read on the host) and give the row-major positions in
//! `self`; candle's `index_select` reads them (elements only moved: exact for every dtype)
//! and `index_add` accumulates (`accumulate=true`; integers and booleans through `F64`).

use crate::tensor::CandleTensor;
use autograd::runtime::Tensor as _;
use autograd::types::Scalar;
use autograd_opset::dtype::{self as rules, IndexUse};
use autograd_opset::error::Error;
use autograd_opset::meta::{self, Advanced, Index};
use candle_core::{DType, Tensor};

type C = CandleTensor;
type R<T> = Result<T, Error>;

fn ce<T>(r: candle_core::Result<T>) -> R<T> {
    r.map_err(|e| {
        let m = e.to_string();
        Error::internal("candle", m.lines().next().unwrap_or_default())
    })
}

/// The host copy of one index: `i64` elements, a mask, or another dtype.
enum Host {
    Long(Vec<usize>, Vec<i64>),
    Mask(Vec<usize>, Vec<bool>),
    Invalid,
}

fn host(indices: &[Option<C>]) -> R<Vec<Option<Host>>> {
    indices
        .iter()
        .map(|i| {
            let Some(t) = i else { return Ok(None) };
            let shape = t.shape().to_vec();
            Ok(Some(match t.dtype() {
                "i64" => Host::Long(shape, ce(ce(t.t.flatten_all())?.to_vec1::<i64>())?),
                "bool" => {
                    let v = ce(ce(t.t.flatten_all())?.to_vec1::<u8>())?;
                    Host::Mask(shape, v.into_iter().map(|b| b != 0).collect())
                }
                _ => Host::Invalid,
            }))
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

/// The positions as candle's `U32` ids.
fn ids(positions: &[usize], like: &Tensor) -> R<Tensor> {
    let v: Vec<u32> = positions.iter().map(|&p| p as u32).collect();
    ce(Tensor::from_vec(v, positions.len(), like.device()))
}

fn flat(t: &Tensor) -> R<Tensor> {
    ce(ce(t.contiguous())?.flatten_all())
}

/// `index.Tensor`: the elements of `self` at the positions, in the result's shape.
pub(super) fn index_tensor(self_: &C, indices: &[Option<C>]) -> R<C> {
    let h = host(indices)?;
    let a = meta::index_tensor(self_.shape(), &views(&h))?;
    let x = flat(&self_.t)?;
    if a.offsets.is_empty() {
        let z = Tensor::zeros(a.shape.as_slice(), x.dtype(), x.device());
        return Ok(C::new(ce(z)?));
    }
    let r = ce(x.index_select(&ids(&a.offsets, &x)?, 0))?;
    Ok(C::new(ce(r.reshape(a.shape.as_slice()))?))
}

/// `index_put`: `self` with `values` (broadcast to the indexing result) written at the
/// positions, or added (`accumulate`). With repeated positions and `accumulate=false` the
/// last write wins (what PyTorch's CPU kernel does, serially; PyTorch documents the result
/// as undefined).
pub(super) fn index_put(self_: &C, indices: &[Option<C>], values: &C, accumulate: bool) -> R<C> {
    let h = host(indices)?;
    let a: Advanced = meta::index_put(
        self_.shape(),
        &views(&h),
        values.shape(),
        self_.dtype(),
        values.dtype(),
    )?;
    let x = flat(&self_.t)?;
    let v = flat(&ce(values.t.broadcast_as(a.shape.as_slice()))?)?;
    let shape = self_.shape();
    if a.offsets.is_empty() {
        return Ok(C::new(ce(x.reshape(shape))?));
    }
    if accumulate {
        let r = added(&x, &ids(&a.offsets, &x)?, &v)?;
        return Ok(C::new(ce(r.reshape(shape))?));
    }
    // `self` and the values side by side; each element of the result picks its source.
    let n = x.dims1().map_err(|e| Error::internal("candle", e))?;
    let mut from: Vec<usize> = (0..n).collect();
    for (k, &o) in a.offsets.iter().enumerate() {
        from[o] = n + k;
    }
    let both = ce(Tensor::cat(&[&x, &v], 0))?;
    let r = ce(both.index_select(&ids(&from, &both)?, 0))?;
    Ok(C::new(ce(r.reshape(shape))?))
}

/// `x.index_add(ids, v)` on the flat tensors: floats as they are, `I64` through `F64`,
/// booleans through `F64` and back as `!= 0` (PyTorch's `+` of booleans is `or`).
fn added(x: &Tensor, ids: &Tensor, v: &Tensor) -> R<Tensor> {
    match x.dtype() {
        DType::F32 | DType::F64 => ce(x.index_add(ids, v, 0)),
        d => {
            let (xw, vw) = (ce(x.to_dtype(DType::F64))?, ce(v.to_dtype(DType::F64))?);
            let r = ce(xw.index_add(ids, &vw, 0))?;
            match d {
                DType::U8 => ce(ce(r.ne(0.0))?.to_dtype(DType::U8)),
                _ => ce(r.to_dtype(d)),
            }
        }
    }
}

/// `scatter`'s index on the host, or PyTorch's dtype error.
pub(super) fn scatter_index(index: &C) -> R<Vec<i64>> {
    rules::check_index(IndexUse::Scatter, index.dtype())?;
    ce(ce(index.t.flatten_all())?.to_vec1::<i64>())
}

/// `x` (flat) with `at`'s writes from `values` (flat): both side by side, each element of
/// the result picks its source with candle's `index_select` (the last write stays).
fn written(self_: &C, at: &[(usize, usize)], values: &Tensor) -> R<C> {
    let x = flat(&self_.t)?;
    let n = x.elem_count();
    let mut from: Vec<usize> = (0..n).collect();
    for &(to, k) in at {
        from[to] = n + k;
    }
    let both = ce(Tensor::cat(&[&x, values], 0))?;
    let r = if from.is_empty() {
        x
    } else {
        ce(both.index_select(&ids(&from, &both)?, 0))?
    };
    Ok(C::new(ce(r.reshape(self_.shape()))?))
}

/// `scatter.src`: `self` with `src`'s elements written where `index` says along `dim` (the
/// last write to a position stays, as PyTorch's CPU kernel does).
pub(super) fn scatter_src(self_: &C, dim: i64, index: &C, src: &C) -> R<C> {
    let i = scatter_index(index)?;
    rules::check_scatter_src(self_.dtype(), src.dtype())?;
    let at = meta::scatter(self_.shape(), dim, index.shape(), &i, Some(src.shape()))?;
    written(self_, &at, &flat(&src.t)?)
}

/// `scatter.value`: `self` with `value` (converted to `self`'s dtype) written where `index`
/// says along `dim`.
pub(super) fn scatter_value(self_: &C, dim: i64, index: &C, value: Scalar) -> R<C> {
    let i = scatter_index(index)?;
    let at = meta::scatter(self_.shape(), dim, index.shape(), &i, None)?;
    let v = rules::converted_scalar(rules::Kind::of(self_.dtype()), value);
    let d = self_.t.dtype();
    let one = ce(Tensor::from_vec(vec![v], 1, self_.t.device()))?;
    let one = match d {
        DType::U8 => ce(ce(one.ne(0.0))?.to_dtype(DType::U8))?,
        _ => ce(one.to_dtype(d))?,
    };
    written(self_, &at, &one)
}
