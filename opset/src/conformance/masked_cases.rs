//! The gradcheck cases and the fixture dispatch of the masked family (issue 30):
//! `masked_fill` (a mask broadcast over `self`, a mask that broadcasts `self`, a 0-d value
//! that takes a gradient).

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
    let mut cs = masked_fill_cases::<B>();
    cs.extend(clamp_one_cases::<B>());
    cs.extend(addc_cases::<B>());
    cs.extend(lerp_cases::<B>());
    cs
}

/// `masked_fill.Scalar` and `masked_fill.Tensor`.
fn masked_fill_cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(2121);
    let m: B = mask(&[true, false, true], &[3]);
    let m2: B = mask(&[false, true], &[2, 1]);
    let m3: B = mask(&[true, false, false, true, true, false], &[2, 3]);
    vec![
        case(
            "masked_fill.Scalar",
            "a mask broadcast over rows, non-contiguous self",
            vec![r.nc(&[2, 3])],
            move |x| masked_fill_scalar(&x[0], &c(&m), -1.5).unwrap(),
        ),
        case(
            "masked_fill.Scalar",
            "a mask that broadcasts self",
            vec![r.t(&[3])],
            move |x| masked_fill_scalar(&x[0], &c(&m2), 0.25).unwrap(),
        ),
        case(
            "masked_fill.Tensor",
            "a 0-d value that takes a gradient",
            vec![r.t(&[2, 3]), v(&[0.7], &[])],
            move |x| masked_fill_tensor(&x[0], &c(&m3), &x[1]).unwrap(),
        ),
    ]
}

/// `clamp_min`/`clamp_max` with a number and with a broadcast tensor bound (no ties: a tie
/// is a kink).
fn clamp_one_cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(2222);
    let lo = || v(&[0.5, -0.3, 0.1], &[3]);
    vec![
        case("clamp_min", "a number bound", vec![r.away(&[2, 3])], |x| {
            clamp_min(&x[0], 0.0).unwrap()
        }),
        case("clamp_max", "a number bound", vec![r.away(&[2, 3])], |x| {
            clamp_max(&x[0], 0.0).unwrap()
        }),
        case(
            "clamp_min.Tensor",
            "a broadcast bound, non-contiguous self",
            vec![r.nc(&[2, 3]), lo()],
            |x| clamp_min_tensor(&x[0], &x[1]).unwrap(),
        ),
        case(
            "clamp_max.Tensor",
            "a bound that broadcasts self",
            vec![r.t(&[3]), v(&[0.2, 0.7, 0.45, 0.9, 0.05, 0.6], &[2, 3])],
            |x| clamp_max_tensor(&x[0], &x[1]).unwrap(),
        ),
    ]
}

/// `addcmul` and `addcdiv`: broadcast operands and a `value` (a divisor away from 0).
fn addc_cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(2323);
    vec![
        case(
            "addcmul",
            "broadcast operands, value 0.5",
            vec![r.t(&[2, 3]), r.nc(&[2, 3]), r.t(&[3])],
            |x| addcmul(&x[0], &x[1], &x[2], 0.5).unwrap(),
        ),
        case(
            "addcdiv",
            "broadcast operands, value -2",
            vec![r.t(&[3]), r.t(&[2, 3]), r.away(&[2, 1])],
            |x| addcdiv(&x[0], &x[1], &x[2], -2.0).unwrap(),
        ),
    ]
}

/// `lerp` with a number weight on either side of 0.5 and outside `[0, 1]`, and a broadcast
/// tensor weight.
fn lerp_cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(2424);
    vec![
        case(
            "lerp.Scalar",
            "weight 0.25",
            vec![r.t(&[2, 3]), r.t(&[3])],
            |x| lerp_scalar(&x[0], &x[1], 0.25).unwrap(),
        ),
        case(
            "lerp.Scalar",
            "weight 1.5",
            vec![r.nc(&[2, 3]), r.t(&[2, 3])],
            |x| lerp_scalar(&x[0], &x[1], 1.5).unwrap(),
        ),
        case(
            "lerp.Tensor",
            "a broadcast weight on both sides of 0.5",
            vec![r.t(&[2, 3]), r.t(&[2, 3]), v(&[0.1, 0.8, -0.7], &[3])],
            |x| lerp_tensor(&x[0], &x[1], &x[2]).unwrap(),
        ),
    ]
}

/// The fixture dispatch of these operators; `None` for another operator.
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> Option<R<Vec<Variable<B>>>> {
    dispatch_masked(op, a).transpose()
}

/// `Ok(None)` for an operator that is not one of these.
fn dispatch_masked<B: ConformanceTensor>(op: &str, a: &Args<B>) -> R<Option<Vec<Variable<B>>>> {
    let r = match op {
        "masked_fill.Scalar" => ip(masked_fill_scalar(
            &a.t("self")?,
            &a.t("mask")?,
            a.sc("value")?,
        )),
        "masked_fill_.Scalar" => ip(masked_fill_scalar_(
            &a.t("self")?,
            &a.t("mask")?,
            a.sc("value")?,
        )),
        "masked_fill.Tensor" => ip(masked_fill_tensor(
            &a.t("self")?,
            &a.t("mask")?,
            &a.t("value")?,
        )),
        "masked_fill_.Tensor" => ip(masked_fill_tensor_(
            &a.t("self")?,
            &a.t("mask")?,
            &a.t("value")?,
        )),
        "clamp_min" => ip(clamp_min(&a.t("self")?, a.sc("min")?)),
        "clamp_min_" => ip(clamp_min_(&a.t("self")?, a.sc("min")?)),
        "clamp_min.Tensor" => ip(clamp_min_tensor(&a.t("self")?, &a.t("min")?)),
        "clamp_min_.Tensor" => ip(clamp_min_tensor_(&a.t("self")?, &a.t("min")?)),
        "clamp_max" => ip(clamp_max(&a.t("self")?, a.sc("max")?)),
        "clamp_max_" => ip(clamp_max_(&a.t("self")?, a.sc("max")?)),
        "clamp_max.Tensor" => ip(clamp_max_tensor(&a.t("self")?, &a.t("max")?)),
        "clamp_max_.Tensor" => ip(clamp_max_tensor_(&a.t("self")?, &a.t("max")?)),
        "addcmul" | "addcmul_" | "addcdiv" | "addcdiv_" => {
            let (x, t1, t2) = (a.t("self")?, a.t("tensor1")?, a.t("tensor2")?);
            let value = a.sc("value")?;
            ip(match op {
                "addcmul" => addcmul(&x, &t1, &t2, value),
                "addcmul_" => addcmul_(&x, &t1, &t2, value),
                "addcdiv" => addcdiv(&x, &t1, &t2, value),
                _ => addcdiv_(&x, &t1, &t2, value),
            })
        }
        "lerp.Scalar" => ip(lerp_scalar(&a.t("self")?, &a.t("end")?, a.sc("weight")?)),
        "lerp_.Scalar" => ip(lerp_scalar_(&a.t("self")?, &a.t("end")?, a.sc("weight")?)),
        "lerp.Tensor" => ip(lerp_tensor(&a.t("self")?, &a.t("end")?, &a.t("weight")?)),
        "lerp_.Tensor" => ip(lerp_tensor_(&a.t("self")?, &a.t("end")?, &a.t("weight")?)),
        _ => return Ok(None),
    };
    r.map(Some)
}
