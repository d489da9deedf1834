//! The gradcheck cases and the fixture dispatch of the padding and upsampling operators
//! (`reflection_pad{1,2,3}d`, `replication_pad{1,2,3}d`, `upsample_nearest2d`,
//! `upsample_bilinear2d` and their backward ops, the composites `pad` and the `.vec`
//! overloads): small shapes, unbatched and batched inputs, uneven and negative pads, scales,
//! non-contiguous inputs.

use super::args::{Args, R, ip};
use super::case::{Case, case};
use super::*;
use crate::ops::*;
use autograd::runtime::Variable;

/// The cases, appended to [`cases::cases`](super::cases::cases).
pub fn cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(3131);
    let mut cs = pad_cases(&r);
    cs.extend(pad_backward_cases(&r));
    cs.extend(upsample_cases(&r));
    cs.extend(composite_cases(&r));
    cs.extend(pool3d_cases(&r));
    cs
}

/// The 3-d poolings.
fn pool3d_cases<B: ConformanceTensor>(r: &Rng) -> Vec<Case<B>> {
    vec![
        case(
            "_adaptive_avg_pool3d",
            "3x4x5 to 2x3x2 (overlapping windows)",
            vec![r.t(&[1, 2, 3, 4, 5])],
            |x| _adaptive_avg_pool3d(&x[0], &[2, 3, 2]).unwrap(),
        ),
        case(
            "_adaptive_avg_pool3d",
            "4-d, non-contiguous, to 1x2x4",
            vec![r.nc(&[2, 3, 3, 2])],
            |x| _adaptive_avg_pool3d(&x[0], &[1, 2, 4]).unwrap(),
        ),
        case(
            "_adaptive_avg_pool3d_backward",
            "4-d, 3x3x2 to 2x2x1",
            vec![r.t(&[2, 2, 2, 1]), r.t(&[2, 3, 3, 2])],
            |x| _adaptive_avg_pool3d_backward(&x[0], &x[1]).unwrap(),
        ),
    ]
}

/// The upsampling ops and their backward ops.
fn upsample_cases<B: ConformanceTensor>(r: &Rng) -> Vec<Case<B>> {
    vec![
        case(
            "upsample_nearest2d",
            "3x2 to 5x4 (floor(o * 3/5), twice the width)",
            vec![r.t(&[1, 2, 3, 2])],
            |x| upsample_nearest2d(&x[0], &[5, 4], None, None).unwrap(),
        ),
        case(
            "upsample_nearest2d",
            "4x5 to 2x3 with scales, non-contiguous",
            vec![r.nc(&[2, 1, 4, 5])],
            |x| upsample_nearest2d(&x[0], &[2, 3], Some(0.5), Some(0.7)).unwrap(),
        ),
        case(
            "upsample_nearest2d_backward",
            "5x4 to 3x2",
            vec![r.t(&[1, 2, 5, 4])],
            |x| upsample_nearest2d_backward(&x[0], &[5, 4], &[1, 2, 3, 2], None, None).unwrap(),
        ),
        case(
            "upsample_bilinear2d",
            "3x2 to 4x5, align_corners",
            vec![r.t(&[1, 2, 3, 2])],
            |x| upsample_bilinear2d(&x[0], &[4, 5], true, None, None).unwrap(),
        ),
        case(
            "upsample_bilinear2d",
            "4x3 to 3x7 with scales, non-contiguous",
            vec![r.nc(&[2, 1, 4, 3])],
            |x| upsample_bilinear2d(&x[0], &[3, 7], false, Some(0.8), Some(2.5)).unwrap(),
        ),
        case(
            "upsample_bilinear2d_backward",
            "5x3 to 2x3",
            vec![r.t(&[1, 2, 5, 3])],
            |x| {
                upsample_bilinear2d_backward(&x[0], &[5, 3], &[1, 2, 2, 3], false, None, None)
                    .unwrap()
            },
        ),
    ]
}

/// The composites: `pad` (`F.pad`) in every mode, the `.vec` overloads (`F.interpolate`).
fn composite_cases<B: ConformanceTensor>(r: &Rng) -> Vec<Case<B>> {
    vec![
        case(
            "pad",
            "reflect, 2-d pads of a 4-d input",
            vec![r.t(&[1, 2, 3, 3])],
            |x| pad(&x[0], &[1, 2, 2, 1], "reflect", None).unwrap(),
        ),
        case(
            "pad",
            "replicate, 1-d pads of a 2-d input",
            vec![r.t(&[2, 3])],
            |x| pad(&x[0], &[2, 1], "replicate", None).unwrap(),
        ),
        case(
            "pad",
            "circular, a wrap and a crop",
            vec![r.t(&[1, 2, 3, 4])],
            |x| pad(&x[0], &[2, -1, 1, 3], "circular", None).unwrap(),
        ),
        case("pad", "constant 0.5", vec![r.t(&[2, 3])], |x| {
            pad(&x[0], &[1, 1], "constant", Some(0.5)).unwrap()
        }),
        case(
            "upsample_nearest2d.vec",
            "scale factors (1.5, 2.7)",
            vec![r.t(&[1, 1, 3, 2])],
            |x| upsample_nearest2d_vec(&x[0], None, Some(&[1.5, 2.7])).unwrap(),
        ),
        case(
            "upsample_bilinear2d.vec",
            "output size 4x3",
            vec![r.t(&[1, 2, 2, 3])],
            |x| upsample_bilinear2d_vec(&x[0], Some(&[4, 3]), false, None).unwrap(),
        ),
    ]
}

/// The padding ops.
fn pad_cases<B: ConformanceTensor>(r: &Rng) -> Vec<Case<B>> {
    vec![
        case(
            "reflection_pad1d",
            "3-d, pads (2, 1)",
            vec![r.t(&[2, 2, 4])],
            |x| reflection_pad1d(&x[0], &[2, 1]).unwrap(),
        ),
        case(
            "reflection_pad1d",
            "2-d, a crop and a pad, non-contiguous",
            vec![r.nc(&[3, 5])],
            |x| reflection_pad1d(&x[0], &[-1, 3]).unwrap(),
        ),
        case(
            "reflection_pad2d",
            "4-d, pads (1, 2, 2, 0)",
            vec![r.t(&[1, 2, 3, 4])],
            |x| reflection_pad2d(&x[0], &[1, 2, 2, 0]).unwrap(),
        ),
        case(
            "reflection_pad2d",
            "3-d, non-contiguous",
            vec![r.nc(&[2, 3, 3])],
            |x| reflection_pad2d(&x[0], &[2, 2, 1, 1]).unwrap(),
        ),
        case(
            "reflection_pad3d",
            "4-d, pads (1, 0, 1, 1, 0, 1)",
            vec![r.t(&[2, 2, 3, 2])],
            |x| reflection_pad3d(&x[0], &[1, 0, 1, 1, 0, 1]).unwrap(),
        ),
        case(
            "replication_pad1d",
            "3-d, pads (3, 1) (wider than the input)",
            vec![r.t(&[2, 2, 2])],
            |x| replication_pad1d(&x[0], &[3, 1]).unwrap(),
        ),
        case(
            "replication_pad2d",
            "4-d, pads (2, 1, 0, 3)",
            vec![r.t(&[1, 2, 3, 2])],
            |x| replication_pad2d(&x[0], &[2, 1, 0, 3]).unwrap(),
        ),
        case(
            "replication_pad2d",
            "3-d, a crop, non-contiguous",
            vec![r.nc(&[2, 4, 3])],
            |x| replication_pad2d(&x[0], &[1, -1, -2, 2]).unwrap(),
        ),
        case(
            "replication_pad3d",
            "5-d, pads (1, 2, 0, 1, 1, 0)",
            vec![r.t(&[1, 1, 2, 3, 2])],
            |x| replication_pad3d(&x[0], &[1, 2, 0, 1, 1, 0]).unwrap(),
        ),
    ]
}

/// The padding ops' backward ops (their own gradients are the forward ops).
fn pad_backward_cases<B: ConformanceTensor>(r: &Rng) -> Vec<Case<B>> {
    vec![
        case(
            "reflection_pad1d_backward",
            "3-d, pads (2, 1)",
            vec![r.t(&[2, 2, 7]), r.t(&[2, 2, 4])],
            |x| reflection_pad1d_backward(&x[0], &x[1], &[2, 1]).unwrap(),
        ),
        case(
            "reflection_pad2d_backward",
            "3-d, pads (1, 1, 2, 0)",
            vec![r.t(&[2, 5, 5]), r.t(&[2, 3, 3])],
            |x| reflection_pad2d_backward(&x[0], &x[1], &[1, 1, 2, 0]).unwrap(),
        ),
        case(
            "reflection_pad3d_backward",
            "4-d, pads (1, 1, 0, 1, 1, 0)",
            vec![r.t(&[1, 3, 3, 4]), r.t(&[1, 2, 2, 2])],
            |x| reflection_pad3d_backward(&x[0], &x[1], &[1, 1, 0, 1, 1, 0]).unwrap(),
        ),
        case(
            "replication_pad1d_backward",
            "2-d, pads (2, 0)",
            vec![r.t(&[2, 5]), r.t(&[2, 3])],
            |x| replication_pad1d_backward(&x[0], &x[1], &[2, 0]).unwrap(),
        ),
        case(
            "replication_pad2d_backward",
            "4-d, pads (2, 1, 1, 1)",
            vec![r.t(&[1, 2, 4, 5]), r.t(&[1, 2, 2, 2])],
            |x| replication_pad2d_backward(&x[0], &x[1], &[2, 1, 1, 1]).unwrap(),
        ),
        case(
            "replication_pad3d_backward",
            "4-d, pads (1, 0, 0, 2, 1, 1)",
            vec![r.t(&[1, 4, 4, 3]), r.t(&[1, 2, 2, 2])],
            |x| replication_pad3d_backward(&x[0], &x[1], &[1, 0, 0, 2, 1, 1]).unwrap(),
        ),
    ]
}

/// The fixture dispatch of these operators (`None`: not one of them).
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> Option<R<Vec<Variable<B>>>> {
    dispatch_pad(op, a).transpose()
}

/// `Ok(None)` for an operator that is not one of these.
fn dispatch_pad<B: ConformanceTensor>(op: &str, a: &Args<B>) -> R<Option<Vec<Variable<B>>>> {
    type Fwd<B> = fn(&Variable<B>, &[i64]) -> Result<Variable<B>, autograd::runtime::AutogradError>;
    type Bwd<B> = fn(
        &Variable<B>,
        &Variable<B>,
        &[i64],
    ) -> Result<Variable<B>, autograd::runtime::AutogradError>;
    let fwd: Option<Fwd<B>> = match op {
        "reflection_pad1d" => Some(reflection_pad1d),
        "reflection_pad2d" => Some(reflection_pad2d),
        "reflection_pad3d" => Some(reflection_pad3d),
        "replication_pad1d" => Some(replication_pad1d),
        "replication_pad2d" => Some(replication_pad2d),
        "replication_pad3d" => Some(replication_pad3d),
        _ => None,
    };
    if let Some(f) = fwd {
        return ip(f(&a.t("self")?, &a.ints("padding")?)).map(Some);
    }
    let bwd: Option<Bwd<B>> = match op {
        "reflection_pad1d_backward" => Some(reflection_pad1d_backward),
        "reflection_pad2d_backward" => Some(reflection_pad2d_backward),
        "reflection_pad3d_backward" => Some(reflection_pad3d_backward),
        "replication_pad1d_backward" => Some(replication_pad1d_backward),
        "replication_pad2d_backward" => Some(replication_pad2d_backward),
        "replication_pad3d_backward" => Some(replication_pad3d_backward),
        _ => None,
    };
    if let Some(f) = bwd {
        let r = f(&a.t("grad_output")?, &a.t("self")?, &a.ints("padding")?);
        return ip(r).map(Some);
    }
    dispatch_upsample(op, a)
}

/// A `float?` argument.
fn opt_f64<B: ConformanceTensor>(a: &Args<B>, k: &str) -> R<Option<f64>> {
    match a.get(k) {
        Err(_) | Ok(serde_json::Value::Null) => Ok(None),
        Ok(v) => Ok(Some(super::args::num(v))),
    }
}

/// A `float[]?` argument.
fn opt_f64s<B: ConformanceTensor>(a: &Args<B>, k: &str) -> R<Option<Vec<f64>>> {
    match a.get(k) {
        Err(_) | Ok(serde_json::Value::Null) => Ok(None),
        Ok(v) => v
            .as_array()
            .map(|xs| Some(xs.iter().map(super::args::num).collect()))
            .ok_or_else(|| format!("{k}: not a float list")),
    }
}

/// The upsampling ops and `pad`.
fn dispatch_upsample<B: ConformanceTensor>(op: &str, a: &Args<B>) -> R<Option<Vec<Variable<B>>>> {
    let (h, w) = (opt_f64(a, "scales_h")?, opt_f64(a, "scales_w")?);
    let r = match op {
        "upsample_nearest2d" => upsample_nearest2d(&a.t("self")?, &a.ints("output_size")?, h, w),
        "upsample_nearest2d_backward" => upsample_nearest2d_backward(
            &a.t("grad_output")?,
            &a.ints("output_size")?,
            &a.ints("input_size")?,
            h,
            w,
        ),
        "upsample_bilinear2d" => upsample_bilinear2d(
            &a.t("self")?,
            &a.ints("output_size")?,
            a.b("align_corners")?,
            h,
            w,
        ),
        "upsample_bilinear2d_backward" => upsample_bilinear2d_backward(
            &a.t("grad_output")?,
            &a.ints("output_size")?,
            &a.ints("input_size")?,
            a.b("align_corners")?,
            h,
            w,
        ),
        "upsample_nearest2d.vec" => upsample_nearest2d_vec(
            &a.t("input")?,
            a.oints("output_size")?.as_deref(),
            opt_f64s(a, "scale_factors")?.as_deref(),
        ),
        "upsample_bilinear2d.vec" => upsample_bilinear2d_vec(
            &a.t("input")?,
            a.oints("output_size")?.as_deref(),
            a.b("align_corners")?,
            opt_f64s(a, "scale_factors")?.as_deref(),
        ),
        "_adaptive_avg_pool3d" => _adaptive_avg_pool3d(&a.t("self")?, &a.ints("output_size")?),
        "_adaptive_avg_pool3d_backward" => {
            _adaptive_avg_pool3d_backward(&a.t("grad_output")?, &a.t("self")?)
        }
        "pad" => pad(
            &a.t("self")?,
            &a.ints("pad")?,
            &a.s("mode")?,
            opt_f64(a, "value")?,
        ),
        _ => return Ok(None),
    };
    ip(r).map(Some)
}
