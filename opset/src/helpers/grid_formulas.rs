//! PyTorch's FunctionsManual helpers of `grid_sampler_2d` (issue 30): `grid_sampler_2d_jvp`
//! and `grid_sampler_2d_double_backward`. PyTorch 2.15's bodies are not in the stored
//! sources; these follow the graph PyTorch 2.15 builds (each output point's taps gathered
//! from the input, masked where outside it, their weights differentiable in the grid, the
//! transposed terms scatter-added) and agree with its forward AD and gradgradcheck values.
//! The tap coordinates, the masks and the padding modes' derivative factors are constants
//! computed from the detached grid; the weights are differentiable in the grid through the
//! source coordinate, so gradients of these gradients flow. Compiled twice, as
//! `formulas.rs`: over `Variable<T>` and over raw tensors.

use super::*;
use crate::meta::{BICUBIC, BORDER, NEAREST, REFLECTION};
use autograd::types::ScalarType;

/// A constant tensor of `x`'s shape and dtype filled with `v`.
fn filled<T: Backend>(x: &V<T>, v: f64) -> Res<V<T>> {
    add_scalar(&zeros_of(x), v, 1)
}

/// `where(mask, a, b)` of two numbers, shaped like `x`.
fn pick<T: Backend>(mask: &V<T>, a: f64, b: f64, x: &V<T>) -> Res<V<T>> {
    where_self(mask, &filled(x, a)?, &filled(x, b)?)
}

/// `clip_coordinates_set_grad` on a constant coordinate: the clipped value and the derivative
/// factor (1 strictly inside `(0, size - 1)`, else 0).
fn clip<T: Backend>(x: &V<T>, size: usize) -> Res<(V<T>, V<T>)> {
    let hi = size as f64 - 1.0;
    let inside = logical_and(&gt_scalar(x, 0.0)?, &lt_scalar(x, hi)?)?;
    let value = clamp(x, Some(0.0.into()), Some(hi.into()))?;
    Ok((value, pick(&inside, 1.0, 0.0, x)?))
}

/// `reflect_coordinates_set_grad` on a constant coordinate: the reflected value and the sign.
fn reflect<T: Backend>(x: &V<T>, lo2: f64, hi2: f64) -> Res<(V<T>, V<T>)> {
    if lo2 == hi2 {
        return Ok((zeros_of(x), zeros_of(x)));
    }
    let (min, span) = (lo2 / 2.0, (hi2 - lo2) / 2.0);
    let d = sub_scalar(x, min, 1)?;
    let negative = lt_scalar(&d, 0.0)?;
    let a = abs(&d)?;
    let extra = fmod_scalar(&a, span)?;
    let flips = floor(&div_scalar(&a, span)?)?;
    let odd = ne_scalar(&fmod_scalar(&flips, 2.0)?, 0.0)?;
    let even_value = add_scalar(&extra, min, 1)?;
    let odd_value = add_scalar(&neg(&extra)?, span + min, 1)?;
    let value = where_self(&odd, &odd_value, &even_value)?;
    let sign = mul_tensor(&pick(&negative, -1.0, 1.0, x)?, &pick(&odd, -1.0, 1.0, x)?)?;
    Ok((value, sign))
}

/// `compute_coordinates` with its derivative factor: the padding mode applied to a constant
/// coordinate along a dim of `size`.
fn pad_coordinate<T: Backend>(x: &V<T>, size: usize, pad: i64, align: bool) -> Res<(V<T>, V<T>)> {
    let s = size as f64;
    let (r, m) = match pad {
        BORDER => (x.clone(), filled(x, 1.0)?),
        REFLECTION if align => reflect(x, 0.0, 2.0 * (s - 1.0))?,
        REFLECTION => reflect(x, -1.0, 2.0 * s - 1.0)?,
        _ => return Ok((x.clone(), filled(x, 1.0)?)),
    };
    let (c, mc) = clip(&r, size)?;
    Ok((c, mul_tensor(&m, &mc)?))
}

/// `grid_sampler_unnormalize` of `g` along a dim of `size`, and its derivative.
fn unnormalize<T: Backend>(g: &V<T>, size: usize, align: bool) -> Res<(V<T>, f64)> {
    let s = size as f64;
    let g1 = add_scalar(g, 1.0, 1)?;
    if align {
        let x = mul_scalar(&div_scalar(&g1, 2.0)?, s - 1.0)?;
        return Ok((x, (s - 1.0) / 2.0));
    }
    let x = div_scalar(&sub_scalar(&mul_scalar(&g1, s)?, 1.0, 1)?, 2.0)?;
    Ok((x, s / 2.0))
}

/// `a * x^3 + b * x^2 + c * x + d` of a tensor `x`.
fn cubic<T: Backend>(x: &V<T>, [a, b, c, d]: [f64; 4]) -> Res<V<T>> {
    let p = add_scalar(&mul_scalar(x, a)?, b, 1)?;
    let p = add_scalar(&mul_tensor(&p, x)?, c, 1)?;
    add_scalar(&mul_tensor(&p, x)?, d, 1)
}

/// Along one dim: each tap's constant coordinate, its factor (a function of the grid
/// coordinate), and the factor's first and second derivatives in the grid coordinate
/// (`None`: zero).
struct AxisTaps<T: Backend> {
    coords: Vec<V<T>>,
    f: Vec<V<T>>,
    d: Vec<Option<V<T>>>,
    dd: Vec<Option<V<T>>>,
}

/// The cubic convolution coefficients of `t` (`A = -0.75`) as polynomials in `t`, with their
/// first and second derivatives.
fn cubic_factors<T: Backend>(t: &V<T>, scale: f64) -> Res<[Vec<V<T>>; 3]> {
    const A: f64 = -0.75;
    let u = add_scalar(t, 1.0, 1)?;
    let (s1, s2) = (add_scalar(&neg(t)?, 1.0, 1)?, add_scalar(&neg(t)?, 2.0, 1)?);
    // c1(x) = (A+2)x^3 - (A+3)x^2 + 1 on [0, 1]; c2(x) = Ax^3 - 5Ax^2 + 8Ax - 4A on [1, 2].
    let (c1, c2) = (
        [A + 2.0, -(A + 3.0), 0.0, 1.0],
        [A, -5.0 * A, 8.0 * A, -4.0 * A],
    );
    let d1 = [0.0, 3.0 * (A + 2.0), -2.0 * (A + 3.0), 0.0];
    let d2 = [0.0, 3.0 * A, -10.0 * A, 8.0 * A];
    let dd1 = [0.0, 0.0, 6.0 * (A + 2.0), -2.0 * (A + 3.0)];
    let dd2 = [0.0, 0.0, 6.0 * A, -10.0 * A];
    let (xs, signs) = ([&u, t, &s1, &s2], [1.0, 1.0, -1.0, -1.0]);
    let polys = [(c2, d2, dd2), (c1, d1, dd1), (c1, d1, dd1), (c2, d2, dd2)];
    let mut out = [Vec::new(), Vec::new(), Vec::new()];
    for ((x, sign), (c, d, dd)) in xs.into_iter().zip(signs).zip(polys) {
        out[0].push(cubic(x, c)?);
        out[1].push(mul_scalar(&cubic(x, d)?, sign * scale)?);
        out[2].push(mul_scalar(&cubic(x, dd)?, scale * scale)?);
    }
    Ok(out)
}

/// The taps along one dim of `size` of the grid coordinate `g` (`gd`: the same, detached).
fn axis_taps<T: Backend>(
    g: &V<T>,
    gd: &V<T>,
    size: usize,
    modes: (i64, i64, bool),
) -> Res<AxisTaps<T>> {
    let (interp, pad, align) = modes;
    let (x, scale) = unnormalize(gd, size, align)?;
    // The source coordinate, differentiable in `g` with derivative `mult`.
    let diff = |value: &V<T>, mult: &V<T>| -> Res<V<T>> {
        add_tensor(value, &mul_tensor(mult, &sub_tensor(g, gd, 1.0)?)?, 1.0)
    };
    if interp == BICUBIC {
        let x0 = floor(&x)?;
        let t = sub_tensor(&diff(&x, &filled(&x, scale)?)?, &x0, 1.0)?;
        let [f, d, dd] = cubic_factors(&t, scale)?;
        let coords = (0..4)
            .map(|k| Ok(pad_coordinate(&add_scalar(&x0, k as f64 - 1.0, 1)?, size, pad, align)?.0))
            .collect::<Res<Vec<_>>>()?;
        return Ok(AxisTaps {
            coords,
            f,
            d: d.into_iter().map(Some).collect(),
            dd: dd.into_iter().map(Some).collect(),
        });
    }
    let (x, m) = pad_coordinate(&x, size, pad, align)?;
    if interp == NEAREST {
        let f = vec![filled(&x, 1.0)?];
        return Ok(AxisTaps {
            coords: vec![round(&x)?],
            f,
            d: vec![None],
            dd: vec![None],
        });
    }
    let mult = mul_scalar(&m, scale)?;
    let x0 = floor(&x)?;
    let t = sub_tensor(&diff(&x, &mult)?, &x0, 1.0)?;
    Ok(AxisTaps {
        coords: vec![x0.clone(), add_scalar(&x0, 1.0, 1)?],
        f: vec![add_scalar(&neg(&t)?, 1.0, 1)?, t],
        d: vec![Some(neg(&mult)?), Some(mult)],
        dd: vec![None, None],
    })
}

/// `a * b` of two optional factors (`None`: zero).
fn times<T: Backend>(a: Option<&V<T>>, b: Option<&V<T>>) -> Res<Option<V<T>>> {
    match (a, b) {
        (Some(a), Some(b)) => Ok(Some(mul_tensor(a, b)?)),
        _ => Ok(None),
    }
}

/// Stacked along a last tap dim and unsqueezed at 1 (against the channels); `None` if any
/// tap's term is zero (they all are then).
fn stacked<T: Backend>(terms: Vec<Option<V<T>>>) -> Res<Option<V<T>>> {
    match terms.into_iter().collect::<Option<Vec<_>>>() {
        Some(ts) => Ok(Some(unsqueeze(&stack(&ts, -1)?, 1)?)),
        None => Ok(None),
    }
}

/// Every output point's taps: the flat input positions `[N, C, P * T]` (`P` output points,
/// `T` taps), whether each is inside the input, and the weights' first and second
/// derivatives in the grid's `x` and `y`, each `[N, 1, H_out, W_out, T]`.
struct Taps<T: Backend> {
    index: V<T>,
    valid: V<T>,
    wx: Option<V<T>>,
    wy: Option<V<T>>,
    h: [Option<V<T>>; 3],
}

/// The taps of `grid` over an input of `shape` (`[N, C, H, W]`).
fn taps<T: Backend>(shape: &[usize], grid: &V<T>, modes: (i64, i64, bool)) -> Res<Taps<T>> {
    let (h, w) = (shape[2], shape[3]);
    let gd = grid.detach();
    let axis = |k: i64, size| {
        axis_taps(
            &select_int(grid, -1, k)?,
            &select_int(&gd, -1, k)?,
            size,
            modes,
        )
    };
    let (xs, ys) = (axis(0, w)?, axis(1, h)?);
    let (mut index, mut valid) = (Vec::new(), Vec::new());
    let (mut wx, mut wy, mut hs) = (Vec::new(), Vec::new(), [vec![], vec![], vec![]]);
    for j in 0..ys.coords.len() {
        for i in 0..xs.coords.len() {
            let (cx, cy) = (&xs.coords[i], &ys.coords[j]);
            let inside = |c: &V<T>, n: usize| {
                logical_and(&ge_scalar(c, 0.0)?, &le_scalar(c, n as f64 - 1.0)?)
            };
            let ok = logical_and(&inside(cx, w)?, &inside(cy, h)?)?;
            let flat = add_tensor(&mul_scalar(cy, w as f64)?, cx, 1.0)?;
            let flat = where_self(&ok, &flat, &zeros_of(&flat))?;
            index.push(_to_copy(
                &flat,
                Some(ScalarType::I64),
                None,
                None,
                None,
                false,
                None,
            )?);
            valid.push(ok);
            let (fx, fy) = (Some(&xs.f[i]), Some(&ys.f[j]));
            wx.push(times(xs.d[i].as_ref(), fy)?);
            wy.push(times(fx, ys.d[j].as_ref())?);
            hs[0].push(times(xs.dd[i].as_ref(), fy)?);
            hs[1].push(times(xs.d[i].as_ref(), ys.d[j].as_ref())?);
            hs[2].push(times(fx, ys.dd[j].as_ref())?);
        }
    }
    let [h0, h1, h2] = hs;
    let index = stack(&index, -1)?;
    let pts = index.shape().iter().skip(1).product::<usize>() as i64;
    let index = reshape(&index, &[shape[0] as i64, 1, pts])?;
    let expanded = [shape[0] as i64, shape[1] as i64, pts];
    Ok(Taps {
        index: expand(&index, &expanded, false)?,
        valid: unsqueeze(&stack(&valid, -1)?, 1)?,
        wx: stacked(wx)?,
        wy: stacked(wy)?,
        h: [stacked(h0)?, stacked(h1)?, stacked(h2)?],
    })
}

impl<T: Backend> Taps<T> {
    /// The input's elements at the taps, `[N, C, H_out, W_out, T]` (zero outside).
    fn values(&self, input: &V<T>) -> Res<V<T>> {
        let s = dims(&input.shape());
        let flat = reshape(input, &[s[0], s[1], s[2] * s[3]])?;
        let v = gather(&flat, 2, &self.index, false)?;
        let mut shape = dims(&self.valid.shape());
        shape[1] = s[1];
        let v = reshape(&v, &shape)?;
        where_self(&self.valid, &v, &zeros_of(&v))
    }

    /// The weights' derivative along the grid direction `dir` (`[N, H_out, W_out, 2]`):
    /// `wx * dir_x + wy * dir_y` (`None`: zero, nearest).
    fn along(&self, dir: &V<T>) -> Res<Option<V<T>>> {
        let (Some(wx), Some(wy)) = (&self.wx, &self.wy) else {
            return Ok(None);
        };
        let c = |k| unsqueeze(&unsqueeze(&select_int(dir, -1, k)?, -1)?, 1);
        Ok(Some(add_tensor(
            &mul_tensor(wx, &c(0)?)?,
            &mul_tensor(wy, &c(1)?)?,
            1.0,
        )?))
    }

    /// The Hessian of the weights applied to `dir`: the x and y components (`None`: zero).
    fn hessian(&self, dir: &V<T>) -> Res<Option<[V<T>; 2]>> {
        let c = |k| unsqueeze(&unsqueeze(&select_int(dir, -1, k)?, -1)?, 1);
        let (dx, dy) = (c(0)?, c(1)?);
        let term = |a: &Option<V<T>>, b: &Option<V<T>>| -> Res<Option<V<T>>> {
            match (a, b) {
                (None, None) => Ok(None),
                (a, b) => {
                    let a = a.as_ref().map(|a| mul_tensor(a, &dx)).transpose()?;
                    let b = b.as_ref().map(|b| mul_tensor(b, &dy)).transpose()?;
                    Ok(Some(match (a, b) {
                        (Some(a), Some(b)) => add_tensor(&a, &b, 1.0)?,
                        (a, b) => required(a.or(b))?,
                    }))
                }
            }
        };
        let [hxx, hxy, hyy] = &self.h;
        match (term(hxx, hxy)?, term(hxy, hyy)?) {
            (Some(x), Some(y)) => Ok(Some([x, y])),
            _ => Ok(None),
        }
    }
}

/// `x` summed over its last (tap) dim.
fn over_taps<T: Backend>(x: &V<T>) -> Res<V<T>> {
    sum_dim_intlist(x, Some(&[-1]), false, None)
}

/// `grid_sampler_2d`'s forward derivative: the tangent of the input sampled at the grid,
/// plus the input's taps times the weights' derivatives along the grid's tangent.
#[allow(clippy::too_many_arguments)]
pub fn grid_sampler_2d_jvp<T: Backend>(
    input_p: &V<T>,
    input_t: &V<T>,
    grid_p: &V<T>,
    grid_t: &V<T>,
    _result: &V<T>,
    interpolation_mode: i64,
    padding_mode: i64,
    align_corners: bool,
) -> Res<V<T>> {
    let (im, pm, ac) = (interpolation_mode, padding_mode, align_corners);
    let sampled = grid_sampler_2d(input_t, grid_p, im, pm, ac)?;
    let taps = taps(&input_p.shape(), grid_p, (im, pm, ac))?;
    match taps.along(grid_t)? {
        None => Ok(sampled),
        Some(dir) => {
            let moved = over_taps(&mul_tensor(&taps.values(input_p)?, &dir)?)?;
            add_tensor(&sampled, &moved, 1.0)
        }
    }
}

/// `a + b` of optional terms.
fn plus<T: Backend>(a: Option<V<T>>, b: Option<V<T>>) -> Res<Option<V<T>>> {
    match (a, b) {
        (Some(a), Some(b)) => Ok(Some(add_tensor(&a, &b, 1.0)?)),
        (a, b) => Ok(a.or(b)),
    }
}

/// The input's term of the double backward: `grad_output` times the weights' derivatives
/// along `dir`, scatter-added into the taps' positions.
fn scattered<T: Backend>(
    taps: &Taps<T>,
    grad_output: &V<T>,
    dir: &V<T>,
    input: &V<T>,
) -> Res<V<T>> {
    let s = dims(&input.shape());
    let src = mul_tensor(&unsqueeze(grad_output, -1)?, dir)?;
    let src = where_self(&taps.valid, &src, &zeros_of(&src))?;
    let src = reshape(&src, &dims(&taps.index.shape()))?;
    let zeros = reshape(&zeros_of(input), &[s[0], s[1], s[2] * s[3]])?;
    reshape(&scatter_add(&zeros, 2, &taps.index, &src)?, &s)
}

/// The grid's second-order term: `grad_output` times the taps times the weights' Hessian
/// along `dir`, summed over the channels and the taps.
fn curved<T: Backend>(
    taps: &Taps<T>,
    vals: &V<T>,
    grad_output: &V<T>,
    dir: &V<T>,
) -> Res<Option<V<T>>> {
    let Some([hx, hy]) = taps.hessian(dir)? else {
        return Ok(None);
    };
    let gv = mul_tensor(&unsqueeze(grad_output, -1)?, vals)?;
    let sum = |h: &V<T>| sum_dim_intlist(&mul_tensor(&gv, h)?, Some(&[1, 4]), false, None);
    Ok(Some(stack(&[sum(&hx)?, sum(&hy)?], -1)?))
}

/// `grid_sampler_2d_backward`'s backward: the derivatives of `<ggI, grad_input> + <ggGrid,
/// grad_grid>` in `grad_output`, `input` and `grid` (`None`: zero or not asked for).
#[allow(clippy::too_many_arguments)]
pub fn grid_sampler_2d_double_backward<T: Backend>(
    gg_i: Option<&V<T>>,
    gg_grid: Option<&V<T>>,
    grad_output: &V<T>,
    input: &V<T>,
    grid: &V<T>,
    interpolation_mode: i64,
    padding_mode: i64,
    align_corners: bool,
    output_mask: [bool; 3],
) -> Res<Grads3<T>> {
    let (im, pm, ac) = (interpolation_mode, padding_mode, align_corners);
    let taps = match gg_grid {
        Some(_) if im != NEAREST => Some(taps(&input.shape(), grid, (im, pm, ac))?),
        _ => None,
    };
    let vals = taps.as_ref().map(|t| t.values(input)).transpose()?;
    let dir = match (&taps, gg_grid) {
        (Some(t), Some(gg)) => t.along(gg)?,
        _ => None,
    };
    let mut d_go = None;
    let (mut d_input, mut d_grid) = (None, None);
    if output_mask[0] {
        let sampled = gg_i
            .map(|g| grid_sampler_2d(g, grid, im, pm, ac))
            .transpose()?;
        let moved = match (&vals, &dir) {
            (Some(v), Some(d)) => Some(over_taps(&mul_tensor(v, d)?)?),
            _ => None,
        };
        d_go = plus(sampled, moved)?;
    }
    if let (true, Some(t), Some(d)) = (output_mask[1], &taps, &dir) {
        d_input = Some(scattered(t, grad_output, d, input)?);
    }
    if output_mask[2] {
        let first = gg_i
            .map(|g| grid_sampler_2d_backward(grad_output, g, grid, im, pm, ac, [false, true]))
            .transpose()?
            .map(|(_, gg)| gg);
        let second = match (&taps, &vals, gg_grid) {
            (Some(t), Some(v), Some(gg)) => curved(t, v, grad_output, gg)?,
            _ => None,
        };
        d_grid = plus(first, second)?;
    }
    Ok((d_go, d_input, d_grid))
}

/// The op set's forward formula of `grid_sampler_2d_backward` (PyTorch 2.15 has none): the
/// op at `grad_output`'s tangent, plus [`grid_sampler_2d_double_backward`] at the input's
/// and the grid's tangents (the Hessian of `<grad_output, grid_sampler_2d>` is symmetric);
/// `output` 0 is the input gradient's tangent, 1 the grid gradient's.
#[allow(clippy::too_many_arguments)]
pub fn grid_sampler_2d_backward_jvp<T: Backend>(
    grad_output_p: &V<T>,
    grad_output_t: &V<T>,
    input_p: &V<T>,
    input_t: &V<T>,
    grid_p: &V<T>,
    grid_t: &V<T>,
    interpolation_mode: i64,
    padding_mode: i64,
    align_corners: bool,
    output_mask: [bool; 2],
    output: i64,
) -> Res<V<T>> {
    let (im, pm, ac) = (interpolation_mode, padding_mode, align_corners);
    let linear = grid_sampler_2d_backward(grad_output_t, input_p, grid_p, im, pm, ac, output_mask)?;
    let mask = [false, output == 0, output == 1];
    let (_, d_input, d_grid) = grid_sampler_2d_double_backward(
        Some(input_t),
        Some(grid_t),
        grad_output_p,
        input_p,
        grid_p,
        im,
        pm,
        ac,
        mask,
    )?;
    match (output, d_input, d_grid) {
        (0, Some(d), _) if output_mask[0] => add_tensor(&linear.0, &d, 1.0),
        (0, ..) => Ok(linear.0),
        (_, _, Some(d)) => add_tensor(&linear.1, &d, 1.0),
        _ => Ok(linear.1),
    }
}
