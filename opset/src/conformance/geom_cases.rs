//! The gradcheck cases of `masked_scatter` (a mask broadcast over `self`, a mask that
//! broadcasts `self`, more source elements than set ones) and `masked_scatter_backward`,
//! and the fixture dispatch of the family (`nonzero` has no derivative: fixtures only).

use super::args::{Args, R, ip};
use super::case::{Case, c, case};
use super::*;
use crate::ops::*;
use autograd::runtime::Variable;

fn mask<B: ConformanceTensor>(x: &[bool], shape: &[usize]) -> B {
    B::from_bool(x, shape)
}

/// The cases, appended to [`cases::cases`](super::cases::cases).
pub fn cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(4242);
    let mut cs = Vec::new();
    let m: B = mask(&[true, false, true, true, false, true], &[2, 3]);
    cs.push(case(
        "masked_scatter",
        "a 2-d mask, more source elements than set ones",
        vec![r.t(&[2, 3]), r.t(&[7])],
        move |x| masked_scatter(&x[0], &c(&m), &x[1]).unwrap(),
    ));
    let m: B = mask(&[false, true, true], &[3]);
    cs.push(case(
        "masked_scatter",
        "a mask broadcast over rows, non-contiguous self",
        vec![r.nc(&[2, 3]), r.t(&[2, 2])],
        move |x| masked_scatter(&x[0], &c(&m), &x[1]).unwrap(),
    ));
    let m: B = mask(&[true, false], &[2, 1]);
    cs.push(case(
        "masked_scatter",
        "a mask that broadcasts self",
        vec![r.t(&[3]), r.t(&[4])],
        move |x| masked_scatter(&x[0], &c(&m), &x[1]).unwrap(),
    ));
    let m: B = mask(&[true, false, true, true, false, true], &[2, 3]);
    cs.push(case(
        "masked_scatter_backward",
        "zeros after the selected elements",
        vec![r.t(&[2, 3])],
        move |x| masked_scatter_backward(&x[0], &c(&m), &[2, 3]).unwrap(),
    ));
    cs
}

/// The fixture dispatch of these operators; `None` for another operator.
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> Option<R<Vec<Variable<B>>>> {
    dispatch_geom(op, a).transpose()
}

/// `Ok(None)` for an operator that is not one of these.
fn dispatch_geom<B: ConformanceTensor>(op: &str, a: &Args<B>) -> R<Option<Vec<Variable<B>>>> {
    let r = match op {
        "nonzero" => ip(nonzero(&a.t("self")?)),
        "masked_scatter" => ip(masked_scatter(
            &a.t("self")?,
            &a.t("mask")?,
            &a.t("source")?,
        )),
        "masked_scatter_backward" => ip(masked_scatter_backward(
            &a.t("grad_output")?,
            &a.t("mask")?,
            &a.ints("sizes")?,
        )),
        _ => return Ok(None),
    };
    r.map(Some)
}
