//! PyTorch's FunctionsManual helpers of group normalization (issue 30):
//! `native_group_norm_backward_dispatcher` (the differentiable backward of
//! `native_group_norm`, gradients of the mean and rstd outputs included), `group_norm_jvp`,
//! `group_norm_mean_jvp` and `group_norm_invstd_jvp`, ported with PyTorch's names, argument
//! order and operation order. Like `norm_formulas.rs`, this file is compiled twice: over
//! `Variable<T>` (`helpers`) and over raw tensors (`helpers::raw`). Undefined C++ tensors
//! are `None`.

use super::*;

/// The saved tensors of a group norm's backward as `[N, G, D, HxW]` blocks (the statistics
/// `[N, G, 1, 1]`), and `s = 1 / (D * HxW)`.
struct GnBlocks<T: Backend> {
    x: V<T>,
    mean: V<T>,
    rstd: V<T>,
    /// `[N, G, D, HxW]`.
    shape: [i64; 4],
    s: f64,
}

impl<T: Backend> GnBlocks<T> {
    fn of(x: &V<T>, mean: &V<T>, rstd: &V<T>, [n, c, hxw, g]: [i64; 4]) -> Res<Self> {
        let d = c / g;
        Ok(GnBlocks {
            x: reshape(x, &[n, g, d, hxw])?,
            mean: reshape(mean, &[n, g, 1, 1])?,
            rstd: reshape(rstd, &[n, g, 1, 1])?,
            shape: [n, g, d, hxw],
            s: 1.0 / (d * hxw) as f64,
        })
    }

    /// `t` summed over the dims `dims` (kept).
    fn sum_keep(t: &V<T>, dims: &[i64]) -> Res<V<T>> {
        sum_dim_intlist(t, Some(dims), true, None)
    }

    /// The gradient of the input through the normalized output `dY_tensor` (`ds` and `db`
    /// its per-channel sums, `gamma` shaped `[1, G, D, 1]`): PyTorch's `a * dY + b * X + c`.
    fn grad_input_of_dy(&self, dy: &V<T>, ds: &V<T>, db: &V<T>, gamma: Option<&V<T>>) -> Res<V<T>> {
        let rstd_cube = mul_tensor(&mul_tensor(&self.rstd, &self.rstd)?, &self.rstd)?;
        let a = times_gamma(gamma, &self.rstd)?;
        let b = Self::sum_keep(&times_gamma(gamma, ds)?, &[2])?;
        let c = Self::sum_keep(&times_gamma(gamma, db)?, &[2])?;
        let b = mul_scalar(
            &mul_tensor(
                &sub_tensor(&mul_tensor(&c, &self.mean)?, &b, 1.0)?,
                &rstd_cube,
            )?,
            self.s,
        )?;
        let c = sub_tensor(
            &mul_tensor(&neg(&b)?, &self.mean)?,
            &mul_scalar(&mul_tensor(&c, &self.rstd)?, self.s)?,
            1.0,
        )?;
        let bx = mul_tensor(&b, &self.x)?;
        add_tensor(&add_tensor(&mul_tensor(&a, dy)?, &bx, 1.0)?, &c, 1.0)
    }

    /// The gradient of the input through the statistics: `var_mean_backward` of the
    /// variance's gradient (from `drstd`) and the mean's, over the group's dims.
    fn grad_input_of_stats(&self, dmean: Option<&V<T>>, drstd: Option<&V<T>>) -> Res<V<T>> {
        let [n, g, ..] = self.shape;
        let dvar = drstd
            .map(|d| {
                let rstd_cube = mul_tensor(&mul_tensor(&self.rstd, &self.rstd)?, &self.rstd)?;
                mul_tensor(&mul_scalar(&rstd_cube, -0.5)?, &view(d, &[n, g, 1, 1])?)
            })
            .transpose()?;
        let dmean = dmean.map(|d| view(d, &[n, g, 1, 1])).transpose()?;
        var_mean_backward(dvar.as_ref(), dmean.as_ref(), &self.x, &[2, 3], true)
    }
}

/// PyTorch's `var_mean_backward` with `correction = 0`: the gradient of `self` through its
/// variance and mean over `dim` (either gradient may be undefined; not both).
fn var_mean_backward<T: Backend>(
    gvar: Option<&V<T>>,
    gmean: Option<&V<T>>,
    self_: &V<T>,
    dim: &[i64],
    keepdim: bool,
) -> Res<V<T>> {
    let correction = Some(autograd::types::Scalar::Int(0));
    let gself = gvar
        .map(|g| var_backward(g, self_, Some(dim), correction, keepdim))
        .transpose()?;
    let Some(gmean) = gmean else {
        return Ok(required(gself.as_ref())?.clone());
    };
    let shape = self_.shape();
    let numel = shape.iter().product::<usize>() as i64;
    let aux = mean_backward(gmean, &dims(&shape), Some(dim), numel, keepdim)?;
    add_defined(gself, aux)
}

/// PyTorch's `native_group_norm_backward_dispatcher`: the gradients of a group norm's
/// input, weight and bias from those of its output (`dY`), mean and rstd, with
/// differentiable ops (PyTorch's `infinitely_differentiable_native_group_norm_backward`;
/// the mean's and rstd's gradients each count on their own, as PyTorch 2.15's do).
#[allow(clippy::too_many_arguments)]
pub fn native_group_norm_backward_dispatcher<T: Backend>(
    d_y: Option<&V<T>>,
    dmean: Option<&V<T>>,
    drstd: Option<&V<T>>,
    x: &V<T>,
    mean: &V<T>,
    rstd: &V<T>,
    gamma: Option<&V<T>>,
    n: i64,
    c: i64,
    hx_w: i64,
    group: i64,
    grad_input_mask: [bool; 3],
) -> Res<Grads3<T>> {
    let bl = GnBlocks::of(x, mean, rstd, [n, c, hx_w, group])?;
    let [_, g, d, _] = bl.shape;
    let sums = d_y
        .map(|dy| -> Res<_> {
            let dy = reshape(dy, &bl.shape)?;
            let ds = GnBlocks::sum_keep(&mul_tensor(&dy, &bl.x)?, &[3])?;
            let db = GnBlocks::sum_keep(&dy, &[3])?;
            Ok((dy, ds, db))
        })
        .transpose()?;
    let stats = dmean.is_some() || drstd.is_some();
    let mut dx = None;
    if grad_input_mask[0] {
        let gamma_tensor = gamma.map(|w| reshape(w, &[1, g, d, 1])).transpose()?;
        if let Some((dy, ds, db)) = &sums {
            dx = Some(bl.grad_input_of_dy(dy, ds, db, gamma_tensor.as_ref())?);
        }
        if stats {
            dx = Some(add_defined(dx, bl.grad_input_of_stats(dmean, drstd)?)?);
        }
        dx = dx.map(|t| reshape(&t, &dims(&x.shape()))).transpose()?;
    }
    let param_shape = gamma.map_or(vec![c], |w| dims(&w.shape()));
    let param = |t: V<T>| reshape(&sum_dim_intlist(&t, Some(&[0]), false, None)?, &param_shape);
    let (mut dgamma, mut dbeta) = (None, None);
    if let Some((_, ds, db)) = &sums {
        if grad_input_mask[1] {
            let centered = sub_tensor(ds, &mul_tensor(db, &bl.mean)?, 1.0)?;
            dgamma = Some(param(mul_tensor(&centered, &bl.rstd)?)?);
        }
        if grad_input_mask[2] {
            dbeta = Some(param(db.clone())?);
        }
    }
    Ok((dx, dgamma, dbeta))
}

/// `[1, N * groups, N ? -1 : 1]`: a group norm's input as one batch-norm sample with a
/// channel per (sample, group). PyTorch's helpers write `view`; PyTorch 2.15 takes
/// non-contiguous inputs and tangents there, which a view cannot: `reshape`.
fn grouped<T: Backend>(t: &V<T>, n: i64, groups: i64) -> Res<V<T>> {
    reshape(t, &[1, n * groups, if n != 0 { -1 } else { 1 }])
}

/// PyTorch's `group_norm_jvp`: the tangent of a group norm's output, as `batch_norm_jvp`'s
/// over the grouped input, then `_affine_jvp` per channel.
#[allow(clippy::too_many_arguments)]
pub fn group_norm_jvp<T: Backend>(
    input_p: &V<T>,
    input_t: &V<T>,
    weight_p: Option<&V<T>>,
    weight_t: Option<&V<T>>,
    _bias_p: Option<&V<T>>,
    bias_t: Option<&V<T>>,
    saved_mean: &V<T>,
    saved_invstd: &V<T>,
    groups: i64,
) -> Res<V<T>> {
    let input_shape = dims(&input_p.shape());
    let (n, c) = (input_shape[0], input_shape[1]);
    let input_t_reshaped = grouped(input_t, n, groups)?;
    let input_p_reshaped = grouped(input_p, n, groups)?;
    let result_t = batch_norm_jvp(
        &input_p_reshaped,
        &input_t_reshaped,
        None,
        None,
        None,
        None,
        None,
        None,
        saved_mean,
        saved_invstd,
        true,
        0.0,
    )?;
    let result_t = reshape(&result_t, &input_shape)?;
    let view_size = [1, n * groups, 1];
    let result_p = weight_p
        .map(|_| {
            let centered = sub_tensor(&input_p_reshaped, &view(saved_mean, &view_size)?, 1.0)?;
            reshape(
                &mul_tensor(&centered, &view(saved_invstd, &view_size)?)?,
                &input_shape,
            )
        })
        .transpose()?;
    let mut affine_param_shape = vec![1; input_shape.len()];
    affine_param_shape[1] = c;
    let affine = |t: Option<&V<T>>| t.map(|t| reshape(t, &affine_param_shape)).transpose();
    affine_jvp(
        result_p.as_ref(),
        result_t,
        affine(weight_p)?.as_ref(),
        affine(weight_t)?.as_ref(),
        affine(bias_t)?.as_ref(),
    )
}

/// PyTorch's `group_norm_mean_jvp`: the mean of each group's tangent.
pub fn group_norm_mean_jvp<T: Backend>(input_t: &V<T>, mean_p: &V<T>, groups: i64) -> Res<V<T>> {
    let n = input_t.shape()[0] as i64;
    let input_t_reshaped = grouped(input_t, n, groups)?;
    let m = mean_dim(&input_t_reshaped, Some(&[2]), false, None)?;
    view(&m, &dims(&mean_p.shape()))
}

/// PyTorch's `group_norm_invstd_jvp`: `_invstd_jvp` over each group (PyTorch passes the
/// reshaped tangent as the primal and the primal as the tangent; the product is the same).
pub fn group_norm_invstd_jvp<T: Backend>(
    input_p: &V<T>,
    input_t: &V<T>,
    mean_p: &V<T>,
    invstd_p: &V<T>,
    groups: i64,
) -> Res<V<T>> {
    let n = input_p.shape()[0] as i64;
    let input_t_reshaped = grouped(input_t, n, groups)?;
    let input_p_reshaped = grouped(input_p, n, groups)?;
    let view_shape = [1, n * groups, if n != 0 { -1 } else { 1 }];
    let numel = input_t_reshaped.shape()[2] as f64;
    let t = invstd_jvp(
        &input_t_reshaped,
        &input_p_reshaped,
        &reshape(mean_p, &view_shape)?,
        &reshape(invstd_p, &view_shape)?,
        &[2],
        numel,
        false,
    )?;
    view(&t, &dims(&invstd_p.shape()))
}
