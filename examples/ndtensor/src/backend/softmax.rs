//! The floating-point kernels of softmax's backward functions (issue 30):
//! `_softmax_backward_data` (`output * (grad - sum(grad * output))` along the dim) and
//! `_log_softmax_backward_data` (`grad - exp(output) * sum(grad)`), as PyTorch's CPU
//! kernels compute them, lane by lane.

use super::NdTensor;
use crate::tensor::Element;
use ndarray::{Array, Axis, IxDyn, Zip};

impl<E: Element> NdTensor<E> {
    /// The gradient of `_softmax` (`log` false) or `_log_softmax` given the gradient of its
    /// `output`, along axis `ax`; the caller has checked the shapes (`meta`).
    pub(super) fn softmax_backward_data(grad: &Self, output: &Self, ax: usize, log: bool) -> Self {
        let zero_dim = grad.ndim() == 0;
        let (g, o) = (grad.arr(), output.arr());
        let (g, o, ax) = match zero_dim {
            true => (
                g.clone().insert_axis(Axis(0)),
                o.clone().insert_axis(Axis(0)),
                0,
            ),
            false => (g.clone(), o.clone(), ax),
        };
        let mut r: Array<E, IxDyn> = g.to_owned();
        let lanes = r.lanes_mut(Axis(ax)).into_iter();
        for ((mut rl, gl), ol) in lanes.zip(g.lanes(Axis(ax))).zip(o.lanes(Axis(ax))) {
            if log {
                let s = gl.fold(E::zero(), |a, b| a + *b);
                Zip::from(&mut rl)
                    .and(&gl)
                    .and(&ol)
                    .for_each(|r, g, o| *r = *g - o.exp() * s);
            } else {
                let s = Zip::from(&gl)
                    .and(&ol)
                    .fold(E::zero(), |a, g, o| a + *g * *o);
                Zip::from(&mut rl)
                    .and(&gl)
                    .and(&ol)
                    .for_each(|r, g, o| *r = *o * (*g - s));
            }
        }
        if zero_dim {
            r = r.index_axis_move(Axis(0), 0);
        }
        NdTensor::from_array(r)
    }
}
