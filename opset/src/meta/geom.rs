//! The checks of `nonzero`, `masked_scatter` (and its backward), the distance ops and
//! `grid_sampler_2d` (Core ATen; issue 30), with PyTorch's wording, and the positions the
//! kernels move elements to.

use super::R;
use crate::dtype::torch_name;
use crate::error::check;
use crate::shape::broadcast_shape;

/// The row-major strides of `shape` (in elements).
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// For each row-major position of `to`, the row-major position in `from` that broadcasting
/// `from` to `to` reads (`from` must broadcast to `to`).
pub fn broadcast_positions(from: &[usize], to: &[usize]) -> Vec<usize> {
    let (st, sf) = (strides(to), strides(from));
    let lead = to.len() - from.len();
    let n: usize = to.iter().product();
    (0..n)
        .map(|p| {
            (0..from.len())
                .map(|i| match from[i] {
                    1 => 0,
                    _ => (p / st[lead + i]) % to[lead + i] * sf[i],
                })
                .sum()
        })
        .collect()
}

/// `nonzero`: the `[n, ndim]` row-major coordinates of the set elements of a tensor of
/// `shape` (`set` row-major), and that shape. A 0-d tensor gives `[1, 0]` or `[0, 0]`.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::nonzero(&[2, 2], &[false, true, true, false]),
///            (vec![0, 1, 1, 0], vec![2, 2]));
/// assert_eq!(meta::nonzero(&[], &[true]), (vec![], vec![1, 0]));
/// ```
pub fn nonzero(shape: &[usize], set: &[bool]) -> (Vec<i64>, Vec<usize>) {
    let st = strides(shape);
    let mut coords = Vec::new();
    let mut n = 0;
    for (p, _) in set.iter().enumerate().filter(|(_, s)| **s) {
        n += 1;
        coords.extend(st.iter().zip(shape).map(|(s, d)| ((p / s) % d) as i64));
    }
    (coords, vec![n, shape.len()])
}

/// `masked_scatter(self, mask, source)`'s checks in PyTorch's order (`self` and `mask`
/// broadcast, the dtypes of `self` and `source`, a boolean mask) and the result's shape.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::masked_scatter((&[3], "f64"), (&[2, 1], "bool"), "f64"), Ok(vec![2, 3]));
/// let e = meta::masked_scatter((&[3], "f64"), (&[3], "f32"), "f64").unwrap_err();
/// assert_eq!(e.to_string(),
///            "masked_scatter_ only supports boolean masks, but got mask with dtype Float");
/// ```
pub fn masked_scatter(
    self_: (&[usize], &str),
    mask: (&[usize], &str),
    source: &str,
) -> R<Vec<usize>> {
    let shape = broadcast_shape(mask.0, self_.0)?;
    check(self_.1 == source, || {
        format!(
            "masked_scatter: expected self and source to have same dtypes but got{} and {}",
            torch_name(self_.1),
            torch_name(source)
        )
    })?;
    check(mask.1 == "bool", || {
        format!(
            "masked_scatter_ only supports boolean masks, but got mask with dtype {}",
            torch_name(mask.1)
        )
    })?;
    Ok(shape)
}

/// `masked_scatter`'s moves: for each row-major position of the result (of `shape`), the
/// position in the flattened `source` it takes (`None`: it keeps `self`'s element), the
/// mask (`set` row-major, of `mask_shape`) broadcast to `shape`; PyTorch's error when
/// `source` has fewer elements than the mask sets.
pub fn masked_scatter_sources(
    shape: &[usize],
    mask_shape: &[usize],
    set: &[bool],
    source_numel: usize,
) -> R<Vec<Option<usize>>> {
    let mut k = 0;
    let moves: Vec<Option<usize>> = broadcast_positions(mask_shape, shape)
        .into_iter()
        .map(|m| {
            set[m].then(|| {
                k += 1;
                k - 1
            })
        })
        .collect();
    check(k <= source_numel, || {
        "Number of elements of source < number of ones in mask".into()
    })?;
    Ok(moves)
}

/// `masked_scatter_backward(grad_output, mask, sizes)`: the positions of `grad_output` (of
/// `grad`'s shape) the broadcast mask selects, in order (PyTorch's `masked_select`, then
/// zeros to `sizes`' element count), with PyTorch's errors of `masked_select` and `view`.
pub fn masked_scatter_backward(
    grad: &[usize],
    mask: (&[usize], &str),
    set: &[bool],
    sizes: &[i64],
) -> R<(Vec<usize>, Vec<usize>)> {
    check(mask.1 == "bool", || {
        "masked_select: expected BoolTensor for mask".into()
    })?;
    let shape = broadcast_shape(mask.0, grad)?;
    let (g, m) = (
        broadcast_positions(grad, &shape),
        broadcast_positions(mask.0, &shape),
    );
    let picked: Vec<usize> = g
        .into_iter()
        .zip(m)
        .filter(|(_, m)| set[*m])
        .map(|(g, _)| g)
        .collect();
    // Zeros fill in up to the sizes' count (PyTorch's `diff_nelem > 0`), then the view.
    let numel: i64 = sizes.iter().product();
    let total = (picked.len() as i64).max(numel) as usize;
    Ok((picked, crate::shape::infer_shape(sizes, total)?))
}
