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
/// assert_eq!(meta::scatter_reduce_arg("max"), Ok(Reduce::Amax));
/// assert_eq!(meta::scatter_reduce_arg("maximum").unwrap_err().to_string(),
///            "reduce argument must be either sum, prod, mean, amax or amin, got maximum");
/// ```
pub fn scatter_reduce_arg(reduce: &str) -> R<Reduce> {
    Ok(match reduce {
        "sum" => Reduce::Sum,
        "prod" => Reduce::Prod,
        "mean" => Reduce::Mean,
        // PyTorch 2.15's kernel also takes `scatter.reduce`'s names `max` and `min` (its
        // backward then refuses them).
        "amax" | "max" => Reduce::Amax,
        "amin" | "min" => Reduce::Amin,
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

/// An element type [`scatter_reduce_values`] reduces: `f64` (floating-point dtypes), `i64`
/// (integers and booleans, with wrapping arithmetic and floor division as PyTorch's
/// integer kernels).
pub trait ReduceElement: Copy + PartialEq {
    /// `a + b`.
    fn reduce_add(self, b: Self) -> Self;
    /// `a * b`.
    fn reduce_mul(self, b: Self) -> Self;
    /// The larger (NaN propagates).
    fn reduce_max(self, b: Self) -> Self;
    /// The smaller (NaN propagates).
    fn reduce_min(self, b: Self) -> Self;
    /// `self / n` for `mean` (floored on integers).
    fn reduce_mean(self, n: usize) -> Self;
}

impl ReduceElement for f64 {
    fn reduce_add(self, b: Self) -> Self {
        self + b
    }
    fn reduce_mul(self, b: Self) -> Self {
        self * b
    }
    fn reduce_max(self, b: Self) -> Self {
        if self.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            self.max(b)
        }
    }
    fn reduce_min(self, b: Self) -> Self {
        if self.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            self.min(b)
        }
    }
    fn reduce_mean(self, n: usize) -> Self {
        self / n as f64
    }
}

impl ReduceElement for i64 {
    fn reduce_add(self, b: Self) -> Self {
        self.wrapping_add(b)
    }
    fn reduce_mul(self, b: Self) -> Self {
        self.wrapping_mul(b)
    }
    fn reduce_max(self, b: Self) -> Self {
        Ord::max(self, b)
    }
    fn reduce_min(self, b: Self) -> Self {
        Ord::min(self, b)
    }
    fn reduce_mean(self, n: usize) -> Self {
        self.div_euclid(n as i64)
    }
}

/// The values of `scatter_reduce.two` on row-major buffers: `self_` reduced with `src`
/// along `plan` (from [`scatter_reduce`]). Positions no index reaches keep `self_`'s value;
/// without `include_self` the others start from the first value scattered there. `mean`
/// divides by the count (plus one with `include_self`), flooring on integers.
///
/// ```
/// use autograd_opset::meta::{Reduce, scatter_reduce_values};
/// let plan = [(0, 0), (0, 1), (1, 2)];
/// let v = scatter_reduce_values(&[1.0, 2.0, 3.0], &[4.0, 6.0, 5.0], &plan, Reduce::Mean, true);
/// assert_eq!(v, vec![11.0 / 3.0, 3.5, 3.0]);
/// let v = scatter_reduce_values(&[1.0, 2.0, 3.0], &[4.0, 6.0, 5.0], &plan, Reduce::Amin, false);
/// assert_eq!(v, vec![4.0, 5.0, 3.0]);
/// ```
pub fn scatter_reduce_values<X: ReduceElement>(
    self_: &[X],
    src: &[X],
    plan: &[(usize, usize)],
    reduce: Reduce,
    include_self: bool,
) -> Vec<X> {
    let mut out = self_.to_vec();
    let mut count = vec![usize::from(include_self); self_.len()];
    for &(to, from) in plan {
        let (a, b) = (out[to], src[from]);
        out[to] = if count[to] == 0 {
            b
        } else {
            combine(reduce, a, b)
        };
        count[to] += 1;
    }
    if reduce == Reduce::Mean {
        for (o, &c) in out.iter_mut().zip(&count) {
            *o = o.reduce_mean(c.max(1));
        }
    }
    out
}

/// One step of a reduction.
fn combine<X: ReduceElement>(reduce: Reduce, a: X, b: X) -> X {
    match reduce {
        Reduce::Sum | Reduce::Mean => a.reduce_add(b),
        Reduce::Prod => a.reduce_mul(b),
        Reduce::Amax => a.reduce_max(b),
        Reduce::Amin => a.reduce_min(b),
    }
}

/// `scatter_reduce.two`'s checks after the index's dtype (PyTorch's order): `self` and
/// `src` of one dtype, then [`scatter_reduce`]'s, with the CPU kernel's refusal of a boolean
/// `mean` before the bounds (`scatter_gather_tensor_cpu_reduce_mean`; with an empty index,
/// the division's `div_floor_cpu`).
pub fn scatter_reduce_checked(
    self_: (&[usize], &str),
    dim: i64,
    index: (&[usize], &[i64]),
    src: (&[usize], &str),
    reduce: &str,
) -> R<(Reduce, Vec<(usize, usize)>)> {
    crate::dtype::check_scatter_src(self_.1, src.1)?;
    let ax = crate::shape::norm_dim(dim, self_.0.len())?;
    crate::shape::check_gather_shapes(self_.0, ax, index.0, Some(src.0))?;
    let r = scatter_reduce_arg(reduce)?;
    if r == Reduce::Mean && self_.1 == "bool" {
        let kernel = match index.1.is_empty() {
            false => crate::dtype::kernel::SCATTER_REDUCE_MEAN,
            true => crate::dtype::kernel::DIV_FLOOR,
        };
        return Err(crate::dtype::not_implemented(kernel, "bool"));
    }
    Ok((
        r,
        super::scatter(self_.0, dim, index.0, index.1, Some(src.0))?,
    ))
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
        let v = |r, inc| scatter_reduce_values(&z, &s, &plan, r, inc);
        assert_eq!(v(Reduce::Sum, true), vec![5.0, 0.0, 4.0]);
        assert_eq!(v(Reduce::Prod, true), vec![0.0, 0.0, 0.0]);
        assert_eq!(v(Reduce::Prod, false), vec![6.0, 0.0, 4.0]);
        assert_eq!(v(Reduce::Mean, true), vec![5.0 / 3.0, 0.0, 2.0]);
        assert_eq!(v(Reduce::Mean, false), vec![2.5, 0.0, 4.0]);
        assert_eq!(v(Reduce::Amax, false), vec![3.0, 0.0, 4.0]);
        assert_eq!(v(Reduce::Amin, true), vec![0.0, 0.0, 0.0]);
        // Integer mean floors (PyTorch 2.15's values): (0 + 2 + 3) / 3 = 1, (-5 + 4) / 2 = -1,
        // (-5 + 0) / 2 = -3.
        let (zi, si) = ([0, 0, -5], [2, 3, 4]);
        let i = scatter_reduce_values(&zi, &si, &[(0, 0), (0, 1), (2, 2)], Reduce::Mean, true);
        assert_eq!(i, vec![1, 0, -1]);
        let i = scatter_reduce_values(&zi, &[0], &[(2, 0)], Reduce::Mean, true);
        assert_eq!(i, vec![0, 0, -3]);
        // Integer products wrap: torch.tensor([2**40 + 1]).scatter_reduce(0, [0, 0], [2**40, 3], "prod")
        let p = scatter_reduce_values(
            &[(1i64 << 40) + 1],
            &[1 << 40, 3],
            &[(0, 0), (0, 1)],
            Reduce::Prod,
            true,
        );
        assert_eq!(p, vec![3298534883328]);
    }
}
