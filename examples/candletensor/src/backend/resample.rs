//! The padding and upsampling kernels (`reflection_pad*`, `replication_pad*`,
//! `upsample_*`), compositions of candle's ops over the maps the op set's meta functions list
//! (`meta::Resample`: along each resampled dim, which input elements with which weights make
//! each output element), so the argument checks and the index arithmetic are PyTorch's,
//! shared with every backend. A map that copies one element per output element (padding,
//! nearest upsampling) is an `index_select` along its dim (exact for every dtype); a map
//! that mixes (bilinear upsampling), and every backward map, is a product with the map's
//! matrix along its dim.

use super::{Ce, R, cpu};
use crate::tensor::CandleTensor;
use autograd_opset::meta::{Axis as Map, Resample};
use candle_core::Tensor;

/// `x`'s dim `m.dim` gathered at each output's one input index.
fn gathered(x: &Tensor, m: &Map) -> R<Tensor> {
    let at: Vec<u32> = m.taps.iter().map(|t| t.1 as u32).collect();
    let at = Tensor::from_vec(at, m.taps.len(), &cpu()).ce()?;
    x.index_select(&at, m.dim).ce()?.contiguous().ce()
}

/// `x`'s dim `m.dim` multiplied by the map's matrix (`[output, input]`), or its transpose.
fn multiplied(x: &Tensor, m: &Map, transposed: bool) -> R<Tensor> {
    let (rows, cols) = if transposed {
        (m.input, m.output)
    } else {
        (m.output, m.input)
    };
    let mut shape = x.dims().to_vec();
    shape[m.dim] = rows;
    if x.elem_count() == 0 || rows == 0 || cols == 0 {
        return Tensor::zeros(shape, x.dtype(), &cpu()).ce();
    }
    let mut a = vec![0f64; rows * cols];
    for &(o, i, w) in &m.taps {
        let (r, c) = if transposed { (i, o) } else { (o, i) };
        a[r * cols + c] += w;
    }
    // `[cols, rows]`: the matrix's transpose, multiplied from the right.
    let at = Tensor::from_vec(a, (rows, cols), &cpu())
        .ce()?
        .t()
        .ce()?
        .contiguous()
        .ce()?
        .to_dtype(x.dtype())
        .ce()?;
    let last = shape.len() - 1;
    let moved = x.transpose(m.dim, last).ce()?.contiguous().ce()?;
    let lines = moved.elem_count() / cols;
    let mut moved_shape = moved.dims().to_vec();
    moved_shape[last] = rows;
    moved
        .reshape((lines, cols))
        .ce()?
        .matmul(&at)
        .ce()?
        .reshape(moved_shape)
        .ce()?
        .transpose(m.dim, last)
        .ce()?
        .contiguous()
        .ce()
}

impl CandleTensor {
    /// The forward op: each map applied to `x` (of the plan's input shape); `x` may be of
    /// any dtype when the maps copy (`Resample::copies`).
    pub(super) fn resample(x: &Self, r: &Resample) -> R<Self> {
        let copies = r.copies();
        let mut t = x.t.contiguous().ce()?;
        for m in &r.axes {
            t = match copies {
                true => gathered(&t, m)?,
                false => multiplied(&t, m, false)?,
            };
        }
        Ok(CandleTensor::new(t))
    }

    /// The backward op: each map's transpose applied to the floating-point `g` (of the
    /// plan's output shape).
    pub(super) fn resample_backward(g: &Self, r: &Resample) -> R<Self> {
        let mut t = g.t.clone();
        for m in r.axes.iter().rev() {
            t = multiplied(&t, m, true)?;
        }
        Ok(CandleTensor::new(t))
    }
}
