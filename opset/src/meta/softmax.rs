//! The softmax ops' checks: PyTorch's meta functions of `_softmax`, `_log_softmax` and
//! their backward functions, and its CPU kernels' argument and dtype checks.

use crate::dtype::{check_floats, check_same};
use crate::error::{Error, check};
use crate::shape::norm_dim;

type R<T> = Result<T, Error>;

/// The name of PyTorch's CPU kernel of a softmax op (`log` or not, backward or not) for
/// `dim` of an `ndim`-dimensional tensor (the last dim has a kernel of its own).
fn kernel_name(log: bool, backward: bool, ndim: usize, dim: i64) -> String {
    let nd = ndim as i64;
    let last = dim == -1 || dim == nd - 1 || nd == 0;
    format!(
        "{}softmax{}{}_kernel_impl",
        if log { "log_" } else { "" },
        if backward { "_backward" } else { "" },
        if last { "_lastdim" } else { "" },
    )
}

/// `_softmax` (`log` false) and `_log_softmax`: the axis of `dim` (PyTorch's meta
/// function), then its CPU kernel's checks: no half-to-float conversion, floats only.
pub fn softmax(log: bool, dtype: &str, shape: &[usize], dim: i64, half_to_float: bool) -> R<usize> {
    let ax = norm_dim(dim, shape.len())?;
    check(!half_to_float, || {
        "softmax with half to float conversion is not supported on CPU".into()
    })?;
    check_floats(dtype, &kernel_name(log, false, shape.len(), dim))?;
    Ok(ax)
}

/// `_softmax_backward_data` (`log` false) and `_log_softmax_backward_data`: `grad_output`
/// and `output` of one size (PyTorch checks it for softmax; its log-softmax kernel reads
/// `output` as if it were, so the op set checks it there too, in the same words), the axis
/// of `dim`, then the CPU kernel's dtype checks: floats, `output` of `grad_output`'s dtype.
pub fn softmax_backward_data(
    log: bool,
    (grad, grad_dtype): (&[usize], &str),
    (output, output_dtype): (&[usize], &str),
    dim: i64,
) -> R<usize> {
    let name = if log {
        "log_softmax_backward"
    } else {
        "softmax_backward"
    };
    check(grad == output, || {
        format!(
            "Expected tensor for argument #1 'grad' to have same size as tensor for argument #2 'output'; but {grad:?} does not equal {output:?} (while checking arguments for {name})"
        )
    })?;
    let ax = norm_dim(dim, grad.len())?;
    check_floats(grad_dtype, &kernel_name(log, true, grad.len(), dim))?;
    check_same(grad_dtype, output_dtype)?;
    Ok(ax)
}
