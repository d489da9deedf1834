//! The helpers of `scatter_reduce.two`'s entry: PyTorch's `scatter_reduce_backward` and
//! `scatter_reduce_jvp` (FunctionsManual.cpp), made of differentiable ops so their own
//! derivatives flow. Compiled twice, as `formulas.rs`: over `Variable<T>` and over raw
//! tensors.

use super::*;
use crate::helpers::DelayedError;
use autograd::types::Scalar;

/// PyTorch's `DelayedError` message of the `prod` gradient of `src`.
const PROD_DOUBLE_BACKWARD: &str = "scatter_reduce(): Double backward is unsupported for src when >1 zeros in src are scattered to the same position in self";

/// `ones_like(x)`.
fn ones<T: Backend>(x: &V<T>) -> Res<V<T>> {
    add_scalar(&zeros_of(x), 1.0, 1)
}

/// `x.gather(dim, index)`.
fn gathered<T: Backend>(x: &V<T>, dim: i64, index: &V<T>) -> Res<V<T>> {
    gather(x, dim, index, false)
}

/// PyTorch's `scatter_reduce_backward`: the gradients of `self` and `src` for each
/// reduction (`prod` exact with zeros; `amax`/`amin` split the gradient evenly between
/// ties; `mean` divided by the counts); without `include_self`, none for the positions of
/// `self` that `index` reaches.
#[allow(clippy::too_many_arguments)]
pub fn scatter_reduce_backward<T: Backend>(
    grad: &V<T>,
    self_: &V<T>,
    dim: i64,
    index: &V<T>,
    src: &V<T>,
    reduce: &str,
    include_self: bool,
    result: &V<T>,
) -> Res<Grads2<T>> {
    let (grad_self, grad_src) = match reduce {
        "sum" => (grad.clone(), gathered(grad, dim, index)?),
        "prod" => prod_grads(grad, self_, dim, index, src, include_self, result)?,
        "mean" => {
            let n = if include_self {
                ones(grad)?
            } else {
                zeros_of(grad)
            };
            let n = scatter_add(&n, dim, index, &ones(src)?)?;
            let n = masked_fill_scalar(&n, &eq_scalar(&n, 0.0)?, Scalar::from(1.0))?;
            let grad_src = div_tensor(&gathered(grad, dim, index)?, &gathered(&n, dim, index)?)?;
            (div_tensor(grad, &n)?, grad_src)
        }
        "amax" | "amin" => extremum_grads(grad, self_, dim, index, src, result)?,
        _ => {
            return Err(AutogradError::msg(format!(
                "Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', 'amin' but got {reduce}."
            )));
        }
    };
    let grad_self = match include_self {
        true => grad_self,
        false => scatter_value(&grad_self, dim, index, Scalar::from(0.0))?,
    };
    Ok((Some(grad_self), Some(grad_src)))
}

/// The `prod` branch of [`scatter_reduce_backward`]: exclusive products where `self` or a
/// single `src` element of a group is zero; the gradient of `src` cannot be differentiated
/// again (PyTorch's `DelayedError`) when two zeros of `src` meet at a position.
fn prod_grads<T: Backend>(
    grad: &V<T>,
    self_: &V<T>,
    dim: i64,
    index: &V<T>,
    src: &V<T>,
    include_self: bool,
    result: &V<T>,
) -> Res<(V<T>, V<T>)> {
    let one = || Scalar::from(1.0);
    let masked_self = masked_fill_scalar(self_, &eq_scalar(self_, 0.0)?, one())?;
    let masked_self_result =
        scatter_reduce_two(&masked_self, dim, index, src, "prod", include_self)?;
    let grad_self = div_tensor(&mul_tensor(grad, &masked_self_result)?, &masked_self)?;
    let src_zero = eq_scalar(src, 0.0)?;
    let zeros = to(&src_zero, self_.scalar_type())?;
    let src_num_zeros = gathered(
        &scatter_add(&zeros_of(self_), dim, index, &zeros)?,
        dim,
        index,
    )?;
    let src_single_zero = bitwise_and_tensor(&src_zero, &eq_scalar(&src_num_zeros, 1.0)?)?;
    let masked_src = masked_fill_scalar(src, &src_single_zero, one())?;
    let masked_src_result =
        scatter_reduce_two(self_, dim, index, &masked_src, "prod", include_self)?;
    let grad_src1 = where_self(
        &src_single_zero,
        &gathered(&mul_tensor(grad, &masked_src_result)?, dim, index)?,
        &div_tensor(
            &gathered(&mul_tensor(grad, result)?, dim, index)?,
            &masked_fill_scalar(src, &src_zero, one())?,
        )?,
    )?;
    let grad_src = match grad_mode_enabled() && any_true(&gt_scalar(&src_num_zeros, 1.0)?, src)? {
        true => grad_src1.delayed_error(PROD_DOUBLE_BACKWARD),
        false => grad_src1,
    };
    Ok((grad_self, grad_src))
}

/// The `amax`/`amin` branch of [`scatter_reduce_backward`]: the gradient shared evenly
/// between the elements equal to the result.
fn extremum_grads<T: Backend>(
    grad: &V<T>,
    self_: &V<T>,
    dim: i64,
    index: &V<T>,
    src: &V<T>,
    result: &V<T>,
) -> Res<(V<T>, V<T>)> {
    let value = gathered(result, dim, index)?;
    let (self_is, src_is) = (eq_tensor(self_, result)?, eq_tensor(src, &value)?);
    let st = self_.scalar_type();
    let n = scatter_add(&to(&self_is, st)?, dim, index, &to(&src_is, st)?)?;
    let distributed = div_tensor(grad, &n)?;
    let grad_src = mul_tensor(&src_is, &gathered(&distributed, dim, index)?)?;
    Ok((mul_tensor(&self_is, &distributed)?, grad_src))
}

/// PyTorch's `scatter_reduce_jvp`: the op itself on the tangents for `sum` and `mean`
/// (linear); for `amax`/`amin` the tangents of the elements equal to the result, averaged.
/// PyTorch gives `prod` no tangent (an undefined tensor, which the op set's forward
/// formulas cannot return): an error here.
#[allow(clippy::too_many_arguments)]
pub fn scatter_reduce_jvp<T: Backend>(
    self_p: &V<T>,
    self_t: &V<T>,
    dim: i64,
    index: &V<T>,
    src_p: &V<T>,
    src_t: &V<T>,
    reduce: &str,
    include_self: bool,
    result: &V<T>,
) -> Res<V<T>> {
    match reduce {
        "sum" | "mean" => scatter_reduce_two(self_t, dim, index, src_t, reduce, include_self),
        "amin" | "amax" => {
            let gather_result = gathered(result, dim, index)?;
            let mask_self = eq_tensor(self_p, result)?;
            let mask_src = eq_tensor(src_p, &gather_result)?;
            let masked_src_t = where_self(&mask_src, src_t, &zeros_of(src_t))?;
            let st = self_t.scalar_type();
            let div = scatter_reduce_two(
                &to(&mask_self, st)?,
                dim,
                index,
                &to(&mask_src, st)?,
                "sum",
                include_self,
            )?;
            let masked_self_t = where_self(&mask_self, self_t, &zeros_of(self_t))?;
            let num = scatter_reduce_two(
                &masked_self_t,
                dim,
                index,
                &masked_src_t,
                "sum",
                include_self,
            )?;
            div_tensor(&num, &div)
        }
        _ => Err(AutogradError::not_implemented(
            "scatter_reduce",
            Some("forward AD of reduce=\"prod\" (PyTorch's scatter_reduce_jvp gives no tangent)"),
        )),
    }
}
