//! The gradcheck cases of the distance functions (issue 30), appended to
//! [`super::cases::cases`]: `_pdist_forward` and `_cdist_forward` for `p` 0, 1, 2, a
//! fraction, 3 and infinity (batched and broadcast for `cdist`, by matrix products for `p`
//! 2 with `compute_mode` 1), the backward functions on their own (the distances an input
//! of their own, so that their double backward, `_pdist_backward_backward` and
//! `_cdist_backward_backward`, is checked to the third order), `pdist`, `_euclidean_dist`
//! and `cdist` by matrix products; and the program-format dispatch of these operators.
//! PyTorch has no forward formula for the five functions: the forward check is their
//! refusal ([`super::cases::NO_FORWARD_FORMULA`]).

use super::args::{Args, R};
use super::case::{Case, c, case};
use super::*;
use crate::ops::*;

/// The distance cases.
pub fn dist_cases<B: ConformanceTensor>(r: &Rng, cs: &mut Vec<Case<B>>) {
    for p in [0.0, 1.0, 2.0, 0.5, 3.0, f64::INFINITY] {
        cs.push(case(
            "_pdist_forward",
            &format!("4 rows of 3, p {p}"),
            vec![r.t(&[4, 3])],
            move |x| _pdist_forward(&x[0], p).unwrap(),
        ));
    }
    cs.push(case("pdist", "p 2.5", vec![r.t(&[3, 2])], |x| {
        pdist(&x[0], 2.5).unwrap()
    }));
    cs.push(case(
        "pdist",
        "non-contiguous, p 1.5",
        vec![r.nc(&[3, 4])],
        |x| pdist(&x[0], 1.5).unwrap(),
    ));
    for (p, mode) in [
        (2.0, None),
        (2.0, Some(1)),
        (1.0, None),
        (1.5, None),
        (3.0, None),
    ] {
        cs.push(case(
            "_cdist_forward",
            &format!("batch 2 broadcast, p {p}, mode {mode:?}"),
            vec![r.t(&[2, 3, 4]), r.t(&[5, 4])],
            move |x| _cdist_forward(&x[0], &x[1], p, mode).unwrap(),
        ));
    }
    cs.push(case(
        "_cdist_forward",
        "p inf, x2 non-contiguous",
        vec![r.t(&[3, 2]), r.nc(&[4, 2])],
        |x| _cdist_forward(&x[0], &x[1], f64::INFINITY, None).unwrap(),
    ));
    euclidean_cases(r, cs);
    backward_cases(r, cs);
}

/// `_euclidean_dist` (matrices, a batch folded into the rows, broadcast batches) and `cdist`
/// on its matrix-product path (`compute_mode` 1, or more than 25 rows).
fn euclidean_cases<B: ConformanceTensor>(r: &Rng, cs: &mut Vec<Case<B>>) {
    for (what, s1, s2) in [
        ("matrices", vec![3, 2], vec![4, 2]),
        ("batch folded", vec![2, 3, 2], vec![4, 2]),
        ("broadcast batches", vec![2, 1, 3, 2], vec![3, 4, 2]),
    ] {
        cs.push(case(
            "_euclidean_dist",
            what,
            vec![r.t(&s1), r.t(&s2)],
            |x| _euclidean_dist(&x[0], &x[1]).unwrap(),
        ));
    }
    cs.push(case(
        "cdist",
        "batch 2 broadcast, p 2, mode 1",
        vec![r.t(&[2, 3, 4]), r.nc(&[5, 4])],
        |x| cdist(&x[0], &x[1], 2.0, Some(1)).unwrap(),
    ));
    cs.push(case(
        "cdist",
        "26 rows, p 2",
        vec![r.t(&[26, 2]), r.t(&[3, 2])],
        |x| cdist(&x[0], &x[1], 2.0, None).unwrap(),
    ));
}

/// `_pdist_backward` and `_cdist_backward` on their own, every argument varying (the
/// distances are those of constant rows, away from zero, so the factors are smooth).
fn backward_cases<B: ConformanceTensor>(r: &Rng, cs: &mut Vec<Case<B>>) {
    for p in [2.0, 1.5, 3.0, 1.0] {
        cs.push(case(
            "_pdist_backward",
            &format!("grad, self and pdist, p {p}"),
            vec![r.t(&[6]), r.t(&[4, 3]), r.pos(&[6])],
            move |x| _pdist_backward(&x[0], &x[1], p, &x[2]).unwrap(),
        ));
        cs.push(case(
            "_cdist_backward",
            &format!("grad, x1, x2 and cdist, p {p}"),
            vec![
                r.t(&[2, 3, 5]),
                r.t(&[2, 3, 4]),
                r.t(&[5, 4]),
                r.pos(&[2, 3, 5]),
            ],
            move |x| _cdist_backward(&x[0], &x[1], &x[2], p, &x[3]).unwrap(),
        ));
    }
    let xin: B = r.t(&[3, 2]);
    cs.push(case(
        "_pdist_backward",
        "the distances of the input, p 2",
        vec![r.t(&[3])],
        move |x| {
            let xv = c(&xin);
            let d = _pdist_forward(&xv, 2.0).unwrap();
            _pdist_backward(&x[0], &xv, 2.0, &d).unwrap()
        },
    ));
}

/// The fixture dispatcher's arms of the distance functions (`None`: another op);
/// [`super::dispatch::dispatch`] falls back to it.
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> Option<R<Vec<Variable<B>>>> {
    let one = |r: Result<Variable<B>, autograd::runtime::AutogradError>| {
        r.map(|v| vec![v]).map_err(|e| e.to_string())
    };
    let call = || -> R<Vec<Variable<B>>> {
        match op {
            "_pdist_forward" => one(_pdist_forward(&a.t("self")?, a.f("p")?)),
            "pdist" => one(pdist(&a.t("self")?, a.f("p")?)),
            "_pdist_backward" => one(_pdist_backward(
                &a.t("grad_output")?,
                &a.t("self")?,
                a.f("p")?,
                &a.t("pdist")?,
            )),
            "_euclidean_dist" => one(_euclidean_dist(&a.t("x1")?, &a.t("x2")?)),
            "cdist" => one(cdist(
                &a.t("x1")?,
                &a.t("x2")?,
                a.f("p")?,
                a.oi("compute_mode")?,
            )),
            "_cdist_forward" => one(_cdist_forward(
                &a.t("x1")?,
                &a.t("x2")?,
                a.f("p")?,
                a.oi("compute_mode")?,
            )),
            _ => one(_cdist_backward(
                &a.t("grad_output")?,
                &a.t("x1")?,
                &a.t("x2")?,
                a.f("p")?,
                &a.t("cdist")?,
            )),
        }
    };
    const OPS: &[&str] = &[
        "_pdist_forward",
        "pdist",
        "_pdist_backward",
        "_cdist_forward",
        "_cdist_backward",
        "_euclidean_dist",
        "cdist",
    ];
    OPS.contains(&op).then(call)
}
