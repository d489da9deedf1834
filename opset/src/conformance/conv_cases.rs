//! The gradcheck cases and the fixture dispatch of the convolution and pooling operators
//! (`convolution`, `convolution_backward`, `max_pool2d_with_indices` and its backward, and
//! the composites `conv1d`, `conv2d`, `conv_transpose1d`, `conv_transpose2d.input`,
//! `max_pool2d`): small shapes with strides, padding, dilation, groups, transposed forms,
//! a batch of one and non-contiguous inputs. The fixture dispatch covers the 3-d poolings too
//! (their cases are `pool3d_cases`).

use super::args::{Args, R, ip};
use super::case::{Case, case};
use super::*;
use crate::ops::*;
use autograd::runtime::{AutogradError, Variable};

/// The cases, appended to [`cases::cases`](super::cases::cases).
#[allow(
    clippy::too_many_lines,
    reason = "a flat list, one case per operator variant"
)]
pub fn cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(3030);
    let mut cs = Vec::new();
    cs.push(case(
        "convolution",
        "2-d, groups=2, stride (2,1), padding (1,0), dilation (1,2), bias",
        vec![r.t(&[2, 2, 5, 4]), r.t(&[4, 1, 3, 2]), r.t(&[4])],
        |x| {
            convolution(
                &x[0],
                &x[1],
                Some(&x[2]),
                &[2, 1],
                &[1, 0],
                &[1, 2],
                false,
                &[0, 0],
                2,
            )
            .unwrap()
        },
    ));
    cs.push(case(
        "convolution",
        "1-d, batch of 1, padding 1, dilation 2, no bias, non-contiguous",
        vec![r.nc(&[1, 2, 6]), r.t(&[3, 2, 2])],
        |x| convolution(&x[0], &x[1], None, &[1], &[1], &[2], false, &[0], 1).unwrap(),
    ));
    cs.push(case(
        "convolution",
        "transposed 2-d, stride 2, padding (1,0), output_padding (1,0), bias",
        vec![r.t(&[1, 2, 3, 3]), r.t(&[2, 3, 2, 2]), r.t(&[3])],
        |x| {
            convolution(
                &x[0],
                &x[1],
                Some(&x[2]),
                &[2, 2],
                &[1, 0],
                &[1, 1],
                true,
                &[1, 0],
                1,
            )
            .unwrap()
        },
    ));
    cs.push(case(
        "convolution",
        "transposed 1-d, groups=2, stride 2, padding 1, output_padding 1",
        vec![r.t(&[2, 4, 3]), r.t(&[4, 1, 3])],
        |x| convolution(&x[0], &x[1], None, &[2], &[1], &[1], true, &[1], 2).unwrap(),
    ));
    for (i, what) in ["grad_input", "grad_weight", "grad_bias"]
        .iter()
        .enumerate()
    {
        cs.push(case(
            "convolution_backward",
            &format!("2-d, stride 2, padding 1, groups=2: {what}"),
            vec![r.t(&[2, 4, 3, 2]), r.t(&[2, 2, 4, 3]), r.t(&[4, 1, 2, 2])],
            move |x| {
                let out = convolution_backward(
                    &x[0],
                    &x[1],
                    &x[2],
                    Some(&[4]),
                    &[2, 2],
                    &[1, 1],
                    &[1, 1],
                    false,
                    &[0, 0],
                    2,
                    [true, true, true],
                )
                .unwrap();
                [out.0, out.1, out.2][i].clone()
            },
        ));
    }
    cs.push(case(
        "convolution_backward",
        "transposed 1-d, stride 2: grad_input",
        vec![r.t(&[1, 3, 6]), r.t(&[1, 2, 3]), r.t(&[2, 3, 2])],
        |x| {
            convolution_backward(
                &x[0],
                &x[1],
                &x[2],
                None,
                &[2],
                &[0],
                &[1],
                true,
                &[0],
                1,
                [true, true, false],
            )
            .unwrap()
            .0
        },
    ));
    cs.push(case(
        "conv1d",
        "unbatched, stride 2",
        vec![r.t(&[2, 7]), r.t(&[3, 2, 3]), r.t(&[3])],
        |x| conv1d(&x[0], &x[1], Some(&x[2]), &[2], &[0], &[1], 1).unwrap(),
    ));
    cs.push(case(
        "conv2d",
        "padding 1, non-contiguous",
        vec![r.nc(&[2, 2, 4, 4]), r.t(&[3, 2, 3, 3]), r.t(&[3])],
        |x| conv2d(&x[0], &x[1], Some(&x[2]), &[1, 1], &[1, 1], &[1, 1], 1).unwrap(),
    ));
    cs.push(case(
        "conv_transpose1d",
        "stride 2",
        vec![r.t(&[1, 2, 3]), r.t(&[2, 2, 3])],
        |x| conv_transpose1d(&x[0], &x[1], None, &[2], &[0], &[0], 1, &[1]).unwrap(),
    ));
    cs.push(case(
        "conv_transpose2d.input",
        "unbatched, dilation 2",
        vec![r.t(&[2, 2, 3]), r.t(&[2, 1, 2, 2]), r.t(&[1])],
        |x| {
            conv_transpose2d_input(
                &x[0],
                &x[1],
                Some(&x[2]),
                &[1, 1],
                &[0, 0],
                &[0, 0],
                1,
                &[2, 2],
            )
            .unwrap()
        },
    ));
    cs.push(case(
        "max_pool2d_with_indices",
        "kernel (3,2), stride (2,1), padding 1, dilation (1,2), ceil_mode",
        vec![r.t(&[2, 3, 5, 5])],
        |x| {
            max_pool2d_with_indices(&x[0], &[3, 2], &[2, 1], &[1, 1], &[1, 2], true)
                .unwrap()
                .0
        },
    ));
    cs.push(case(
        "max_pool2d_with_indices",
        "3-d input, default stride, non-contiguous",
        vec![r.nc(&[2, 4, 4])],
        |x| {
            max_pool2d_with_indices(&x[0], &[2], &[], &[0], &[1], false)
                .unwrap()
                .0
        },
    ));
    cs.push(case(
        "max_pool2d",
        "kernel 2, stride 1",
        vec![r.t(&[1, 2, 3, 4])],
        |x| max_pool2d(&x[0], &[2, 2], &[1, 1], &[0, 0], &[1, 1], false).unwrap(),
    ));
    {
        // The indices come from the forward on the input's values (computed when the case
        // runs: building the list runs no kernel), constants of the case.
        let args = ([3i64, 2], [2i64, 1], [1i64, 0], [1i64, 1]);
        cs.push(case(
            "max_pool2d_with_indices_backward",
            "ceil_mode, padding (1,0)",
            vec![r.t(&[2, 2, 3, 3]), r.t(&[2, 2, 5, 4])],
            move |x| {
                let (a, b, c, d) = (&args.0, &args.1, &args.2, &args.3);
                let idx = max_pool2d_with_indices(&x[1].detach(), a, b, c, d, true)
                    .unwrap()
                    .1;
                max_pool2d_with_indices_backward(&x[0], &x[1], a, b, c, d, true, &idx).unwrap()
            },
        ));
    }
    cs.extend(avg_pool_cases::<B>(&r));
    cs
}

/// The average pooling cases (plain and adaptive).
fn avg_pool_cases<B: ConformanceTensor>(r: &Rng) -> Vec<Case<B>> {
    let mut cs = Vec::new();
    cs.push(case(
        "avg_pool2d",
        "kernel (3,2), stride (2,1), padding 1, ceil_mode, count_include_pad",
        vec![r.t(&[2, 2, 5, 4])],
        |x| avg_pool2d(&x[0], &[3, 2], &[2, 1], &[1, 1], true, true, None).unwrap(),
    ));
    cs.push(case(
        "avg_pool2d",
        "3-d, padding excluded, divisor_override 3, non-contiguous",
        vec![r.nc(&[2, 4, 5])],
        |x| avg_pool2d(&x[0], &[2], &[], &[1], false, false, Some(3)).unwrap(),
    ));
    cs.push(case(
        "avg_pool2d_backward",
        "padding excluded",
        vec![r.t(&[1, 2, 3, 3]), r.t(&[1, 2, 4, 4])],
        |x| {
            avg_pool2d_backward(&x[0], &x[1], &[2, 2], &[2, 2], &[1, 1], false, false, None)
                .unwrap()
        },
    ));
    cs.push(case(
        "_adaptive_avg_pool2d",
        "5x4 to 3x3 (overlapping windows)",
        vec![r.t(&[2, 2, 5, 4])],
        |x| _adaptive_avg_pool2d(&x[0], &[3, 3]).unwrap(),
    ));
    cs.push(case(
        "_adaptive_avg_pool2d_backward",
        "3-d, 4x5 to 2x3",
        vec![r.t(&[2, 2, 3]), r.t(&[2, 4, 5])],
        |x| _adaptive_avg_pool2d_backward(&x[0], &x[1]).unwrap(),
    ));
    cs.push(case(
        "adaptive_avg_pool2d",
        "1x1 (a mean), non-contiguous",
        vec![r.nc(&[2, 3, 4])],
        |x| adaptive_avg_pool2d(&x[0], &[1, 1]).unwrap(),
    ));
    cs.push(case(
        "avg_pool1d",
        "3-d, kernel 3, stride 2, padding 1, ceil_mode",
        vec![r.t(&[2, 2, 6])],
        |x| avg_pool1d(&x[0], &[3], &[2], &[1], true, false).unwrap(),
    ));
    cs.push(case(
        "adaptive_avg_pool1d",
        "2-d, 5 to 3",
        vec![r.t(&[3, 5])],
        |x| adaptive_avg_pool1d(&x[0], &[3]).unwrap(),
    ));
    cs.push(case(
        "constant_pad_nd",
        "two dims padded, value 0.5",
        vec![r.t(&[2, 3, 2])],
        |x| constant_pad_nd(&x[0], &[1, 2, 0, 1], 0.5).unwrap(),
    ));
    cs.push(case(
        "constant_pad_nd",
        "a crop and a pad, non-contiguous",
        vec![r.nc(&[3, 4])],
        |x| constant_pad_nd(&x[0], &[-1, 2, 1, -2], 0.0).unwrap(),
    ));
    cs.push(case(
        "adaptive_avg_pool2d",
        "3x2",
        vec![r.t(&[1, 2, 4, 5])],
        |x| adaptive_avg_pool2d(&x[0], &[3, 2]).unwrap(),
    ));
    cs
}

/// A three-output op's result.
type Three<B> = Result<(Variable<B>, Variable<B>, Variable<B>), AutogradError>;

/// The three outputs of a three-output op.
fn three<B: ConformanceTensor>(r: Three<B>) -> R<Vec<Variable<B>>> {
    r.map(|(x, y, z)| vec![x, y, z]).map_err(|e| e.to_string())
}

/// The fixture dispatch of these operators (`None`: not one of them).
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> Option<R<Vec<Variable<B>>>> {
    dispatch_conv(op, a).transpose()
}

/// `Ok(None)` for an operator that is not one of these.
#[allow(clippy::too_many_lines, reason = "one match arm per op, a table")]
fn dispatch_conv<B: ConformanceTensor>(op: &str, a: &Args<B>) -> R<Option<Vec<Variable<B>>>> {
    let two = |r: Result<(Variable<B>, Variable<B>), AutogradError>| {
        r.map(|(x, y)| vec![x, y]).map_err(|e| e.to_string())
    };
    let r = match op {
        "convolution" => ip(convolution(
            &a.t("input")?,
            &a.t("weight")?,
            a.ot("bias")?.as_ref(),
            &a.ints("stride")?,
            &a.ints("padding")?,
            &a.ints("dilation")?,
            a.b("transposed")?,
            &a.ints("output_padding")?,
            a.i("groups")?,
        )),
        "convolution_backward" => {
            let mask: Vec<bool> = a.get("output_mask")?.as_array().map_or(Vec::new(), |v| {
                v.iter().filter_map(serde_json::Value::as_bool).collect()
            });
            let mask: [bool; 3] = mask.try_into().map_err(|_| "output_mask: not 3 bools")?;
            three(convolution_backward(
                &a.t("grad_output")?,
                &a.t("input")?,
                &a.t("weight")?,
                a.oints("bias_sizes")?.as_deref(),
                &a.ints("stride")?,
                &a.ints("padding")?,
                &a.ints("dilation")?,
                a.b("transposed")?,
                &a.ints("output_padding")?,
                a.i("groups")?,
                mask,
            ))
        }
        "conv1d" | "conv2d" => {
            let f = if op == "conv1d" { conv1d } else { conv2d };
            ip(f(
                &a.t("input")?,
                &a.t("weight")?,
                a.ot("bias")?.as_ref(),
                &a.ints("stride")?,
                &a.ints("padding")?,
                &a.ints("dilation")?,
                a.i("groups")?,
            ))
        }
        "conv_transpose1d" | "conv_transpose2d.input" => {
            let f = if op == "conv_transpose1d" {
                conv_transpose1d
            } else {
                conv_transpose2d_input
            };
            ip(f(
                &a.t("input")?,
                &a.t("weight")?,
                a.ot("bias")?.as_ref(),
                &a.ints("stride")?,
                &a.ints("padding")?,
                &a.ints("output_padding")?,
                a.i("groups")?,
                &a.ints("dilation")?,
            ))
        }
        "max_pool2d_with_indices" | "max_pool3d_with_indices" => {
            let f = if op == "max_pool2d_with_indices" {
                max_pool2d_with_indices
            } else {
                max_pool3d_with_indices
            };
            two(f(
                &a.t("self")?,
                &a.ints("kernel_size")?,
                &a.ints("stride")?,
                &a.ints("padding")?,
                &a.ints("dilation")?,
                a.b("ceil_mode")?,
            ))
        }
        "max_pool2d" => ip(max_pool2d(
            &a.t("self")?,
            &a.ints("kernel_size")?,
            &a.ints("stride")?,
            &a.ints("padding")?,
            &a.ints("dilation")?,
            a.b("ceil_mode")?,
        )),
        "max_pool2d_with_indices_backward" | "max_pool3d_with_indices_backward" => {
            let f = if op == "max_pool2d_with_indices_backward" {
                max_pool2d_with_indices_backward
            } else {
                max_pool3d_with_indices_backward
            };
            ip(f(
                &a.t("grad_output")?,
                &a.t("self")?,
                &a.ints("kernel_size")?,
                &a.ints("stride")?,
                &a.ints("padding")?,
                &a.ints("dilation")?,
                a.b("ceil_mode")?,
                &a.t("indices")?,
            ))
        }
        _ => return dispatch_avg_pool(op, a),
    };
    r.map(Some)
}

/// The average pooling part of [`dispatch_conv`].
fn dispatch_avg_pool<B: ConformanceTensor>(op: &str, a: &Args<B>) -> R<Option<Vec<Variable<B>>>> {
    let r = match op {
        "avg_pool2d" | "avg_pool3d" => {
            let f = if op == "avg_pool2d" {
                avg_pool2d
            } else {
                avg_pool3d
            };
            ip(f(
                &a.t("self")?,
                &a.ints("kernel_size")?,
                &a.ints("stride")?,
                &a.ints("padding")?,
                a.b("ceil_mode")?,
                a.b("count_include_pad")?,
                a.oi("divisor_override")?,
            ))
        }
        "avg_pool2d_backward" | "avg_pool3d_backward" => {
            let f = if op == "avg_pool2d_backward" {
                avg_pool2d_backward
            } else {
                avg_pool3d_backward
            };
            ip(f(
                &a.t("grad_output")?,
                &a.t("self")?,
                &a.ints("kernel_size")?,
                &a.ints("stride")?,
                &a.ints("padding")?,
                a.b("ceil_mode")?,
                a.b("count_include_pad")?,
                a.oi("divisor_override")?,
            ))
        }
        "_adaptive_avg_pool2d" => ip(_adaptive_avg_pool2d(&a.t("self")?, &a.ints("output_size")?)),
        "_adaptive_avg_pool2d_backward" => ip(_adaptive_avg_pool2d_backward(
            &a.t("grad_output")?,
            &a.t("self")?,
        )),
        "adaptive_avg_pool2d" => ip(adaptive_avg_pool2d(&a.t("self")?, &a.ints("output_size")?)),
        "avg_pool1d" => ip(avg_pool1d(
            &a.t("self")?,
            &a.ints("kernel_size")?,
            &a.ints("stride")?,
            &a.ints("padding")?,
            a.b("ceil_mode")?,
            a.b("count_include_pad")?,
        )),
        "adaptive_avg_pool1d" => ip(adaptive_avg_pool1d(&a.t("self")?, &a.ints("output_size")?)),
        "constant_pad_nd" => ip(constant_pad_nd(
            &a.t("self")?,
            &a.ints("pad")?,
            a.f("value")?,
        )),
        _ => return Ok(None),
    };
    r.map(Some)
}
