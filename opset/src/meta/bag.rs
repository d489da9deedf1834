//! The checks of the embedding-bag ops (Core ATen; issue 30): `_embedding_bag` and its
//! backward ops, with PyTorch 2.15's wording and order (`EmbeddingBag.cpp`'s
//! `_embedding_bag_cpu_impl` and `check_arguments`).

use super::R;
use crate::dtype::{check_bag_float, check_bag_index, check_bag_same_type, torch_name};
use crate::error::{Error, check};
use crate::factory::check_has_dims;
use crate::shape::norm_dim;

/// `_embedding_bag`'s arguments as its checks read them (the index dtype is the promoted
/// one of `indices` and `offsets`).
#[derive(Debug, Clone, Copy)]
pub struct BagArgs<'a> {
    /// `weight`'s dtype.
    pub weight_dtype: &'a str,
    /// The promoted dtype of `indices` and `offsets`.
    pub index_dtype: &'a str,
    /// `indices.size(0)`.
    pub num_indices: usize,
    /// `offsets[0]` and `offsets[-1]` (`None`: no offsets).
    pub first_last: Option<(i64, i64)>,
    /// `mode`.
    pub mode: i64,
    /// `per_sample_weights`' shape and dtype, if given.
    pub per_sample_weights: Option<(&'a [usize], &'a str)>,
    /// `include_last_offset`.
    pub include_last_offset: bool,
    /// `offsets.size(0)`.
    pub num_offsets: usize,
}

/// PyTorch's `TORCH_CHECK(cond)` text without a message.
fn bare_check(cond: &str) -> String {
    format!(
        "Expected {cond} to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)"
    )
}

/// The ranks: `weight` 2-d, `indices` 1-d (PyTorch accepts 2-d here, then fails in its
/// kernel: that failure's text), `offsets` 1-d.
///
/// ```
/// use autograd_opset::meta;
/// assert!(meta::embedding_bag_dims(&[5, 3], &[6], &[2]).is_ok());
/// let e = meta::embedding_bag_dims(&[5, 3], &[6], &[]).unwrap_err();
/// assert_eq!(e.to_string(), "offsets has to be a 1D Tensor, but got Tensor of dimension 0");
/// ```
pub fn embedding_bag_dims(weight: &[usize], indices: &[usize], offsets: &[usize]) -> R<()> {
    check(weight.len() == 2, || {
        format!(
            "weight has to be a 2D Tensor, but got Tensor of dimension {}",
            weight.len()
        )
    })?;
    check(matches!(indices.len(), 1 | 2), || {
        format!(
            "input has to be a 1D or 2D Tensor, but got Tensor of dimension {}",
            indices.len()
        )
    })?;
    if indices.len() == 1 {
        check(offsets.len() == 1, || {
            format!(
                "offsets has to be a 1D Tensor, but got Tensor of dimension {}",
                offsets.len()
            )
        })?;
    }
    Ok(())
}

/// `check_arguments`: the dtypes, `offsets[0] == 0`, `offsets[-1] <= indices.size(0)`,
/// `per_sample_weights` (mode sum, `weight`'s dtype, 1-d, one per index), at least one
/// offset with `include_last_offset`; then the mode.
pub fn embedding_bag_args(a: &BagArgs) -> R<()> {
    check_bag_index("indices", a.index_dtype)?;
    check_bag_float("weight", a.weight_dtype)?;
    if let Some((first, last)) = a.first_last {
        check(first == 0, || {
            format!(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got {first}\n[ torch.{}Tensor{{}} ]",
                torch_name(a.index_dtype)
            )
        })?;
        check(last <= a.num_indices as i64, || {
            format!(
                "offsets[-1] can not be greater than input's length {} but got offsets[-1] of {last}",
                a.num_indices
            )
        })?;
    }
    if let Some((shape, dtype)) = a.per_sample_weights {
        check(a.mode == 0, || {
            "embedding_bag: per_sample_weights only supported with mode='sum'".into()
        })?;
        check_bag_same_type(a.weight_dtype, dtype)?;
        check(shape.len() == 1, || {
            bare_check("per_sample_weights.value().dim() == 1")
        })?;
        check(shape.iter().product::<usize>() == a.num_indices, || {
            bare_check("per_sample_weights.value().numel() == indices.numel()")
        })?;
    }
    if a.include_last_offset {
        check(a.num_offsets >= 1, || {
            "include_last_offset: number of offset should be at least 1".into()
        })?;
    }
    check((0..=2).contains(&a.mode), || {
        "`mode` must be sum, mean, or max.".into()
    })
}

/// 2-d indices reach PyTorch's kernel with one bag per row of `offset2bag`'s size, where its
/// reference (double) path fails with this assertion (other paths read out of bounds).
pub fn embedding_bag_2d_indices() -> Error {
    Error::runtime(bare_check("select_indices.numel() == add_indices.numel()"))
}

/// An index outside `[0, num_weights)` at `position`: the text of PyTorch's fast path (float,
/// half and bfloat16 weights in modes sum and mean without `padding_idx`) or of its loops.
pub fn embedding_bag_index_error(
    fast: bool,
    position: i64,
    value: i64,
    num_weights: usize,
) -> Error {
    Error::runtime(if fast {
        format!(
            "Index {position} of input takes value {value} which is not in the valid range [0, {num_weights})"
        )
    } else {
        format!(
            "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be {value}"
        )
    })
}

/// `_embedding_bag_per_sample_weights_backward`: the gradient's dtype (its dispatch), then
/// the mode.
pub fn embedding_bag_per_sample_weights_backward(grad_dtype: &str, mode: i64) -> R<()> {
    check(matches!(grad_dtype, "f16" | "bf16" | "f32" | "f64"), || {
        format!(
            "\"_embedding_bag_per_sample_weights_backward_cpu\" not implemented for '{}'",
            torch_name(grad_dtype)
        )
    })?;
    check(mode == 0, || {
        "embedding_bag_backward: per_sample_weights only supported for mode='sum'".into()
    })
}

/// The dense backward kernel reads a 2-d gradient (one row per bag; `grad.size(1)`'s errors
/// for fewer dims) and a mode of 0, 1 or 2 (PyTorch asserts both).
pub fn embedding_bag_grad(grad: &[usize], mode: i64) -> R<()> {
    check_has_dims(grad.len(), 1)?;
    norm_dim(1, grad.len())?;
    check(grad.len() == 2, || bare_check("grad.dim() == 2"))?;
    check((0..=2).contains(&mode), || {
        "`mode` must be sum, mean, or max.".into()
    })
}

/// `_embedding_bag_per_sample_weights_backward`'s assertion of a 2-d gradient, in PyTorch
/// 2.15's words.
pub fn embedding_bag_psw_grad(grad: &[usize]) -> R<()> {
    check(grad.len() == 2, || {
        "grad.dim() == 2 INTERNAL ASSERT FAILED at \"/__w/pytorch/pytorch/aten/src/ATen/native/EmbeddingBag.cpp\":1660, please report a bug to PyTorch. ".into()
    })
}

/// Mode max's backward reads `max_indices` as one row of `d` per bag.
pub fn embedding_bag_max_indices(max_indices: &[usize], d: usize) -> R<()> {
    check(max_indices.len() == 2 && max_indices[1] == d, || {
        bare_check("max_indices.dim() == 2 && max_indices.size(1) == grad.size(1)")
    })
}

/// `embedding_bag.padding_idx`'s `padding_idx`: within `[-num_weights, num_weights)`
/// (`weight.size(0)`'s error for a 0-d weight), wrapped to a row.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::embedding_bag_padding_idx(-2, &[5, 3]), Ok(3));
/// let e = meta::embedding_bag_padding_idx(5, &[5, 3]).unwrap_err();
/// assert_eq!(e.to_string(), "padding_idx must be within the number of embeddings, -5 through 4, but got 5");
/// ```
pub fn embedding_bag_padding_idx(padding_idx: i64, weight: &[usize]) -> R<i64> {
    check_has_dims(weight.len(), 0)?;
    let n = weight[0] as i64;
    check((-n..n).contains(&padding_idx), || {
        format!(
            "padding_idx must be within the number of embeddings, -{n} through {}, but got {padding_idx}",
            n - 1
        )
    })?;
    Ok(if padding_idx < 0 {
        padding_idx + n
    } else {
        padding_idx
    })
}
