//! `grid_sampler_2d` and `grid_sampler_2d_backward` (Core ATen; issue 30): PyTorch's checks
//! (`check_grid_sampler_common`, `check_grid_sampler_2d`) in their order and wording, and the
//! sampling plan both backends' kernels apply: for each output point, the input positions it
//! reads with their weights and the weights' derivatives in the grid's two coordinates
//! (PyTorch's `GridSampler.h` arithmetic: `grid_sampler_compute_source_index`, the padding
//! modes' clipping and reflection, the cubic convolution coefficients).

use super::R;
use crate::error::{Error, check};

/// `interpolation_mode`: bilinear.
pub const BILINEAR: i64 = 0;
/// `interpolation_mode`: nearest.
pub const NEAREST: i64 = 1;
/// `interpolation_mode`: bicubic.
pub const BICUBIC: i64 = 2;
/// `padding_mode`: zeros.
pub const ZEROS: i64 = 0;
/// `padding_mode`: border.
pub const BORDER: i64 = 1;
/// `padding_mode`: reflection.
pub const REFLECTION: i64 = 2;

/// The cubic convolution's `A` (PyTorch's `-0.75`).
const A: f64 = -0.75;

/// `grid_sampler_2d(input, grid)`'s checks in PyTorch's order and the output's shape
/// `[N, C, H_out, W_out]`.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::grid_sampler_2d(&[1, 2, 3, 4], &[1, 5, 6, 2], 0, 0), Ok([1, 2, 5, 6]));
/// let e = meta::grid_sampler_2d(&[1, 2, 3, 4], &[1, 5, 6, 3], 0, 0).unwrap_err();
/// assert_eq!(e.to_string(), "grid_sampler(): expected grid to have size 2 in last dimension, \
///                            but got grid with sizes [1, 5, 6, 3]");
/// ```
pub fn grid_sampler_2d(input: &[usize], grid: &[usize], interp: i64, pad: i64) -> R<[usize; 4]> {
    let (i, g) = (input, grid);
    if i.is_empty() || g.is_empty() {
        return Err(Error::index(
            "Dimension specified as 0 but tensor has no dimensions",
        ));
    }
    check(i[0] == g[0], || {
        format!(
            "grid_sampler(): expected grid and input to have same batch size, but got input \
             with sizes {i:?} and grid with sizes {g:?}"
        )
    })?;
    let want = i.len() as i64 - 2;
    check(g[g.len() - 1] as i64 == want, || {
        format!(
            "grid_sampler(): expected grid to have size {want} in last dimension, but got \
             grid with sizes {g:?}"
        )
    })?;
    if let Some(d) = (2..i.len()).find(|&d| i[d] == 0) {
        return Err(Error::runtime(format!(
            "grid_sampler(): expected input to have non-empty spatial dimensions, but input \
             has sizes {i:?} with dimension {d} being empty"
        )));
    }
    check(i.len() == 4 && g.len() == 4, || {
        format!(
            "grid_sampler(): expected 4D input and grid with same number of dimensions, but \
             got input with sizes {i:?} and grid with sizes {g:?}"
        )
    })?;
    check((0..3).contains(&interp) && (0..3).contains(&pad), || {
        format!("grid_sampler(): unknown interpolation mode {interp} or padding mode {pad}")
    })?;
    Ok([i[0], i[1], g[1], g[2]])
}

/// `grid_sampler_2d_backward`'s checks: the forward's, then `grad_output`'s sizes.
pub fn grid_sampler_2d_backward(
    grad_output: &[usize],
    input: &[usize],
    grid: &[usize],
    interp: i64,
    pad: i64,
) -> R<[usize; 4]> {
    let out = grid_sampler_2d(input, grid, interp, pad)?;
    check(grad_output == out, || {
        format!(
            "grid_sampler(): expected grad_output to have sizes {out:?} but got grad_output \
             with sizes {grad_output:?}"
        )
    })?;
    Ok(out)
}

/// One tap of every output point: the flat input position (`y * W + x`) it reads, whether
/// that position is inside the input (a tap outside reads zero), its weight, and the
/// weight's derivatives in the grid's `x` and `y`; each `[N * H_out * W_out]`, row-major.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GridTap {
    /// The flat position in the input's plane (0 where outside).
    pub index: Vec<usize>,
    /// Whether the tap is inside the input.
    pub valid: Vec<bool>,
    /// The tap's weight.
    pub weight: Vec<f64>,
    /// The weight's derivative in the grid's `x` (its last dim's 0th element).
    pub dx: Vec<f64>,
    /// The weight's derivative in the grid's `y`.
    pub dy: Vec<f64>,
}

/// What the kernels apply: the output's shape, the input plane's size and the taps (1 for
/// nearest, 4 for bilinear, 16 for bicubic; PyTorch's order: rows, then columns).
#[derive(Debug, Clone, PartialEq)]
pub struct GridPlan {
    /// `[N, C, H_out, W_out]`.
    pub out: [usize; 4],
    /// `H_in * W_in`.
    pub plane: usize,
    /// The taps.
    pub taps: Vec<GridTap>,
}

/// The unnormalized source coordinate of `g` along a dim of `size` and its derivative in `g`.
fn unnormalize(g: f64, size: usize, align: bool) -> (f64, f64) {
    let s = size as f64;
    if align {
        ((g + 1.0) / 2.0 * (s - 1.0), (s - 1.0) / 2.0)
    } else {
        (((g + 1.0) * s - 1.0) / 2.0, s / 2.0)
    }
}

/// `clip_coordinates_set_grad`: `x` clipped to `[0, size - 1]`, derivative 0 at and beyond
/// the ends.
fn clip(x: f64, size: usize) -> (f64, f64) {
    let hi = size as f64 - 1.0;
    if x <= 0.0 {
        (0.0, 0.0)
    } else if x >= hi {
        (hi, 0.0)
    } else {
        (x, 1.0)
    }
}

/// `reflect_coordinates_set_grad`: `x` reflected into `[lo2 / 2, hi2 / 2]` and the sign.
fn reflect(x: f64, lo2: f64, hi2: f64) -> (f64, f64) {
    if lo2 == hi2 {
        return (0.0, 0.0);
    }
    let (min, span) = (lo2 / 2.0, (hi2 - lo2) / 2.0);
    let (x, sign) = if x - min < 0.0 {
        (min - x, -1.0)
    } else {
        (x - min, 1.0)
    };
    let (extra, flips) = (x % span, (x / span).floor());
    if flips % 2.0 == 0.0 {
        (extra + min, sign)
    } else {
        (span - extra + min, -sign)
    }
}

/// `compute_coordinates` with its derivative: the padding mode applied to `x`.
fn pad_coordinate(x: f64, size: usize, pad: i64, align: bool) -> (f64, f64) {
    let s = size as f64;
    let (r, m) = match pad {
        BORDER => (x, 1.0),
        REFLECTION if align => reflect(x, 0.0, 2.0 * (s - 1.0)),
        REFLECTION => reflect(x, -1.0, 2.0 * s - 1.0),
        _ => return (x, 1.0),
    };
    let (c, mc) = clip(r, size);
    (c, m * mc)
}

/// The cubic convolution coefficients of `t` (PyTorch's `get_cubic_upsample_coefficients`)
/// and their derivatives in `t`.
pub fn cubic_coefficients(t: f64) -> ([f64; 4], [f64; 4]) {
    let c1 = |x: f64| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let c2 = |x: f64| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    let d1 = |x: f64| (3.0 * (A + 2.0) * x - 2.0 * (A + 3.0)) * x;
    let d2 = |x: f64| (3.0 * A * x - 10.0 * A) * x + 8.0 * A;
    (
        [c2(t + 1.0), c1(t), c1(1.0 - t), c2(2.0 - t)],
        [d2(t + 1.0), d1(t), -d1(1.0 - t), -d2(2.0 - t)],
    )
}

/// Along one dim of `size`: the taps' integer coordinates (before the bounds check), their
/// factors and the factors' derivatives in the grid coordinate `g`.
fn axis_taps(g: f64, size: usize, interp: i64, pad: i64, align: bool) -> Vec<(f64, f64, f64)> {
    let (x, scale) = unnormalize(g, size, align);
    if interp == BICUBIC {
        let x0 = x.floor();
        let (c, d) = cubic_coefficients(x - x0);
        return (0..4)
            .map(|k| {
                let at = pad_coordinate(x0 - 1.0 + k as f64, size, pad, align).0;
                (at, c[k], d[k] * scale)
            })
            .collect();
    }
    let (x, m) = pad_coordinate(x, size, pad, align);
    if interp == NEAREST {
        return vec![(x.round_ties_even(), 1.0, 0.0)];
    }
    let x0 = x.floor();
    let t = x - x0;
    vec![(x0, 1.0 - t, -m * scale), (x0 + 1.0, t, m * scale)]
}

/// The plan of `grid_sampler_2d` over an input of `input`'s shape and a grid of `grid`'s shape
/// and (row-major) values, after [`grid_sampler_2d`]'s checks.
pub fn grid_plan(
    input: &[usize],
    grid: &[usize],
    values: &[f64],
    modes: (i64, i64, bool),
) -> R<GridPlan> {
    let (interp, pad, align) = modes;
    let out = grid_sampler_2d(input, grid, interp, pad)?;
    let (h, w) = (input[2], input[3]);
    let points = out[0] * out[2] * out[3];
    let per = [4, 1, 16][interp as usize];
    let mut taps = vec![GridTap::default(); per];
    for p in 0..points {
        let xs = axis_taps(values[2 * p], w, interp, pad, align);
        let ys = axis_taps(values[2 * p + 1], h, interp, pad, align);
        let pairs = ys.iter().flat_map(|y| xs.iter().map(move |x| (y, x)));
        for (tap, (y, x)) in taps.iter_mut().zip(pairs) {
            let inside = (0.0..w as f64).contains(&x.0) && (0.0..h as f64).contains(&y.0);
            tap.valid.push(inside);
            tap.index.push(if inside {
                y.0 as usize * w + x.0 as usize
            } else {
                0
            });
            tap.weight.push(x.1 * y.1);
            tap.dx.push(x.2 * y.1);
            tap.dy.push(x.1 * y.2);
        }
    }
    Ok(GridPlan {
        out,
        plane: h * w,
        taps,
    })
}
