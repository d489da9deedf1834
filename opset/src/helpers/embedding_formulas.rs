//! The embedding family's helpers (issue 30): PyTorch's `embedding_backward_symint` (the
//! dense path: the `embedding_dense_backward` op) and `embedding_dense_double_backward_symint`
//! (FunctionsManual.cpp). Compiled twice, as `formulas.rs`: over `Variable<T>` and over raw
//! tensors.

use super::*;
use autograd::types::Scalar;

/// PyTorch's `embedding_backward_symint`: `embedding_dense_backward`. `sparse=True` asks
/// for a sparse gradient (`embedding_sparse_backward`), and the op set has no sparse
/// tensors: an error, rather than a dense gradient where PyTorch gives a sparse one.
pub fn embedding_backward_symint<T: Backend>(
    grad: &V<T>,
    indices: &V<T>,
    num_weights: i64,
    padding_idx: i64,
    scale_grad_by_freq: bool,
    sparse: bool,
) -> Res<V<T>> {
    if sparse {
        return Err(AutogradError::msg(
            "embedding: sparse=True asks for a sparse gradient (embedding_sparse_backward); the op set has no sparse tensors",
        ));
    }
    embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq)
}

/// PyTorch's `embedding_dense_double_backward_symint`: the rows of `grad` the indices pick,
/// zero for `padding_idx`, shaped as the indices with a last dim. As PyTorch's, it leaves
/// out `scale_grad_by_freq`'s `1 / count` (its comment: the first backward scales).
pub fn embedding_dense_double_backward_symint<T: Backend>(
    grad: &V<T>,
    indices: &V<T>,
    padding_idx: i64,
) -> Res<V<T>> {
    let mut gg_weight = index_select(grad, 0, &reshape(indices, &[-1])?)?;
    let mut size: Vec<i64> = indices.shape().iter().map(|&s| s as i64).collect();
    size.push(-1);
    if padding_idx >= 0 {
        let pad = reshape(&eq_scalar(indices, Scalar::Int(padding_idx))?, &[-1, 1])?;
        gg_weight = masked_fill_scalar(&gg_weight, &pad, Scalar::Int(0))?;
    }
    view(&gg_weight, &size)
}
