//! A tensor's layout as PyTorch reports it: `sym_stride.int`, `sym_storage_offset` and
//! `sym_is_contiguous` (Core ATen's layout queries).
//!
//! The runtime's tensors are values (views are functionalized, docs/views.md), so a layout
//! is the backend's own: a backend's `sym_stride_int` and `sym_storage_offset` kernels report
//! the strides and offset of its storage, and this module gives PyTorch's rules over them:
//! the strides of a fresh tensor ([`contiguous_strides`]), what "contiguous" means for each
//! memory format ([`is_contiguous`], c10's `Contiguity.h`) and the dimension check.
//!
//! PyTorch's view ops (`transpose`, `permute`, `slice`, `select`, `expand`, `unsqueeze`,
//! `diagonal`, ...) define their results' strides; a backend whose views share storage
//! (ndtensor's, candle's) reports those, and a fresh result is contiguous. PyTorch's
//! elementwise ops keep the dense stride order of a permuted input (`x.t().exp()` has
//! `x.t()`'s strides): the op set's backends return such results contiguous (opset/README.md,
//! "Layout").

use crate::error::Error;
use autograd::types::MemoryFormat;

type R<T> = Result<T, Error>;

/// The strides of a fresh (contiguous, row-major) tensor of `sizes`, in elements, as PyTorch
/// makes them: each is the product of the later sizes, a size of 0 counting as 1
/// (`torch.empty(2, 0, 3).stride()` is `(3, 3, 1)`).
///
/// ```
/// assert_eq!(autograd_opset::layout::contiguous_strides(&[2, 0, 3]), [3, 3, 1]);
/// ```
pub fn contiguous_strides(sizes: &[usize]) -> Vec<i64> {
    let mut strides = vec![1i64; sizes.len()];
    for i in (0..sizes.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * sizes[i + 1].max(1) as i64;
    }
    strides
}

/// Whether a tensor of `sizes` and `strides` is contiguous in `format`: c10's
/// `_compute_contiguous` (dimensions of size 1 are skipped; an empty tensor is contiguous),
/// and for `ChannelsLast` (4-d) / `ChannelsLast3d` (5-d) the channels-last order; other ranks
/// are never channels-last contiguous. `Preserve` asks the default question, as PyTorch's
/// `is_contiguous` does.
///
/// ```
/// use autograd::types::MemoryFormat;
/// use autograd_opset::layout::is_contiguous;
/// assert!(is_contiguous(&[3, 4], &[4, 1], MemoryFormat::Contiguous));
/// assert!(!is_contiguous(&[4, 3], &[1, 4], MemoryFormat::Contiguous));
/// assert!(is_contiguous(&[2, 3, 1, 1], &[3, 1, 3, 3], MemoryFormat::ChannelsLast));
/// ```
pub fn is_contiguous(sizes: &[usize], strides: &[i64], format: MemoryFormat) -> bool {
    let order: &[usize] = match (format, sizes.len()) {
        (MemoryFormat::ChannelsLast, 4) => &[1, 3, 2, 0],
        (MemoryFormat::ChannelsLast3d, 5) => &[1, 4, 3, 2, 0],
        (MemoryFormat::ChannelsLast | MemoryFormat::ChannelsLast3d, _) => return false,
        (MemoryFormat::Contiguous | MemoryFormat::Preserve, _) => {
            if sizes.contains(&0) {
                return true;
            }
            return dense_in_order(sizes, strides, (0..sizes.len()).rev());
        }
    };
    dense_in_order(sizes, strides, order.iter().copied())
}

/// Whether the dimensions taken innermost first in `order` have the strides of a dense
/// tensor (size-1 dimensions skipped).
fn dense_in_order(sizes: &[usize], strides: &[i64], order: impl Iterator<Item = usize>) -> bool {
    let mut expected = 1i64;
    for d in order {
        if sizes[d] == 1 {
            continue;
        }
        if strides[d] != expected {
            return false;
        }
        expected *= sizes[d] as i64;
    }
    true
}

/// `sym_stride.int`'s dimension: PyTorch's `IndexError`s for a 0-d tensor and for one out of
/// range; the dimension counted from the front.
pub fn stride_dim(ndim: usize, dim: i64) -> R<usize> {
    crate::factory::check_has_dims(ndim, dim)?;
    crate::shape::norm_dim(dim, ndim)
}
