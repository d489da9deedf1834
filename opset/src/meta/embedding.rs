//! The checks of the embedding ops (Core ATen; issue 30): `embedding_dense_backward`, with
//! PyTorch 2.15's wording and order.

use super::R;
use crate::dtype::{IndexUse, check_index};
use crate::error::{Error, check};
use crate::factory::check_has_dims;

/// `embedding_dense_backward`: the indices' dtype, the gradient's last size (an
/// `IndexError` for a 0-d gradient), a non-negative `num_weights` (`at::zeros`' check) and
/// the gradient viewed as one row per index; the row length.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::embedding_dense_backward(&[2, 3, 2], "i64", 6, 4), Ok(2));
/// let e = meta::embedding_dense_backward(&[3, 2], "i64", 6, 4).unwrap_err();
/// assert_eq!(e.to_string(), "shape '[6, 2]' is invalid for input of size 6");
/// ```
pub fn embedding_dense_backward(
    grad: &[usize],
    indices_dtype: &str,
    indices_numel: usize,
    num_weights: i64,
) -> R<usize> {
    check_index(IndexUse::EmbeddingBackward, indices_dtype)?;
    check_has_dims(grad.len(), -1)?;
    let d = grad[grad.len() - 1];
    check(num_weights >= 0, || {
        "zeros: Dimension size must be non-negative.".into()
    })?;
    let numel: usize = grad.iter().product();
    if indices_numel * d != numel {
        return Err(Error::runtime(format!(
            "shape '[{indices_numel}, {d}]' is invalid for input of size {numel}"
        )));
    }
    Ok(d)
}
