//! The gradcheck cases of `scatter_reduce.two` (`sum`, `mean`, `amax`, `amin`, with and
//! without `include_self`, repeated indices, a negative dim) and the fixture dispatch of the
//! family. `prod` is checked by its fixtures (PyTorch's gradients, second derivatives,
//! zeros): PyTorch gives it no forward-mode tangent, which the kit's forward check needs.

use super::args::{Args, R, ip};
use super::case::{Case, c, case};
use super::*;
use crate::ops::*;
use autograd::runtime::Variable;

/// The cases, appended to [`cases::cases`](super::cases::cases).
pub fn cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(3030);
    let mut cs = Vec::new();
    for reduce in ["sum", "mean", "amax", "amin"] {
        for include_self in [true, false] {
            let index: B = B::from_i64(&[0, 2, 0, 1, 2, 2, 0, 0], &[4, 2]);
            cs.push(case(
                "scatter_reduce.two",
                &format!("{reduce}, include_self={include_self}, repeated indices"),
                vec![r.t(&[3, 2]), r.t(&[4, 2])],
                move |x| {
                    scatter_reduce_two(&x[0], 0, &c(&index), &x[1], reduce, include_self).unwrap()
                },
            ));
        }
    }
    let index: B = B::from_i64(&[1, 1, 0, 3, 3, 1], &[2, 3]);
    cs.push(case(
        "scatter_reduce.two",
        "mean along dim -1, non-contiguous self",
        vec![r.nc(&[2, 4]), r.t(&[2, 3])],
        move |x| scatter_reduce_two(&x[0], -1, &c(&index), &x[1], "mean", false).unwrap(),
    ));
    cs
}

/// The fixture dispatch of these operators; `None` for another operator.
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> Option<R<Vec<Variable<B>>>> {
    match op {
        "scatter_reduce.two" => Some((|| {
            ip(scatter_reduce_two(
                &a.t("self")?,
                a.i("dim")?,
                &a.t("index")?,
                &a.t("src")?,
                &a.s("reduce")?,
                a.b("include_self")?,
            ))
        })()),
        _ => None,
    }
}
