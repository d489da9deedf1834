//! The gradcheck cases of the 3-d poolings (`avg_pool3d`,
//! `max_pool3d_with_indices` and their backward ops): strides, padding, dilation,
//! `ceil_mode`, `count_include_pad`, `divisor_override`, unbatched and non-contiguous inputs.
//! Their fixture dispatch is the 2-d poolings' ([`conv_cases`](super::conv_cases)).

use super::case::{Case, case};
use super::*;
use crate::ops::*;

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
