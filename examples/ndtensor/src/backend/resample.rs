//! The padding and upsampling kernels (`reflection_pad*`, `replication_pad*`,
//! `upsample_*`): each applies, along each resampled dim, the linear map the op set's meta
//! functions list (`meta::Resample`: which input elements, with which weights, make each
//! output element), so the index arithmetic and the argument checks are PyTorch's, shared
//! with every backend. The backward kernels apply the transposed maps (sums over the input
//! elements an output element read).

use crate::storage::FloatTensor;
use crate::tensor::Element;
use autograd_opset::meta::{Axis as Map, Resample};
use ndarray::{Array, ArrayD, Axis, IxDyn, Zip};

type F<E> = FloatTensor<E>;

/// `a` mapped along one dim: output line `o` (or, `transposed`, input line `i`) sums its
/// taps' lines times their weights.
fn along<E: Element>(a: &ArrayD<E>, m: &Map, transposed: bool) -> ArrayD<E> {
    let mut shape = a.shape().to_vec();
    shape[m.dim] = if transposed { m.input } else { m.output };
    let mut out = Array::zeros(IxDyn(&shape));
    for &(o, i, w) in &m.taps {
        let (to, from) = if transposed { (i, o) } else { (o, i) };
        let w = E::of(w);
        let src = a.index_axis(Axis(m.dim), from);
        let dst = out.index_axis_mut(Axis(m.dim), to);
        Zip::from(dst).and(&src).for_each(|d, s| *d += *s * w);
    }
    out
}

impl<E: Element> FloatTensor<E> {
    /// The forward op: each map applied to `x` (of the plan's input shape).
    pub(crate) fn resample(x: &Self, r: &Resample) -> Self {
        let mut a = x.to_owned();
        for m in &r.axes {
            a = along(&a, m, false);
        }
        F::from_array(a)
    }

    /// The backward op: each map's transpose applied to `g` (of the plan's output shape).
    pub(crate) fn resample_backward(g: &Self, r: &Resample) -> Self {
        let mut a = g.to_owned();
        for m in r.axes.iter().rev() {
            a = along(&a, m, true);
        }
        F::from_array(a)
    }
}
