//! `convolution`, `convolution_backward` and `max_pool2d_with_indices`: PyTorch's argument
//! checks (Convolution.cpp's `check_shape_forward` and the kernels' own, Pool.h's
//! `pooling_output_shape` and `pool2d_shape_check`), in PyTorch's words and order, and the
//! index arithmetic every backend's kernel shares: which input element each kernel tap of
//! each output element reads.

use super::R;
use crate::error::{Error, check};

/// A convolution's geometry, once its arguments passed PyTorch's checks.
///
/// A direct convolution reads, for output position `s` and kernel tap `k`, the input at
/// `s * stride - padding + k * dilation` (per spatial dim); a transposed one is its adjoint:
/// input position `s` and tap `k` write the output at that position. So both are described
/// by one side of "small" positions (a direct convolution's output, a transposed one's
/// input) and one of "large" positions; the weight is `[small channels, large channels /
/// groups, taps...]` in both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conv {
    /// The spatial dims (1 for `conv1d`, 2 for `conv2d`, ...).
    pub spatial: usize,
    /// Per spatial dim.
    pub stride: Vec<usize>,
    /// Per spatial dim.
    pub padding: Vec<usize>,
    /// Per spatial dim.
    pub dilation: Vec<usize>,
    /// Per spatial dim (transposed convolutions).
    pub output_padding: Vec<usize>,
    /// The channel groups.
    pub groups: usize,
    /// Whether it is a transposed convolution.
    pub transposed: bool,
    /// The batch size.
    pub batch: usize,
    /// The small side's channels (the weight's dim 0).
    pub small_channels: usize,
    /// The large side's channels (the weight's dim 1 times `groups`).
    pub large_channels: usize,
    /// The small side's spatial sizes.
    pub small: Vec<usize>,
    /// The large side's spatial sizes.
    pub large: Vec<usize>,
    /// The kernel's spatial sizes.
    pub kernel: Vec<usize>,
    /// The output's shape.
    pub output: Vec<usize>,
}

/// A tap of a convolution: the small side's flat spatial position, the kernel's flat tap and
/// the large side's flat spatial position it pairs with.
pub type Tap = (usize, usize, usize);

impl Conv {
    /// Every tap that lands inside the large side, in row-major order of (small position,
    /// kernel tap).
    pub fn taps(&self) -> Vec<Tap> {
        let mut out = Vec::new();
        let ns: usize = self.small.iter().product();
        let nk: usize = self.kernel.iter().product();
        for s in 0..ns {
            for k in 0..nk {
                if let Some(l) = self.large_position(s, k) {
                    out.push((s, k, l));
                }
            }
        }
        out
    }

    /// The large side's flat position of small position `s` and tap `k`, if inside.
    fn large_position(&self, mut s: usize, mut k: usize) -> Option<usize> {
        let d = self.spatial;
        let mut idx = vec![0usize; d];
        for i in (0..d).rev() {
            let (si, ki) = (s % self.small[i], k % self.kernel[i]);
            s /= self.small[i];
            k /= self.kernel[i];
            let l = (si * self.stride[i] + ki * self.dilation[i]) as i64 - self.padding[i] as i64;
            if l < 0 || l >= self.large[i] as i64 {
                return None;
            }
            idx[i] = l as usize;
        }
        Some(
            idx.iter()
                .zip(&self.large)
                .fold(0, |acc, (x, n)| acc * n + x),
        )
    }

    /// The small side's channels per group.
    pub fn small_per_group(&self) -> usize {
        self.small_channels / self.groups.max(1)
    }

    /// The large side's channels per group.
    pub fn large_per_group(&self) -> usize {
        self.large_channels / self.groups.max(1)
    }
}

/// PyTorch's `expand_param_if_needed`: one value for every spatial dim, or one per dim.
fn expand_param(list: &[i64], name: &str, dim: usize) -> R<Vec<i64>> {
    if list.len() == 1 {
        return Ok(vec![list[0]; dim]);
    }
    check(list.len() == dim, || {
        format!(
            "expected {name} to be a single integer value or a list of {dim} values to match the convolution dimensions, but got {name}={list:?}"
        )
    })?;
    Ok(list.to_vec())
}

/// `values` as PyTorch prints them after viewing a 1-d convolution as a 2-d one (a
/// leading `pad` for the added dim).
fn as_2d(values: &[i64], pad: i64) -> Vec<i64> {
    let mut v = values.to_vec();
    if v.len() == 1 {
        v.insert(0, pad);
    }
    v
}

fn usizes(v: &[i64]) -> Vec<usize> {
    v.iter().map(|x| *x as usize).collect()
}

/// `convolution`'s arguments (the shapes of input, weight and bias), checked as PyTorch's
/// `_convolution` and its CPU kernels check them: the geometry, with the output's shape.
// Long on purpose: PyTorch's checks in PyTorch's order, one after the other, so that the
// first failing one gives PyTorch's message; split, the order would be harder to see.
#[allow(clippy::too_many_arguments)]
pub fn convolution(
    input: &[usize],
    weight: &[usize],
    bias: Option<&[usize]>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
) -> R<Conv> {
    let k = weight.len();
    check(k >= 3, || {
        "weight should have at least three dimensions".into()
    })?;
    check(groups > 0, || "non-positive groups is not supported".into())?;
    let dim = k - 2;
    let stride = expand_param(stride, "stride", dim)?;
    let padding = expand_param(padding, "padding", dim)?;
    let dilation = expand_param(dilation, "dilation", dim)?;
    let output_padding = expand_param(output_padding, "output_padding", dim)?;
    check_shape_forward(
        input,
        weight,
        bias,
        &stride,
        &padding,
        &dilation,
        &output_padding,
        transposed,
        groups,
    )?;
    // The CPU kernels' own checks, on the 2-d view of a 1-d convolution.
    check(dilation.iter().all(|d| *d > 0), || {
        format!(
            "dilation should be greater than zero, but got {:?}",
            as_2d(&dilation, 1)
        )
    })?;
    if transposed {
        check_output_padding(
            &as_2d(&output_padding, 0),
            &as_2d(&stride, 1),
            &as_2d(&dilation, 1),
        )?;
    }
    let g = groups as usize;
    let spatial_in = &input[2..];
    let kernel = weight[2..].to_vec();
    let out_sp = output_sizes(
        spatial_in,
        &kernel,
        &stride,
        &padding,
        &dilation,
        transposed,
        &output_padding,
    )?;
    let out_sp = usizes(&out_sp);
    let (small_channels, large_channels) = (weight[0], weight[1] * g);
    let out_channels = if transposed {
        large_channels
    } else {
        small_channels
    };
    let mut output = vec![input[0], out_channels];
    output.extend_from_slice(&out_sp);
    let (small, large) = if transposed {
        (spatial_in.to_vec(), out_sp)
    } else {
        (out_sp, spatial_in.to_vec())
    };
    Ok(Conv {
        spatial: dim,
        stride: usizes(&stride),
        padding: usizes(&padding),
        dilation: usizes(&dilation),
        output_padding: usizes(&output_padding),
        groups: g,
        transposed,
        batch: input[0],
        small_channels,
        large_channels,
        small,
        large,
        kernel,
        output,
    })
}

/// The output's spatial sizes, or PyTorch's error when one is below 1.
fn output_sizes(
    spatial_in: &[usize],
    kernel: &[usize],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
) -> R<Vec<i64>> {
    let sizes = |i: usize, n: usize| -> i64 {
        let (s, p, d, kk) = (stride[i], padding[i], dilation[i], kernel[i] as i64);
        if transposed {
            (n as i64 - 1) * s - 2 * p + d * (kk - 1) + output_padding[i] + 1
        } else {
            (n as i64 + 2 * p - d * (kk - 1) - 1) / s + 1
        }
    };
    let out_sp: Vec<i64> = spatial_in
        .iter()
        .enumerate()
        .map(|(i, n)| sizes(i, *n))
        .collect();
    if out_sp.iter().any(|o| *o < 1) {
        let show = |v: Vec<String>| v.join(" x ");
        return Err(Error::runtime(format!(
            "Given input size per channel: ({}). Calculated output size per channel: ({}). Output size is too small",
            show(spatial_in.iter().map(|x| x.to_string()).collect()),
            show(out_sp.iter().map(|x| x.to_string()).collect())
        )));
    }
    Ok(out_sp)
}

/// PyTorch's `check_shape_forward` (Convolution.cpp).
// Long on purpose: it follows PyTorch's function check by check, in its order.
#[allow(clippy::too_many_arguments)]
fn check_shape_forward(
    input: &[usize],
    weight: &[usize],
    bias: Option<&[usize]>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    output_padding: &[i64],
    transposed: bool,
    groups: i64,
) -> R<()> {
    let (k, weight_dim) = (input.len(), weight.len());
    check(padding.iter().all(|p| *p >= 0), || {
        "negative padding is not supported".into()
    })?;
    check(output_padding.iter().all(|p| *p >= 0), || {
        "negative output_padding is not supported".into()
    })?;
    check(stride.iter().all(|s| *s > 0), || {
        "non-positive stride is not supported".into()
    })?;
    check(dilation.iter().all(|d| *d >= 0), || {
        "dilation should be greater than zero".into()
    })?;
    check(weight_dim == k, || {
        format!(
            "Expected {weight_dim}-dimensional input for {weight_dim}-dimensional weight {weight:?}, but got {k}-dimensional input of size {input:?} instead"
        )
    })?;
    let w0 = weight[0] as i64;
    check(w0 >= groups, || {
        format!(
            "Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got weight of size {weight:?} instead"
        )
    })?;
    check(w0 % groups == 0, || {
        format!(
            "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size [{weight:?}] instead"
        )
    })?;
    let bias_ok = |n: i64| bias.is_none_or(|b| b.len() == 1 && b[0] as i64 == n);
    let bias_shape = bias.unwrap_or(&[]);
    if transposed {
        check(input[1] as i64 == w0, || {
            format!(
                "Given transposed=1, weight of size {weight:?}, expected input{input:?} to have {w0} channels, but got {} channels instead",
                input[1]
            )
        })?;
        let n = weight[1] as i64 * groups;
        return check(bias_ok(n), || {
            format!(
                "Given transposed=1, weight of size {weight:?}, expected bias to be 1-dimensional with {n} elements, but got bias of size {bias_shape:?} instead"
            )
        });
    }
    let c = weight[1] as i64 * groups;
    check(input[1] as i64 == c, || {
        format!(
            "Given groups={groups}, weight of size {weight:?}, expected input{input:?} to have {c} channels, but got {} channels instead",
            input[1]
        )
    })?;
    check(bias_ok(w0), || {
        format!(
            "Given weight of size {weight:?}, expected bias to be 1-dimensional with {w0} elements, but got bias of size {bias_shape:?} instead"
        )
    })?;
    let padded: Vec<i64> = (2..k)
        .map(|i| input[i] as i64 + 2 * padding[i - 2])
        .collect();
    let kernel: Vec<i64> = (2..k)
        .map(|i| dilation[i - 2] * (weight[i] as i64 - 1) + 1)
        .collect();
    if padded.iter().zip(&kernel).any(|(p, k)| p < k) {
        let show = |v: &[i64]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(" x ")
        };
        return Err(Error::runtime(format!(
            "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
            show(&padded),
            show(&kernel)
        )));
    }
    Ok(())
}

/// The transposed CPU kernel's check of the output padding (on the 2-d view).
fn check_output_padding(op: &[i64], stride: &[i64], dilation: &[i64]) -> R<()> {
    let ok = op
        .iter()
        .zip(stride)
        .zip(dilation)
        .all(|((o, s), d)| o < s || o < d);
    check(ok || op.len() != 2, || {
        format!(
            "output padding must be smaller than either stride or dilation, but got output_padding_height: {} output_padding_width: {} stride_height: {} stride_width: {} dilation_height: {} dilation_width: {}",
            op[0], op[1], stride[0], stride[1], dilation[0], dilation[1]
        )
    })
}

/// `convolution_backward`: the forward's geometry, and PyTorch's check that `grad_output`
/// has the forward output's shape.
#[allow(clippy::too_many_arguments)]
pub fn convolution_backward(
    grad_output: &[usize],
    input: &[usize],
    weight: &[usize],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
) -> R<Conv> {
    let c = convolution(
        input,
        weight,
        None,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
    )?;
    check(grad_output == c.output.as_slice(), || {
        format!(
            "Expected grad_output to have the same shape as the convolution's output {:?}, but got {grad_output:?}",
            c.output
        )
    })?;
    Ok(c)
}

/// A pooling's geometry over its last `n` dims (`max_pool2d_with_indices`, `avg_pool2d`,
/// their 3-d forms), once its arguments passed PyTorch's checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    /// Kernel sizes, one per spatial dim.
    pub kernel: Vec<usize>,
    /// Strides.
    pub stride: Vec<usize>,
    /// Paddings.
    pub padding: Vec<usize>,
    /// Dilations.
    pub dilation: Vec<usize>,
    /// The input's spatial sizes.
    pub input: Vec<usize>,
    /// The output's spatial sizes.
    pub output: Vec<usize>,
    /// The output's shape (the input's leading dims, then the output's spatial sizes).
    pub shape: Vec<usize>,
}

/// Every multi-index below `sizes`, row-major.
fn row_major(sizes: &[usize]) -> Vec<Vec<usize>> {
    sizes.iter().fold(vec![vec![]], |acc, &n| {
        acc.into_iter()
            .flat_map(|prefix| {
                (0..n).map(move |i| {
                    let mut v = prefix.clone();
                    v.push(i);
                    v
                })
            })
            .collect()
    })
}

/// The flat row-major positions of the product of per-dim index lists, in a plane of
/// spatial sizes `dims`.
fn flat_product(axes: &[Vec<usize>], dims: &[usize]) -> Vec<usize> {
    axes.iter().zip(dims).fold(vec![0], |acc, (axis, &n)| {
        acc.iter()
            .flat_map(|base| axis.iter().map(move |i| base * n + i))
            .collect()
    })
}

impl Pool {
    /// The number of elements of one input plane (the spatial dims).
    pub fn plane_in(&self) -> usize {
        self.input.iter().product()
    }

    /// The number of elements of one output plane.
    pub fn plane_out(&self) -> usize {
        self.output.iter().product()
    }

    /// The number of taps of the kernel.
    pub fn taps(&self) -> usize {
        self.kernel.iter().product()
    }

    /// The input positions (flat, row-major in a plane) of output position `o`'s window, in
    /// row-major order, inside the input (PyTorch's kernels skip the padding).
    pub fn window(&self, o: &[usize]) -> Vec<usize> {
        let axes: Vec<Vec<usize>> = (0..o.len())
            .map(|i| {
                let start = (o[i] * self.stride[i]) as i64 - self.padding[i] as i64;
                (0..self.kernel[i])
                    .map(|k| start + (k * self.dilation[i]) as i64)
                    .filter(|x| *x >= 0 && *x < self.input[i] as i64)
                    .map(|x| x as usize)
                    .collect()
            })
            .collect();
        flat_product(&axes, &self.input)
    }

    /// A max pooling index as a position in an input plane, or an error where it is outside
    /// (PyTorch's kernels write out of bounds there).
    pub fn plane_index(&self, ix: i64) -> R<usize> {
        let plane = self.plane_in();
        usize::try_from(ix)
            .ok()
            .filter(|x| *x < plane)
            .ok_or_else(|| {
                Error::index(format!(
                    "max pooling index {ix} is out of bounds for a plane of {plane} elements"
                ))
            })
    }

    /// The windows of every output position, row-major over the output.
    pub fn windows(&self) -> Vec<Vec<usize>> {
        row_major(&self.output)
            .iter()
            .map(|o| self.window(o))
            .collect()
    }

    /// Average pooling's window of output position `o` and its divisor, as PyTorch's CPU
    /// kernels: the window clipped to the input; the divisor `divisor_override`, or the
    /// window's size inside the padded input (`count_include_pad`) or inside the input.
    pub fn avg_window(
        &self,
        o: &[usize],
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> (Vec<usize>, f64) {
        let (mut axes, mut padded, mut inside) = (Vec::new(), 1i64, 1i64);
        for (i, &oi) in o.iter().enumerate() {
            let start = (oi * self.stride[i]) as i64 - self.padding[i] as i64;
            let end = (start + self.kernel[i] as i64).min((self.input[i] + self.padding[i]) as i64);
            padded *= end - start;
            let (lo, hi) = (start.max(0), end.min(self.input[i] as i64));
            inside *= (hi - lo).max(0);
            axes.push((lo..hi.max(lo)).map(|x| x as usize).collect());
        }
        let divisor = match divisor_override {
            Some(d) => d,
            None if count_include_pad => padded,
            None => inside,
        };
        (flat_product(&axes, &self.input), divisor as f64)
    }

    /// Average pooling's windows and divisors, row-major over the output.
    pub fn avg_windows(
        &self,
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> Vec<(Vec<usize>, f64)> {
        row_major(&self.output)
            .iter()
            .map(|o| self.avg_window(o, count_include_pad, divisor_override))
            .collect()
    }
}

/// PyTorch's `div_rtn`: integer division rounding toward negative infinity.
fn div_rtn(x: i64, y: i64) -> i64 {
    let q = x / y;
    if (x % y != 0) && ((x < 0) != (y < 0)) {
        q - 1
    } else {
        q
    }
}

/// PyTorch's `pooling_output_shape`.
pub fn pooling_output_shape(
    input: i64,
    kernel: i64,
    pad: i64,
    stride: i64,
    dilation: i64,
    ceil_mode: bool,
) -> R<i64> {
    check(stride != 0, || "stride should not be zero".into())?;
    check(pad >= 0, || {
        format!("pad must be non-negative, but got pad: {pad}")
    })?;
    check(pad <= ((kernel - 1) * dilation + 1) / 2, || {
        format!(
            "pad should be at most half of effective kernel size, but got pad={pad}, kernel_size={kernel} and dilation={dilation}"
        )
    })?;
    let extra = if ceil_mode { stride - 1 } else { 0 };
    let mut out = div_rtn(
        input + 2 * pad - dilation * (kernel - 1) - 1 + extra,
        stride,
    ) + 1;
    if ceil_mode && (out - 1) * stride >= input + pad {
        out -= 1;
    }
    Ok(out)
}

/// An `int[2]` pooling argument: one value for both dims or two (`None` for another
/// length).
fn pair(v: &[i64]) -> Option<[i64; 2]> {
    match v {
        [a] => Some([*a, *a]),
        [a, b] => Some([*a, *b]),
        _ => None,
    }
}

/// `max_pool2d_with_indices`' arguments, checked as PyTorch's meta function checks them.
pub fn max_pool2d(
    input: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> R<Pool> {
    let k = pair(kernel_size).ok_or_else(|| {
        Error::runtime(
            "max_pool2d: kernel_size must either be a single int, or a tuple of two ints",
        )
    })?;
    let s = match stride {
        [] => k,
        s => pair(s).ok_or_else(|| {
            Error::runtime(
                "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints",
            )
        })?,
    };
    let p = pair(padding).ok_or_else(|| {
        Error::runtime("max_pool2d: padding must either be a single int, or a tuple of two ints")
    })?;
    let d = pair(dilation).ok_or_else(|| {
        Error::runtime("max_pool2d: dilation must be either a single int, or a tuple of two ints")
    })?;
    check(input.len() == 3 || input.len() == 4, || {
        "non-empty 3D or 4D (batch mode) tensor expected for input".into()
    })?;
    let nd = input.len();
    let (ih, iw) = (input[nd - 2] as i64, input[nd - 1] as i64);
    let oh = pooling_output_shape(ih, k[0], p[0], s[0], d[0], ceil_mode)?;
    let ow = pooling_output_shape(iw, k[1], p[1], s[1], d[1], ceil_mode)?;
    pool2d_shape_check(input, k, s, p, d, oh, ow)?;
    Ok(pool_geometry(input, &k, &s, &p, &d, &[oh, ow]))
}

/// PyTorch's `pool2d_shape_check` (Pool.h).
fn pool2d_shape_check(
    input: &[usize],
    k: [i64; 2],
    s: [i64; 2],
    p: [i64; 2],
    d: [i64; 2],
    oh: i64,
    ow: i64,
) -> R<()> {
    let nd = input.len();
    let (ih, iw) = (input[nd - 2], input[nd - 1]);
    check(k[0] > 0 && k[1] > 0, || {
        format!(
            "kernel size should be greater than zero, but got kH: {} kW: {}",
            k[0], k[1]
        )
    })?;
    check(s[0] > 0 && s[1] > 0, || {
        format!(
            "stride should be greater than zero, but got dH: {} dW: {}",
            s[0], s[1]
        )
    })?;
    check(d[0] > 0 && d[1] > 0, || {
        format!(
            "dilation should be greater than zero, but got dilationH: {} dilationW: {}",
            d[0], d[1]
        )
    })?;
    let valid = input[1] != 0 && input[2] != 0;
    check(
        (nd == 3 && input[0] != 0 && valid) || (nd == 4 && valid && input[3] != 0),
        || {
            format!(
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:{input:?}"
            )
        },
    )?;
    check(k[1] / 2 >= p[1] && k[0] / 2 >= p[0], || {
        format!(
            "pad should be smaller than or equal to half of kernel size, but got padW = {}, padH = {}, kW = {}, kH = {}",
            p[1], p[0], k[1], k[0]
        )
    })?;
    check(ow >= 1 && oh >= 1, || {
        format!(
            "Given input size: ({}x{ih}x{iw}). Calculated output size: ({}x{oh}x{ow}). Output size is too small",
            input[nd - 3],
            input[nd - 3]
        )
    })?;
    Ok(())
}

/// The geometry of a pooling whose arguments passed the checks (`out`: the output's
/// spatial sizes).
pub(super) fn pool_geometry(
    input: &[usize],
    k: &[i64],
    s: &[i64],
    p: &[i64],
    d: &[i64],
    out: &[i64],
) -> Pool {
    let (nd, n) = (input.len(), out.len());
    let u = |v: &[i64]| v.iter().map(|x| *x as usize).collect::<Vec<_>>();
    let mut shape = input[..nd - n].to_vec();
    shape.extend(u(out));
    Pool {
        kernel: u(k),
        stride: u(s),
        padding: u(p),
        dilation: u(d),
        input: input[nd - n..].to_vec(),
        output: u(out),
        shape,
    }
}

/// `avg_pool2d`'s arguments, checked as PyTorch's meta function checks them (the
/// geometry's dilation is 1).
pub fn avg_pool2d(
    input: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    divisor_override: Option<i64>,
) -> R<Pool> {
    let k = pair(kernel_size).ok_or_else(|| {
        Error::runtime(
            "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints",
        )
    })?;
    let s = match stride {
        [] => k,
        s => pair(s).ok_or_else(|| {
            Error::runtime(
                "avg_pool2d: stride must either be omitted, a single int, or a tuple of two ints",
            )
        })?,
    };
    let p = pair(padding).ok_or_else(|| {
        Error::runtime("avg_pool2d: padding must either be a single int, or a tuple of two ints")
    })?;
    check(divisor_override != Some(0), || {
        "divisor must be not zero".into()
    })?;
    // `input.size(-3)`: PyTorch's dimension error for fewer dims.
    size_dim(input, -3)?;
    let nd = input.len();
    let (ih, iw) = (input[nd - 2] as i64, input[nd - 1] as i64);
    let oh = pooling_output_shape(ih, k[0], p[0], s[0], 1, ceil_mode)?;
    let ow = pooling_output_shape(iw, k[1], p[1], s[1], 1, ceil_mode)?;
    pool2d_shape_check(input, k, s, p, [1, 1], oh, ow)?;
    Ok(pool_geometry(input, &k, &s, &p, &[1, 1], &[oh, ow]))
}

/// `avg_pool2d_backward`: the forward's geometry, and a check of the gradient's shape.
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d_backward(
    grad_output: &[usize],
    input: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    divisor_override: Option<i64>,
) -> R<Pool> {
    let p = avg_pool2d(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        divisor_override,
    )?;
    check(grad_output == p.shape.as_slice(), || {
        format!(
            "Expected gradOutput to have the shape {:?} of avg_pool2d's output, but got {grad_output:?}",
            p.shape
        )
    })?;
    Ok(p)
}

/// The axis of `tensor.size(dim)`, or PyTorch's `IndexError` (a 0-d tensor has no dims).
pub(super) fn size_dim(shape: &[usize], dim: i64) -> R<usize> {
    if shape.is_empty() {
        return Err(Error::index(format!(
            "Dimension specified as {dim} but tensor has no dimensions"
        )));
    }
    crate::shape::norm_dim(dim, shape.len())
}

/// `_adaptive_avg_pool2d_backward`: the output size the gradient gives (its last two
/// sizes, which PyTorch's autograd layer reads first, `size(-1)` then `size(-2)`), checked
/// as PyTorch's CPU kernel checks it; the forward's output shape.
pub fn adaptive_avg_pool2d_backward(grad_output: &[usize], input: &[usize]) -> R<Vec<usize>> {
    let w = size_dim(grad_output, -1)?;
    let h = size_dim(grad_output, -2)?;
    for (i, n) in grad_output.iter().enumerate().skip(1) {
        check(*n > 0, || {
            format!(
                "adaptive_avg_pool2d_backward(): Expected grad_output to have non-zero size for non-batch dimensions, but grad_output has sizes {grad_output:?} with dimension {i} being empty"
            )
        })?;
    }
    let nd = grad_output.len();
    check(nd == 3 || nd == 4, || {
        format!("adaptive_avg_pool2d_backward(): Expected 3D or 4D tensor, but got {input:?}")
    })?;
    let out = [grad_output[h] as i64, grad_output[w] as i64];
    let shape = adaptive_avg_pool2d(input, &out)?;
    check(grad_output == shape.as_slice(), || {
        format!(
            "Expected grad_output to have the shape {shape:?} of adaptive_avg_pool2d's output, but got {grad_output:?}"
        )
    })?;
    Ok(shape)
}

/// `_adaptive_avg_pool2d`: PyTorch's checks, and the output's shape.
pub fn adaptive_avg_pool2d(input: &[usize], output_size: &[i64]) -> R<Vec<usize>> {
    check(output_size.len() == 2, || {
        "adaptive_avg_pool2d: output_size must be 2".into()
    })?;
    let nd = input.len();
    check(nd == 3 || nd == 4, || {
        format!("adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {input:?}")
    })?;
    for i in [nd - 2, nd - 1] {
        check(input[i] > 0, || {
            format!(
                "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes {input:?} with dimension {i} being empty"
            )
        })?;
    }
    check(output_size.iter().all(|s| *s >= 0), || {
        "numel: integer multiplication overflow".into()
    })?;
    let mut shape = input[..nd - 2].to_vec();
    shape.extend(output_size.iter().map(|s| *s as usize));
    Ok(shape)
}

/// Adaptive pooling's window along one dim: output `o` of `out` over an input of `len`
/// covers `[floor(o * len / out), ceil((o + 1) * len / out))` (PyTorch's `start_index`,
/// `end_index`).
pub fn adaptive_range(o: usize, out: usize, len: usize) -> std::ops::Range<usize> {
    let start = (o * len) / out;
    let end = ((o + 1) * len).div_ceil(out);
    start..end
}

/// `max_pool2d_with_indices_backward`: the forward's geometry, and PyTorch's check of the
/// gradient's and the indices' shapes.
#[allow(clippy::too_many_arguments)]
pub fn max_pool2d_backward(
    grad_output: &[usize],
    input: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
    indices: &[usize],
) -> R<Pool> {
    let p = max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)?;
    for (name, shape) in [("gradOutput", grad_output), ("indices", indices)] {
        check(shape == p.shape.as_slice(), || {
            format!(
                "Expected {name} to have the shape {:?} of max_pool2d's output, but got {shape:?}",
                p.shape
            )
        })?;
    }
    Ok(p)
}

/// `constant_pad_nd`: PyTorch's checks (the pads' length, then the crops of negative pads as
/// `narrow`s), the output's shape and each dim's offset: output index `o` holds input index
/// `o - offset` when that is inside the input, the value otherwise.
pub fn constant_pad_nd(shape: &[usize], pad: &[i64]) -> R<(Vec<usize>, Vec<i64>)> {
    check(pad.len().is_multiple_of(2), || {
        format!(
            "Length of pad must be even but instead it equals {}",
            pad.len()
        )
    })?;
    let (l_inp, l_pad) = (shape.len(), pad.len() / 2);
    check(l_inp >= l_pad, || {
        format!(
            "Length of pad should be no more than twice the number of dimensions of the input. Pad length is {}while the input has {l_inp}dimensions.",
            pad.len()
        )
    })?;
    let l_diff = l_inp - l_pad;
    let mut out: Vec<usize> = shape.to_vec();
    let mut offset = vec![0i64; l_inp];
    for i in l_diff..l_inp {
        let at = 2 * (l_inp - i - 1);
        let (left, right) = (pad[at], pad[at + 1]);
        // The crops, as PyTorch's `narrow`s: left, then right.
        let mut size = shape[i] as i64;
        for p in [left, right] {
            if p < 0 {
                size += p;
                check(size >= 0, || {
                    "narrow(): length must be non-negative.".into()
                })?;
            }
        }
        let new = shape[i] as i64 + left + right;
        check(new >= 0, || {
            format!(
                "The input size {}, plus negative padding {left} and {right} resulted in a negative output size, which is invalid. Check dimension {i} of your input.",
                shape[i]
            )
        })?;
        out[i] = new as usize;
        offset[i] = left;
    }
    Ok((out, offset))
}
