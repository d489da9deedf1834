//! PyTorch's composites `embedding_bag` and `embedding_bag.padding_idx` (issue 30):
//! `padding_idx` checked and wrapped, then `_embedding_bag` of contiguous indices and
//! offsets. A weight that neither requires grad nor has a tangent goes, in PyTorch, to
//! `_embedding_bag_forward_only`, whose only difference is mode sum's `bag_size` (and
//! `max_indices`, its copy): one zero per offset.

use super::{Backend, contiguous};
use crate::meta;
use autograd::runtime::{AutogradError, Variable};

type V<T> = Variable<T>;
/// The four outputs.
type Four<T> = Result<(V<T>, V<T>, V<T>, V<T>), AutogradError>;

/// `embedding_bag` (PyTorch's composite): `embedding_bag.padding_idx` without one.
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag<T: Backend>(
    weight: &V<T>,
    indices: &V<T>,
    offsets: &V<T>,
    scale_grad_by_freq: bool,
    mode: i64,
    sparse: bool,
    per_sample_weights: Option<&V<T>>,
    include_last_offset: bool,
) -> Four<T> {
    embedding_bag_padding_idx(
        weight,
        indices,
        offsets,
        scale_grad_by_freq,
        mode,
        sparse,
        per_sample_weights,
        include_last_offset,
        None,
    )
}

/// `embedding_bag.padding_idx` (PyTorch's composite).
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag_padding_idx<T: Backend>(
    weight: &V<T>,
    indices: &V<T>,
    offsets: &V<T>,
    scale_grad_by_freq: bool,
    mode: i64,
    sparse: bool,
    per_sample_weights: Option<&V<T>>,
    include_last_offset: bool,
    padding_idx: Option<i64>,
) -> Four<T> {
    let pad = match padding_idx {
        Some(p) => weight
            .with_data(|w| meta::embedding_bag_padding_idx(p, w.shape()))
            .map_err(AutogradError::backend)?,
        None => -1,
    };
    let (values, offset2bag, bag_size, max_indices) = crate::ops::_embedding_bag(
        weight,
        &contiguous(indices)?,
        &contiguous(offsets)?,
        scale_grad_by_freq,
        mode,
        sparse,
        per_sample_weights,
        include_last_offset,
        pad,
    )?;
    if mode != 0 || weight.requires_grad() || weight.has_fw_grad() {
        return Ok((values, offset2bag, bag_size, max_indices));
    }
    let n = offsets.with_data(|o| o.shape().first().copied().unwrap_or(0)) as i64;
    let zeros = crate::ops::new_zeros(&bag_size, &[n], None, None, None, None)?;
    Ok((values, offset2bag, zeros.clone(), zeros))
}
