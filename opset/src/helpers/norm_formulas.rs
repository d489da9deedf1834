//! PyTorch's FunctionsManual helpers of layer and group normalization (issue 30):
//! `layer_norm_double_backward` and `layer_norm_jvp`, ported with PyTorch's names, argument
//! order and operation order. Like `normalization.rs` (whose `_norm_jvp` and `_affine_jvp`
//! they share), this file is compiled twice: over `Variable<T>` (`helpers`) and over raw
//! tensors (`helpers::raw`). Undefined C++ tensors are `None`.

use super::*;

/// `t.sum(1, true)`.
fn sum1<T: Backend>(t: &V<T>) -> Res<V<T>> {
    sum_dim_intlist(t, Some(&[1]), true, None)
}

/// The statistics `layer_norm_double_backward` reads, as `[M, 1]` columns against the
/// `[M, N]` input.
struct LnStats<T: Backend> {
    input_sub_mu: V<T>,
    sigma2_eps_neg_1_2: V<T>,
    sigma2_eps_neg_1: V<T>,
    sigma2_eps_neg_3_2: V<T>,
    input_mu_sigma2_neg_3_2: V<T>,
    n: f64,
}

impl<T: Backend> LnStats<T> {
    /// PyTorch's terms from the reshaped input and saved statistics (`save_mean` and
    /// `save_invstd` have the input's dtype here: PyTorch's `.to(input.scalar_type())` is
    /// the identity).
    fn of(input: &V<T>, save_mean: &V<T>, save_invstd: &V<T>, n: f64) -> Res<Self> {
        let input_sub_mu = sub_tensor(input, save_mean, 1.0)?;
        let sigma2_eps_neg_1_2 = save_invstd.clone();
        let sigma2_eps_neg_3_2 = pow_tensor_scalar(&sigma2_eps_neg_1_2, 3.0)?;
        Ok(LnStats {
            input_mu_sigma2_neg_3_2: mul_tensor(&input_sub_mu, &sigma2_eps_neg_3_2)?,
            sigma2_eps_neg_1: pow_tensor_scalar(&sigma2_eps_neg_1_2, 2.0)?,
            input_sub_mu,
            sigma2_eps_neg_1_2,
            sigma2_eps_neg_3_2,
            n,
        })
    }

    /// PyTorch's `first_bwd_fn_grad_input`: the first backward's grad_input for `g_o` and
    /// `gamma` (`None`: ones).
    fn first_bwd_fn_grad_input(&self, g_o: &V<T>, gamma: Option<&V<T>>) -> Res<V<T>> {
        let h0 = div_scalar(&times_gamma(gamma, &self.sigma2_eps_neg_1_2)?, self.n)?;
        let h1 = sub_tensor(
            &sub_tensor(&mul_scalar(g_o, self.n)?, &sum1(g_o)?, 1.0)?,
            &mul_tensor(
                &mul_tensor(&self.input_sub_mu, &self.sigma2_eps_neg_1)?,
                &sum1(&mul_tensor(g_o, &self.input_sub_mu)?)?,
            )?,
            1.0,
        )?;
        mul_tensor(&h0, &h1)
    }

    /// The `gI` term of `ggI` (`gxhat` is `gO * gamma`).
    fn grad_input_of_gg_i(&self, gg_i: &V<T>, gxhat: &V<T>) -> Res<V<T>> {
        let n = self.n;
        let gxhat_mu_sum = sum1(&mul_tensor(gxhat, &self.input_sub_mu)?)?;
        let gxhat_sum = sum1(gxhat)?;
        let gg_i_sum = sum1(gg_i)?;
        let gg_i_mu_sum = sum1(&mul_tensor(gg_i, &self.input_sub_mu)?)?;
        let all_sub = add_tensor(
            &sub_tensor(
                &div_scalar(&mul_tensor(&gg_i_sum, &gxhat_sum)?, n)?,
                &sum1(&mul_tensor(gg_i, gxhat)?)?,
                1.0,
            )?,
            &mul_scalar(
                &mul_tensor(
                    &mul_tensor(&self.sigma2_eps_neg_1, &gxhat_mu_sum)?,
                    &gg_i_mu_sum,
                )?,
                3.0 / n,
            )?,
            1.0,
        )?;
        let gi_0t = div_scalar(&mul_tensor(&self.input_mu_sigma2_neg_3_2, &all_sub)?, n)?;
        let gi_1t = mul_tensor(
            &div_scalar(&mul_tensor(&gg_i_mu_sum, &self.sigma2_eps_neg_3_2)?, n)?,
            &sub_tensor(&div_scalar(&gxhat_sum, n)?, gxhat, 1.0)?,
        )?;
        let gi_2t = mul_tensor(
            &div_scalar(&mul_tensor(&gxhat_mu_sum, &self.sigma2_eps_neg_3_2)?, n)?,
            &sub_tensor(&div_scalar(&gg_i_sum, n)?, gg_i, 1.0)?,
        )?;
        add_tensor(&add_tensor(&gi_0t, &gi_1t, 1.0)?, &gi_2t, 1.0)
    }

    /// The gamma term of `gI` (`ggG` expanded to `[1, N]`).
    fn grad_input_of_gg_g(&self, g_o: &V<T>, gg_g: &V<T>) -> Res<V<T>> {
        let g_o_gg_g = mul_tensor(g_o, gg_g)?;
        let t0 = mul_tensor(&g_o_gg_g, &self.sigma2_eps_neg_1_2)?;
        let t1 = div_scalar(
            &mul_tensor(&self.sigma2_eps_neg_1_2, &sum1(&g_o_gg_g)?)?,
            -self.n,
        )?;
        let t2 = div_scalar(
            &mul_tensor(
                &self.input_mu_sigma2_neg_3_2,
                &sum1(&mul_tensor(&g_o_gg_g, &self.input_sub_mu)?)?,
            )?,
            -self.n,
        )?;
        add_tensor(&add_tensor(&t0, &t1, 1.0)?, &t2, 1.0)
    }
}

/// `t` reshaped to `[1, N]` (for gamma and its gradients).
fn row<T: Backend>(t: Option<&V<T>>, n: i64) -> Res<Option<V<T>>> {
    t.map(|t| reshape(t, &[1, n])).transpose()
}

/// PyTorch's `layer_norm_double_backward`: the gradients of `native_layer_norm_backward`'s
/// outputs (`ggI`, `ggG`, `ggB`) back to its input, weight and `grad_out`, over the input
/// seen as `[M, N]` rows.
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_double_backward<T: Backend>(
    input_t: &V<T>,
    gamma: Option<&V<T>>,
    gg_i: Option<&V<T>>,
    gg_g: Option<&V<T>>,
    gg_b: Option<&V<T>>,
    g_o_t: &V<T>,
    save_mean_t: &V<T>,
    save_invstd_t: &V<T>,
    normalized_shape: &[i64],
    _output_mask: [bool; 3],
) -> Res<Grads3<T>> {
    let shape = input_t.shape();
    let axis = shape.len().saturating_sub(normalized_shape.len());
    let m = shape[..axis].iter().product::<usize>() as i64;
    let n = shape[axis..].iter().product::<usize>() as i64;
    let input = reshape(input_t, &[m, n])?;
    let g_o = reshape(g_o_t, &[m, n])?;
    let save_mean = reshape(save_mean_t, &[m, 1])?;
    let save_invstd = reshape(save_invstd_t, &[m, 1])?;
    let affine = gamma.is_some();
    let gamma_expanded = row(gamma, n)?;
    let (gg_g_expanded, gg_b_expanded) = match affine {
        true => (row(gg_g, n)?, row(gg_b, n)?),
        false => (None, None),
    };
    let gg_i_expanded = gg_i.map(|g| reshape(g, &[m, n])).transpose()?;
    let st = LnStats::of(&input, &save_mean, &save_invstd, n as f64)?;
    let mut gi = None;
    if let Some(gg_i) = &gg_i_expanded {
        let gxhat = times_gamma(gamma_expanded.as_ref(), &g_o)?;
        gi = Some(st.grad_input_of_gg_i(gg_i, &gxhat)?);
    }
    if let Some(gg_g) = &gg_g_expanded {
        gi = Some(add_defined(gi, st.grad_input_of_gg_g(&g_o, gg_g)?)?);
    }
    let gi = gi.map(|g| reshape(&g, &dims(&shape))).transpose()?;
    // calculate gG
    let gg = match (gamma, &gg_i_expanded) {
        (Some(gamma), Some(gg_i)) => {
            let g = st.first_bwd_fn_grad_input(gg_i, None)?;
            let g = sum_dim_intlist(&mul_tensor(&g_o, &g)?, Some(&[0]), false, None)?;
            Some(reshape(&g, &dims(&gamma.shape()))?)
        }
        _ => None,
    };
    // calculate ggO
    let mut gg_o = gg_i_expanded
        .as_ref()
        .map(|gg_i| st.first_bwd_fn_grad_input(gg_i, gamma_expanded.as_ref()))
        .transpose()?;
    if let Some(g) = &gg_g_expanded {
        let term = mul_tensor(&mul_tensor(g, &st.input_sub_mu)?, &st.sigma2_eps_neg_1_2)?;
        gg_o = Some(add_defined(gg_o, term)?);
    }
    match (gg_b, gg_b_expanded, gg_o.is_some()) {
        (_, Some(b), _) => gg_o = Some(add_defined(gg_o, b)?),
        // `ggO.add_(ggB_expanded)` of an undefined tensor fails (a bias without a weight).
        (Some(_), None, true) => return Err(AutogradError::msg(UNDEFINED_OTHER)),
        _ => {}
    }
    let gg_o = gg_o
        .map(|g| reshape(&expand(&g, &[m, n], false)?, &dims(&shape)))
        .transpose()?;
    Ok((gi, gg, gg_o))
}

/// PyTorch's `layer_norm_jvp`: the tangent of a layer norm's output from the saved
/// statistics (`_norm_jvp` over the normalized dims, then `_affine_jvp`).
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_jvp<T: Backend>(
    input_p: &V<T>,
    input_t: &V<T>,
    weight_p: Option<&V<T>>,
    weight_t: Option<&V<T>>,
    _bias_p: Option<&V<T>>,
    bias_t: Option<&V<T>>,
    saved_mean: &V<T>,
    saved_invstd: &V<T>,
    normalized_shape: &[i64],
) -> Res<V<T>> {
    let shape = input_t.shape();
    let mut view_size = dims(&shape);
    let mut view_size_affine = dims(&shape);
    let mut reduce = Vec::new();
    let mut numel = 1.0;
    for i in 0..shape.len() {
        if i < shape.len().saturating_sub(normalized_shape.len()) {
            view_size_affine[i] = 1;
        } else {
            numel *= shape[i] as f64;
            view_size[i] = 1;
            reduce.push(i as i64);
        }
    }
    let mean_p = view(saved_mean, &view_size)?;
    let invstd_p = view(saved_invstd, &view_size)?;
    let result_t = norm_jvp(input_p, input_t, &mean_p, &invstd_p, &reduce, numel)?;
    let result_p = weight_p
        .map(|_| mul_tensor(&sub_tensor(input_p, &mean_p, 1.0)?, &invstd_p))
        .transpose()?;
    let affine = |t: Option<&V<T>>| t.map(|t| view(t, &view_size_affine)).transpose();
    affine_jvp(
        result_p.as_ref(),
        result_t,
        affine(weight_p)?.as_ref(),
        affine(weight_t)?.as_ref(),
        affine(bias_t)?.as_ref(),
    )
}

/// The tangent of `native_layer_norm_backward`'s output `output` (the op set's forward
/// formula; PyTorch's forward mode runs a decomposition that recomputes the statistics from
/// the input): the op is linear in `grad_out`, and its derivatives in the input and weight
/// are those `layer_norm_double_backward` computes (the Hessian of `<grad_out, layer_norm>`,
/// symmetric), applied to their tangents.
#[allow(clippy::too_many_arguments)]
pub fn native_layer_norm_backward_jvp<T: Backend>(
    grad_out_p: &V<T>,
    grad_out_t: &V<T>,
    input_p: &V<T>,
    input_t: &V<T>,
    normalized_shape: &[i64],
    mean_p: &V<T>,
    rstd_p: &V<T>,
    weight_p: Option<&V<T>>,
    weight_t: Option<&V<T>>,
    bias_p: Option<&V<T>>,
    output: i64,
) -> Res<V<T>> {
    let linear = native_layer_norm_backward(
        grad_out_t,
        input_p,
        normalized_shape,
        mean_p,
        rstd_p,
        weight_p,
        bias_p,
        [true, weight_p.is_some(), bias_p.is_some()],
    )?;
    let (gi, gw, _) = layer_norm_double_backward(
        input_p,
        weight_p,
        Some(input_t),
        weight_t,
        None,
        grad_out_p,
        mean_p,
        rstd_p,
        normalized_shape,
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
