//! The checks of the selection ops (Core ATen; issue 30): `split_with_sizes` and `topk`,
//! with PyTorch's wording.

use super::R;
use crate::error::check;
use crate::shape::norm_dim;
use std::ops::Range;

/// `split_with_sizes`: PyTorch's checks (a 0-d input, the dim, negative sizes, the sum) and
/// the axis with each piece's range along it.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::split_with_sizes(&[3, 4], &[1, 3], -1), Ok((1, vec![0..1, 1..4])));
/// let e = meta::split_with_sizes(&[3, 4], &[1, 2], 1).unwrap_err();
/// assert_eq!(e.to_string(), "split_with_sizes expects split_sizes to sum exactly to 4 \
///     (input tensor's size at dimension 1), but got split_sizes=[1, 2]");
/// ```
pub fn split_with_sizes(
    shape: &[usize],
    split_sizes: &[i64],
    dim: i64,
) -> R<(usize, Vec<Range<i64>>)> {
    check(!shape.is_empty(), || {
        "split expects at least a 1-dimensional tensor".into()
    })?;
    let ax = norm_dim(dim, shape.len())?;
    check(split_sizes.iter().all(|&s| s >= 0), || {
        format!(
            "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={split_sizes:?}"
        )
    })?;
    let n = shape[ax] as i64;
    check(split_sizes.iter().sum::<i64>() == n, || {
        format!(
            "split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at dimension {ax}), but got split_sizes={split_sizes:?}"
        )
    })?;
    let mut start = 0;
    let ranges = split_sizes
        .iter()
        .map(|&s| {
            start += s;
            start - s..start
        })
        .collect();
    Ok((ax, ranges))
}

/// `topk`: PyTorch's checks (the dim, `k` within the dim's size: a 0-d input has one
/// element; booleans refused, as its CPU kernel does) and the axis.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::topk(&[2, 5], "f64", 3, -1), Ok(1));
/// assert_eq!(meta::topk(&[2, 5], "f64", 6, 1).unwrap_err().to_string(),
///            "selected index k out of range");
/// ```
pub fn topk(shape: &[usize], dtype: &str, k: i64, dim: i64) -> R<usize> {
    let ax = norm_dim(dim, shape.len())?;
    let n = shape.get(ax).map_or(1, |&n| n as i64);
    check((0..=n).contains(&k), || {
        "selected index k out of range".into()
    })?;
    check(dtype != "bool", || {
        "topk does not support bool dtypes on CPU".into()
    })?;
    Ok(ax)
}
