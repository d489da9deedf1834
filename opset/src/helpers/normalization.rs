//! PyTorch's FunctionsManual helpers of the normalization ops and of `var` (issue 30):
//! `var_backward`, `batchnorm_double_backward`, `batch_norm_jvp` and their static helpers,
//! ported with PyTorch's names, argument order and operation order. Like `formulas.rs`,
//! this file is compiled twice: over `Variable<T>` (`helpers`) and over raw tensors
//! (`helpers::raw`). Undefined C++ tensors are `None`.

use super::*;
use crate::helpers::BatchNormStat;

/// `a + b` where either may be undefined (PyTorch's `x.defined() ? x.add_(y) : y`).
pub(super) fn add_defined<T: Backend>(a: Option<V<T>>, b: V<T>) -> Res<V<T>> {
    match a {
        Some(a) => add_tensor(&a, &b, 1.0),
        None => Ok(b),
    }
}

/// PyTorch's `_safe_size`: the product of `sizes` at `dim` (1 for a 0-d tensor).
fn safe_size(sizes: &[usize], dim: &[i64]) -> Res<f64> {
    if sizes.is_empty() {
        return Ok(1.0);
    }
    let mut size = 1.0;
    for &d in dim {
        let d = crate::shape::norm_dim(d, sizes.len()).map_err(AutogradError::backend)?;
        size *= sizes[d] as f64;
    }
    Ok(size)
}

/// PyTorch's `var_backward`: `2 / (n - correction) * grad * (self - mean)`, with NaN where
/// `self` equals its mean and infinity elsewhere when `n <= correction` over all elements.
pub fn var_backward<T: Backend>(
    grad: &V<T>,
    self_: &V<T>,
    dim: Option<&[i64]>,
    correction: Option<autograd::types::Scalar>,
    keepdim: bool,
) -> Res<V<T>> {
    let correction = correction.map_or(1.0, |c| c.to_f64());
    let shape = self_.shape();
    let Some(dim) = dim.filter(|_| !shape.is_empty()) else {
        let dof = shape.iter().product::<usize>() as f64 - correction;
        let mean = mean(self_, None)?;
        if dof <= 0.0 {
            let at_mean = eq_tensor(self_, &mean)?;
            let nan = full_like(self_, f64::NAN, None, None, None, None, None)?;
            let inf = full_like(self_, f64::INFINITY, None, None, None, None, None)?;
            return mul_tensor(grad, &where_self(&at_mean, &nan, &inf)?);
        }
        return mul_tensor(
            &mul_scalar(grad, 2.0 / dof)?,
            &sub_tensor(self_, &mean, 1.0)?,
        );
    };
    let mut grad = grad.clone();
    if !keepdim && shape.len() > 1 {
        grad = restore_reduced_dims(&grad, dim, false)?;
    }
    let rnumel = safe_size(&shape, dim)?;
    let mean = mean_dim(self_, Some(dim), true, None)?;
    mul_tensor(
        &mul_scalar(&grad, 2.0 / (rnumel - correction))?,
        &sub_tensor(self_, &mean, 1.0)?,
    )
}

/// PyTorch's `sum_exclude_dim1`: the sum over every dim but 1.
fn sum_exclude_dim1<T: Backend>(to_sum: &V<T>, keepdim: bool) -> Res<V<T>> {
    let mut r = sum_dim_intlist(to_sum, Some(&[0]), keepdim, None)?;
    let start_point_exclusive = if keepdim { 1 } else { 0 };
    let mut dim = r.shape().len() as i64 - 1;
    while dim > start_point_exclusive {
        r = sum_dim_intlist(&r, Some(&[dim]), keepdim, None)?;
        dim -= 1;
    }
    Ok(r)
}

/// PyTorch's `unsqueeze_dim1`: `src` (a per-channel vector) shaped to broadcast against
/// `target` as if reduced with `keepdim`.
fn unsqueeze_dim1<T: Backend>(src: &V<T>, target: &V<T>) -> Res<V<T>> {
    let nd = target.shape().len();
    let mut src_expanded = src.clone();
    while src_expanded.shape().len() + 1 < nd {
        src_expanded = unsqueeze(&src_expanded, 1)?;
    }
    if src_expanded.shape().len() + 1 == nd {
        src_expanded = unsqueeze(&src_expanded, 0)?;
    }
    Ok(src_expanded)
}

/// PyTorch's `expand_as_dim1`: a per-channel vector expanded to `target`'s shape.
fn expand_as_dim1<T: Backend>(src: &V<T>, target: &V<T>) -> Res<V<T>> {
    let nd = target.shape().len();
    let mut src_expanded = src.clone();
    while src_expanded.shape().len() + 1 < nd {
        src_expanded = unsqueeze(&src_expanded, 1)?;
    }
    expand(&src_expanded, &dims(&target.shape()), false)
}

/// `gamma * x`, where PyTorch multiplies by `ones({})` for a non-affine norm (the same
/// values; the product is skipped).
pub(super) fn times_gamma<T: Backend>(gamma: Option<&V<T>>, x: &V<T>) -> Res<V<T>> {
    match gamma {
        Some(g) => mul_tensor(g, x),
        None => Ok(x.clone()),
    }
}

/// The statistics `batchnorm_double_backward` reads, shaped to broadcast against the input.
struct BnStats<T: Backend> {
    input_sub_mu: V<T>,
    sigma2_eps_neg_1_2: V<T>,
    sigma2_eps_neg_1: V<T>,
    sigma2_eps_neg_3_2: V<T>,
    m: f64,
}

/// A saved statistic with PyTorch's third-order guard ([`BatchNormStat`]).
fn guard<T: Backend>(
    stat: &V<T>,
    save_mean: Option<&V<T>>,
    save_invstd: Option<&V<T>>,
    input: &V<T>,
) -> Res<V<T>> {
    Ok(stat.guarded(required(save_mean)?, required(save_invstd)?, input))
}

#[allow(clippy::too_many_arguments)]
fn bn_stats<T: Backend>(
    input: &V<T>,
    running_mean: Option<&V<T>>,
    running_var: Option<&V<T>>,
    training: bool,
    eps: f64,
    save_mean: Option<&V<T>>,
    save_invstd: Option<&V<T>>,
) -> Res<BnStats<T>> {
    let shape = input.shape();
    let m = shape[0] as f64 * shape[2..].iter().product::<usize>() as f64;
    let mu = match training {
        true => guard(required(save_mean)?, save_mean, save_invstd, input)?,
        false => required(running_mean)?.clone(),
    };
    let mu = unsqueeze_dim1(&mu, input)?;
    let input_sub_mu = sub_tensor(input, &mu, 1.0)?;
    let s = match training {
        true => guard(required(save_invstd)?, save_mean, save_invstd, input)?,
        false => pow_tensor_scalar(&add_scalar(required(running_var)?, eps, 1.0)?, -0.5)?,
    };
    let sigma2_eps_neg_1_2 = unsqueeze_dim1(&s, input)?;
    let sigma2_eps_neg_1 = pow_tensor_scalar(&sigma2_eps_neg_1_2, 2.0)?;
    let sigma2_eps_neg_3_2 = pow_tensor_scalar(&sigma2_eps_neg_1_2, 3.0)?;
    Ok(BnStats {
        input_sub_mu,
        sigma2_eps_neg_1_2,
        sigma2_eps_neg_1,
        sigma2_eps_neg_3_2,
        m,
    })
}

/// PyTorch's `first_back_grad_input` of `batchnorm_double_backward`: the first backward's
/// grad_input for `g_o` and `gamma` (`None`: ones).
fn first_back_grad_input<T: Backend>(
    st: &BnStats<T>,
    g_o: &V<T>,
    gamma: Option<&V<T>>,
) -> Res<V<T>> {
    let h0 = div_scalar(&times_gamma(gamma, &st.sigma2_eps_neg_1_2)?, st.m)?;
    let h1 = sub_tensor(
        &sub_tensor(&mul_scalar(g_o, st.m)?, &sum_exclude_dim1(g_o, true)?, 1.0)?,
        &mul_tensor(
            &mul_tensor(&st.input_sub_mu, &st.sigma2_eps_neg_1)?,
            &sum_exclude_dim1(&mul_tensor(g_o, &st.input_sub_mu)?, true)?,
        )?,
        1.0,
    )?;
    mul_tensor(&h0, &h1)
}

/// PyTorch's error for an undefined tensor as an op's second operand.
pub(super) const UNDEFINED_OTHER: &str =
    "Expected a proper Tensor but got None (or an undefined Tensor in C++) for argument #1 'other'";

/// PyTorch's `batchnorm_double_backward`: the gradients of `native_batch_norm_backward`'s
/// outputs (`ggI`, `ggG`, `ggB`) back to its input, weight and `grad_out`.
#[allow(clippy::too_many_arguments)]
pub fn batchnorm_double_backward<T: Backend>(
    input: &V<T>,
    gamma: Option<&V<T>>,
    gg_i: Option<&V<T>>,
    gg_g: Option<&V<T>>,
    gg_b: Option<&V<T>>,
    g_o: &V<T>,
    running_mean: Option<&V<T>>,
    running_var: Option<&V<T>>,
    training: bool,
    eps: f64,
    save_mean: Option<&V<T>>,
    save_invstd: Option<&V<T>>,
    _output_mask: [bool; 3],
) -> Res<Grads3<T>> {
    let affine = gamma.is_some();
    let gamma_expanded = gamma.map(|g| expand_as_dim1(g, input)).transpose()?;
    let (gg_g_expanded, gg_b_expanded) = match affine {
        true => (
            gg_g.map(|g| expand_as_dim1(g, input)).transpose()?,
            gg_b.map(|g| expand_as_dim1(g, input)).transpose()?,
        ),
        false => (None, None),
    };
    let st = bn_stats(
        input,
        running_mean,
        running_var,
        training,
        eps,
        save_mean,
        save_invstd,
    )?;
    let gi = bn_double_grad_input(
        &st,
        gamma_expanded.as_ref(),
        gg_i,
        gg_g_expanded.as_ref(),
        g_o,
        training,
    )?;
    // calculate gG
    let gg = match gg_i.filter(|_| affine) {
        Some(gg_i) if training => {
            let g = mul_tensor(gg_i, &first_back_grad_input(&st, g_o, None)?)?;
            Some(sum_exclude_dim1(&g, false)?)
        }
        Some(gg_i) => {
            let g = mul_tensor(&mul_tensor(gg_i, g_o)?, &st.sigma2_eps_neg_1_2)?;
            Some(sum_exclude_dim1(&g, false)?)
        }
        None => None,
    };
    // calculate ggO
    let mut gg_o = match gg_i {
        Some(gg_i) if training => Some(first_back_grad_input(&st, gg_i, gamma_expanded.as_ref())?),
        Some(gg_i) => Some(times_gamma(
            gamma_expanded.as_ref(),
            &mul_tensor(gg_i, &st.sigma2_eps_neg_1_2)?,
        )?),
        None => None,
    };
    if let Some(g) = &gg_g_expanded {
        let term = mul_tensor(&mul_tensor(g, &st.input_sub_mu)?, &st.sigma2_eps_neg_1_2)?;
        gg_o = Some(add_defined(gg_o, term)?);
    }
    match (gg_b, gg_b_expanded, gg_o.is_some()) {
        (_, Some(b), _) => gg_o = Some(add_defined(gg_o, b)?),
        // PyTorch expands ggB only when affine: `ggO.add_(ggB_expanded)` of an undefined
        // tensor fails (a bias without a weight), unless there is no ggO yet.
        (Some(_), None, true) => return Err(AutogradError::msg(UNDEFINED_OTHER)),
        _ => {}
    }
    Ok((gi, gg, gg_o))
}

/// The `gI` part of `batchnorm_double_backward`: the input term and the gamma term.
fn bn_double_grad_input<T: Backend>(
    st: &BnStats<T>,
    gamma_expanded: Option<&V<T>>,
    gg_i: Option<&V<T>>,
    gg_g_expanded: Option<&V<T>>,
    g_o: &V<T>,
    training: bool,
) -> Res<Option<V<T>>> {
    let m = st.m;
    let input_mu_sigma2_neg_3_2 = mul_tensor(&st.input_sub_mu, &st.sigma2_eps_neg_3_2)?;
    let g_oinmu_sum = sum_exclude_dim1(&mul_tensor(g_o, &st.input_sub_mu)?, true)?;
    let g_o_sum = sum_exclude_dim1(g_o, true)?;
    let mut gi = None;
    if let Some(gg_i) = gg_i.filter(|_| training) {
        let gg_i_sum = sum_exclude_dim1(gg_i, true)?;
        let gg_iinmu_sum = sum_exclude_dim1(&mul_tensor(gg_i, &st.input_sub_mu)?, true)?;
        let all_sub = add_tensor(
            &sub_tensor(
                &div_scalar(&mul_tensor(&gg_i_sum, &g_o_sum)?, m)?,
                &sum_exclude_dim1(&mul_tensor(g_o, gg_i)?, true)?,
                1.0,
            )?,
            &mul_scalar(
                &mul_tensor(
                    &mul_tensor(&st.sigma2_eps_neg_1, &g_oinmu_sum)?,
                    &gg_iinmu_sum,
                )?,
                3.0 / m,
            )?,
            1.0,
        )?;
        let gi_0t = div_scalar(&mul_tensor(&input_mu_sigma2_neg_3_2, &all_sub)?, m)?;
        let gi_1t = mul_tensor(
            &div_scalar(&mul_tensor(&gg_iinmu_sum, &st.sigma2_eps_neg_3_2)?, m)?,
            &sub_tensor(&div_scalar(&g_o_sum, m)?, g_o, 1.0)?,
        )?;
        let gi_2t = mul_tensor(
            &div_scalar(&mul_tensor(&g_oinmu_sum, &st.sigma2_eps_neg_3_2)?, m)?,
            &sub_tensor(&div_scalar(&gg_i_sum, m)?, gg_i, 1.0)?,
        )?;
        let sum = add_tensor(&add_tensor(&gi_0t, &gi_1t, 1.0)?, &gi_2t, 1.0)?;
        gi = Some(times_gamma(gamma_expanded, &sum)?);
    }
    // add contribution of gamma term to gI
    if let Some(gg_g) = gg_g_expanded {
        let term = if training {
            let t0 = mul_tensor(g_o, &st.sigma2_eps_neg_1_2)?;
            let t1 = div_scalar(&mul_tensor(&st.sigma2_eps_neg_1_2, &g_o_sum)?, -m)?;
            let t2 = div_scalar(
                &mul_tensor(
                    &input_mu_sigma2_neg_3_2,
                    &sum_exclude_dim1(&mul_tensor(g_o, &st.input_sub_mu)?, true)?,
                )?,
                -m,
            )?;
            mul_tensor(gg_g, &add_tensor(&add_tensor(&t0, &t1, 1.0)?, &t2, 1.0)?)?
        } else {
            mul_tensor(&mul_tensor(gg_g, &st.sigma2_eps_neg_1_2)?, g_o)?
        };
        gi = Some(add_defined(gi, term)?);
    }
    Ok(gi)
}

/// PyTorch's `_invstd_jvp`: the tangent of `1 / input.std(dims)`.
pub(super) fn invstd_jvp<T: Backend>(
    input_p: &V<T>,
    input_t: &V<T>,
    mean_p: &V<T>,
    invstd_p: &V<T>,
    dims: &[i64],
    numel: f64,
    keepdim: bool,
) -> Res<V<T>> {
    let centered_t = sub_tensor(input_t, &mean_dim(input_t, Some(dims), true, None)?, 1.0)?;
    let invstd_t = mul_tensor(
        &mul_tensor(&neg(&pow_tensor_scalar(invstd_p, 3.0)?)?, &centered_t)?,
        &sub_tensor(input_p, mean_p, 1.0)?,
    )?;
    div_scalar(
        &sum_dim_intlist(&invstd_t, Some(dims), keepdim, None)?,
        numel,
    )
}

/// PyTorch's `_norm_jvp`: the tangent of `(input - input.mean(dims)) * input.invstd(dims)`.
pub(super) fn norm_jvp<T: Backend>(
    input_p: &V<T>,
    input_t: &V<T>,
    mean_p: &V<T>,
    invstd_p: &V<T>,
    dims: &[i64],
    numel: f64,
) -> Res<V<T>> {
    let invstd_t = invstd_jvp(input_p, input_t, mean_p, invstd_p, dims, numel, true)?;
    let centered_t = sub_tensor(input_t, &mean_dim(input_t, Some(dims), true, None)?, 1.0)?;
    add_tensor(
        &mul_tensor(&centered_t, invstd_p)?,
        &mul_tensor(&sub_tensor(input_p, mean_p, 1.0)?, &invstd_t)?,
        1.0,
    )
}

/// PyTorch's `_affine_jvp`: the tangent of `input * weight + bias`.
pub(super) fn affine_jvp<T: Backend>(
    input_p: Option<&V<T>>,
    input_t: V<T>,
    weight_p: Option<&V<T>>,
    weight_t: Option<&V<T>>,
    bias_t: Option<&V<T>>,
) -> Res<V<T>> {
    let mut input_t = input_t;
    if let (Some(w), Some(p)) = (weight_p, input_p) {
        input_t = mul_tensor(&input_t, w)?;
        if let Some(wt) = weight_t {
            input_t = add_tensor(&input_t, &mul_tensor(p, wt)?, 1.0)?;
        }
    }
    match bias_t {
        Some(b) => add_tensor(&input_t, b, 1.0),
        None => Ok(input_t),
    }
}

/// PyTorch's `batch_norm_jvp`: the tangent of a batch norm's output, from the saved
/// statistics in training and the running ones in evaluation.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_jvp<T: Backend>(
    input_p: &V<T>,
    input_t: &V<T>,
    weight_p: Option<&V<T>>,
    weight_t: Option<&V<T>>,
    _bias_p: Option<&V<T>>,
    bias_t: Option<&V<T>>,
    running_mean: Option<&V<T>>,
    running_var: Option<&V<T>>,
    saved_mean: &V<T>,
    saved_invstd: &V<T>,
    train: bool,
    eps: f64,
) -> Res<V<T>> {
    let shape = input_t.shape();
    let mut view_size = dims(&shape);
    let mut reduce = Vec::new();
    let mut numel = 1.0;
    for d in 0..shape.len() {
        if d != 1 {
            numel *= shape[d] as f64;
            view_size[d] = 1;
            reduce.push(d as i64);
        }
    }
    let (mean_p, invstd_p, result_t) = if train {
        let mean_p = view(saved_mean, &view_size)?;
        let invstd_p = view(saved_invstd, &view_size)?;
        let t = norm_jvp(input_p, input_t, &mean_p, &invstd_p, &reduce, numel)?;
        (mean_p, invstd_p, t)
    } else {
        let mean_p = view(required(running_mean)?, &view_size)?;
        let rv = add_scalar(required(running_var)?, eps, 1.0)?;
        let invstd_p = view(&reciprocal(&sqrt(&rv)?)?, &view_size)?;
        let t = mul_tensor(input_t, &invstd_p)?;
        (mean_p, invstd_p, t)
    };
    let result_p = weight_p
        .map(|_| mul_tensor(&sub_tensor(input_p, &mean_p, 1.0)?, &invstd_p))
        .transpose()?;
    let w = weight_p.map(|w| view(w, &view_size)).transpose()?;
    let wt = weight_t.map(|w| view(w, &view_size)).transpose()?;
    let bt = bias_t.map(|b| view(b, &view_size)).transpose()?;
    affine_jvp(
        result_p.as_ref(),
        result_t,
        w.as_ref(),
        wt.as_ref(),
        bt.as_ref(),
    )
}

/// The tangent of `native_batch_norm_backward`'s output `output` (the op set's forward
/// formula; PyTorch has none): the op is linear in `grad_out`, and its derivatives in the
/// input and weight are those `batchnorm_double_backward` computes (the Hessian of
/// `<grad_out, batch_norm>`, symmetric), applied to their tangents.
#[allow(clippy::too_many_arguments)]
pub fn native_batch_norm_backward_jvp<T: Backend>(
    grad_out_p: &V<T>,
    grad_out_t: &V<T>,
    input_p: &V<T>,
    input_t: &V<T>,
    weight_p: Option<&V<T>>,
    weight_t: Option<&V<T>>,
    running_mean: Option<&V<T>>,
    running_var: Option<&V<T>>,
    save_mean: Option<&V<T>>,
    save_invstd: Option<&V<T>>,
    train: bool,
    eps: f64,
    output: i64,
) -> Res<V<T>> {
    let linear = native_batch_norm_backward(
        grad_out_t,
        input_p,
        weight_p,
        running_mean,
        running_var,
        save_mean,
        save_invstd,
        train,
        eps,
        [true, true, true],
    )?;
    let (gi, gw, _) = batchnorm_double_backward(
        input_p,
        weight_p,
        Some(input_t),
        weight_t,
        None,
        grad_out_p,
        running_mean,
        running_var,
        train,
        eps,
        save_mean,
        save_invstd,
        [true, true, false],
    )?;
    let (base, hessian) = match output {
        0 => (linear.0, gi),
        1 => (linear.1, gw),
        _ => (linear.2, None),
    };
    match hessian {
        Some(h) => add_tensor(&base, &h, 1.0),
        None => Ok(base),
    }
}
