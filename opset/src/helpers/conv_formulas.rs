//! The convolution and pooling helpers of the formulas (PyTorch's `convolution_jvp`,
//! `convolution_backward_jvp_grad_bias`, `max_pool_double_backward` from
//! FunctionsManual.cpp and its native `_convolution_double_backward` from Convolution.cpp),
//! and the composite methods `flatten` and `view_as` the pooling formulas call. Compiled
//! twice, as `formulas.rs`: over `Variable<T>` and over raw tensors.

use super::*;

/// The gradients of a three-input backward (`None`: not defined).
pub type Grads3<T> = (Option<V<T>>, Option<V<T>>, Option<V<T>>);

/// The shape of `t` as the `int[]` the ops take.
fn sizes_of<T: Backend>(t: &V<T>) -> Vec<i64> {
    t.shape().iter().map(|d| *d as i64).collect()
}

/// PyTorch's `convolution_jvp`: the convolution of the input's tangent with the weight plus
/// that of the input with the weight's tangent (and the bias's tangent).
#[allow(clippy::too_many_arguments)]
pub fn convolution_jvp<T: Backend>(
    input_p: &V<T>,
    input_t: &V<T>,
    weight_p: &V<T>,
    weight_t: &V<T>,
    _bias_p: Option<&V<T>>,
    bias_t: Option<&V<T>>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
) -> Res<V<T>> {
    let a = convolution(
        input_t,
        weight_p,
        None,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
    )?;
    let b = convolution(
        input_p,
        weight_t,
        bias_t,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
    )?;
    add_tensor(&a, &b, 1.0)
}

/// PyTorch's `convolution_backward_jvp_grad_bias`: the bias gradient's tangent, the output
/// gradient's tangent summed over the batch and the spatial dims. A bias gradient that was
/// not asked for (`convolution_backward`'s empty placeholder) has an empty tangent.
pub fn convolution_backward_jvp_grad_bias<T: Backend>(
    grad_out_t: &V<T>,
    grad_bias: &V<T>,
) -> Res<V<T>> {
    let nd = grad_out_t.shape().len() as i64;
    if grad_bias.shape()[..] == [0usize] && grad_out_t.shape().get(1) != Some(&0) {
        return Ok(zeros_of(grad_bias));
    }
    let dims: Vec<i64> = std::iter::once(0).chain(2..nd).collect();
    sum_dim_intlist(grad_out_t, Some(&dims), false, None)
}

/// The `g`-th of `groups` equal pieces of `var` along `dim` (PyTorch's `subvariable`).
fn subvariable<T: Backend>(var: &V<T>, dim: i64, groups: i64, g: i64) -> Res<V<T>> {
    let n = var.shape()[dim as usize] as i64 / groups;
    narrow(var, dim, n * g, n)
}

/// The convolution parameters of `_convolution_double_backward`.
struct ConvParams<'a> {
    stride: &'a [i64],
    padding: &'a [i64],
    dilation: &'a [i64],
    transposed: bool,
    output_padding: Vec<i64>,
    groups: i64,
}

/// `convolution` with the parameters of `p` (no bias).
fn conv_with<T: Backend>(input: &V<T>, weight: &V<T>, p: &ConvParams) -> Res<V<T>> {
    convolution(
        input,
        weight,
        None,
        p.stride,
        p.padding,
        p.dilation,
        p.transposed,
        &p.output_padding,
        p.groups,
    )
}

/// PyTorch's `_convolution_double_backward` (Convolution.cpp): the gradients of
/// `convolution_backward`'s outputs `(grad_input, grad_weight, grad_bias)` (their gradients
/// `ggI`, `ggW`, `ggb`) with respect to its inputs `(grad_output, weight, input)`, as the
/// tuple `(ggO, gI, gW)`: `ggO = conv(ggI, w) + conv(i, ggW) + ggb`, `gW` a convolution of
/// `ggI` with `gO` (stride and dilation swapped), `gI` a transposed convolution of `gO` with
/// `ggW` (or a convolution, for a transposed forward).
#[allow(clippy::too_many_arguments)]
pub fn convolution_double_backward<T: Backend>(
    ggi: Option<&V<T>>,
    ggw: Option<&V<T>>,
    ggb: Option<&V<T>>,
    go: &V<T>,
    weight: &V<T>,
    input: &V<T>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
    _output_mask: [bool; 3],
) -> Res<Grads3<T>> {
    // PyTorch's `expand_param_if_needed`: one value for every spatial dim (the forward
    // checked the lengths).
    let dim = weight.shape().len().saturating_sub(2);
    let expand_param = |v: &[i64]| match v {
        [x] => vec![*x; dim],
        _ => v.to_vec(),
    };
    let (stride, padding, dilation) = (
        expand_param(stride),
        expand_param(padding),
        expand_param(dilation),
    );
    // PyTorch's inference of the groups of a grouped 3-d convolution.
    let (i_shape, w_shape) = (input.shape().to_vec(), weight.shape().to_vec());
    let groups = if !transposed && i_shape.len() > 4 {
        i_shape[1].checked_div(w_shape[1]).map_or(-1, |g| g as i64)
    } else {
        groups
    };
    let params = ConvParams {
        stride: &stride,
        padding: &padding,
        dilation: &dilation,
        transposed,
        output_padding: expand_param(output_padding),
        groups,
    };
    let nonempty = !input.shape().contains(&0);
    // ggO = conv(ggI, w) + conv(i, ggW) + ggb
    let mut ggo: Option<V<T>> = None;
    if nonempty {
        if let Some(ggi) = ggi {
            ggo = Some(conv_with(ggi, weight, &params)?);
        }
        if let Some(ggw) = ggw {
            let term = conv_with(input, ggw, &params)?;
            ggo = Some(match ggo {
                Some(o) => add_tensor(&o, &term, 1.0)?,
                None => term,
            });
        }
    }
    if let Some(ggb) = ggb {
        let mut new_size = vec![1i64; go.shape().len()];
        new_size[1] = ggb.shape()[0] as i64;
        let expanded = expand(&reshape(ggb, &new_size)?, &sizes_of(go), false)?;
        ggo = Some(match ggo {
            Some(o) => add_tensor(&o, &expanded, 1.0)?,
            None => expanded,
        });
    }
    let gw = match ggi {
        Some(ggi) if nonempty => Some(double_backward_gw(ggi, go, weight, &params)?),
        _ => None,
    };
    let gi = match ggw {
        Some(ggw) if nonempty => Some(double_backward_gi(ggw, go, weight, input, &params)?),
        _ => None,
    };
    Ok((ggo, gi, gw))
}

/// `_convolution_double_backward`'s `gW = conv(ggI, gO)`: the batch accumulated by
/// convolving the inputs with batch and channels swapped, group by group, stride and
/// dilation swapped; narrowed to the weight's size.
fn double_backward_gw<T: Backend>(
    ggi: &V<T>,
    go: &V<T>,
    weight: &V<T>,
    params: &ConvParams,
) -> Res<V<T>> {
    let groups = params.groups;
    let gw_params = ConvParams {
        stride: params.dilation,
        padding: params.padding,
        dilation: params.stride,
        transposed: false,
        output_padding: params.output_padding.clone(),
        groups: 1,
    };
    let got = transpose_int(go, 0, 1)?;
    let ggit = transpose_int(ggi, 0, 1)?;
    let conv = |go_g: &V<T>, ggi_g: &V<T>| {
        if params.transposed {
            conv_with(go_g, ggi_g, &gw_params)
        } else {
            conv_with(ggi_g, go_g, &gw_params)
        }
    };
    let gwt = if groups == 1 {
        conv(&got, &ggit)?
    } else {
        let pieces = (0..groups)
            .map(|g| {
                conv(
                    &subvariable(&got, 0, groups, g)?,
                    &subvariable(&ggit, 0, groups, g)?,
                )
            })
            .collect::<Res<Vec<_>>>()?;
        cat(&pieces, 1)?
    };
    let mut gw = transpose_int(&gwt, 0, 1)?;
    let w_size = weight.shape().to_vec();
    for (i, n) in w_size.iter().enumerate().skip(2) {
        if gw.shape()[i] > *n {
            gw = narrow(&gw, i as i64, 0, *n as i64)?;
        }
    }
    Ok(gw)
}

/// `_convolution_double_backward`'s `gI`: `convT(gO, ggW)` (with the output padding that
/// gives the input's size), or `conv(gO, ggW)` narrowed to the input's size for a
/// transposed forward.
fn double_backward_gi<T: Backend>(
    ggw: &V<T>,
    go: &V<T>,
    weight: &V<T>,
    input: &V<T>,
    params: &ConvParams,
) -> Res<V<T>> {
    let mut gi_params = ConvParams {
        stride: params.stride,
        padding: params.padding,
        dilation: params.dilation,
        transposed: !params.transposed,
        output_padding: params.output_padding.clone(),
        groups: params.groups,
    };
    let i_size = input.shape().to_vec();
    if params.transposed {
        let mut gi = conv_with(go, ggw, &gi_params)?;
        for (i, n) in i_size.iter().enumerate().skip(2) {
            if gi.shape()[i] > *n {
                gi = narrow(&gi, i as i64, 0, *n as i64)?;
            }
        }
        return Ok(gi);
    }
    let w_shape = weight.shape().to_vec();
    let kernel_size = &w_shape[2..];
    let go_shape = go.shape().to_vec();
    for i in 0..kernel_size.len() {
        let expected = (kernel_size[i] as i64 - 1) * gi_params.dilation[i]
            - 2 * gi_params.padding[i]
            + (gi_params.stride[i] * (go_shape[i + 2] as i64 - 1) + 1);
        if expected != i_size[i + 2] as i64 {
            gi_params.output_padding[i] = i_size[i + 2] as i64 - expected;
        }
    }
    conv_with(go, ggw, &gi_params)
}

/// PyTorch's `max_pool_double_backward`: the gradient's elements at the pooling's indices
/// (over the last `dim` dims).
pub fn max_pool_double_backward<T: Backend>(grad: &V<T>, indices: &V<T>, dim: i64) -> Res<V<T>> {
    let ishape = sizes_of(indices);
    if ishape.contains(&0) {
        return new_zeros(grad, &ishape, None, None, None, None);
    }
    let mut size: Vec<i64> = ishape[..ishape.len() - dim as usize].to_vec();
    size.push(-1);
    let indices_view = reshape(indices, &size)?;
    let g = reshape(grad, &size)?;
    reshape(&gather(&g, -1, &indices_view, false)?, &ishape)
}

/// PyTorch's `constant_pad_nd_backward`: the gradient padded by the negated pads (a crop).
pub fn constant_pad_nd_backward<T: Backend>(grad: &V<T>, pad: &[i64]) -> Res<V<T>> {
    let negated: Vec<i64> = pad.iter().map(|p| -p).collect();
    constant_pad_nd(grad, &negated, 0.0)
}

/// `flatten(start_dim, end_dim)` (PyTorch's composite `flatten.using_ints`): the dims from
/// `start_dim` to `end_dim` merged into one, a reshape.
pub fn flatten<T: Backend>(self_: &V<T>, start_dim: i64, end_dim: i64) -> Res<V<T>> {
    let shape = sizes_of(self_);
    if shape.is_empty() {
        return reshape(self_, &[1]);
    }
    let nd = shape.len();
    let wrap = |d| crate::shape::norm_dim(d, nd).map_err(AutogradError::backend);
    let (s, e) = (wrap(start_dim)?, wrap(end_dim)?);
    if s > e {
        return Err(AutogradError::backend(crate::Error::runtime(
            "flatten() has invalid args: start_dim cannot come after end_dim".to_string(),
        )));
    }
    if s == e {
        return Ok(self_.clone());
    }
    let mut new: Vec<i64> = shape[..s].to_vec();
    new.push(shape[s..=e].iter().product());
    new.extend_from_slice(&shape[e + 1..]);
    reshape(self_, &new)
}

/// `view_as(other)`: `self` viewed with `other`'s sizes (a reshape).
pub fn view_as<T: Backend>(self_: &V<T>, other: &V<T>) -> Res<V<T>> {
    reshape(self_, &sizes_of(other))
}
