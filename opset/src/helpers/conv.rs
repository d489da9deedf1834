//! PyTorch's convolution and pooling composites (CompositeImplicitAutograd, Convolution.cpp
//! and MaxPooling.cpp): `conv1d`, `conv2d`, `conv_transpose1d`, `conv_transpose2d.input`
//! call `convolution` (an unbatched input gets a batch of one, as PyTorch's `batchify`),
//! `max_pool2d` is `max_pool2d_with_indices`' values, `adaptive_avg_pool2d` a mean over the
//! spatial dims for a 1x1 output and `_adaptive_avg_pool2d` otherwise, `avg_pool1d` and
//! `adaptive_avg_pool1d` their 2-d forms on an unsqueezed input; so their nodes, gradients and errors
//! are those of the ops PyTorch dispatches to. Over `Variable<T>` only.

use super::*;

/// PyTorch's `batchify`: an input with the batch dim as it is, one without it unsqueezed to
/// a batch of one; `Ok((input, is_batched))`, or PyTorch's error for another rank.
fn batchify<T: Backend>(input: &V<T>, spatial: usize, func: &str) -> Res<(V<T>, bool)> {
    let (no_batch, batch) = (spatial + 1, spatial + 2);
    let nd = input.shape().len();
    if nd != no_batch && nd != batch {
        return Err(AutogradError::backend(crate::Error::runtime(format!(
            "Expected {no_batch}D (unbatched) or {batch}D (batched) input to {func}, but got input of size: {:?}",
            input.shape()
        ))));
    }
    if nd == batch {
        Ok((input.clone(), true))
    } else {
        Ok((unsqueeze(input, 0)?, false))
    }
}

/// PyTorch's check that a bias has the input's dtype (`conv1d`, `conv2d`, ...).
fn check_bias_dtype<T: Backend>(input: &V<T>, bias: Option<&V<T>>) -> Res<()> {
    if let Some(b) = bias {
        let (i, bd) = (input.data().dtype(), b.data().dtype());
        if i != bd {
            let (i, bd) = (crate::dtype::c10_name(i), crate::dtype::c10_name(bd));
            return Err(AutogradError::backend(crate::Error::runtime(format!(
                "Input type ({i}) and bias type ({bd}) should be the same"
            ))));
        }
    }
    Ok(())
}

/// The output of a batchified call, without the batch of one again.
fn unbatch<T: Backend>(out: V<T>, is_batched: bool) -> Res<V<T>> {
    if is_batched {
        Ok(out)
    } else {
        squeeze_dim(&out, 0)
    }
}

/// A direct convolution over `spatial` dims (`conv1d`, `conv2d`).
#[allow(clippy::too_many_arguments)]
fn conv_nd<T: Backend>(
    func: &str,
    spatial: usize,
    input: &V<T>,
    weight: &V<T>,
    bias: Option<&V<T>>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Res<V<T>> {
    check_bias_dtype(input, bias)?;
    let (x, is_batched) = batchify(input, spatial, func)?;
    let zeros = vec![0i64; spatial];
    let out = convolution(
        &x, weight, bias, stride, padding, dilation, false, &zeros, groups,
    )?;
    unbatch(out, is_batched)
}

/// PyTorch's `conv1d`: `convolution` of a `(N, C, L)` or `(C, L)` input.
#[allow(clippy::too_many_arguments)]
pub fn conv1d<T: Backend>(
    input: &V<T>,
    weight: &V<T>,
    bias: Option<&V<T>>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Res<V<T>> {
    conv_nd(
        "conv1d", 1, input, weight, bias, stride, padding, dilation, groups,
    )
}

/// PyTorch's `conv2d`: `convolution` of a `(N, C, H, W)` or `(C, H, W)` input.
#[allow(clippy::too_many_arguments)]
pub fn conv2d<T: Backend>(
    input: &V<T>,
    weight: &V<T>,
    bias: Option<&V<T>>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Res<V<T>> {
    conv_nd(
        "conv2d", 2, input, weight, bias, stride, padding, dilation, groups,
    )
}

/// A transposed convolution over `spatial` dims.
#[allow(clippy::too_many_arguments)]
fn conv_transpose_nd<T: Backend>(
    func: &str,
    spatial: usize,
    input: &V<T>,
    weight: &V<T>,
    bias: Option<&V<T>>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Res<V<T>> {
    check_bias_dtype(input, bias)?;
    let (x, is_batched) = batchify(input, spatial, func)?;
    let out = convolution(
        &x,
        weight,
        bias,
        stride,
        padding,
        dilation,
        true,
        output_padding,
        groups,
    )?;
    unbatch(out, is_batched)
}

/// PyTorch's `conv_transpose1d`: a transposed `convolution` of a `(N, C, L)` or `(C, L)`
/// input.
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose1d<T: Backend>(
    input: &V<T>,
    weight: &V<T>,
    bias: Option<&V<T>>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Res<V<T>> {
    conv_transpose_nd(
        "conv_transpose1d",
        1,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )
}

/// PyTorch's `conv_transpose2d.input`: a transposed `convolution` of a `(N, C, H, W)` or
/// `(C, H, W)` input.
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose2d_input<T: Backend>(
    input: &V<T>,
    weight: &V<T>,
    bias: Option<&V<T>>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Res<V<T>> {
    conv_transpose_nd(
        "conv_transpose2d",
        2,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )
}

/// PyTorch's `max_pool2d`: the values of `max_pool2d_with_indices` (what PyTorch computes
/// whenever a gradient may be needed).
pub fn max_pool2d<T: Backend>(
    self_: &V<T>,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Res<V<T>> {
    Ok(max_pool2d_with_indices(self_, kernel_size, stride, padding, dilation, ceil_mode)?.0)
}

/// PyTorch's `adaptive_avg_pool2d`: the mean over the last two dims (kept) for a `[1, 1]`
/// output, `_adaptive_avg_pool2d` otherwise.
pub fn adaptive_avg_pool2d<T: Backend>(self_: &V<T>, output_size: &[i64]) -> Res<V<T>> {
    let fail = |m: String| Err(AutogradError::backend(crate::Error::runtime(m)));
    if output_size.len() != 2 {
        return fail("adaptive_avg_pool2d: output_size must be 2".into());
    }
    let (h, w) = (output_size[0], output_size[1]);
    if h < 0 || w < 0 {
        return fail(format!(
            "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {{{h}, {w}}}"
        ));
    }
    if h == 1 && w == 1 {
        return mean_dim(self_, Some(&[-1, -2]), true, None);
    }
    _adaptive_avg_pool2d(self_, output_size)
}

/// PyTorch's `checkDimRange(.., 2, 4)` and `check1d` of the 1-d poolings.
fn check_1d_pool<T: Backend>(func: &str, self_: &V<T>, lists: &[(&str, &[i64])]) -> Res<()> {
    let fail = |m: String| Err(AutogradError::backend(crate::Error::runtime(m)));
    let nd = self_.shape().len();
    if !(2..4).contains(&nd) {
        return fail(format!(
            "Expected 2 to 3 dimensions, but got {nd}-dimensional tensor for argument #1 'self' (while checking arguments for {func})"
        ));
    }
    for (name, v) in lists {
        if v.len() != 1 {
            return fail(format!(
                "{func}() argument '{name}' should contain one int (got {})",
                v.len()
            ));
        }
    }
    Ok(())
}

/// PyTorch's `avg_pool1d`: `avg_pool2d` of the input with a height of 1.
pub fn avg_pool1d<T: Backend>(
    self_: &V<T>,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
) -> Res<V<T>> {
    let stride = if stride.is_empty() {
        kernel_size
    } else {
        stride
    };
    check_1d_pool(
        "avg_pool1d",
        self_,
        &[
            ("kernel_size", kernel_size),
            ("stride", stride),
            ("padding", padding),
        ],
    )?;
    let out = avg_pool2d(
        &unsqueeze(self_, -2)?,
        &[1, kernel_size[0]],
        &[1, stride[0]],
        &[0, padding[0]],
        ceil_mode,
        count_include_pad,
        None,
    )?;
    squeeze_dim(&out, -2)
}

/// PyTorch's `adaptive_avg_pool1d`: `adaptive_avg_pool2d` of the input with a height of 1.
pub fn adaptive_avg_pool1d<T: Backend>(self_: &V<T>, output_size: &[i64]) -> Res<V<T>> {
    check_1d_pool(
        "adaptive_avg_pool1d",
        self_,
        &[("output_size", output_size)],
    )?;
    let out = adaptive_avg_pool2d(&unsqueeze(self_, -2)?, &[1, output_size[0]])?;
    squeeze_dim(&out, -2)
}
