//! PyTorch's normalization and variance composites (CompositeImplicitAutograd): `batch_norm`
//! over the `_native_batch_norm_legit` family, `layer_norm` over `native_layer_norm`,
//! `group_norm` over `native_group_norm`, and
//! `var.dim` over `var.correction`. Over
//! `Variable<T>` only (no backward formula calls them).

use super::*;

/// `e` as a helper's error.
fn backend(e: crate::Error) -> AutogradError {
    AutogradError::backend(e)
}

/// PyTorch's `batch_norm` (`_batch_norm_impl_index`'s checks and empty-input path), then
/// the functional decomposition's dispatch: `_native_batch_norm_legit` in training with
/// running statistics (which it updates in place), `_native_batch_norm_legit.no_stats`
/// in training without, `_native_batch_norm_legit_no_training` in evaluation.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm<T: Backend>(
    input: &V<T>,
    weight: Option<&V<T>>,
    bias: Option<&V<T>>,
    running_mean: Option<&V<T>>,
    running_var: Option<&V<T>>,
    training: bool,
    momentum: f64,
    eps: f64,
    _cudnn_enabled: bool,
) -> Res<V<T>> {
    let shape = input.shape();
    if shape.iter().product::<usize>() == 0 {
        // "don't return view of input, don't return empty tensor because it will break
        // gradient chain" (PyTorch): the input's clone, times weight[0], plus bias[0].
        let mut out = clone(input, None)?;
        if let Some(w) = weight {
            out = mul_tensor(&out, &select_int(w, 0, 0)?)?;
        }
        if let Some(b) = bias {
            out = add_tensor(&out, &select_int(b, 0, 0)?, 1.0)?;
        }
        return Ok(out);
    }
    let num_features = crate::meta::batch_norm_channels(&shape).map_err(backend)?;
    let numel = |t: Option<&V<T>>| t.map(|t| t.shape().iter().product::<usize>());
    crate::meta::batch_norm(
        num_features,
        numel(running_mean),
        numel(running_var),
        numel(weight),
        numel(bias),
        training,
    )
    .map_err(backend)?;
    let out = match (training, running_mean, running_var) {
        (true, Some(rm), Some(rv)) => {
            _native_batch_norm_legit(input, weight, bias, rm, rv, true, momentum, eps)?
        }
        (true, _, _) => {
            _native_batch_norm_legit_no_stats(input, weight, bias, true, momentum, eps)?
        }
        (false, rm, rv) => _native_batch_norm_legit_no_training(
            input,
            weight,
            bias,
            required(rm)?,
            required(rv)?,
            momentum,
            eps,
        )?,
    };
    Ok(out.0)
}

/// PyTorch's `layer_norm` (`layer_norm_symint`): `native_layer_norm`'s output (its kernel
/// checks the arguments).
pub fn layer_norm<T: Backend>(
    input: &V<T>,
    normalized_shape: &[i64],
    weight: Option<&V<T>>,
    bias: Option<&V<T>>,
    eps: f64,
    _cudnn_enable: bool,
) -> Res<V<T>> {
    Ok(native_layer_norm(input, normalized_shape, weight, bias, eps)?.0)
}

/// PyTorch's `var.dim`: `var.correction` with `correction = unbiased ? 1 : 0`.
pub fn var_dim<T: Backend>(
    self_: &V<T>,
    dim: Option<&[i64]>,
    unbiased: bool,
    keepdim: bool,
) -> Res<V<T>> {
    var_correction(
        self_,
        dim,
        Some(autograd::types::Scalar::Int(i64::from(unbiased))),
        keepdim,
    )
}

/// PyTorch's `group_norm`: the input's `N` and `C` (its dims 0 and 1, with PyTorch's
/// errors for fewer dims), `check_group_norm_inputs`, then `native_group_norm`'s output over
/// `HxW`, the product of the other dims.
pub fn group_norm<T: Backend>(
    input: &V<T>,
    num_groups: i64,
    weight: Option<&V<T>>,
    bias: Option<&V<T>>,
    eps: f64,
    _cudnn_enabled: bool,
) -> Res<V<T>> {
    let shape = input.shape();
    crate::factory::check_has_dims(shape.len(), 0).map_err(backend)?;
    crate::shape::norm_dim(1, shape.len()).map_err(backend)?;
    let (n, c) = (shape[0] as i64, shape[1] as i64);
    let (ws, bs) = (weight.map(|w| w.shape()), bias.map(|b| b.shape()));
    crate::meta::check_group_norm_inputs(&shape, ws.as_deref(), bs.as_deref(), c, num_groups)
        .map_err(backend)?;
    let hxw = shape[2..].iter().product::<usize>() as i64;
    Ok(native_group_norm(input, weight, bias, n, c, hxw, num_groups, eps)?.0)
}
