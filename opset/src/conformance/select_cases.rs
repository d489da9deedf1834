//! The gradcheck cases and the fixture dispatch of the selection operators (Core ATen;
//! issue 30): `clamp.Tensor`, `slice_scatter`, `select_scatter`,
//! `split_with_sizes`, `topk`.

use super::args::{Args, R, ip};
use super::case::{Case, case};
use super::*;
use crate::ops::*;
use autograd::runtime::Variable;

/// The cases, appended to [`cases::cases`](super::cases::cases).
pub fn cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(1818);
    vec![
        case(
            "clamp.Tensor",
            "both bounds broadcast, some of them crossed (min > max)",
            vec![
                r.nc(&[2, 3]),
                v(&[-0.5, 0.25, -0.3], &[3]),
                v(&[0.4, 0.1, 0.6, -0.2, 0.3, 0.5], &[2, 3]),
            ],
            |x| clamp_tensor(&x[0], Some(&x[1]), Some(&x[2])).unwrap(),
        ),
        case(
            "clamp.Tensor",
            "min only, a 0-d bound",
            vec![r.t(&[4]), v(&[0.05], &[])],
            |x| clamp_tensor(&x[0], Some(&x[1]), None).unwrap(),
        ),
        case(
            "clamp.Tensor",
            "max only",
            vec![r.t(&[2, 2]), v(&[0.3, -0.45], &[2])],
            |x| clamp_tensor(&x[0], None, Some(&x[1])).unwrap(),
        ),
        case(
            "slice_scatter",
            "dim 1, step 2, non-contiguous self",
            vec![r.nc(&[3, 5]), r.t(&[3, 2])],
            |x| slice_scatter(&x[0], &x[1], 1, Some(1), None, 2).unwrap(),
        ),
        case(
            "slice_scatter",
            "dim -1, negative start",
            vec![r.t(&[2, 4]), r.t(&[2, 2])],
            |x| slice_scatter(&x[0], &x[1], -1, Some(-2), None, 1).unwrap(),
        ),
        case(
            "select_scatter",
            "dim 0, negative index",
            vec![r.t(&[3, 2]), r.nc(&[2])],
            |x| select_scatter(&x[0], &x[1], 0, -1).unwrap(),
        ),
        case(
            "select_scatter",
            "dim 1 of a 3-d self",
            vec![r.t(&[2, 3, 2]), r.t(&[2, 2])],
            |x| select_scatter(&x[0], &x[1], 1, 1).unwrap(),
        ),
        case(
            "split_with_sizes",
            "uneven pieces with an empty one, some unused",
            vec![r.t(&[6, 2])],
            |x| {
                let u = split_with_sizes(&x[0], &[1, 0, 3, 2], 0).unwrap();
                let sq = mul_tensor(&u[2], &u[2]).unwrap();
                add_tensor(&sum(&u[0], None).unwrap(), &sum(&sq, None).unwrap(), 1.0).unwrap()
            },
        ),
        case("topk", "k 2 of dim 1, largest", vec![r.nc(&[3, 4])], |x| {
            topk(&x[0], 2, 1, true, true).unwrap().0
        }),
        case("topk", "k 3, smallest, dim -1", vec![r.t(&[5])], |x| {
            topk(&x[0], 3, -1, false, true).unwrap().0
        }),
    ]
}

/// The fixture dispatch of these operators; `None` for another operator.
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> Option<R<Vec<Variable<B>>>> {
    dispatch_select(op, a).transpose()
}

/// `Ok(None)` for an operator that is not one of these.
fn dispatch_select<B: ConformanceTensor>(op: &str, a: &Args<B>) -> R<Option<Vec<Variable<B>>>> {
    let r = match op {
        "clamp.Tensor" => ip(clamp_tensor(
            &a.t("self")?,
            a.ot("min")?.as_ref(),
            a.ot("max")?.as_ref(),
        )),
        "slice_scatter" => ip(slice_scatter(
            &a.t("self")?,
            &a.t("src")?,
            a.i("dim")?,
            a.oi("start")?,
            a.oi("end")?,
            a.i("step")?,
        )),
        "split_with_sizes" => split_with_sizes(&a.t("self")?, &a.ints("split_sizes")?, a.i("dim")?)
            .map_err(|e| e.to_string()),
        "topk" => topk(
            &a.t("self")?,
            a.i("k")?,
            a.i("dim")?,
            a.b("largest")?,
            a.b("sorted")?,
        )
        .map(|(v, i)| vec![v, i])
        .map_err(|e| e.to_string()),
        "select_scatter" => ip(select_scatter(
            &a.t("self")?,
            &a.t("src")?,
            a.i("dim")?,
            a.i("index")?,
        )),
        _ => return Ok(None),
    };
    r.map(Some)
}
