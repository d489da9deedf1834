//! Distances (Core ATen; issue 30): the default kernels of `_pdist_forward`,
//! `_pdist_backward`, `_cdist_forward` and `_cdist_backward`, written over other kernels as
//! PyTorch's own decomposition of `pdist` is (the differences of the pairs of rows, then a
//! norm of each), with the maths of PyTorch's CPU kernels (`DistanceOpsKernel.cpp`): the
//! same norm per `p` (0: the count of differing values, 1, 2, infinity, others) and the same
//! gradient factor per `p`, zero at a zero distance. The checks are [`meta`]'s. Also
//! `_euclidean_dist`'s default kernel and PyTorch's composites `pdist` and `cdist`.

use super::Backend;
// A shape as `i64` sizes: the helpers' `dims`.
use super::dims as sizes;
use crate::meta;
use autograd::types::{MemoryFormat, Scalar};

/// A kernel's result (`X`: the tensor itself by default).
type Res<T, X = T> = Result<X, <T as Backend>::Error>;

fn contiguous<T: Backend>(t: &T) -> Res<T, bool> {
    T::sym_is_contiguous(t, MemoryFormat::Contiguous)
}

fn float(x: f64) -> Scalar {
    Scalar::Float(x)
}

/// The norm of each row of `diff` over its last dim: PyTorch's kernel's `map`, `red` and
/// `finish` for `p` (its order of tests: 0, 1, 2, infinity, the general power).
fn row_norm<T: Backend>(diff: &T, p: f64) -> Res<T> {
    let last = [-1i64];
    let sum = |t: &T| T::sum_dim_intlist(t, Some(&last), false, None);
    let a = T::abs(diff)?;
    if p == 0.0 {
        sum(&T::clamp(&T::ceil(&a)?, None, Some(float(1.0)))?)
    } else if p == 1.0 {
        sum(&a)
    } else if p == 2.0 {
        T::sqrt(&sum(&T::mul_tensor(diff, diff)?)?)
    } else if p.is_infinite() {
        T::amax(&a, &last, false)
    } else {
        T::pow_tensor_scalar(&sum(&T::pow_tensor_scalar(&a, float(p))?)?, float(1.0 / p))
    }
}

/// The factor of the gradient of a distance `dist` (broadcast) at a difference `diff`:
/// PyTorch's kernel's `backward` for `p` (its order: 0, 1, below 2, 2, infinity, the general
/// power), zero where the distance is zero (and, below 1, where the
/// difference is).
fn grad_factor<T: Backend>(diff: &T, dist: &T, p: f64) -> Res<T> {
    let zero = <T as Backend>::zeros_like(diff, None, None, None, None, None)?;
    if p == 0.0 {
        return Ok(zero);
    }
    let at_zero = T::eq_scalar(dist, float(0.0))?;
    let a = T::abs(diff)?;
    let sign = T::sign(diff)?;
    let ratio = |num: &T, e: f64| T::div_tensor(num, &T::pow_tensor_scalar(dist, float(e))?);
    if p == 1.0 {
        Ok(sign)
    } else if p < 2.0 {
        let num = T::mul_tensor(&sign, &T::pow_tensor_scalar(&a, float(p - 1.0))?)?;
        let mut mask = at_zero;
        if p < 1.0 {
            mask = T::logical_or(&mask, &T::eq_scalar(diff, float(0.0))?)?;
        }
        T::where_self(&mask, &zero, &ratio(&num, p - 1.0)?)
    } else if p == 2.0 {
        T::where_self(&at_zero, &zero, &T::div_tensor(diff, dist)?)
    } else if p.is_infinite() {
        T::where_self(&T::eq_tensor(&a, dist)?, &sign, &zero)
    } else {
        let num = T::mul_tensor(diff, &T::pow_tensor_scalar(&a, float(p - 2.0))?)?;
        T::where_self(&at_zero, &zero, &ratio(&num, p - 1.0)?)
    }
}

/// The rows `i < j` of `n` rows in PyTorch's order (row-major over the upper triangle): the
/// two columns of `nonzero(arange(n)[:, None] < arange(n)[None, :])`.
pub fn upper_pairs<T: Backend>(n: usize) -> Res<T, (T, T)> {
    let ar = super::decompositions::arange_i64::<T>(n as i64)?;
    let below = T::lt_tensor(&T::unsqueeze(&ar, 1)?, &T::unsqueeze(&ar, 0)?)?;
    let nz = T::nonzero(&below)?;
    Ok((T::select_int(&nz, 1, 0)?, T::select_int(&nz, 1, 1)?))
}

/// `self_`'s first `n * m` elements as `n` rows of `m` (the kernel's reading of its
/// contiguous input, of any rank).
fn rows<T: Backend>(self_: &T, n: usize, m: usize) -> Res<T> {
    if self_.shape() == [n, m] {
        return Ok(self_.clone());
    }
    let flat = T::reshape(self_, &[-1])?;
    T::reshape(
        &T::narrow(&flat, 0, 0, (n * m) as i64)?,
        &[n as i64, m as i64],
    )
}

/// The differences `x[i] - x[j]` of the pairs of rows, and the pairs.
fn pair_differences<T: Backend>(x: &T, n: usize) -> Res<T, (T, T, T)> {
    let (i, j) = upper_pairs::<T>(n)?;
    let diff = T::sub_tensor(
        &T::index_select(x, 0, &i)?,
        &T::index_select(x, 0, &j)?,
        Scalar::Int(1),
    )?;
    Ok((diff, i, j))
}

/// `_pdist_forward`: the distances of the pairs of rows `i < j`, in PyTorch's order.
pub fn decomposed_pdist_forward<T: Backend>(self_: &T, p: f64) -> Res<T> {
    let shape = self_.shape().to_vec();
    let Some((n, m)) = meta::pdist_forward(&shape, self_.dtype(), contiguous(self_)?)? else {
        return T::new_zeros(self_, &[0], None, None, None, None);
    };
    if m == 0 {
        return T::new_zeros(self_, &[(n * (n - 1) / 2) as i64], None, None, None, None);
    }
    let (diff, _, _) = pair_differences(&rows(self_, n, m)?, n)?;
    row_norm(&diff, p)
}

/// `_pdist_backward`: each pair's `grad_output * factor` added to its first row and taken
/// from its second (zeros for `p` 0, fewer than two rows or no values; the elements past the
/// kernel's rows of a higher-rank input stay zero, as PyTorch's).
pub fn decomposed_pdist_backward<T: Backend>(
    grad_output: &T,
    self_: &T,
    p: f64,
    pdist: &T,
) -> Res<T> {
    let arg = |t: &T| -> Res<T, (Vec<usize>, bool)> { Ok((t.shape().to_vec(), contiguous(t)?)) };
    let ((gs, gc), (ss, sc), (ds, dc)) = (arg(grad_output)?, arg(self_)?, arg(pdist)?);
    let a = |shape, dtype, contiguous| meta::DistArg {
        shape,
        dtype,
        contiguous,
    };
    let plan = meta::pdist_backward(
        a(&gs, grad_output.dtype(), gc),
        a(&ss, self_.dtype(), sc),
        p,
        a(&ds, pdist.dtype(), dc),
    )?;
    let zeros = <T as Backend>::zeros_like(self_, None, None, None, None, None)?;
    let Some((n, m)) = plan.filter(|&(n, m)| n > 1 && m > 0) else {
        return Ok(zeros);
    };
    let (diff, i, j) = pair_differences(&rows(self_, n, m)?, n)?;
    let column = |t: &T| T::reshape(t, &[-1, 1]);
    let factor = grad_factor(&diff, &column(pdist)?, p)?;
    let src = T::mul_tensor(&column(grad_output)?, &factor)?;
    let z = T::new_zeros(self_, &[n as i64, m as i64], None, None, None, None)?;
    let r = T::index_add(
        &T::index_add(&z, 0, &i, &src, Scalar::Int(1))?,
        0,
        &j,
        &src,
        Scalar::Int(-1),
    )?;
    if ss == [n, m] {
        return Ok(r);
    }
    let rest = ss.iter().product::<usize>() - n * m;
    let flat = T::constant_pad_nd(&T::reshape(&r, &[-1])?, &[0, rest as i64], Scalar::Int(0))?;
    T::reshape(&flat, &sizes(&ss))
}

/// `x` expanded to the batch, then `rows` by `m`.
fn batched<T: Backend>(x: &T, batch: &[usize], rows: usize, m: usize) -> Res<T> {
    let mut s = sizes(batch);
    s.extend([rows as i64, m as i64]);
    T::expand(x, &s, false)
}

/// `_cdist_forward`: the distance of every row of `x1` to every row of `x2`, batches
/// broadcast; `p = 2` by matrix products where PyTorch takes them (`_euclidean_dist`).
pub fn decomposed_cdist_forward<T: Backend>(
    x1: &T,
    x2: &T,
    p: f64,
    compute_mode: Option<i64>,
) -> Res<T> {
    let c = meta::cdist_forward(
        (x1.shape(), x1.dtype()),
        (x2.shape(), x2.dtype()),
        p,
        compute_mode,
    )?;
    let out = sizes(&c.out_shape());
    match c.path {
        meta::CdistPath::Empty | meta::CdistPath::Zeros => {
            T::new_zeros(x1, &out, None, None, None, None)
        }
        meta::CdistPath::Euclidean => {
            let b = c.batch.iter().product::<usize>();
            let flat = |x: &T, r: usize| {
                T::reshape(
                    &batched(x, &c.batch, r, c.m)?,
                    &[b as i64, r as i64, c.m as i64],
                )
            };
            let d = decomposed_euclidean_dist(&flat(x1, c.r1)?, &flat(x2, c.r2)?)?;
            T::reshape(&d, &out)
        }
        meta::CdistPath::Direct => {
            let a = T::unsqueeze(&batched(x1, &c.batch, c.r1, c.m)?, -2)?;
            let b = T::unsqueeze(&batched(x2, &c.batch, c.r2, c.m)?, -3)?;
            row_norm(&T::sub_tensor(&a, &b, Scalar::Int(1))?, p)
        }
    }
}

/// `_cdist_backward`: for each row of `x1`, the sum over the rows of `x2` of
/// `grad_output * factor` (of `x1`'s expanded shape; zeros like `x1` when there is nothing to
/// compute).
pub fn decomposed_cdist_backward<T: Backend>(
    grad_output: &T,
    x1: &T,
    x2: &T,
    p: f64,
    cdist: &T,
) -> Res<T> {
    fn arg<T: Backend>(t: &T) -> (&[usize], &'static str) {
        (t.shape(), t.dtype())
    }
    let Some(c) = meta::cdist_backward(arg(grad_output), arg(x1), arg(x2), arg(cdist))? else {
        return <T as Backend>::zeros_like(x1, None, None, None, None, None);
    };
    let a = T::unsqueeze(&batched(x1, &c.batch, c.r1, c.m)?, -2)?;
    let b = T::unsqueeze(&batched(x2, &c.batch, c.r2, c.m)?, -3)?;
    let diff = T::sub_tensor(&a, &b, Scalar::Int(1))?;
    let mut s = sizes(&c.out_shape());
    s.push(1);
    let factor = grad_factor(&diff, &T::reshape(cdist, &s)?, p)?;
    let terms = T::mul_tensor(&T::reshape(grad_output, &s)?, &factor)?;
    T::sum_dim_intlist(&terms, Some(&[-2]), false, None)
}

/// `pdist` (PyTorch's composite): its checks, then `_pdist_forward` of a contiguous input.
pub fn pdist<T: Backend>(
    self_: &autograd::runtime::Variable<T>,
    p: f64,
) -> Result<autograd::runtime::Variable<T>, autograd::runtime::AutogradError> {
    let (shape, dtype) = self_.with_data(|t| (t.shape().to_vec(), t.dtype()));
    meta::pdist(&shape, dtype, p).map_err(autograd::runtime::AutogradError::backend)?;
    crate::ops::_pdist_forward(&super::contiguous(self_)?, p)
}

/// `_euclidean_dist` (PyTorch's `CompositeExplicitAutograd` kernel): `[-2 x1, |x1|^2, 1]`
/// times `[x2, 1, |x2|^2]` transposed (`matmul`'s shapes: a matrix product, a batch of `x1`
/// folded into the rows, or a batched product of the broadcast batches), clamped at 0 and
/// square-rooted.
pub fn decomposed_euclidean_dist<T: Backend>(x1: &T, x2: &T) -> Res<T> {
    meta::euclidean_dist(x1.shape(), x2.shape())?;
    let norm = |x: &T| {
        let sq = T::pow_tensor_scalar(x, Scalar::Int(2))?;
        T::sum_dim_intlist(&sq, Some(&[-1]), true, None)
    };
    let ones = |t: &T| {
        let zeros = <T as Backend>::zeros_like(t, None, None, None, None, None)?;
        T::add_scalar(&zeros, Scalar::Int(1), Scalar::Int(1))
    };
    let (n1, n2) = (norm(x1)?, norm(x2)?);
    let a = T::cat(
        &[T::mul_scalar(x1, Scalar::Int(-2))?, n1.clone(), ones(&n1)?],
        -1,
    )?;
    let b = T::cat(&[x2.clone(), ones(&n2)?, n2], -1)?;
    let prod = matmul_shapes(&a, &T::transpose_int(&b, -2, -1)?)?;
    // PyTorch takes the root in place (`clamp_min_(0).sqrt_()`): an integer product refuses
    // the float root.
    let root = T::sqrt(&T::clamp(&prod, Some(Scalar::Int(0)), None)?)?;
    crate::dtype::check_cast(root.dtype(), prod.dtype())?;
    Ok(root)
}

/// `matmul` of `a` (at least 1-d) and `b` (at least 2-d) over raw tensors, as PyTorch's
/// `_matmul_impl` picks the kernel: `mm` for matrices (a vector as one row), `x1`'s batch
/// folded into the rows when `b` is a matrix, `bmm` of the broadcast batches otherwise.
fn matmul_shapes<T: Backend>(a: &T, b: &T) -> Res<T> {
    let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
    let (k, n) = (sa[sa.len() - 1], sb[sb.len() - 1]);
    if sa.len() == 1 {
        return T::squeeze_dim(&matmul_shapes(&T::unsqueeze(a, 0)?, b)?, -2);
    }
    if sb.len() == 2 {
        let rows: usize = sa[..sa.len() - 1].iter().product();
        let out = T::mm(&T::reshape(a, &[rows as i64, k as i64])?, b)?;
        let mut shape = sizes(&sa[..sa.len() - 1]);
        shape.push(n as i64);
        return T::reshape(&out, &shape);
    }
    let batch = crate::shape::broadcast_shape(&sa[..sa.len() - 2], &sb[..sb.len() - 2])?;
    let count: usize = batch.iter().product();
    let flat = |x: &T, s: &[usize]| {
        let (r, c) = (s[s.len() - 2] as i64, s[s.len() - 1] as i64);
        let full = [sizes(&batch), vec![r, c]].concat();
        T::reshape(&T::expand(x, &full, false)?, &[count as i64, r, c])
    };
    let out = T::bmm(&flat(a, &sa)?, &flat(b, &sb)?)?;
    let shape = [sizes(&batch), vec![sa[sa.len() - 2] as i64, n as i64]].concat();
    T::reshape(&out, &shape)
}

/// `cdist` (PyTorch's composite): `_cdist_forward`'s checks, then for `p = 2` by matrix
/// products (`compute_mode` 1, or 0 with more than 25 rows) `_euclidean_dist` of the
/// operands broadcast to one batch (of the operands themselves for a batch of one), whose
/// own backward PyTorch then uses; `_cdist_forward` otherwise and for empty operands.
pub fn cdist<T: Backend>(
    x1: &autograd::runtime::Variable<T>,
    x2: &autograd::runtime::Variable<T>,
    p: f64,
    compute_mode: Option<i64>,
) -> Result<autograd::runtime::Variable<T>, autograd::runtime::AutogradError> {
    use crate::ops;
    let err = autograd::runtime::AutogradError::backend;
    let arg = |x: &autograd::runtime::Variable<T>| x.with_data(|t| (t.shape().to_vec(), t.dtype()));
    let ((s1, d1), (s2, d2)) = (arg(x1), arg(x2));
    let c = meta::cdist_forward((&s1, d1), (&s2, d2), p, compute_mode).map_err(err)?;
    let empty = s1.iter().product::<usize>() == 0 || s2.iter().product::<usize>() == 0;
    if empty || c.path != meta::CdistPath::Euclidean {
        return ops::_cdist_forward(x1, x2, p, compute_mode);
    }
    let count = c.batch.iter().product::<usize>() as i64;
    let dist = if count == 1 {
        ops::_euclidean_dist(x1, x2)?
    } else {
        let flat = |x: &autograd::runtime::Variable<T>, r: usize| {
            let full = [sizes(&c.batch), vec![r as i64, c.m as i64]].concat();
            let x = super::contiguous(&ops::expand(x, &full, false)?)?;
            ops::view(&x, &[count, r as i64, c.m as i64])
        };
        ops::_euclidean_dist(&flat(x1, c.r1)?, &flat(x2, c.r2)?)?
    };
    ops::view(&dist, &sizes(&c.out_shape()))
}
