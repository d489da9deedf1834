//! The cumulative and product-reduction helpers of the formulas (PyTorch's
//! `cumsum_backward`, `prod_safe_zeros_backward` and the two `prod_backward`s from
//! FunctionsManual.cpp). Compiled twice, as `formulas.rs`: over `Variable<T>` and over raw
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

/// The cumulative product of `x` along `dim` (`cumprod`, which the op set lacks) as
/// differentiable steps: each slice times the product before it, the slices concatenated.
fn cumprod_steps<T: Backend>(x: &V<T>, dim: usize) -> Res<V<T>> {
    let n = x.shape()[dim];
    let d = dim as i64;
    let mut acc = narrow(x, d, 0, 1)?;
    let mut parts = vec![acc.clone()];
    for i in 1..n {
        acc = mul_tensor(&acc, &narrow(x, d, i as i64, 1)?)?;
        parts.push(acc.clone());
    }
    cat(&parts, d)
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
    let mut ones_size = dims(&shape);
    ones_size[ax] = 1;
    let ones = add_scalar(
        &new_zeros(grad, &ones_size, None, None, None, None)?,
        1.0,
        1,
    )?;
    let d = ax as i64;
    let exclusive_normal = cumprod_steps(&cat(&[ones.clone(), narrow(inp, d, 0, n - 1)?], d)?, ax)?;
    let narrow_reverse = flip(&narrow(inp, d, 1, n - 1)?, &[d])?;
    let exclusive_reverse = cumprod_steps(&cat(&[ones, narrow_reverse], d)?, ax)?;
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
