//! The kernels of softmax's backward functions (issue 30), composed of candle's ops:
//! `_softmax_backward_data` (`output * (grad - sum(grad * output))` along the dim) and
//! `_log_softmax_backward_data` (`grad - exp(output) * sum(grad)`), as PyTorch's CPU
//! kernels compute them.

use super::{Ce, R, promote, reshape_to, w};
use crate::tensor::CandleTensor;

impl CandleTensor {
    /// The gradient of `_softmax` (`log` false) or `_log_softmax` given the gradient of its
    /// `output`, along axis `ax`; the caller has checked the shapes and dtypes (`meta`).
    pub(super) fn softmax_backward_data(
        grad: &Self,
        output: &Self,
        ax: usize,
        log: bool,
    ) -> R<Self> {
        if grad.numel() == 0 {
            return Ok(grad.clone());
        }
        let (g, o) = (promote(&grad.t)?, promote(&output.t)?);
        let r = if log {
            let s = g.sum_keepdim(ax).ce()?;
            g.broadcast_sub(&o.exp().ce()?.broadcast_mul(&s).ce()?)
                .ce()?
        } else {
            let s = g.mul(&o).ce()?.sum_keepdim(ax).ce()?;
            o.mul(&g.broadcast_sub(&s).ce()?).ce()?
        };
        Ok(w(reshape_to(&r, grad.shape())?))
    }
}
