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

/// `as_strided`'s checks, in PyTorch's order and with its messages (`setStrided`,
/// `checkInBoundsForStorage`, `computeStorageNbytes`): one stride per size, no negative
/// stride, no negative offset, sizes whose storage size can be computed, and every element
/// read inside a storage of `storage_numel` elements of `itemsize` bytes. `Ok` means the
/// view reads only positions below `storage_numel` (or reads nothing).
///
/// ```
/// use autograd_opset::layout::as_strided;
/// assert!(as_strided(&[2, 2], &[1, 2], 1, 6, 8).is_ok());
/// assert_eq!(as_strided(&[3, 3], &[2, 2], 0, 6, 8).unwrap_err().to_string(),
///     "setStorage: sizes [3, 3], strides [2, 2], storage offset 0, and itemsize 8 requiring \
///      a storage size of 72 are out of bounds for storage of size 48");
/// ```
pub fn as_strided(
    size: &[i64],
    stride: &[i64],
    storage_offset: i64,
    storage_numel: usize,
    itemsize: usize,
) -> R<()> {
    if size.len() != stride.len() {
        return Err(Error::runtime("mismatch in length of strides and shape"));
    }
    if stride.iter().any(|s| *s < 0) {
        return Err(Error::runtime(format!(
            "as_strided: Negative strides are not supported at the moment, got strides: {stride:?}"
        )));
    }
    if storage_offset < 0 {
        return Err(Error::runtime(format!(
            "Tensor: invalid storage offset {storage_offset}"
        )));
    }
    let Some(elements) = storage_elements(size, stride, itemsize) else {
        return Err(Error::runtime(format!(
            "Storage size calculation overflowed with sizes={size:?} and strides={stride:?}"
        )));
    };
    if size.iter().any(|n| *n < 0) {
        return Err(Error::runtime("numel: integer multiplication overflow"));
    }
    let itemsize = itemsize as u64;
    let needed = (elements + storage_offset as u64) * itemsize;
    if elements > 0 && needed > storage_numel as u64 * itemsize {
        return Err(Error::runtime(format!(
            "setStorage: sizes {size:?}, strides {stride:?}, storage offset {storage_offset}, and \
             itemsize {itemsize} requiring a storage size of {needed} are out of bounds for \
             storage of size {}",
            storage_numel as u64 * itemsize
        )));
    }
    Ok(())
}

/// `computeStorageNbytes` in elements: one more than the last element's position (0 for an
/// empty view), `None` where PyTorch's unsigned arithmetic overflows (a negative size with
/// a nonzero stride).
fn storage_elements(size: &[i64], stride: &[i64], itemsize: usize) -> Option<u64> {
    let mut n = 1u64;
    for (&d, &s) in size.iter().zip(stride) {
        if d == 0 {
            return Some(0);
        }
        let span = (s as u64).checked_mul((d as u64).wrapping_sub(1))?;
        n = n.checked_add(span)?;
    }
    n.checked_mul(itemsize as u64)
        .filter(|b| *b <= i64::MAX as u64)?;
    Some(n)
}
