//! `resize_`: PyTorch's in-place change of a tensor's sizes, as a composite over the
//! backend's kernels (PyTorch's `resize_` has no derivatives entry: its autograd wrapper
//! refuses a tensor that requires grad or carries a tangent).
//!
//! The elements a resized tensor keeps are its first ones in row-major order (PyTorch's
//! storage order for a contiguous tensor; PyTorch keeps the storage of a non-contiguous one,
//! whose order can differ); new elements are zeros (PyTorch's are uninitialised).

use super::Backend;
use autograd::runtime::{AutogradError, Variable};
use autograd::types::MemoryFormat;

/// `self.resize_(size)`: `self` takes `size`, keeping its first elements (zeros after them).
///
/// PyTorch's errors: "cannot resize variables that require grad", "cannot resize variables
/// that has a forward grad", a negative size ("numel: integer multiplication overflow"), a
/// channels-last format of the wrong rank. A view is refused: the runtime's views are
/// functional (docs/views.md), so a view cannot take other sizes than its replay's.
pub fn resize_<T: Backend>(
    self_: &Variable<T>,
    size: &[i64],
    memory_format: Option<MemoryFormat>,
) -> Result<Variable<T>, AutogradError> {
    let fail = |m: &str| AutogradError::backend(crate::Error::runtime(m.to_string()));
    if self_.requires_grad() {
        return Err(fail("cannot resize variables that require grad"));
    }
    let sizes: Vec<usize> = size
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<_, _>>()
        .map_err(|_| fail("numel: integer multiplication overflow"))?;
    let numel = sizes
        .iter()
        .try_fold(1usize, |a, d| a.checked_mul(*d))
        .filter(|n| i64::try_from(*n).is_ok())
        .ok_or_else(|| fail("numel: integer multiplication overflow"))?;
    match (memory_format, sizes.len()) {
        (Some(MemoryFormat::ChannelsLast), n) if n != 4 => {
            return Err(fail("required rank 4 tensor to use channels_last format"));
        }
        (Some(MemoryFormat::ChannelsLast3d), n) if n != 5 => {
            return Err(fail(
                "required rank 5 tensor to use channels_last_3d format",
            ));
        }
        (Some(MemoryFormat::Preserve), _) => return Err(fail("Unsupported memory formatPreserve")),
        _ => {}
    }
    let resized = self_
        .with_data(|t| resized(t, numel, size, memory_format))
        .map_err(AutogradError::backend)?;
    if self_.has_fw_grad() {
        return Err(fail("cannot resize variables that has a forward grad"));
    }
    if self_.is_view() {
        return Err(fail(
            "resize_: the op set's views are functional and cannot be resized",
        ));
    }
    self_.set_data(resized);
    self_.bump_version();
    Ok(self_.clone())
}

/// `t`'s first `numel` elements in row-major order (zeros after its own), with `size`, laid
/// out in `format`: channels-last elements are the storage of a `[N, H, W, C]` (or
/// `[N, D, H, W, C]`) tensor, seen as `[N, C, H, W]` through a permutation (whose strides are
/// PyTorch's channels-last ones).
fn resized<T: Backend>(
    t: &T,
    numel: usize,
    size: &[i64],
    format: Option<MemoryFormat>,
) -> Result<T, T::Error> {
    let flat = T::reshape(t, &[-1])?;
    let have = t.shape().iter().product::<usize>();
    let kept = if numel <= have {
        T::narrow(&flat, 0, 0, numel as i64)?
    } else {
        let zeros = T::new_zeros(&flat, &[(numel - have) as i64], None, None, None, None)?;
        T::cat(&[flat, zeros], 0)?
    };
    let channels_last: &[i64] = match format {
        Some(MemoryFormat::ChannelsLast) => &[0, 3, 1, 2],
        Some(MemoryFormat::ChannelsLast3d) => &[0, 4, 1, 2, 3],
        _ => return T::reshape(&kept, size),
    };
    let mut stored = size.to_vec();
    let c = stored.remove(1);
    stored.push(c);
    T::permute(&T::reshape(&kept, &stored)?, channels_last)
}
