//! The checks of the masked family (issue 30): `masked_fill`'s mask and value, with
//! PyTorch's wording.

use super::R;
use crate::error::check;

/// `masked_fill`'s mask must be boolean (`mask_dtype`: the op set's dtype name).
///
/// ```
/// use autograd_opset::meta;
/// assert!(meta::masked_fill_mask("bool").is_ok());
/// let e = meta::masked_fill_mask("i32").unwrap_err();
/// assert_eq!(e.to_string(), "masked_fill_ only supports boolean masks, but got mask with dtype int");
/// ```
pub fn masked_fill_mask(mask_dtype: &str) -> R<()> {
    check(mask_dtype == "bool", || {
        format!(
            "masked_fill_ only supports boolean masks, but got mask with dtype {}",
            crate::dtype::c10_name(mask_dtype)
        )
    })
}

/// `masked_fill.Tensor`'s value must be 0-d (`value_dim`: its number of dimensions).
///
/// ```
/// use autograd_opset::meta;
/// assert!(meta::masked_fill_value(0).is_ok());
/// let e = meta::masked_fill_value(1).unwrap_err();
/// assert_eq!(e.to_string(), "masked_fill_ only supports a 0-dimensional value tensor, \
///     but got tensor with 1 dimension(s).");
/// ```
pub fn masked_fill_value(value_dim: usize) -> R<()> {
    check(value_dim == 0, || {
        format!(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {value_dim} dimension(s)."
        )
    })
}

/// `masked_fill_`'s checks before its kernel, in PyTorch's order (`masked_fill__cpu`): the
/// value's rank (`masked_fill_.Tensor`: `value_dim`), the mask's dtype, then
/// `TensorIterator`'s broadcast of `self` and `mask` (the in-place kernel then checks that
/// the result keeps `self`'s shape).
pub fn masked_fill_inplace(
    self_shape: &[usize],
    mask_shape: &[usize],
    mask_dtype: &str,
    value_dim: Option<usize>,
) -> R<()> {
    if let Some(d) = value_dim {
        masked_fill_value(d)?;
    }
    masked_fill_mask(mask_dtype)?;
    crate::shape::broadcast_shape(self_shape, mask_shape).map(drop)
}

/// `addcdiv` refuses integer (and boolean) `tensor1` and `tensor2` (their dtypes' names).
///
/// ```
/// use autograd_opset::meta;
/// assert!(meta::addcdiv("i64", "f64").is_ok());
/// assert!(meta::addcdiv("i64", "bool").unwrap_err().to_string().starts_with("Integer division with addcdiv"));
/// ```
pub fn addcdiv(tensor1: &str, tensor2: &str) -> R<()> {
    let integral = |d: &str| crate::dtype::Kind::of(d) != crate::dtype::Kind::Float;
    check(!(integral(tensor1) && integral(tensor2)), || {
        "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.".into()
    })
}

/// `lerp`'s `end` and `weight` (`arg`) must have `self`'s dtype (the dtypes' names).
///
/// ```
/// use autograd_opset::meta;
/// let e = meta::lerp_dtype("f32", "f64", "end").unwrap_err();
/// assert_eq!(e.to_string(), "expected dtype float for `end` but got dtype double");
/// ```
pub fn lerp_dtype(self_: &str, other: &str, arg: &str) -> R<()> {
    use crate::dtype::c10_name;
    check(self_ == other, || {
        format!(
            "expected dtype {} for `{arg}` but got dtype {}",
            c10_name(self_),
            c10_name(other)
        )
    })
}
