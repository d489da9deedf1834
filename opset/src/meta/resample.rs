//! Reflection and replication padding and upsampling: PyTorch's argument checks (Padding.h's
//! `pad_shape_check` and `pad_backward_shape_check`, the backward kernels' own, UpSample.h's
//! `upsample_2d_common_check` and `compute_output_size`), in PyTorch's words and order, and
//! the index arithmetic every backend's kernel shares.
//!
//! Each of these ops is separable: along each of its last dims, an output element is a
//! weighted sum of input elements of the same line ([`Axis::taps`]), so a kernel applies one
//! small linear map per dim ([`Resample`]), and the backward op applies the transposed maps.
//! Padding and nearest upsampling copy one input element per output element (weight 1);
//! bilinear upsampling mixes two per dim.

use super::R;
use crate::error::check;

/// One output element's part of a line: (output index, input index, weight).
pub type AxisTap = (usize, usize, f64);

/// The linear map along one dim.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// The tensor's dim the map acts on.
    pub dim: usize,
    /// The input's size along it.
    pub input: usize,
    /// The output's size along it.
    pub output: usize,
    /// Every (output index, input index, weight), in order of output index.
    pub taps: Vec<AxisTap>,
}

/// A separable resampling: the input's and output's shapes, and one map per resampled dim.
#[derive(Debug, Clone, PartialEq)]
pub struct Resample {
    /// The input's shape (the forward op's).
    pub input: Vec<usize>,
    /// The output's shape (the forward op's).
    pub output: Vec<usize>,
    /// The maps, one per resampled dim (any order gives the same result).
    pub axes: Vec<Axis>,
}

impl Resample {
    /// Whether every output element copies one input element (weight 1): padding and
    /// nearest upsampling, exact for every dtype.
    pub fn copies(&self) -> bool {
        self.axes
            .iter()
            .all(|a| a.taps.iter().all(|t| t.2 == 1.0) && a.taps.len() == a.output)
    }
}

/// Reflection or replication padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PadMode {
    /// `reflection_pad{1,2,3}d`: the input mirrored at its edges (the edge not repeated).
    Reflect,
    /// `replication_pad{1,2,3}d`: the edge element repeated.
    Replicate,
}

impl PadMode {
    /// The op's name for `dim` padded dims (`reflection_pad2d`).
    pub fn name(self, dim: usize) -> String {
        match self {
            PadMode::Reflect => format!("reflection_pad{dim}d"),
            PadMode::Replicate => format!("replication_pad{dim}d"),
        }
    }

    /// The backward op's name (`reflection_pad2d_backward`).
    pub fn backward_name(self, dim: usize) -> String {
        format!("{}_backward", self.name(dim))
    }

    /// The input index output index `o` reads along a dim of `n` elements padded by `left`
    /// before it (a negative `left` crops): PyTorch's CPU kernels' index arithmetic.
    fn source(self, o: usize, n: usize, left: i64) -> usize {
        let t = o as i64 - left;
        let n = n as i64;
        let i = match self {
            PadMode::Reflect if t < 0 => -t,
            PadMode::Reflect if t >= n => 2 * (n - 1) - t,
            PadMode::Reflect => t,
            PadMode::Replicate => t.clamp(0, n - 1),
        };
        i as usize
    }
}

/// PyTorch's `check_valid_input`: the padding's length, then the input's dims (a batch may
/// be empty, no other dim).
fn check_valid_input(input: &[usize], padding: &[i64], dim: usize) -> R<()> {
    check(padding.len() == 2 * dim, || {
        format!(
            "padding size is expected to be {}, but got: {}",
            2 * dim,
            padding.len()
        )
    })?;
    let nd = input.len();
    let batch = nd == dim + 2;
    let valid = (batch || nd == dim + 1) && input.iter().skip(usize::from(batch)).all(|n| *n != 0);
    check(valid, || {
        format!(
            "Expected {}D or {}D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: {input:?}",
            dim + 1,
            dim + 2
        )
    })
}

/// PyTorch's `check_pad_within_input`: a reflection's pads are smaller than their dims.
fn check_pad_within_input(input: &[usize], padding: &[i64], dim: usize) -> R<()> {
    let nd = input.len() as i64;
    for i in 0..dim {
        let d = nd - 1 - i as i64;
        let n = size_at(input, d)? as i64;
        let (l, r) = (padding[2 * i], padding[2 * i + 1]);
        check(l < n && r < n, || {
            format!(
                "Argument #{}: Padding size should be less than the corresponding input dimension, but got: padding ({l}, {r}) at dimension {d} of input {input:?}",
                4 + 2 * i
            )
        })?;
    }
    Ok(())
}

/// `reflection_pad{1,2,3}d` and `replication_pad{1,2,3}d` over the last `dim` dims:
/// PyTorch's `pad_shape_check`, and the maps (the pairs of `padding` run from the last dim
/// inwards, as `F.pad`'s).
pub fn pad(input: &[usize], padding: &[i64], dim: usize, mode: PadMode) -> R<Resample> {
    check_valid_input(input, padding, dim)?;
    if mode == PadMode::Reflect {
        check_pad_within_input(input, padding, dim)?;
    }
    let nd = input.len();
    let sizes: Vec<i64> = (0..dim)
        .rev()
        .map(|i| input[nd - 1 - i] as i64 + padding[2 * i] + padding[2 * i + 1])
        .collect();
    let i_s = &input[nd - dim..];
    check(sizes.iter().all(|n| *n >= 1), || match dim {
        1 => format!(
            "input (W: {}) is too small. Calculated output W: {}",
            i_s[0], sizes[0]
        ),
        2 => format!(
            "Calculated output H: {} W: {} must be >= 1 in every dimension (input H: {}, W: {})",
            sizes[0], sizes[1], i_s[0], i_s[1]
        ),
        _ => format!(
            "Calculated output D: {} H: {} W: {} must be >= 1 in every dimension (input D: {}, H: {}, W: {})",
            sizes[0], sizes[1], sizes[2], i_s[0], i_s[1], i_s[2]
        ),
    })?;
    Ok(pad_maps(input, padding, dim, mode))
}

/// The maps of a padding whose arguments passed the checks (every padded dim exists).
fn pad_maps(input: &[usize], padding: &[i64], dim: usize, mode: PadMode) -> Resample {
    let nd = input.len();
    let mut output = input.to_vec();
    let axes = (0..dim)
        .map(|i| {
            let d = nd - 1 - i;
            let left = padding[2 * i];
            output[d] = (input[d] as i64 + left + padding[2 * i + 1]).max(0) as usize;
            // An empty input line (a backward op's input, unchecked as PyTorch's) reads
            // nothing.
            let taps = match input[d] {
                0 => Vec::new(),
                n => (0..output[d])
                    .map(|o| (o, mode.source(o, n, left), 1.0))
                    .collect(),
            };
            Axis {
                dim: d,
                input: input[d],
                output: output[d],
                taps,
            }
        })
        .collect();
    Resample {
        input: input.to_vec(),
        output,
        axes,
    }
}

/// The size of `shape`'s dim `d` (negative from the end), or PyTorch's `IndexError`.
fn size_at(shape: &[usize], d: i64) -> R<usize> {
    if shape.is_empty() {
        return Err(crate::error::Error::index(format!(
            "Dimension specified as {d} but tensor has no dimensions"
        )));
    }
    Ok(shape[crate::shape::norm_dim(d, shape.len())?])
}

/// The padding ops' backward (`reflection_pad2d_backward`, ...): the checks PyTorch's
/// backward kernels make (each its own: the padding's length, the input's dims, the
/// reflection's pads), PyTorch's `pad_backward_shape_check` (the channels, then each padded
/// dim from the last), and the forward's maps, whose transposes the kernel applies.
pub fn pad_backward(
    grad_output: &[usize],
    input: &[usize],
    padding: &[i64],
    dim: usize,
    mode: PadMode,
) -> R<Resample> {
    check(padding.len() == 2 * dim, || {
        format!(
            "padding size is expected to be {}, but got: {}",
            2 * dim,
            padding.len()
        )
    })?;
    let nd = input.len();
    match (mode, dim) {
        (PadMode::Reflect, 1) => check_pad_within_input(input, padding, dim)?,
        (PadMode::Reflect, 3) => {
            check(nd > 3, || {
                "Expected input.dim() > 3 to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)".into()
            })?;
            check(grad_output.len() == nd, || {
                "Expected grad_output.dim() == input.dim() to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)".into()
            })?;
        }
        (PadMode::Replicate, 2 | 3) => check_valid_input(input, padding, dim)?,
        _ => {}
    }
    let channel = nd as i64 - dim as i64 - 1;
    let (ci, cg) = (size_at(input, channel)?, size_at(grad_output, channel)?);
    check(ci == cg, || {
        format!("grad_output channel unexpected. Expected: {ci}, Got: {cg}")
    })?;
    let labels = ["depth", "height", "width"];
    for i in 0..dim {
        let d = nd as i64 - 1 - i as i64;
        let expected = size_at(input, d)? as i64 + padding[2 * i] + padding[2 * i + 1];
        let got = size_at(grad_output, d)?;
        check(expected == got as i64, || {
            format!(
                "grad_output {} unexpected. Expected: {expected}, Got: {got}",
                labels[labels.len() - 1 - i]
            )
        })?;
    }
    // Every backward kernel but reflection_pad2d's returns early on an empty gradient.
    let early = grad_output.contains(&0) && (mode, dim) != (PadMode::Reflect, 2);
    if nd <= dim && !(early && grad_output == input) {
        // The kernels' `input.size(dim_w)`.
        size_at(input, dim as i64)?;
    }
    if nd <= dim {
        // An empty gradient of an input as small: PyTorch returns early, zeros.
        return Ok(Resample {
            input: input.to_vec(),
            output: grad_output.to_vec(),
            axes: Vec::new(),
        });
    }
    let r = pad_maps(input, padding, dim, mode);
    check(grad_output == r.output.as_slice(), || {
        format!(
            "Expected grad_output to have the shape {:?} of {}'s output, but got {grad_output:?}",
            r.output,
            mode.name(dim)
        )
    })?;
    Ok(r)
}

/// PyTorch's `upsample_2d_common_check`: the lengths of the sizes, then every size positive;
/// the output's shape.
fn upsample_2d_common_check(input: &[i64], output_size: &[i64]) -> R<[i64; 4]> {
    check(output_size.len() == 2, || {
        format!(
            "It is expected output_size equals to 2, but got size {}",
            output_size.len()
        )
    })?;
    check(input.len() == 4, || {
        format!(
            "It is expected input_size equals to 4, but got size {}",
            input.len()
        )
    })?;
    let (oh, ow, ih, iw) = (output_size[0], output_size[1], input[2], input[3]);
    check(ih > 0 && iw > 0 && oh > 0 && ow > 0, || {
        format!(
            "Input and output sizes should be greater than 0, but got input (H: {ih}, W: {iw}) output (H: {oh}, W: {ow})"
        )
    })?;
    Ok([input[0], input[1], oh, ow])
}

/// PyTorch's `compute_scales_value`: the scale given (as `1 / scale`) when positive, else
/// `input / output`.
fn scales_value(scale: Option<f64>, input: usize, output: usize) -> f64 {
    match scale {
        Some(s) if s > 0.0 => 1.0 / s,
        _ => input as f64 / output as f64,
    }
}

/// Nearest upsampling's input index of output index `o` (PyTorch's `nearest_idx`: a copy
/// for equal sizes, `o / 2` for twice the size, else `floor(o * scale)` in `f32`, as
/// PyTorch's `floorf`).
fn nearest_idx(o: usize, input: usize, output: usize, scale: Option<f64>) -> usize {
    if output == input {
        o
    } else if output == 2 * input {
        o >> 1
    } else {
        let s = scales_value(scale, input, output) as f32;
        ((o as f32 * s).floor() as usize).min(input - 1)
    }
}

/// Bilinear upsampling's taps of output index `o` (PyTorch's
/// `compute_source_index_and_lambda`: two input indices and their weights, a copy for
/// equal sizes).
fn linear_taps(
    o: usize,
    input: usize,
    output: usize,
    align_corners: bool,
    scale: Option<f64>,
) -> Vec<AxisTap> {
    if output == input {
        return vec![(o, o, 1.0)];
    }
    // PyTorch's `area_pixel_compute_scale` and `area_pixel_compute_source_index`.
    let ratio = match align_corners {
        true if output > 1 => (input - 1) as f64 / (output - 1) as f64,
        true => 0.0,
        false => scales_value(scale, input, output),
    };
    let real = match align_corners {
        true => ratio * o as f64,
        false => (ratio * (o as f64 + 0.5) - 0.5).max(0.0),
    };
    let i0 = (real.floor() as usize).min(input - 1);
    let l1 = (real - i0 as f64).clamp(0.0, 1.0);
    let i1 = i0 + usize::from(i0 < input - 1);
    vec![(o, i0, 1.0 - l1), (o, i1, l1)]
}

/// The maps of a 2-d upsampling from `input` (`[N, C, H, W]`) to `output_size`.
fn upsample_maps(
    input: &[usize],
    out: [usize; 2],
    taps: impl Fn(usize, usize, usize, usize) -> Vec<AxisTap>,
) -> Resample {
    let mut output = input.to_vec();
    let axes = (0..2)
        .map(|i| {
            let (d, n) = (2 + i, out[i]);
            output[d] = n;
            Axis {
                dim: d,
                input: input[d],
                output: n,
                taps: (0..n).flat_map(|o| taps(i, o, input[d], n)).collect(),
            }
        })
        .collect();
    Resample {
        input: input.to_vec(),
        output,
        axes,
    }
}

/// The forward checks of `upsample_nearest2d` and `upsample_bilinear2d` (their meta
/// functions'): the output's height and width.
fn upsample_2d_forward(input: &[usize], output_size: &[i64]) -> R<[usize; 2]> {
    let sizes: Vec<i64> = input.iter().map(|n| *n as i64).collect();
    let full = upsample_2d_common_check(&sizes, output_size)?;
    check(
        input.iter().product::<usize>() != 0 || input[1..].iter().product::<usize>() != 0,
        || format!("Non-empty 4D data tensor expected but got a tensor with sizes {input:?}"),
    )?;
    Ok([full[2] as usize, full[3] as usize])
}

/// The backward checks of `upsample_nearest2d_backward` and `upsample_bilinear2d_backward`
/// (their meta functions'): the input's shape and the output's height and width.
fn upsample_2d_backward(
    grad_output: &[usize],
    output_size: &[i64],
    input_size: &[i64],
) -> R<(Vec<usize>, [usize; 2])> {
    let full = upsample_2d_common_check(input_size, output_size)?;
    check(grad_output.len() == 4, || {
        format!(
            "Expected grad_output to be a tensor of dimension 4 but got: dimension {}",
            grad_output.len()
        )
    })?;
    for (i, (g, o)) in grad_output.iter().zip(full).enumerate() {
        check(*g as i64 == o, || {
            format!(
                "Expected grad_output to have the same shape as output; output.size({i}) = {o} but got grad_output.size({i}) = {g}"
            )
        })?;
    }
    // Every size is known non-negative here except the batch and channels.
    check(input_size.iter().all(|n| *n >= 0), || {
        format!("Trying to create tensor with negative dimension: {input_size:?}")
    })?;
    let input = input_size.iter().map(|n| *n as usize).collect();
    Ok((input, [full[2] as usize, full[3] as usize]))
}

/// `upsample_nearest2d`: PyTorch's checks and the maps.
pub fn upsample_nearest2d(
    input: &[usize],
    output_size: &[i64],
    scales_h: Option<f64>,
    scales_w: Option<f64>,
) -> R<Resample> {
    let out = upsample_2d_forward(input, output_size)?;
    Ok(nearest_maps(input, out, [scales_h, scales_w]))
}

fn nearest_maps(input: &[usize], out: [usize; 2], scales: [Option<f64>; 2]) -> Resample {
    upsample_maps(input, out, |i, o, n_in, n_out| {
        vec![(o, nearest_idx(o, n_in, n_out, scales[i]), 1.0)]
    })
}

/// `upsample_nearest2d_backward`: PyTorch's checks and the forward's maps.
pub fn upsample_nearest2d_backward(
    grad_output: &[usize],
    output_size: &[i64],
    input_size: &[i64],
    scales_h: Option<f64>,
    scales_w: Option<f64>,
) -> R<Resample> {
    let (input, out) = upsample_2d_backward(grad_output, output_size, input_size)?;
    Ok(nearest_maps(&input, out, [scales_h, scales_w]))
}

/// `upsample_bilinear2d`: PyTorch's checks and the maps.
pub fn upsample_bilinear2d(
    input: &[usize],
    output_size: &[i64],
    align_corners: bool,
    scales_h: Option<f64>,
    scales_w: Option<f64>,
) -> R<Resample> {
    let out = upsample_2d_forward(input, output_size)?;
    Ok(bilinear_maps(
        input,
        out,
        align_corners,
        [scales_h, scales_w],
    ))
}

fn bilinear_maps(
    input: &[usize],
    out: [usize; 2],
    align_corners: bool,
    scales: [Option<f64>; 2],
) -> Resample {
    upsample_maps(input, out, |i, o, n_in, n_out| {
        linear_taps(o, n_in, n_out, align_corners, scales[i])
    })
}

/// `upsample_bilinear2d_backward`: PyTorch's checks and the forward's maps.
pub fn upsample_bilinear2d_backward(
    grad_output: &[usize],
    output_size: &[i64],
    input_size: &[i64],
    align_corners: bool,
    scales_h: Option<f64>,
    scales_w: Option<f64>,
) -> R<Resample> {
    let (input, out) = upsample_2d_backward(grad_output, output_size, input_size)?;
    Ok(bilinear_maps(
        &input,
        out,
        align_corners,
        [scales_h, scales_w],
    ))
}

/// PyTorch's `upsample::compute_output_size` (the `.vec` overloads): the output size given,
/// or each spatial size times its scale factor (truncated, as C++'s conversion).
pub fn upsample_output_size(
    input: &[usize],
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> R<Vec<i64>> {
    let spatial = input.len() as i64 - 2;
    let improve = "to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)";
    let exactly_one = || {
        crate::error::Error::runtime("Must specify exactly one of output_size and scale_factors")
    };
    match (output_size, scale_factors) {
        (Some(o), None) => {
            check(o.len() as i64 == spatial, || {
                format!(
                    "Expected static_cast<int64_t>(output_size->size()) == spatial_dimensions {improve}"
                )
            })?;
            Ok(o.to_vec())
        }
        (None, Some(s)) => {
            check(s.len() as i64 == spatial, || {
                format!(
                    "Expected static_cast<int64_t>(scale_factors->size()) == spatial_dimensions {improve}"
                )
            })?;
            Ok(s.iter()
                .zip(&input[2..])
                .map(|(f, n)| (*n as f64 * f) as i64)
                .collect())
        }
        _ => Err(exactly_one()),
    }
}

/// The name PyTorch's CPU kernel of `upsample_nearest2d_backward` (`nearest`) or
/// `upsample_bilinear2d_backward` gives in its dtype error: the channels-last kernel's when
/// the gradient (`[N, C, H, W]`, contiguous) is also channels-last contiguous (one channel, or
/// a 1x1 plane).
pub fn upsample_backward_kernel(nearest: bool, grad_output: &[usize]) -> &'static str {
    use crate::dtype::kernel;
    let cl =
        grad_output.len() == 4 && (grad_output[1] == 1 || grad_output[2] * grad_output[3] == 1);
    match (nearest, cl) {
        (true, false) => kernel::UPSAMPLE_NEAREST2D_BACKWARD,
        (true, true) => kernel::UPSAMPLE_NEAREST2D_BACKWARD_CL,
        (false, false) => kernel::UPSAMPLE_BILINEAR2D_BACKWARD,
        (false, true) => kernel::UPSAMPLE_BILINEAR2D_BACKWARD_CL,
    }
}

/// Adaptive average pooling's maps over the last three dims: output `o` of `out` averages
/// the input's `meta::adaptive_range` (separable: the window is a box, its divisor the
/// product of its sides).
fn adaptive_maps(input: &[usize], out: &[usize]) -> Resample {
    let nd = input.len();
    let mut output = input.to_vec();
    let axes = (0..out.len())
        .map(|k| {
            let d = nd - out.len() + k;
            output[d] = out[k];
            let taps = (0..out[k])
                .flat_map(|o| {
                    let r = super::adaptive_range(o, out[k], input[d]);
                    let w = 1.0 / r.len() as f64;
                    r.map(move |i| (o, i, w))
                })
                .collect();
            Axis {
                dim: d,
                input: input[d],
                output: out[k],
                taps,
            }
        })
        .collect();
    Resample {
        input: input.to_vec(),
        output,
        axes,
    }
}

/// `_adaptive_avg_pool3d`: PyTorch's checks (its CPU kernel's), and the maps.
pub fn adaptive_avg_pool3d(input: &[usize], output_size: &[i64]) -> R<Resample> {
    check(output_size.len() == 3, || {
        "adaptive_avg_pool3d: output_size must be 3".into()
    })?;
    for (i, n) in input.iter().enumerate().skip(1) {
        check(*n > 0, || {
            format!(
                "adaptive_avg_pool3d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes {input:?} with dimension {i} being empty"
            )
        })?;
    }
    let nd = input.len();
    check(nd == 4 || nd == 5, || {
        format!("adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got {input:?}")
    })?;
    check(output_size.iter().all(|s| *s >= 0), || {
        "numel: integer multiplication overflow".into()
    })?;
    let out: Vec<usize> = output_size.iter().map(|s| *s as usize).collect();
    Ok(adaptive_maps(input, &out))
}

/// `_adaptive_avg_pool3d_backward`: PyTorch's checks (the gradient's sizes give the output
/// size), and the forward's maps.
pub fn adaptive_avg_pool3d_backward(grad_output: &[usize], input: &[usize]) -> R<Resample> {
    // PyTorch's autograd layer reads the output size first: `size(-1)`, `size(-2)`, `size(-3)`.
    for d in [-1, -2, -3] {
        size_at(grad_output, d)?;
    }
    for (i, n) in grad_output.iter().enumerate().skip(1) {
        check(*n > 0, || {
            format!(
                "adaptive_avg_pool3d_backward(): Expected grad_output to have non-zero size for non-batch dimensions, but grad_output has sizes {grad_output:?} with dimension {i} being empty"
            )
        })?;
    }
    let nd = input.len();
    check(grad_output.len() == nd, || {
        format!(
            "adaptive_avg_pool3d_backward_out_cpu_template: Expected dimensions {nd} for `gradOutput_` but got dimensions {}",
            grad_output.len()
        )
    })?;
    check(nd >= 3, || {
        format!("adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got {input:?}")
    })?;
    let r = adaptive_maps(input, &grad_output[nd - 3..]);
    check(grad_output == r.output.as_slice(), || {
        format!(
            "Expected grad_output to have the shape {:?} of adaptive_avg_pool3d's output, but got {grad_output:?}",
            r.output
        )
    })?;
    Ok(r)
}
