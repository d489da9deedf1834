//! The gradcheck cases of the normalization ops and of `var` (issue 30), appended to
//! [`super::cases::cases`]: batch norm in training (running statistics updated in place) and
//! evaluation, its backward op on its own (so its double backward, PyTorch's
//! `batchnorm_double_backward`, is checked to the third order), `var` over dims and
//! corrections, and the composites.

use super::case::{Case, c, case};
use super::*;
use crate::ops::*;

/// The normalization and variance cases.
#[allow(
    clippy::too_many_lines,
    reason = "a flat list, one case per operator variant"
)]
pub fn norm_cases<B: ConformanceTensor>(r: &Rng, cs: &mut Vec<Case<B>>) {
    let (rm, rv): (B, B) = (r.t(&[2]), r.pos(&[2]));
    let stats = move || (c(&rm), c(&rv));
    let st = stats.clone();
    cs.push(case(
        "_native_batch_norm_legit",
        "training, weight and bias, running statistics updated",
        vec![r.t(&[3, 2, 4]), r.pos(&[2]), r.t(&[2])],
        move |x| {
            let (m, v) = st();
            _native_batch_norm_legit(&x[0], Some(&x[1]), Some(&x[2]), &m, &v, true, 0.1, 1e-5)
                .unwrap()
                .0
        },
    ));
    let st = stats.clone();
    cs.push(case(
        "_native_batch_norm_legit",
        "evaluation, weight, non-contiguous",
        vec![r.nc(&[4, 2]), r.pos(&[2])],
        move |x| {
            let (m, v) = st();
            _native_batch_norm_legit(&x[0], Some(&x[1]), None, &m, &v, false, 0.1, 1e-5)
                .unwrap()
                .0
        },
    ));
    let st = stats.clone();
    cs.push(case(
        "_native_batch_norm_legit_no_training",
        "weight and bias",
        vec![r.t(&[3, 2, 2]), r.pos(&[2]), r.t(&[2])],
        move |x| {
            let (m, v) = st();
            _native_batch_norm_legit_no_training(&x[0], Some(&x[1]), Some(&x[2]), &m, &v, 0.1, 1e-3)
                .unwrap()
                .0
        },
    ));
    cs.push(case(
        "_native_batch_norm_legit.no_stats",
        "no affine, 2-d input",
        vec![r.t(&[4, 3])],
        |x| {
            _native_batch_norm_legit_no_stats(&x[0], None, None, true, 0.1, 1e-5)
                .unwrap()
                .0
        },
    ));
    cs.push(case(
        "_native_batch_norm_legit.no_stats",
        "weight, 4-d input",
        vec![r.t(&[2, 2, 2, 2]), r.pos(&[2])],
        |x| {
            _native_batch_norm_legit_no_stats(&x[0], Some(&x[1]), None, true, 0.1, 1e-5)
                .unwrap()
                .0
        },
    ));
    // native_batch_norm_backward: in evaluation its outputs are functions of grad_out, input
    // and weight with constant statistics; in training the saved statistics are the input's
    // own, so only grad_out varies (as the op's own double backward assumes).
    for out in 0..3 {
        let st = stats.clone();
        cs.push(case(
            "native_batch_norm_backward",
            &format!("evaluation, output {out}"),
            vec![r.t(&[3, 2, 2]), r.t(&[3, 2, 2]), r.pos(&[2])],
            move |x| {
                let (m, v) = st();
                let g = native_batch_norm_backward(
                    &x[0],
                    &x[1],
                    Some(&x[2]),
                    Some(&m),
                    Some(&v),
                    None,
                    None,
                    false,
                    1e-5,
                    [true, true, true],
                )
                .unwrap();
                [g.0, g.1, g.2][out].clone()
            },
        ));
    }
    {
        let xin: B = r.t(&[3, 2, 2]);
        let w: B = r.pos(&[2]);
        cs.push(case(
            "native_batch_norm_backward",
            "training, grad_input as a function of grad_out",
            vec![r.t(&[3, 2, 2])],
            move |x| {
                let (xv, wv) = (c(&xin), c(&w));
                let (_, sm, si) =
                    _native_batch_norm_legit_no_stats(&xv, Some(&wv), None, true, 0.1, 1e-5)
                        .unwrap();
                native_batch_norm_backward(
                    &x[0],
                    &xv,
                    Some(&wv),
                    None,
                    None,
                    Some(&sm),
                    Some(&si),
                    true,
                    1e-5,
                    [true, true, true],
                )
                .unwrap()
                .0
            },
        ));
    }
    cs.push(case(
        "var.correction",
        "all elements",
        vec![r.t(&[3, 4])],
        |x| var_correction(&x[0], None, None, false).unwrap(),
    ));
    cs.push(case(
        "var.correction",
        "dim 1, keepdim, correction 0, non-contiguous",
        vec![r.nc(&[3, 4])],
        |x| {
            var_correction(
                &x[0],
                Some(&[1]),
                Some(autograd::types::Scalar::Float(0.0)),
                true,
            )
            .unwrap()
        },
    ));
    cs.push(case(
        "var.correction",
        "dims (0, 2), correction 2",
        vec![r.t(&[3, 2, 4])],
        |x| {
            var_correction(
                &x[0],
                Some(&[0, -1]),
                Some(autograd::types::Scalar::Float(2.0)),
                false,
            )
            .unwrap()
        },
    ));
    cs.push(case("var.dim", "dim 0, biased", vec![r.t(&[4, 3])], |x| {
        var_dim(&x[0], Some(&[0]), false, false).unwrap()
    }));
    let st = stats.clone();
    cs.push(case(
        "batch_norm",
        "training with running statistics",
        vec![r.t(&[4, 2, 3]), r.pos(&[2]), r.t(&[2])],
        move |x| {
            let (m, v) = st();
            batch_norm(
                &x[0],
                Some(&x[1]),
                Some(&x[2]),
                Some(&m),
                Some(&v),
                true,
                0.1,
                1e-5,
                false,
            )
            .unwrap()
        },
    ));
    cs.push(case(
        "batch_norm",
        "training without running statistics",
        vec![r.t(&[4, 3])],
        |x| batch_norm(&x[0], None, None, None, None, true, 0.1, 1e-5, false).unwrap(),
    ));
    cs.push(case(
        "batch_norm",
        "evaluation",
        vec![r.t(&[3, 2]), r.pos(&[2])],
        move |x| {
            let (m, v) = stats();
            batch_norm(
                &x[0],
                Some(&x[1]),
                None,
                Some(&m),
                Some(&v),
                false,
                0.1,
                1e-5,
                false,
            )
            .unwrap()
        },
    ));
}

/// The fixture dispatcher's arms of the normalization ops and of `var` (`None`: another
/// op); [`super::dispatch::dispatch`] falls back to it.
#[allow(
    clippy::too_many_lines,
    reason = "one match arm per op of the YAML, a table"
)]
pub fn dispatch_norm<B: ConformanceTensor>(
    op: &str,
    a: &super::args::Args<B>,
) -> Option<super::args::R<Vec<Variable<B>>>> {
    use autograd::runtime::AutogradError;
    type Three<B> = Result<(Variable<B>, Variable<B>, Variable<B>), AutogradError>;
    let three = |r: Three<B>| r.map(|(x, y, z)| vec![x, y, z]).map_err(|e| e.to_string());
    let one = |r: Result<Variable<B>, AutogradError>| r.map(|v| vec![v]).map_err(|e| e.to_string());
    let call = || -> super::args::R<Vec<Variable<B>>> {
        let (w, b) = (a.ot("weight")?, a.ot("bias")?);
        match op {
            "_native_batch_norm_legit" => three(_native_batch_norm_legit(
                &a.t("input")?,
                w.as_ref(),
                b.as_ref(),
                &a.t("running_mean")?,
                &a.t("running_var")?,
                a.b("training")?,
                a.f("momentum")?,
                a.f("eps")?,
            )),
            "_native_batch_norm_legit_no_training" => three(_native_batch_norm_legit_no_training(
                &a.t("input")?,
                w.as_ref(),
                b.as_ref(),
                &a.t("running_mean")?,
                &a.t("running_var")?,
                a.f("momentum")?,
                a.f("eps")?,
            )),
            "_native_batch_norm_legit.no_stats" => three(_native_batch_norm_legit_no_stats(
                &a.t("input")?,
                w.as_ref(),
                b.as_ref(),
                a.b("training")?,
                a.f("momentum")?,
                a.f("eps")?,
            )),
            "native_batch_norm_backward" => {
                let mask = a.get("output_mask")?;
                let m = |i: usize| mask[i].as_bool().unwrap_or(true);
                three(native_batch_norm_backward(
                    &a.t("grad_out")?,
                    &a.t("input")?,
                    w.as_ref(),
                    a.ot("running_mean")?.as_ref(),
                    a.ot("running_var")?.as_ref(),
                    a.ot("save_mean")?.as_ref(),
                    a.ot("save_invstd")?.as_ref(),
                    a.b("train")?,
                    a.f("eps")?,
                    [m(0), m(1), m(2)],
                ))
            }
            "batch_norm" => one(batch_norm(
                &a.t("input")?,
                w.as_ref(),
                b.as_ref(),
                a.ot("running_mean")?.as_ref(),
                a.ot("running_var")?.as_ref(),
                a.b("training")?,
                a.f("momentum")?,
                a.f("eps")?,
                a.b("cudnn_enabled")?,
            )),
            "var.correction" => one(var_correction(
                &a.t("self")?,
                a.oints("dim")?.as_deref(),
                a.osc("correction")?,
                a.b("keepdim")?,
            )),
            "var.dim" => one(var_dim(
                &a.t("self")?,
                a.oints("dim")?.as_deref(),
                a.b("unbiased")?,
                a.b("keepdim")?,
            )),
            _ => unreachable!("listed below"),
        }
    };
    const OPS: &[&str] = &[
        "_native_batch_norm_legit",
        "_native_batch_norm_legit_no_training",
        "_native_batch_norm_legit.no_stats",
        "native_batch_norm_backward",
        "batch_norm",
        "var.correction",
        "var.dim",
    ];
    OPS.contains(&op).then(call)
}
