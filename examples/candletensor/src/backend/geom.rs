//! `nonzero`, `masked_scatter` and `masked_scatter_backward` (Core ATen; issue 30): the op
//! set's `meta::geom` functions check the arguments (the masks read on the host) and give
//! the positions; candle's `index_select` moves the elements (exact for every dtype).

use crate::tensor::CandleTensor;
use autograd::runtime::Tensor as _;
use autograd_opset::error::Error;
use autograd_opset::meta;
use candle_core::{DType, Tensor};

type C = CandleTensor;
type R<T> = Result<T, Error>;

fn ce<T>(r: candle_core::Result<T>) -> R<T> {
    r.map_err(|e| {
        let m = e.to_string();
        Error::internal("candle", m.lines().next().unwrap_or_default())
    })
}

fn flat(t: &Tensor) -> R<Tensor> {
    ce(ce(t.contiguous())?.flatten_all())
}

/// Whether each element (row-major) is nonzero (NaN is), read on the host.
fn set_elements(t: &C) -> R<Vec<bool>> {
    let v = ce(flat(&ce(t.t.to_dtype(DType::F64))?)?.to_vec1::<f64>())?;
    Ok(v.into_iter().map(|x| x != 0.0).collect())
}

/// The elements of the flat `x` at `positions`, shaped `shape` (an empty result made
/// directly: candle's `index_select` wants ids).
fn take(x: &Tensor, positions: &[usize], shape: &[usize]) -> R<C> {
    if positions.is_empty() {
        return Ok(C::new(ce(Tensor::zeros(shape, x.dtype(), x.device()))?));
    }
    let v: Vec<u32> = positions.iter().map(|&p| p as u32).collect();
    let ids = ce(Tensor::from_vec(v, positions.len(), x.device()))?;
    Ok(C::new(ce(ce(x.index_select(&ids, 0))?.reshape(shape))?))
}

/// `nonzero`: the `i64` coordinates of the nonzero elements, `[n, ndim]`.
pub(super) fn nonzero(self_: &C) -> R<C> {
    let (coords, shape) = meta::nonzero(self_.shape(), &set_elements(self_)?);
    Ok(C::new(ce(Tensor::from_vec(
        coords,
        shape,
        self_.t.device(),
    ))?))
}

/// `masked_scatter`: `self` broadcast with the mask, the source's elements in order where
/// the mask is set (`self`'s and the source's elements side by side, each element of the
/// result picking its own).
pub(super) fn masked_scatter(self_: &C, mask: &C, source: &C) -> R<C> {
    let shape = meta::masked_scatter(
        (self_.shape(), self_.dtype()),
        (mask.shape(), mask.dtype()),
        source.dtype(),
    )?;
    let numel = source.shape().iter().product();
    let from = meta::masked_scatter_sources(&shape, mask.shape(), &set_elements(mask)?, numel)?;
    let at = meta::broadcast_positions(self_.shape(), &shape);
    let x = flat(&self_.t)?;
    let n = x.elem_count();
    let both = ce(Tensor::cat(&[&x, &flat(&source.t)?], 0))?;
    let positions: Vec<usize> = at
        .iter()
        .zip(&from)
        .map(|(&p, k)| k.map_or(p, |k| n + k))
        .collect();
    take(&both, &positions, &shape)
}

/// `masked_scatter_backward`: the gradient's elements where the mask is set, zeros after
/// them, viewed as `sizes`.
pub(super) fn masked_scatter_backward(grad: &C, mask: &C, sizes: &[i64]) -> R<C> {
    let (at, shape) = meta::masked_scatter_backward(
        grad.shape(),
        (mask.shape(), mask.dtype()),
        &set_elements(mask)?,
        sizes,
    )?;
    let g = flat(&grad.t)?;
    let n: usize = shape.iter().product();
    let picked = take(&g, &at, &[at.len()])?;
    let zeros = ce(Tensor::zeros(n - at.len(), g.dtype(), g.device()))?;
    Ok(C::new(ce(
        ce(Tensor::cat(&[&picked.t, &zeros], 0))?.reshape(shape)
    )?))
}
