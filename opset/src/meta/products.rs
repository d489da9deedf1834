//! The checks of the matrix-product, cumulative, product-reduction and sorting ops (Core
//! ATen; issue 30): `addmm`, with PyTorch's wording, and `sort`'s order.

use super::R;
use crate::dtype::torch_name;
use crate::error::check;
use crate::shape::{expanded_shape, norm_dim};
use std::cmp::Ordering;

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

/// `sort`: the indices that sort each lane of `values` (row-major, of shape `shape`) along
/// `dim`, as PyTorch's CPU kernel orders them: NaN above every number (last ascending, first
/// descending), equal values (and `-0.0` with `0.0`) in their order (a stable sort, which
/// PyTorch's `std::sort` also is on lanes of up to 16 elements).
///
/// ```
/// use autograd_opset::meta;
/// let v = [1.0, f64::NAN, 0.0, 1.0];
/// assert_eq!(meta::sort_indices(&v, &[4], -1, false), Ok(vec![2, 0, 3, 1]));
/// assert_eq!(meta::sort_indices(&v, &[4], 0, true), Ok(vec![1, 0, 3, 2]));
/// ```
pub fn sort_indices(values: &[f64], shape: &[usize], dim: i64, descending: bool) -> R<Vec<i64>> {
    let ax = norm_dim(dim, shape.len().max(1))?;
    if shape.is_empty() {
        return Ok(vec![0; values.len()]);
    }
    let (n, inner) = (shape[ax], shape[ax + 1..].iter().product::<usize>());
    let outer = shape[..ax].iter().product::<usize>();
    let asc = |a: f64, b: f64| match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    };
    let mut out = vec![0i64; values.len()];
    let mut perm: Vec<usize> = Vec::with_capacity(n);
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| (o * n + j) * inner + i;
            perm.clear();
            perm.extend(0..n);
            perm.sort_by(|&a, &b| match descending {
                false => asc(values[at(a)], values[at(b)]),
                true => asc(values[at(b)], values[at(a)]),
            });
            for (j, &p) in perm.iter().enumerate() {
                out[at(j)] = p as i64;
            }
        }
    }
    Ok(out)
}
