//! The gradcheck cases and the fixture dispatch of grid sampling (`grid_sampler_2d` and its
//! backward): each interpolation mode (bilinear, nearest, bicubic) with each padding mode
//! (zeros, border, reflection), with and without `align_corners`, on grids reaching outside
//! the input, non-contiguous inputs, and the backward op's own derivatives.

use super::args::{Args, R, ip};
use super::case::{Case, case};
use super::*;
use crate::ops::*;
use autograd::runtime::Variable;

/// The cases, appended to [`cases::cases`](super::cases::cases).
pub fn cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(3190);
    let mut cs = Vec::new();
    let modes = [
        (0, 0, false, "bilinear, zeros"),
        (0, 1, true, "bilinear, border, align_corners"),
        (0, 2, false, "bilinear, reflection"),
        (1, 2, true, "nearest, reflection, align_corners"),
        (1, 0, false, "nearest, zeros"),
        (2, 0, true, "bicubic, zeros, align_corners"),
        (2, 1, false, "bicubic, border"),
        (2, 2, true, "bicubic, reflection, align_corners"),
    ];
    for (k, (im, pm, ac, label)) in modes.into_iter().enumerate() {
        let x = if k % 2 == 0 {
            r.t(&[2, 2, 3, 4])
        } else {
            r.nc(&[2, 2, 3, 4])
        };
        cs.push(case(
            "grid_sampler_2d",
            &format!("{label}, grid in [-1.6, 1.6]"),
            vec![x, r.u(&[2, 2, 3, 2], -1.6, 1.6)],
            move |x| grid_sampler_2d(&x[0], &x[1], im, pm, ac).unwrap(),
        ));
    }
    for (im, pm, ac, label) in [
        (0, 0, false, "bilinear, zeros"),
        (2, 2, true, "bicubic, reflection"),
    ] {
        cs.push(case(
            "grid_sampler_2d_backward",
            &format!("{label}: the input's gradient"),
            vec![
                r.t(&[1, 2, 2, 3]),
                r.t(&[1, 2, 3, 3]),
                r.u(&[1, 2, 3, 2], -1.4, 1.4),
            ],
            move |x| {
                let mask = [true, true];
                grid_sampler_2d_backward(&x[0], &x[1], &x[2], im, pm, ac, mask)
                    .unwrap()
                    .0
            },
        ));
        cs.push(case(
            "grid_sampler_2d_backward",
            &format!("{label}: the grid's gradient"),
            vec![
                r.t(&[1, 2, 2, 3]),
                r.t(&[1, 2, 3, 3]),
                r.u(&[1, 2, 3, 2], -1.4, 1.4),
            ],
            move |x| {
                let mask = [false, true];
                grid_sampler_2d_backward(&x[0], &x[1], &x[2], im, pm, ac, mask)
                    .unwrap()
                    .1
            },
        ));
    }
    cs
}

/// The fixture dispatch of these operators (`None`: not one of them).
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> Option<R<Vec<Variable<B>>>> {
    dispatch_grid(op, a).transpose()
}

/// `Ok(None)` for an operator that is not one of these.
fn dispatch_grid<B: ConformanceTensor>(op: &str, a: &Args<B>) -> R<Option<Vec<Variable<B>>>> {
    let modes = || -> R<(i64, i64, bool)> {
        Ok((
            a.i("interpolation_mode")?,
            a.i("padding_mode")?,
            a.b("align_corners")?,
        ))
    };
    let r = match op {
        "grid_sampler_2d" => {
            let (im, pm, ac) = modes()?;
            ip(grid_sampler_2d(&a.t("input")?, &a.t("grid")?, im, pm, ac))
        }
        "grid_sampler_2d_backward" => {
            let (im, pm, ac) = modes()?;
            let mask = a.get("output_mask")?;
            let m = |i: usize| mask[i].as_bool().unwrap_or(true);
            let mask = [m(0), m(1)];
            let (g, x, grid) = (a.t("grad_output")?, a.t("input")?, a.t("grid")?);
            grid_sampler_2d_backward(&g, &x, &grid, im, pm, ac, mask)
                .map(|(gi, gg)| vec![gi, gg])
                .map_err(|e| e.to_string())
        }
        _ => return Ok(None),
    };
    r.map(Some)
}
