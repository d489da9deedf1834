//! The cumulative and product-reduction helpers of the formulas (PyTorch's
//! `cumsum_backward`, `cumprod_backward` (an operator of ReduceOps.cpp), `cumprod_jvp`,
//! `prod_safe_zeros_backward` and the two `prod_backward`s from FunctionsManual.cpp). Compiled twice, as `formulas.rs`: over `Variable<T>` and over raw
//! tensors.

use super::*;

/// `dim` of a tensor of rank `n` as an index (PyTorch's `maybe_wrap_dim`; a 0-d tensor
/// takes 0 and -1).
fn wrapped_dim(dim: i64, n: usize) -> Res<usize> {
    crate::shape::norm_dim(dim, n.max(1)).map_err(AutogradError::backend)
}

/// PyTorch's `cumsum_backward`: the gradient summed from the end (`flip`, `cumsum`, `flip`),
/// or `grad` itself when there is at most one element along `dim`.
pub fn cumsum_backward<T: Backend>(grad: &V<T>, dim: i64) -> Res<V<T>> {
    let shape = grad.shape();
    let numel: usize = shape.iter().product();
    if numel <= 1 || shape.is_empty() || shape[wrapped_dim(dim, shape.len())?] == 1 {
        return Ok(grad.clone());
    }
    let flipped = flip(grad, &[dim])?;
    flip(&cumsum(&flipped, dim, None)?, &[dim])
}

/// `w` summed from the end along `dim` (PyTorch's `reversed_cumsum`).
fn reversed_cumsum<T: Backend>(w: &V<T>, dim: i64) -> Res<V<T>> {
    flip(&cumsum(&flip(w, &[dim])?, dim, None)?, &[dim])
}

/// PyTorch's `cumprod_backward` (ReduceOps.cpp): `grad` itself for at most one element
/// along `dim`; without zeros in `input`, the reversed cumulative sum of `output * grad`
/// over `input`; with zeros and gradients not recorded, its O(n) form: that sum before
/// the first zero, at the first zero the products after it up to the second zero times
/// `grad` there, times the product before it, and zeros after it; with gradients recorded,
/// the products with each element omitted (its O(n²) form, whose derivative is the second
/// derivative). Masks replace PyTorch's `masked_scatter_`/`masked_select` pairs (the same
/// selected values), and the first zero is the first element of the mask whose running
/// count is 1 (PyTorch's `max` index with its `scatter_`).
pub fn cumprod_backward<T: Backend>(
    grad: &V<T>,
    input: &V<T>,
    dim: i64,
    output: &V<T>,
) -> Res<V<T>> {
    let shape = input.shape();
    if shape.iter().product::<usize>() <= 1 {
        return Ok(grad.clone());
    }
    let ax = wrapped_dim(dim, shape.len())?;
    let d = ax as i64;
    if shape[ax] == 1 {
        return Ok(grad.clone());
    }
    let w = mul_tensor(output, grad)?;
    let is_zero = eq_scalar(input, 0.0)?;
    if !any_true(&is_zero, input)? {
        return div_tensor(&reversed_cumsum(&w, d)?, input);
    }
    if grad_mode_enabled() {
        return cumprod_backward_omitted(grad, input, ax);
    }
    let zero = zeros_of(grad);
    let z = ZeroSegments::of(&is_zero, d)?;
    let kept = where_self(&z.before, &w, &zero)?;
    let grad_input = where_self(
        &z.before,
        &div_tensor(&reversed_cumsum(&kept, d)?, input)?,
        &zero,
    )?;
    let one = add_scalar(&zeros_of(input), 1.0, 1)?;
    let factors = cumprod(&where_self(&z.after_first, input, &one)?, d, None)?;
    let sums = sum_dim_intlist(
        &mul_tensor(&factors, &where_self(&z.between, grad, &zero)?)?,
        Some(&[d]),
        true,
        None,
    )?;
    // The product before the first zero: the output one step before it (1 at the start).
    let before_first = z.at_first(&shifted_ones(output, d)?, d)?;
    where_self(&z.first, &mul_tensor(&sums, &before_first)?, &grad_input)
}

/// [`cumprod_backward`] when gradients are recorded: for each `k`, `grad` from `k` on times
/// the products of `input` up to each position with `input[k]` omitted, summed.
fn cumprod_backward_omitted<T: Backend>(grad: &V<T>, input: &V<T>, ax: usize) -> Res<V<T>> {
    let shape = input.shape();
    let (d, n) = (ax as i64, shape[ax] as i64);
    let ones = ones_along(grad, &shape, ax)?;
    let mut slices = Vec::with_capacity(n as usize);
    for k in 0..n {
        let omitted = if k == 0 {
            cat(
                &[
                    ones.clone(),
                    cumprod(&narrow(input, d, 1, n - 1)?, d, None)?,
                ],
                d,
            )?
        } else {
            let until = prod_dim_int(&narrow(input, d, 0, k)?, d, true, None)?;
            if k == n - 1 {
                until
            } else {
                let from = cumprod(&narrow(input, d, k + 1, n - k - 1)?, d, None)?;
                cat(&[until.clone(), mul_tensor(&until, &from)?], d)?
            }
        };
        let g = narrow(grad, d, k, n - k)?;
        slices.push(sum_dim_intlist(
            &mul_tensor(&g, &omitted)?,
            Some(&[d]),
            false,
            None,
        )?);
    }
    stack(&slices, d)
}

/// PyTorch's `cumprod_jvp`: `result * cumsum(self_t / self_p)` without zeros in
/// `self_p`; with zeros, that before the first zero, from the first zero to the second its
/// tangent times the products before and after it (the terms through the zero vanish), and
/// zeros from the second zero on.
pub fn cumprod_jvp<T: Backend>(self_t: &V<T>, self_p: &V<T>, result: &V<T>, dim: i64) -> Res<V<T>> {
    let shape = self_p.shape();
    if shape.is_empty() || shape.iter().product::<usize>() == 0 {
        return Ok(self_t.clone());
    }
    let d = wrapped_dim(dim, shape.len())? as i64;
    let is_zero = eq_scalar(self_p, 0.0)?;
    if !any_true(&is_zero, self_p)? {
        return mul_tensor(result, &cumsum(&div_tensor(self_t, self_p)?, d, None)?);
    }
    let zero = zeros_of(result);
    let one = add_scalar(&zeros_of(self_p), 1.0, 1)?;
    let z = ZeroSegments::of(&is_zero, d)?;
    let ratio = div_tensor(self_t, &where_self(&is_zero, &one, self_p)?)?;
    let head = mul_tensor(
        result,
        &cumsum(&where_self(&z.before, &ratio, &zeros_of(&ratio))?, d, None)?,
    )?;
    let tangent_at_zero = z.at_first(self_t, d)?;
    let before_zero = z.at_first(&shifted_ones(result, d)?, d)?;
    let after = cumprod(&where_self(&z.after_first, self_p, &one)?, d, None)?;
    let mid = mul_tensor(&mul_tensor(&tangent_at_zero, &before_zero)?, &after)?;
    where_self(&z.before, &head, &where_self(&z.between, &mid, &zero)?)
}

/// Where each element stands along `d` against the zeros of its line (`is_zero`): before
/// the first zero, from the first zero to the second, at the first zero, and after it up
/// to the second (`cumprod_backward`'s and `cumprod_jvp`'s masks).
struct ZeroSegments<T: Backend> {
    before: V<T>,
    between: V<T>,
    first: V<T>,
    after_first: V<T>,
}

impl<T: Backend> ZeroSegments<T> {
    fn of(is_zero: &V<T>, d: i64) -> Res<Self> {
        let count = cumsum(is_zero, d, None)?;
        let between = eq_scalar(&count, 1.0)?;
        let first = logical_and(&between, &eq_scalar(&cumsum(&between, d, None)?, 1.0)?)?;
        Ok(ZeroSegments {
            before: eq_scalar(&count, 0.0)?,
            after_first: logical_and(&between, &logical_not(&first)?)?,
            between,
            first,
        })
    }

    /// `x` at each line's first zero (0 for a line without one), keeping `d`.
    fn at_first(&self, x: &V<T>, d: i64) -> Res<V<T>> {
        let picked = where_self(&self.first, x, &zeros_of(x))?;
        sum_dim_intlist(&picked, Some(&[d]), true, None)
    }
}

/// `x` one step along `d`: a 1 first, then `x` without its last element (each position's
/// product before it, for a cumulative product `x`).
fn shifted_ones<T: Backend>(x: &V<T>, d: i64) -> Res<V<T>> {
    let shape = x.shape();
    let ax = d as usize;
    let ones = ones_along(x, &shape, ax)?;
    cat(&[ones, narrow(x, d, 0, shape[ax] as i64 - 1)?], d)
}

/// Ones of `like`'s dtype shaped `shape` with 1 along `ax`.
fn ones_along<T: Backend>(like: &V<T>, shape: &[usize], ax: usize) -> Res<V<T>> {
    let zeros = new_zeros(like, &with_dim(shape, ax, 1), None, None, None, None)?;
    add_scalar(&zeros, 1.0, 1)
}

/// `shape` with `size` along `ax`.
fn with_dim(shape: &[usize], ax: usize, size: i64) -> Vec<i64> {
    let mut s = dims(shape);
    s[ax] = size;
    s
}

/// PyTorch's `prod_safe_zeros_backward`: `grad` times the product of the other elements
/// along `dim` (the exclusive cumulative products from the start and from the end), exact
/// when `inp` has zeros.
pub fn prod_safe_zeros_backward<T: Backend>(grad: &V<T>, inp: &V<T>, dim: i64) -> Res<V<T>> {
    let shape = inp.shape();
    if shape.iter().product::<usize>() == 0 {
        return expand(grad, &dims(&shape), false);
    }
    let ax = wrapped_dim(dim, shape.len())?;
    let n = shape[ax] as i64;
    if n == 1 {
        return Ok(grad.clone());
    }
    let ones = ones_along(grad, &shape, ax)?;
    let d = ax as i64;
    let exclusive_normal = cumprod(
        &cat(&[ones.clone(), narrow(inp, d, 0, n - 1)?], d)?,
        d,
        None,
    )?;
    let narrow_reverse = flip(&narrow(inp, d, 1, n - 1)?, &[d])?;
    let exclusive_reverse = cumprod(&cat(&[ones, narrow_reverse], d)?, d, None)?;
    let exclusive_reverse = flip(&exclusive_reverse, &[d])?;
    mul_tensor(grad, &mul_tensor(&exclusive_normal, &exclusive_reverse)?)
}

/// Whether `mask` (booleans) has a true element: the helpers read no element, so a NaN is
/// put where `mask` is true and the tensor asked whether it has one.
pub(crate) fn any_true<T: Backend>(mask: &V<T>, like: &V<T>) -> Res<bool> {
    let zeros = zeros_of(like);
    let nans = add_scalar(&zeros, f64::NAN, 1)?;
    Ok(where_self(mask, &nans, &zeros)?.with_data(|t| t.has_nan()))
}

/// PyTorch's `prod_backward` of the full product: `grad * result / input` without zeros;
/// zeros when gradients are not recorded and the input has two zeros or more; else
/// [`prod_safe_zeros_backward`] over the flattened input.
pub fn prod_backward<T: Backend>(grad: &V<T>, input: &V<T>, result: &V<T>) -> Res<V<T>> {
    if input.shape().is_empty() {
        return Ok(grad.clone());
    }
    let zero_mask = eq_scalar(input, 0.0)?;
    if !any_true(&zero_mask, input)? {
        return mul_tensor(grad, &div_tensor(result, input)?);
    }
    let count = sum(&zero_mask, None)?;
    let zero0 = zeros_of(result);
    if !grad_mode_enabled() && any_true(&gt_scalar(&count, 1.0)?, &zero0)? {
        return Ok(zeros_of(input));
    }
    let flat = reshape(input, &[-1])?;
    let g = prod_safe_zeros_backward(grad, &flat, 0)?;
    reshape(&g, &dims(&input.shape()))
}

/// PyTorch's `prod_backward` of the product over `dim`: `grad * result / input` when the
/// input has no zero, else [`prod_safe_zeros_backward`] along `dim`.
pub fn prod_backward_dim<T: Backend>(
    grad: &V<T>,
    input: &V<T>,
    result: &V<T>,
    dim: i64,
    keepdim: bool,
) -> Res<V<T>> {
    if input.shape().is_empty() {
        return Ok(grad.clone());
    }
    let ax = wrapped_dim(dim, input.shape().len())? as i64;
    let (grad, result) = match keepdim {
        true => (grad.clone(), result.clone()),
        false => (unsqueeze(grad, ax)?, unsqueeze(result, ax)?),
    };
    let zero_mask = eq_scalar(input, 0.0)?;
    if !any_true(&zero_mask, input)? {
        return mul_tensor(&grad, &div_tensor(&result, input)?);
    }
    prod_safe_zeros_backward(&grad, input, ax)
}

/// `self.new_ones(size)`: ones of `self`'s dtype.
pub fn new_ones<T: Backend>(self_: &V<T>, size: &[i64]) -> Res<V<T>> {
    add_scalar(&new_zeros(self_, size, None, None, None, None)?, 1.0, 1)
}
