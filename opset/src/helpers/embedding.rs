//! The embedding family's default kernels (Core ATen; issue 30), written over other
//! kernels as `decompositions.rs`' are: `embedding_dense_backward`.

use super::Backend;
use crate::meta;
use autograd::types::{Scalar, ScalarType};

/// An `i64` 0-d tensor of `v` (a `where` operand that broadcasts).
fn int_scalar<T: Backend>(v: i64) -> Result<T, T::Error> {
    T::scalar_tensor(Scalar::Int(v), Some(ScalarType::I64), None, None, None)
}

/// `embedding_dense_backward` (PyTorch's `embedding_dense_backward_cpu`): a zero
/// `[num_weights, d]` gradient to which each index's row of `grad_output` is added, but
/// the rows of `padding_idx` and of indices outside `[0, num_weights)`, which PyTorch's
/// loop skips. With `scale_grad_by_freq` each row is first scaled by `1 / count` of its
/// index, as PyTorch's `add_` with that `alpha` does (for integer gradients the `alpha`
/// truncates to 1 for a unique index and 0 otherwise; booleans only add).
pub fn decomposed_embedding_dense_backward<T: Backend>(
    grad_output: &T,
    indices: &T,
    num_weights: i64,
    padding_idx: i64,
    scale_grad_by_freq: bool,
) -> Result<T, T::Error> {
    let n = indices.shape().iter().product::<usize>() as i64;
    let d = meta::embedding_dense_backward(
        grad_output.shape(),
        indices.dtype(),
        n as usize,
        num_weights,
    )? as i64;
    let out = T::new_zeros(grad_output, &[num_weights, d], None, None, None, None)?;
    if num_weights == 0 {
        return Ok(out);
    }
    let idx = T::reshape(indices, &[n])?;
    let in_range = T::logical_and(
        &T::ge_scalar(&idx, Scalar::Int(0))?,
        &T::lt_scalar(&idx, Scalar::Int(num_weights))?,
    )?;
    let keep = T::logical_and(&in_range, &T::ne_scalar(&idx, Scalar::Int(padding_idx))?)?;
    // Skipped rows go to row 0 as zeros.
    let at = T::where_self(&keep, &idx, &int_scalar::<T>(0)?)?;
    let zero = T::new_zeros(grad_output, &[], None, None, None, None)?;
    let mut rows = T::where_self(
        &T::unsqueeze(&keep, 1)?,
        &T::reshape(grad_output, &[n, d])?,
        &zero,
    )?;
    if scale_grad_by_freq {
        rows = scaled_by_frequency(&rows, &at, &keep, num_weights)?;
    }
    T::index_add(&out, 0, &at, &rows, Scalar::Int(1))
}

/// `rows` scaled by `1 / count` of their index among the kept ones (`at` the indices,
/// skipped rows at 0 and already zero), in the gradient's arithmetic: a float reciprocal,
/// an integer `alpha` truncated (1 for a count of 1, else 0), booleans unchanged.
fn scaled_by_frequency<T: Backend>(
    rows: &T,
    at: &T,
    keep: &T,
    num_weights: i64,
) -> Result<T, T::Error> {
    let ones = T::where_self(keep, &int_scalar::<T>(1)?, &int_scalar::<T>(0)?)?;
    let counts = T::new_zeros(at, &[num_weights], None, None, None, None)?;
    let counts = T::index_add(&counts, 0, at, &ones, Scalar::Int(1))?;
    // At least 1: a skipped row's count (of row 0) may be 0.
    let count = T::maximum(&T::index_select(&counts, 0, at)?, &int_scalar::<T>(1)?)?;
    let count = T::unsqueeze(&count, 1)?;
    match rows.dtype() {
        "bool" => Ok(rows.clone()),
        "i64" | "i32" | "u32" => {
            let unique = T::eq_scalar(&count, Scalar::Int(1))?;
            let zero = T::new_zeros(rows, &[], None, None, None, None)?;
            T::where_self(&unique, rows, &zero)
        }
        dt => {
            let c = T::_to_copy(
                &count,
                ScalarType::from_name(dt),
                None,
                None,
                None,
                false,
                None,
            )?;
            T::mul_tensor(rows, &T::reciprocal(&c)?)
        }
    }
}
