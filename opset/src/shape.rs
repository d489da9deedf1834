//! Shapes and dims as PyTorch checks them, for kernels and composites alike; errors in
//! PyTorch's words ([`Error`]).

use crate::error::Error;

type R<T> = Result<T, Error>;

/// A PyTorch dimension (`-1` is the last) as an axis of a rank-`nd` tensor (a 0-d tensor
/// accepts 0 and -1, as in PyTorch).
pub fn norm_dim(d: i64, nd: usize) -> R<usize> {
    let n = nd.max(1) as i64;
    let i = if d < 0 { d + n } else { d };
    if !(0..n).contains(&i) {
        return Err(Error::index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {d})",
            -n,
            n - 1
        )));
    }
    Ok(i as usize)
}

/// Sorted, distinct axes of `dim` (`None` or `[]`: all). A 0-d tensor accepts dims 0 and -1
/// (PyTorch treats it as having one dimension of size 1 there) and has no axis to reduce.
/// A dim listed twice is PyTorch's error.
pub fn reduce_axes(dim: Option<&[i64]>, nd: usize) -> R<Vec<usize>> {
    match dim {
        Some(d) if !d.is_empty() => {
            let v = distinct_dims(d, nd)?;
            Ok(if nd == 0 { Vec::new() } else { v })
        }
        _ => Ok((0..nd).collect()),
    }
}

/// The dims of a dim list, normalized and sorted; PyTorch refuses a dim listed twice.
pub fn distinct_dims(d: &[i64], nd: usize) -> R<Vec<usize>> {
    let mut v = Vec::with_capacity(d.len());
    for x in d {
        let a = norm_dim(*x, nd)?;
        if v.contains(&a) {
            return Err(Error::runtime(format!(
                "dim {a} appears multiple times in the list of dims"
            )));
        }
        v.push(a);
    }
    v.sort_unstable();
    Ok(v)
}

/// The broadcast shape of two shapes, or PyTorch's error naming the first dim that differs.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> R<Vec<usize>> {
    let n = a.len().max(b.len());
    let at = |s: &[usize], i: usize| {
        if i + s.len() >= n {
            s[i + s.len() - n]
        } else {
            1
        }
    };
    // From the last dim, as PyTorch's `infer_size`, so the error names the same dim.
    let mut out = vec![0; n];
    for i in (0..n).rev() {
        out[i] = match (at(a, i), at(b, i)) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            (x, y) => {
                return Err(Error::runtime(format!(
                    "The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {i}"
                )));
            }
        };
    }
    Ok(out)
}

/// The class dim of `cross_entropy`'s input: 0 for `(C)`, else 1.
pub fn class_dim(nd: usize) -> usize {
    usize::from(nd >= 2)
}
