//! The checks of the matrix-product, cumulative, product-reduction and sorting ops (Core
//! ATen; issue 30): `addmm`, with PyTorch's wording.

use super::R;
use crate::dtype::torch_name;
use crate::error::check;
use crate::shape::expanded_shape;

/// `addmm(self, mat1, mat2)`: PyTorch's meta checks in its order (the dtypes, the ranks,
/// the inner sizes), then `self` expanded to the product's `[n, m]` (PyTorch's
/// `expand_size`). Each operand is `(shape, dtype)`; returns `[n, m]`.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::addmm((&[4], "f64"), (&[2, 3], "f64"), (&[3, 4], "f64")), Ok(vec![2, 4]));
/// let e = meta::addmm((&[4], "f64"), (&[6], "f64"), (&[3, 4], "f64")).unwrap_err();
/// assert_eq!(e.to_string(), "addmm: self must be a matrix, got 1-D tensor");
/// ```
pub fn addmm(
    self_: (&[usize], &str),
    mat1: (&[usize], &str),
    mat2: (&[usize], &str),
) -> R<Vec<usize>> {
    let dtypes = |a: &str, b: &str, x: &str, y: &str| {
        format!(
            "{a} and {b} must have the same dtype, but got {} and {}",
            torch_name(x),
            torch_name(y)
        )
    };
    check(self_.1 == mat2.1, || {
        dtypes("self", "mat2", self_.1, mat2.1)
    })?;
    check(mat1.1 == mat2.1, || dtypes("mat1", "mat2", mat1.1, mat2.1))?;
    let (a, b) = (mat1.0, mat2.0);
    check(a.len() == 2, || {
        format!("addmm: self must be a matrix, got {}-D tensor", a.len())
    })?;
    check(b.len() == 2, || {
        format!("addmm: mat2 must be a matrix, got {}-D tensor", b.len())
    })?;
    check(a[1] == b[0], || {
        format!(
            "addmm: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            a[0], a[1], b[0], b[1]
        )
    })?;
    expanded_shape(self_.0, &[a[0] as i64, b[1] as i64])
}
