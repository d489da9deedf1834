//! The helpers of the distance entries (issue 30): `_euclidean_dist_backward` (PyTorch's),
//! `_pdist_backward_backward` and
//! `_cdist_backward_backward` (the vector-Jacobian products of the backward kernels, in
//! `grad_output`, the rows and the distances), and the methods `contiguous` and `mT` of
//! `_cdist_forward`'s entry. Compiled twice, as `formulas.rs`: over `Variable<T>` and over
//! raw tensors.
//!
//! A backward kernel is `sum over pairs of grad_output * factor(diff, dist)` (the factor of
//! `helpers::dist`), so its derivatives are the factor itself (in `grad_output`) and the
//! factor's derivatives in the difference and in the distance, zero where the factor is masked
//! (a zero distance; below `p` 2 a zero difference too). PyTorch 2.15 gives these values (its
//! bodies are not in the sources read); for `p = -inf` its double backward takes the factor
//! of `p = inf`.

use super::*;
use autograd::types::{MemoryFormat, Scalar};

/// The gradients of a four-input backward (`None`: not needed).
pub type Grads4<T> = (Option<V<T>>, Option<V<T>>, Option<V<T>>, Option<V<T>>);

/// PyTorch's `Tensor::contiguous()`: `self` when contiguous, else a contiguous copy.
pub fn contiguous<T: Backend>(self_: &V<T>) -> Res<V<T>> {
    if sym_is_contiguous(self_, MemoryFormat::Contiguous)? {
        Ok(self_.clone())
    } else {
        clone(self_, Some(MemoryFormat::Contiguous))
    }
}

/// PyTorch's `Tensor::mT()`: the last two dims swapped.
#[allow(non_snake_case, reason = "PyTorch's method name")]
pub fn mT<T: Backend>(self_: &V<T>) -> Res<V<T>> {
    transpose_int(self_, -2, -1)
}

/// PyTorch's `_euclidean_dist_backward`: with `ratio = grad / res`, 0 where the distance is 0
/// (a subgradient), `x1 * ratio.sum(-1, true) - ratio.matmul(x2)` and
/// `x2 * ratio.sum(-2).unsqueeze(-1) - ratio.mT().matmul(x1)`.
pub fn _euclidean_dist_backward<T: Backend>(
    grad: &V<T>,
    x1: &V<T>,
    x2: &V<T>,
    res: &V<T>,
) -> Res<Grads2<T>> {
    let ratio = div_tensor(grad, res)?;
    let ratio = masked_fill_scalar(&ratio, &eq_scalar(res, 0.0)?, Scalar::Int(0))?;
    let sum = |d: i64, keep: bool| sum_dim_intlist(&ratio, Some(&[d]), keep, None);
    let g1 = sub_tensor(&mul_tensor(x1, &sum(-1, true)?)?, &matmul2(&ratio, x2)?, 1)?;
    let g2 = mul_tensor(x2, &unsqueeze(&sum(-2, false)?, -1)?)?;
    let g2 = sub_tensor(&g2, &matmul2(&mT(&ratio)?, x1)?, 1)?;
    Ok((Some(g1), Some(g2)))
}

/// `a.matmul(b)` of tensors of at least 1 dim (a vector `a` as one row, a vector `b` as one
/// column): `mm` of matrices, else `bmm` of the broadcast batches, so that it runs over raw
/// tensors too.
fn matmul2<T: Backend>(a: &V<T>, b: &V<T>) -> Res<V<T>> {
    let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
    if sb.len() == 1 {
        return squeeze_dim(&matmul2(a, &unsqueeze(b, -1)?)?, -1);
    }
    if sa.len() == 1 {
        return squeeze_dim(&matmul2(&unsqueeze(a, 0)?, b)?, -2);
    }
    if sa.len() == 2 && sb.len() == 2 {
        return mm(a, b);
    }
    let batch = crate::shape::broadcast_shape(&sa[..sa.len() - 2], &sb[..sb.len() - 2])
        .map_err(AutogradError::backend)?;
    let count = batch.iter().product::<usize>() as i64;
    let flat = |x: &V<T>, s: &[usize]| {
        let (r, c) = (s[s.len() - 2] as i64, s[s.len() - 1] as i64);
        let full = [dims(&batch), vec![r, c]].concat();
        reshape(&expand(x, &full, false)?, &[count, r, c])
    };
    let out = bmm(&flat(a, &sa)?, &flat(b, &sb)?)?;
    let (r, n) = (sa[sa.len() - 2] as i64, sb[sb.len() - 1] as i64);
    reshape(&out, &[dims(&batch), vec![r, n]].concat())
}

/// The backward kernels' factor at `diff` and `dist` (broadcast), with its derivatives in
/// `diff` and in `dist`.
fn factor_and_derivatives<T: Backend>(diff: &V<T>, dist: &V<T>, p: f64) -> Res<[V<T>; 3]> {
    let zero = zeros_of(diff);
    let sign = sign(diff)?;
    if p == 0.0 {
        return Ok([zero.clone(), zero.clone(), zero]);
    }
    if p == 1.0 || p.is_infinite() {
        let f = match p == 1.0 {
            true => sign,
            false => where_self(&eq_tensor(&abs(diff)?, dist)?, &sign, &zero)?,
        };
        return Ok([f, zero.clone(), zero]);
    }
    let mut mask = eq_scalar(dist, 0.0)?;
    if p < 2.0 {
        mask = logical_or(&mask, &eq_scalar(diff, 0.0)?)?;
    }
    let (f, d_diff) = if p == 2.0 {
        let f = div_tensor(diff, dist)?;
        let d = div_tensor(&add_scalar(&zero, 1.0, 1)?, dist)?;
        (f, d)
    } else {
        let a = abs(diff)?;
        let scale = pow_tensor_scalar(dist, p - 1.0)?;
        let f = div_tensor(
            &mul_tensor(&sign, &pow_tensor_scalar(&a, p - 1.0)?)?,
            &scale,
        )?;
        let d = div_tensor(
            &mul_scalar(&pow_tensor_scalar(&a, p - 2.0)?, p - 1.0)?,
            &scale,
        )?;
        (f, d)
    };
    let d_dist = mul_scalar(&div_tensor(&f, dist)?, 1.0 - p)?;
    let masked = |t: &V<T>| where_self(&mask, &zero, t);
    Ok([masked(&f)?, masked(&d_diff)?, masked(&d_dist)?])
}

/// `t`'s first `n * m` elements as `n` rows of `m` (the kernels' reading of `self`).
fn as_rows<T: Backend>(t: &V<T>, n: usize, m: usize) -> Res<V<T>> {
    let flat = reshape(t, &[-1])?;
    reshape(&narrow(&flat, 0, 0, (n * m) as i64)?, &[n as i64, m as i64])
}

/// `n` rows of `m` back in the shape `shape` (zeros after them, as the kernel leaves).
fn from_rows<T: Backend>(r: &V<T>, shape: &[usize]) -> Res<V<T>> {
    let rest = shape.iter().product::<usize>() - r.shape().iter().product::<usize>();
    let flat = constant_pad_nd(&reshape(r, &[-1])?, &[0, rest as i64], 0.0)?;
    reshape(&flat, &dims(shape))
}

/// The pairs of rows `i < j` of `n` rows (the kernels' order) as constant index tensors.
fn pairs<T: Backend>(n: usize) -> Res<(V<T>, V<T>)> {
    let (i, j) = crate::helpers::upper_pairs::<T>(n).map_err(AutogradError::backend)?;
    Ok((V::<T>::from_data(i), V::<T>::from_data(j)))
}

/// `_pdist_backward`'s double backward (PyTorch's declaration): the gradients of
/// `grad_output`, `self` and `pdist` from `grad` (of `self`'s shape).
pub fn _pdist_backward_backward<T: Backend>(
    grad: &V<T>,
    grad_output: &V<T>,
    self_: &V<T>,
    p: f64,
    pdist: &V<T>,
    output_mask: [bool; 3],
) -> Res<Grads3<T>> {
    let shape = self_.shape().to_vec();
    let (n, m) = (
        shape.first().copied().unwrap_or(0),
        shape.get(1).copied().unwrap_or(0),
    );
    let mut out: Vec<V<T>> = vec![zeros_of(grad_output), zeros_of(self_), zeros_of(pdist)];
    if n > 1 && m > 0 && p != 0.0 {
        let (i, j) = pairs::<T>(n)?;
        let pair_diff = |t: &V<T>| -> Res<V<T>> {
            let r = as_rows(t, n, m)?;
            sub_tensor(&index_select(&r, 0, &i)?, &index_select(&r, 0, &j)?, 1)
        };
        let (diff, h) = (pair_diff(self_)?, pair_diff(grad)?);
        let column = |t: &V<T>| reshape(t, &[-1, 1]);
        let [f, d_diff, d_dist] = factor_and_derivatives(&diff, &column(pdist)?, p)?;
        let g = column(grad_output)?;
        let row_sum = |t: &V<T>| sum_dim_intlist(t, Some(&[-1]), false, None);
        out[0] = reshape(&row_sum(&mul_tensor(&h, &f)?)?, &dims(&grad_output.shape()))?;
        let src = mul_tensor(&mul_tensor(&g, &d_diff)?, &h)?;
        let z = new_zeros(self_, &[n as i64, m as i64], None, None, None, None)?;
        let rows = index_add(&index_add(&z, 0, &i, &src, 1)?, 0, &j, &src, -1)?;
        out[1] = from_rows(&rows, &shape)?;
        let t = row_sum(&mul_tensor(&mul_tensor(&g, &d_dist)?, &h)?)?;
        out[2] = reshape(&t, &dims(&pdist.shape()))?;
    }
    let mut it = out
        .into_iter()
        .zip(output_mask)
        .map(|(g, m)| m.then_some(g));
    Ok((
        it.next().flatten(),
        it.next().flatten(),
        it.next().flatten(),
    ))
}

/// `_cdist_backward`'s double backward (PyTorch's declaration): the gradients of
/// `grad_output`, `x1`, `x2` and `cdist` from `grad` (of `x1`'s expanded shape).
#[allow(clippy::too_many_arguments)]
pub fn _cdist_backward_backward<T: Backend>(
    grad: &V<T>,
    grad_output: &V<T>,
    x1: &V<T>,
    x2: &V<T>,
    p: f64,
    cdist: &V<T>,
    output_mask: [bool; 4],
) -> Res<Grads4<T>> {
    let (s1, s2) = (x1.shape().to_vec(), x2.shape().to_vec());
    let mut out: Vec<V<T>> = [grad_output, x1, x2, cdist].map(zeros_of).to_vec();
    let batch = crate::shape::broadcast_shape(&s1[..s1.len() - 2], &s2[..s2.len() - 2])
        .map_err(AutogradError::backend)?;
    let (r1, r2, m) = (s1[s1.len() - 2], s2[s2.len() - 2], s1[s1.len() - 1]);
    let lead = dims(&batch);
    let with = |tail: &[usize]| [lead.clone(), dims(tail)].concat();
    if r1 * r2 * m * batch.iter().product::<usize>() > 0 && p != 0.0 {
        let a = unsqueeze(&expand(x1, &with(&[r1, m]), false)?, -2)?;
        let b = unsqueeze(&expand(x2, &with(&[r2, m]), false)?, -3)?;
        let diff = sub_tensor(&a, &b, 1)?;
        let h = unsqueeze(&reshape(grad, &with(&[r1, m]))?, -2)?;
        let cell = with(&[r1, r2, 1]);
        let [f, d_diff, d_dist] = factor_and_derivatives(&diff, &reshape(cdist, &cell)?, p)?;
        let g = reshape(grad_output, &cell)?;
        let sum = |t: &V<T>, d: i64| sum_dim_intlist(t, Some(&[d]), false, None);
        out[0] = reshape(&sum(&mul_tensor(&h, &f)?, -1)?, &dims(&grad_output.shape()))?;
        let t = mul_tensor(&mul_tensor(&g, &d_diff)?, &h)?;
        out[1] = sum_to(&sum(&t, -2)?, &s1)?;
        out[2] = sum_to(&neg(&sum(&t, -3)?)?, &s2)?;
        let t = sum(&mul_tensor(&mul_tensor(&g, &d_dist)?, &h)?, -1)?;
        out[3] = reshape(&t, &dims(&cdist.shape()))?;
    }
    let mut it = out
        .into_iter()
        .zip(output_mask)
        .map(|(g, m)| m.then_some(g));
    Ok((
        it.next().flatten(),
        it.next().flatten(),
        it.next().flatten(),
        it.next().flatten(),
    ))
}
