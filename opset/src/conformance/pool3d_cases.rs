//! The gradcheck cases and the fixture dispatch of the 3-d poolings (`avg_pool3d`,
//! `max_pool3d_with_indices` and their backward ops): strides, padding, dilation,
//! `ceil_mode`, `count_include_pad`, `divisor_override`, unbatched and non-contiguous inputs.

use super::cases::{Case, case};
use super::dispatch::{Args, R, ip};
use super::*;
use crate::ops::*;
use autograd::runtime::Variable;

/// The cases, appended to [`cases::cases`](super::cases::cases).
pub fn cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(3130);
    let mut cs = vec![
        case(
            "avg_pool3d",
            "kernel (2,3,2), stride (1,2,1), padding 1, ceil_mode, count_include_pad",
            vec![r.t(&[2, 2, 3, 5, 4])],
            |x| avg_pool3d(&x[0], &[2, 3, 2], &[1, 2, 1], &[1], true, true, None).unwrap(),
        ),
        case(
            "avg_pool3d",
            "4-d, padding excluded, divisor_override 3, non-contiguous",
            vec![r.nc(&[2, 3, 4, 3])],
            |x| avg_pool3d(&x[0], &[2], &[], &[1], false, false, Some(3)).unwrap(),
        ),
        case(
            "avg_pool3d_backward",
            "padding excluded, ceil_mode",
            vec![r.t(&[1, 2, 2, 3, 2]), r.t(&[1, 2, 3, 4, 3])],
            |x| avg_pool3d_backward(&x[0], &x[1], &[2], &[2], &[1], true, false, None).unwrap(),
        ),
        case(
            "max_pool3d_with_indices",
            "kernel (2,3,2), stride (1,2,1), padding (1,1,0), dilation (1,1,2), ceil_mode",
            vec![r.t(&[2, 2, 3, 5, 5])],
            |x| {
                let (k, s, p, d) = ([2, 3, 2], [1, 2, 1], [1, 1, 0], [1, 1, 2]);
                max_pool3d_with_indices(&x[0], &k, &s, &p, &d, true)
                    .unwrap()
                    .0
            },
        ),
        case(
            "max_pool3d_with_indices",
            "4-d input, default stride, non-contiguous",
            vec![r.nc(&[2, 4, 4, 4])],
            |x| {
                max_pool3d_with_indices(&x[0], &[2], &[], &[0], &[1], false)
                    .unwrap()
                    .0
            },
        ),
    ];
    // The indices come from the forward on the input's values (computed when the case runs:
    // building the list runs no kernel), constants of the case.
    let args = ([2i64, 3, 2], [2i64, 2, 1], [1i64, 1, 0], [1i64, 1, 1]);
    cs.push(case(
        "max_pool3d_with_indices_backward",
        "ceil_mode, padding (1,1,0)",
        vec![r.t(&[2, 1, 3, 3, 3]), r.t(&[2, 1, 4, 5, 4])],
        move |x| {
            let (a, b, c, d) = (&args.0, &args.1, &args.2, &args.3);
            let idx = max_pool3d_with_indices(&x[1].detach(), a, b, c, d, true)
                .unwrap()
                .1;
            max_pool3d_with_indices_backward(&x[0], &x[1], a, b, c, d, true, &idx).unwrap()
        },
    ));
    cs
}

/// The fixture dispatch of these operators (`None`: not one of them).
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> Option<R<Vec<Variable<B>>>> {
    dispatch_pool3d(op, a).transpose()
}

/// `Ok(None)` for an operator that is not one of these.
fn dispatch_pool3d<B: ConformanceTensor>(op: &str, a: &Args<B>) -> R<Option<Vec<Variable<B>>>> {
    let r = match op {
        "avg_pool3d" => ip(avg_pool3d(
            &a.t("self")?,
            &a.ints("kernel_size")?,
            &a.ints("stride")?,
            &a.ints("padding")?,
            a.b("ceil_mode")?,
            a.b("count_include_pad")?,
            a.oi("divisor_override")?,
        )),
        "avg_pool3d_backward" => ip(avg_pool3d_backward(
            &a.t("grad_output")?,
            &a.t("self")?,
            &a.ints("kernel_size")?,
            &a.ints("stride")?,
            &a.ints("padding")?,
            a.b("ceil_mode")?,
            a.b("count_include_pad")?,
            a.oi("divisor_override")?,
        )),
        "max_pool3d_with_indices" => max_pool3d_with_indices(
            &a.t("self")?,
            &a.ints("kernel_size")?,
            &a.ints("stride")?,
            &a.ints("padding")?,
            &a.ints("dilation")?,
            a.b("ceil_mode")?,
        )
        .map(|(x, y)| vec![x, y])
        .map_err(|e| e.to_string()),
        "max_pool3d_with_indices_backward" => ip(max_pool3d_with_indices_backward(
            &a.t("grad_output")?,
            &a.t("self")?,
            &a.ints("kernel_size")?,
            &a.ints("stride")?,
            &a.ints("padding")?,
            &a.ints("dilation")?,
            a.b("ceil_mode")?,
            &a.t("indices")?,
        )),
        _ => return Ok(None),
    };
    r.map(Some)
}
