//! The gradcheck cases and the fixture dispatch of `addmm`, `pow.Scalar` and the
//! cumulative, product and sorting operators (Core ATen; issue 30).

use super::args::{Args, R, ip};
use super::case::{Case, case};
use super::*;
use crate::ops::*;
use autograd::runtime::{AutogradError, Variable};

/// The `cumsum` and `cumprod` cases (`cumprod` with zeros: its backward's masked forms).
fn cumulative_cases<B: ConformanceTensor>(r: &Rng, cs: &mut Vec<Case<B>>) {
    cs.push(case(
        "cumsum",
        "dim 1, non-contiguous",
        vec![r.nc(&[2, 3])],
        |x| cumsum(&x[0], 1, None).unwrap(),
    ));
    cs.push(case("cumsum", "dim -1, 1-d", vec![r.t(&[4])], |x| {
        cumsum(&x[0], -1, None).unwrap()
    }));
    cs.push(case(
        "cumprod",
        "dim 1, no zero",
        vec![r.away(&[2, 3])],
        |x| cumprod(&x[0], 1, None).unwrap(),
    ));
    cs.push(case(
        "cumprod",
        "dim 0, zeros",
        vec![v(&[0.5, 0.0, 0.0, 1.5, -1.2, 0.7], &[3, 2])],
        |x| cumprod(&x[0], 0, None).unwrap(),
    ));
}

/// The cases, appended to [`cases::cases`](super::cases::cases).
pub fn cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(3131);
    let mut cs = Vec::new();
    cs.push(case(
        "addmm",
        "self broadcast from a row, beta 0.5, alpha 2, non-contiguous mat1",
        vec![r.t(&[4]), r.nc(&[3, 2]), r.t(&[2, 4])],
        |x| addmm(&x[0], &x[1], &x[2], 0.5, 2).unwrap(),
    ));
    cs.push(case(
        "addmm",
        "beta 1, alpha 1, self of the product's shape",
        vec![r.t(&[2, 3]), r.t(&[2, 4]), r.nc(&[4, 3])],
        |x| addmm(&x[0], &x[1], &x[2], 1, 1).unwrap(),
    ));
    cs.push(case("pow.Scalar", "2.5 ** x", vec![r.nc(&[2, 3])], |x| {
        pow_scalar(2.5, &x[0]).unwrap()
    }));
    cs.push(case(
        "pow.Scalar",
        "0 ** x, x > 0",
        vec![r.pos(&[3])],
        |x| pow_scalar(0, &x[0]).unwrap(),
    ));
    cumulative_cases(&r, &mut cs);
    cs.push(case("prod", "no zero", vec![r.away(&[2, 3])], |x| {
        prod(&x[0], None).unwrap()
    }));
    cs.push(case(
        "prod",
        "one zero",
        vec![v(&[0.5, 0.0, -1.2, 0.8], &[2, 2])],
        |x| prod(&x[0], None).unwrap(),
    ));
    cs.push(case(
        "prod",
        "two zeros",
        vec![v(&[0.0, 0.7, 0.0, 1.3], &[4])],
        |x| prod(&x[0], None).unwrap(),
    ));
    cs.push(case(
        "prod.dim_int",
        "dim 1, keepdim, a zero in a row",
        vec![v(&[0.5, 0.0, -1.1, 0.9, 1.2, -0.7], &[2, 3])],
        |x| prod_dim_int(&x[0], 1, true, None).unwrap(),
    ));
    cs.push(case(
        "prod.dim_int",
        "dim 0, non-contiguous",
        vec![r.away::<B>(&[3, 2]).noncontiguous()],
        |x| prod_dim_int(&x[0], 0, false, None).unwrap(),
    ));
    cs.push(case("sort", "dim 1, ascending", vec![r.t(&[3, 4])], |x| {
        sort(&x[0], 1, false).unwrap().0
    }));
    cs.push(case(
        "sort",
        "dim 0, descending, non-contiguous",
        vec![r.nc(&[3, 2])],
        |x| sort(&x[0], 0, true).unwrap().0,
    ));
    cs.push(case(
        "sort.stable",
        "stable, dim -1, descending",
        vec![r.t(&[2, 5])],
        |x| sort_stable(&x[0], Some(true), -1, true).unwrap().0,
    ));
    cs
}

/// The fixture dispatch of these operators; `None` for another operator.
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> Option<R<Vec<Variable<B>>>> {
    dispatch_products(op, a).transpose()
}

/// `Ok(None)` for an operator that is not one of these.
fn dispatch_products<B: ConformanceTensor>(op: &str, a: &Args<B>) -> R<Option<Vec<Variable<B>>>> {
    let two = |r: Result<(Variable<B>, Variable<B>), AutogradError>| {
        r.map(|(x, y)| vec![x, y]).map_err(|e| e.to_string())
    };
    let r = match op {
        "addmm" => ip(addmm(
            &a.t("self")?,
            &a.t("mat1")?,
            &a.t("mat2")?,
            a.sc("beta")?,
            a.sc("alpha")?,
        )),
        "pow.Scalar" => ip(pow_scalar(a.sc("self")?, &a.t("exponent")?)),
        "cumsum" => ip(cumsum(&a.t("self")?, a.i("dim")?, a.dtype("dtype")?)),
        "cumprod" => ip(cumprod(&a.t("self")?, a.i("dim")?, a.dtype("dtype")?)),
        "prod" => ip(prod(&a.t("self")?, a.dtype("dtype")?)),
        "prod.dim_int" => ip(prod_dim_int(
            &a.t("self")?,
            a.i("dim")?,
            a.b("keepdim")?,
            a.dtype("dtype")?,
        )),
        "sort" => two(sort(&a.t("self")?, a.i("dim")?, a.b("descending")?)),
        "sort.stable" => two(sort_stable(
            &a.t("self")?,
            a.ob("stable")?,
            a.i("dim")?,
            a.b("descending")?,
        )),
        _ => return Ok(None),
    };
    r.map(Some)
}
