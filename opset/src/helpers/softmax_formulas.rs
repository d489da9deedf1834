//! The softmax entries' helpers (compiled twice, as `formulas.rs`): PyTorch's
//! `softmax_double_backward`, and `Tensor::to(ScalarType)` (`_to_copy`), the conversion its
//! formulas write as `grad.to(output.dtype())`.

use super::*;

/// PyTorch's `softmax_double_backward`: the gradient of `_softmax_backward_data` for its
/// `output`, `grad` being the gradient of its result.
pub fn softmax_double_backward<T: Backend>(
    grad: &V<T>,
    grad_output: &V<T>,
    dim: i64,
    output: &V<T>,
) -> Res<V<T>> {
    let d = [dim];
    let go_sum = sum_dim_intlist(&mul_tensor(output, grad_output)?, Some(&d), true, None)?;
    let g_sum = sum_dim_intlist(&mul_tensor(output, grad)?, Some(&d), true, None)?;
    sub_tensor(
        &sub_tensor(
            &mul_tensor(grad_output, grad)?,
            &mul_tensor(&go_sum, grad)?,
            1.0,
        )?,
        &mul_tensor(grad_output, &g_sum)?,
        1.0,
    )
}

/// PyTorch's `Tensor::to(ScalarType)` (`grad.to(output.dtype())`): the tensor itself when it
/// has that dtype already, else `_to_copy` to it (PyTorch's decomposition of `to`).
pub fn to<T: Backend>(self_: &V<T>, dtype: &str) -> Res<V<T>> {
    if self_.with_data(|t| t.dtype()) == dtype {
        return Ok(self_.clone());
    }
    let dtype = autograd::types::ScalarType::from_name(dtype)
        .ok_or_else(|| AutogradError::msg(format!("no dtype named {dtype}")))?;
    _to_copy(self_, Some(dtype), None, None, None, false, None)
}
