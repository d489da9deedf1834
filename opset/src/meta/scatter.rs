//! The checks of `scatter_reduce.two` (Core ATen; issue 30), with PyTorch's wording
//! (`scatter_meta_impl` and `get_operator_enum` in `TensorAdvancedIndexing.cpp`), and the
//! reduction itself over row-major element buffers, shared by kernels that work on
//! plain data.

use super::R;
use crate::error::Error;

/// The reductions `scatter_reduce.two` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    /// `"sum"`.
    Sum,
    /// `"prod"`.
    Prod,
    /// `"mean"` (floor division on integer dtypes, as PyTorch).
    Mean,
    /// `"amax"`.
    Amax,
    /// `"amin"`.
    Amin,
}

/// `reduce` parsed, or PyTorch's "reduce argument must be either sum, prod, mean, amax or
/// amin, got ...".
///
/// ```
/// use autograd_opset::meta::{self, Reduce};
/// assert_eq!(meta::scatter_reduce_arg("amax"), Ok(Reduce::Amax));
/// assert_eq!(meta::scatter_reduce_arg("max").unwrap_err().to_string(),
///            "reduce argument must be either sum, prod, mean, amax or amin, got max");
/// ```
pub fn scatter_reduce_arg(reduce: &str) -> R<Reduce> {
    Ok(match reduce {
        "sum" => Reduce::Sum,
        "prod" => Reduce::Prod,
        "mean" => Reduce::Mean,
        "amax" => Reduce::Amax,
        "amin" => Reduce::Amin,
        _ => {
            return Err(Error::runtime(format!(
                "reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
            )));
        }
    })
}

/// `scatter_reduce.two`: PyTorch's checks in its order (the dim, the shapes against `src`,
/// the `reduce` argument, then each index in range) and, for each element of `index`
/// (row-major), the position in `self` it reduces into and the one in `src` it reads
/// (as [`scatter`](super::scatter)). The dtypes (self's equal to src's, an int64 index)
/// are the backend's checks.
///
/// ```
/// use autograd_opset::meta::{self, Reduce};
/// let (r, p) = meta::scatter_reduce(&[3], 0, &[2], &[2, 2], &[2], "prod").unwrap();
/// assert_eq!((r, p), (Reduce::Prod, vec![(2, 0), (2, 1)]));
/// let e = meta::scatter_reduce(&[3], 0, &[2], &[5, 0], &[2], "foo").unwrap_err();
/// assert!(e.to_string().starts_with("reduce argument must be"));
/// ```
pub fn scatter_reduce(
    self_: &[usize],
    dim: i64,
    index: &[usize],
    index_data: &[i64],
    src: &[usize],
    reduce: &str,
) -> R<(Reduce, Vec<(usize, usize)>)> {
    let ax = crate::shape::norm_dim(dim, self_.len())?;
    crate::shape::check_gather_shapes(self_, ax, index, Some(src))?;
    let r = scatter_reduce_arg(reduce)?;
    Ok((r, super::scatter(self_, dim, index, index_data, Some(src))?))
}

/// The values of `scatter_reduce.two` on row-major buffers: `self_` reduced with `src`
/// along `plan` (from [`scatter_reduce`]). Positions no index reaches keep `self_`'s value;
/// without `include_self` the others start from the first value scattered there. `mean`
/// divides by the count (plus one with `include_self`), flooring when `integer`.
///
/// ```
/// use autograd_opset::meta::{Reduce, scatter_reduce_values};
/// let plan = [(0, 0), (0, 1), (1, 2)];
/// let v = scatter_reduce_values(&[1.0, 2.0, 3.0], &[4.0, 6.0, 5.0], &plan, Reduce::Mean, true, false);
/// assert_eq!(v, vec![11.0 / 3.0, 3.5, 3.0]);
/// let v = scatter_reduce_values(&[1.0, 2.0, 3.0], &[4.0, 6.0, 5.0], &plan, Reduce::Amin, false, false);
/// assert_eq!(v, vec![4.0, 5.0, 3.0]);
/// ```
pub fn scatter_reduce_values(
    self_: &[f64],
    src: &[f64],
    plan: &[(usize, usize)],
    reduce: Reduce,
    include_self: bool,
    integer: bool,
) -> Vec<f64> {
    let mut out = self_.to_vec();
    let mut count = vec![usize::from(include_self); self_.len()];
    let mut seen = vec![include_self; self_.len()];
    for &(to, from) in plan {
        let (a, b) = (out[to], src[from]);
        out[to] = if !seen[to] { b } else { combine(reduce, a, b) };
        seen[to] = true;
        count[to] += 1;
    }
    if reduce == Reduce::Mean {
        for (o, &c) in out.iter_mut().zip(&count) {
            let c = c.max(1) as f64;
            *o = if integer { (*o / c).floor() } else { *o / c };
        }
    }
    out
}

/// One step of a reduction (NaN propagates through `amax`/`amin`, as PyTorch's).
fn combine(reduce: Reduce, a: f64, b: f64) -> f64 {
    match reduce {
        Reduce::Sum | Reduce::Mean => a + b,
        Reduce::Prod => a * b,
        Reduce::Amax if a.is_nan() || b.is_nan() => f64::NAN,
        Reduce::Amin if a.is_nan() || b.is_nan() => f64::NAN,
        Reduce::Amax => a.max(b),
        Reduce::Amin => a.min(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_in_pytorch_order() {
        let e = scatter_reduce(&[2, 3], 1, &[1, 4], &[0; 4], &[2, 2], "foo").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Expected index [1, 4] to be no larger than self [2, 3] apart from dimension 1 \
             and to be no larger size than src [2, 2]"
        );
        let e = scatter_reduce(&[2, 3], 1, &[1, 2], &[0, 5], &[2, 2], "foo").unwrap_err();
        assert!(e.to_string().starts_with("reduce argument must be"));
        let e = scatter_reduce(&[2, 3], 1, &[1, 2], &[0, 5], &[2, 2], "sum").unwrap_err();
        assert_eq!(
            e.to_string(),
            "index 5 is out of bounds for dimension 1 with size 3"
        );
    }

    #[test]
    fn reductions_match_pytorch() {
        // torch.zeros(3).scatter_reduce(0, tensor([0, 0, 2]), tensor([2., 3., 4.]), r, include_self)
        let plan = [(0, 0), (0, 1), (2, 2)];
        let (z, s) = ([0.0; 3], [2.0, 3.0, 4.0]);
        let v = |r, inc| scatter_reduce_values(&z, &s, &plan, r, inc, false);
        assert_eq!(v(Reduce::Sum, true), vec![5.0, 0.0, 4.0]);
        assert_eq!(v(Reduce::Prod, true), vec![0.0, 0.0, 0.0]);
        assert_eq!(v(Reduce::Prod, false), vec![6.0, 0.0, 4.0]);
        assert_eq!(v(Reduce::Mean, true), vec![5.0 / 3.0, 0.0, 2.0]);
        assert_eq!(v(Reduce::Mean, false), vec![2.5, 0.0, 4.0]);
        assert_eq!(v(Reduce::Amax, false), vec![3.0, 0.0, 4.0]);
        assert_eq!(v(Reduce::Amin, true), vec![0.0, 0.0, 0.0]);
        // Integer mean floors: (0 + 2 + 3) / 3 = 1, (0 + 4) / 2 = 2.
        let i = scatter_reduce_values(&z, &s, &plan, Reduce::Mean, true, true);
        assert_eq!(i, vec![1.0, 0.0, 2.0]);
    }
}
