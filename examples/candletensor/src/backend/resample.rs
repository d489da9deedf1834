//! The padding and upsampling kernels (`reflection_pad*`, `replication_pad*`,
//! `upsample_*`), compositions of candle's ops over the maps the op set's meta functions list
//! (`meta::Resample`: along each resampled dim, which input elements with which weights make
//! each output element), so the argument checks and the index arithmetic are PyTorch's,
//! shared with every backend. Along a dim, the taps are taken in ranks (each output
//! element's first tap, its second, ...): a rank is an `index_select` of the input lines it
//! reads, times its weights (skipped where every weight is 1: padding and nearest
//! upsampling, exact for every dtype), summed into the output with `index_add`; the backward
//! maps select the output lines and add them into the input's. Only the taps' own terms are
//! summed, as PyTorch's kernels sum them (a product with the map's matrix would add `0 *
//! inf = NaN` terms).

use super::{Ce, R, cpu};
use crate::tensor::CandleTensor;
use autograd_opset::meta::{Axis as Map, Resample};
use candle_core::Tensor;

/// One rank of a map's taps: (output indices, input indices, weights, all weights 1).
type Rank = (Vec<u32>, Vec<u32>, Vec<f64>, bool);

/// The map's taps by rank within each output element.
fn ranks(m: &Map) -> Vec<Rank> {
    let mut out: Vec<Rank> = Vec::new();
    let (mut last, mut k) = (usize::MAX, 0);
    for &(o, i, w) in &m.taps {
        k = if o == last { k + 1 } else { 0 };
        last = o;
        if out.len() <= k {
            out.push((Vec::new(), Vec::new(), Vec::new(), true));
        }
        let r = &mut out[k];
        r.0.push(o as u32);
        r.1.push(i as u32);
        r.2.push(w);
        r.3 &= w == 1.0;
    }
    out
}

fn ids(v: &[u32]) -> R<Tensor> {
    Tensor::from_vec(v.to_vec(), v.len(), &cpu()).ce()
}

/// `x`'s lines `at` along `dim`, times `w` (one weight per line) unless all are 1.
fn weighted(x: &Tensor, dim: usize, at: &[u32], w: &[f64], ones: bool) -> R<Tensor> {
    let t = x.index_select(&ids(at)?, dim).ce()?;
    if ones {
        return Ok(t);
    }
    let mut shape = vec![1; x.rank()];
    shape[dim] = w.len();
    let w = Tensor::from_vec(w.to_vec(), shape, &cpu())
        .ce()?
        .to_dtype(x.dtype())
        .ce()?;
    t.broadcast_mul(&w).ce()
}

/// `x` mapped along `m.dim`: each rank's weighted lines added at their targets (the output
/// lines, or with `transposed` the input lines).
fn along(x: &Tensor, m: &Map, transposed: bool) -> R<Tensor> {
    let mut shape = x.dims().to_vec();
    shape[m.dim] = if transposed { m.input } else { m.output };
    let mut out = Tensor::zeros(shape.as_slice(), x.dtype(), &cpu()).ce()?;
    if out.elem_count() == 0 {
        return Ok(out);
    }
    for (k, (o, i, w, ones)) in ranks(m).iter().enumerate() {
        let (to, from) = if transposed { (i, o) } else { (o, i) };
        let part = weighted(x, m.dim, from, w, *ones)?.contiguous().ce()?;
        // A first rank that fills every output line in order is the output itself.
        let whole = !transposed && k == 0 && to.len() == m.output;
        out = match whole {
            true => part,
            false => out.index_add(&ids(to)?, &part, m.dim).ce()?,
        };
    }
    out.contiguous().ce()
}

impl CandleTensor {
    /// The forward op: each map applied to `x` (of the plan's input shape); `x` may be of
    /// any dtype when the maps copy (`Resample::copies`).
    pub(super) fn resample(x: &Self, r: &Resample) -> R<Self> {
        let mut t = x.t.contiguous().ce()?;
        for m in &r.axes {
            t = along(&t, m, false)?;
        }
        Ok(CandleTensor::new(t))
    }

    /// The backward op: each map's transpose applied to the floating-point `g` (of the
    /// plan's output shape).
    pub(super) fn resample_backward(g: &Self, r: &Resample) -> R<Self> {
        let mut t = g.t.contiguous().ce()?;
        for m in r.axes.iter().rev() {
            t = along(&t, m, true)?;
        }
        Ok(CandleTensor::new(t))
    }
}
