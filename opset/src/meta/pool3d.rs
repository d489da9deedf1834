//! `avg_pool3d`, `max_pool3d_with_indices` and their backward ops: PyTorch's argument checks
//! (`AveragePool3d.cpp`, `DilatedMaxPool3d.cpp`, Pool.h's `pool3d_shape_check` and
//! `*_pool3d_backward_shape_check`) in PyTorch's words and order. The geometry is the
//! n-dim [`Pool`] the 2-d poolings share, so the kernels' window arithmetic is one.

use super::R;
use super::conv::{Pool, pool_geometry, pooling_output_shape, size_dim};
use crate::error::{Error, check};

/// An `int[3]` pooling argument: one value for the three dims or three (`None` otherwise).
fn triple(v: &[i64]) -> Option<[i64; 3]> {
    match v {
        [a] => Some([*a; 3]),
        [a, b, c] => Some([*a, *b, *c]),
        _ => None,
    }
}

/// The kernel, stride and padding of a 3-d pooling (`op`: `avg_pool3d` or `max_pool3d`,
/// whose messages differ by an "either").
fn kernel_stride_padding(op: &str, k: &[i64], s: &[i64], p: &[i64]) -> R<[[i64; 3]; 3]> {
    let either = if op == "max_pool3d" { "either " } else { "" };
    let k = triple(k).ok_or_else(|| {
        Error::runtime(format!(
            "{op}: kernel_size must {either}be a single int, or a tuple of three ints"
        ))
    })?;
    let s = match s {
        [] => k,
        s => triple(s).ok_or_else(|| {
            Error::runtime(format!(
                "{op}: stride must {either}be omitted, a single int, or a tuple of three ints"
            ))
        })?,
    };
    let p = triple(p).ok_or_else(|| {
        Error::runtime(format!(
            "{op}: padding must {either}be a single int, or a tuple of three ints"
        ))
    })?;
    Ok([k, s, p])
}

/// `max_pool3d`'s dilation.
fn dilation3(d: &[i64]) -> R<[i64; 3]> {
    triple(d).ok_or_else(|| {
        Error::runtime("max_pool3d: dilation must be either a single int, or a tuple of three ints")
    })
}

/// PyTorch's check of a 3-d pooling's input rank.
fn check_rank(input: &[usize]) -> R<()> {
    check(input.len() == 4 || input.len() == 5, || {
        "non-empty 4D or 5D (batch mode) tensor expected for input".into()
    })
}

/// The output's three spatial sizes (PyTorch's `pooling_output_shape` per dim).
fn output_sizes(
    input: &[usize],
    k: [i64; 3],
    s: [i64; 3],
    p: [i64; 3],
    d: [i64; 3],
    ceil_mode: bool,
) -> R<[i64; 3]> {
    let nd = input.len();
    let mut out = [0; 3];
    for i in 0..3 {
        out[i] = pooling_output_shape(input[nd - 3 + i] as i64, k[i], p[i], s[i], d[i], ceil_mode)?;
    }
    Ok(out)
}

/// The arguments of PyTorch's `pool3d_shape_check`.
struct Shape3d<'a> {
    input: &'a [usize],
    k: [i64; 3],
    s: [i64; 3],
    p: [i64; 3],
    d: [i64; 3],
    out: [i64; 3],
    fn_name: &'a str,
    check_input_size: bool,
}

/// PyTorch's `pool3d_shape_check` (Pool.h).
fn pool3d_shape_check(a: &Shape3d) -> R<()> {
    let (k, s, p, d, o, input) = (a.k, a.s, a.p, a.d, a.out, a.input);
    check(k.iter().all(|x| *x > 0), || {
        format!(
            "kernel size should be greater than zero, but got kT: {} kH: {} kW: {}",
            k[0], k[1], k[2]
        )
    })?;
    check(s.iter().all(|x| *x > 0), || {
        format!(
            "stride should be greater than zero, but got dT: {} dH: {} dW: {}",
            s[0], s[1], s[2]
        )
    })?;
    check(d.iter().all(|x| *x > 0), || {
        format!(
            "dilation should be greater than zero, but got dilationT: {} dilationH: {} dilationW: {}",
            d[0], d[1], d[2]
        )
    })?;
    check_rank(input)?;
    let nd = input.len();
    for (i, n) in input.iter().enumerate().skip(usize::from(nd == 5)) {
        check(*n > 0, || {
            format!(
                "{}(): Expected input to have non-zero size for non-batch dimensions, but input has sizes {input:?} with dimension {i} being empty",
                a.fn_name
            )
        })?;
    }
    let (c, t, h, w) = (input[nd - 4], input[nd - 3], input[nd - 2], input[nd - 1]);
    if a.check_input_size {
        check(
            t as i64 >= k[0] && h as i64 >= k[1] && w as i64 >= k[2],
            || {
                format!(
                    "input image (T: {t} H: {h} W: {w}) smaller than kernel size (kT: {} kH: {} kW: {})",
                    k[0], k[1], k[2]
                )
            },
        )?;
    }
    check(
        k[0] / 2 >= p[0] && k[2] / 2 >= p[2] && k[1] / 2 >= p[1],
        || {
            format!(
                "pad should be smaller than or equal to half of kernel size, but got kT: {} kW: {} kH: {} padT: {} padW: {} padH: {}",
                k[0], k[2], k[1], p[0], p[2], p[1]
            )
        },
    )?;
    check(o.iter().all(|x| *x >= 1), || {
        format!(
            "Given input size: ({c}x{t}x{h}x{w}). Calculated output size: ({c}x{}x{}x{}). Output size is too small",
            o[0], o[1], o[2]
        )
    })
}

/// PyTorch's `check_dim_size`: `t` has `ndim` dims and `t.size(dim) == size`.
fn check_dim_size(t: &[usize], ndim: usize, dim: usize, size: usize) -> R<()> {
    if t.is_empty() {
        return Err(Error::index(format!(
            "Dimension specified as {dim} but tensor has no dimensions"
        )));
    }
    if t.len() == ndim && t[dim] == size {
        return Ok(());
    }
    let got = t[crate::shape::norm_dim(dim as i64, t.len())?];
    Err(Error::runtime(format!(
        "Expected a tensor of dimension {ndim} and tensor.size[{dim}] == {size} but got: dimension {} and tensor.size[{dim}] = {got}",
        t.len()
    )))
}

/// The gradient's (and the indices') sizes against the output's (`nslices` then the three
/// spatial sizes), as the backward shape checks compare them.
fn check_output_like(t: &[usize], input: &[usize], out: [i64; 3]) -> R<()> {
    let nd = input.len();
    check_dim_size(t, nd, nd - 4, input[nd - 4])?;
    for (i, o) in out.iter().enumerate() {
        check_dim_size(t, nd, nd - 3 + i, *o as usize)?;
    }
    Ok(())
}

/// `max_pool3d_with_indices`' arguments, checked as PyTorch's CPU kernel checks them.
pub fn max_pool3d(
    input: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> R<Pool> {
    let [k, s, p] = kernel_stride_padding("max_pool3d", kernel_size, stride, padding)?;
    let d = dilation3(dilation)?;
    check_rank(input)?;
    let out = output_sizes(input, k, s, p, d, ceil_mode)?;
    let fn_name = "max_pool3d_with_indices_out_cpu_template";
    pool3d_shape_check(&Shape3d {
        input,
        k,
        s,
        p,
        d,
        out,
        fn_name,
        check_input_size: false,
    })?;
    Ok(pool_geometry(input, &k, &s, &p, &d, &out))
}

/// `max_pool3d_with_indices_backward`: PyTorch's checks (the output's sizes are the
/// gradient's), then the gradient's and the indices' shapes; the geometry.
#[allow(clippy::too_many_arguments)]
pub fn max_pool3d_backward(
    grad_output: &[usize],
    input: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
    indices: &[usize],
) -> R<Pool> {
    // The output's sizes are the gradient's: `ceil_mode` plays no part in the checks.
    let _ = ceil_mode;
    let [k, s, p] = kernel_stride_padding("max_pool3d", kernel_size, stride, padding)?;
    let d = dilation3(dilation)?;
    check_rank(input)?;
    let mut out = [0i64; 3];
    for (i, dim) in [-3i64, -2, -1].into_iter().enumerate() {
        out[i] = grad_output[size_dim(grad_output, dim)?] as i64;
    }
    let fn_name = "max_pool3d_with_indices_backward_out_cpu_template";
    pool3d_shape_check(&Shape3d {
        input,
        k,
        s,
        p,
        d,
        out,
        fn_name,
        check_input_size: false,
    })?;
    check_output_like(grad_output, input, out)?;
    check_output_like(indices, input, out)?;
    let pool = pool_geometry(input, &k, &s, &p, &d, &out);
    // PyTorch reads past a gradient or indices of a smaller batch; the op set refuses them.
    for (name, t) in [("gradOutput", grad_output), ("indices", indices)] {
        check(t == pool.shape.as_slice(), || {
            format!(
                "Expected {name} to have the shape {:?} of max_pool3d's output, but got {t:?}",
                pool.shape
            )
        })?;
    }
    Ok(pool)
}

/// `avg_pool3d`'s arguments, checked as PyTorch's meta function checks them (the
/// geometry's dilation is 1).
pub fn avg_pool3d(
    input: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    divisor_override: Option<i64>,
) -> R<Pool> {
    avg_pool3d_checked(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        divisor_override,
        "avg_pool3d",
    )
}

/// `avg_pool3d`'s checks, with the name PyTorch's shape check gives the op.
fn avg_pool3d_checked(
    input: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    divisor_override: Option<i64>,
    fn_name: &str,
) -> R<Pool> {
    let [k, s, p] = kernel_stride_padding("avg_pool3d", kernel_size, stride, padding)?;
    check_rank(input)?;
    check(divisor_override != Some(0), || {
        "divisor must be not zero".into()
    })?;
    let d = [1; 3];
    let out = output_sizes(input, k, s, p, d, ceil_mode)?;
    pool3d_shape_check(&Shape3d {
        input,
        k,
        s,
        p,
        d,
        out,
        fn_name,
        check_input_size: true,
    })?;
    Ok(pool_geometry(input, &k, &s, &p, &d, &out))
}

/// `avg_pool3d_backward`: the forward's checks, then the gradient's shape (PyTorch checks
/// its channels and spatial sizes; a different batch size is refused here too).
#[allow(clippy::too_many_arguments)]
pub fn avg_pool3d_backward(
    grad_output: &[usize],
    input: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    divisor_override: Option<i64>,
) -> R<Pool> {
    let pool = avg_pool3d_checked(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        divisor_override,
        "avg_pool3d_backward",
    )?;
    let o = &pool.output;
    check_output_like(grad_output, input, [o[0] as i64, o[1] as i64, o[2] as i64])?;
    check(grad_output == pool.shape.as_slice(), || {
        format!(
            "Expected gradOutput to have the shape {:?} of avg_pool3d's output, but got {grad_output:?}",
            pool.shape
        )
    })?;
    Ok(pool)
}
