//! The gradcheck cases of layer and group normalization (issue 30), appended to
//! [`super::cases::cases`]: `native_layer_norm`'s outputs (with and without an affine
//! transform), `native_layer_norm_backward` on its own (so its double backward, PyTorch's
//! `layer_norm_double_backward`, is checked to the third order); and the program-format
//! dispatch of these operators.

use super::case::{Case, c, case};
use super::*;
use crate::ops::*;

/// The layer and group normalization cases.
pub fn norms_cases<B: ConformanceTensor>(r: &Rng, cs: &mut Vec<Case<B>>) {
    cs.push(case(
        "native_layer_norm",
        "weight and bias",
        vec![r.t(&[2, 3, 4]), r.pos(&[4]), r.t(&[4])],
        |x| {
            native_layer_norm(&x[0], &[4], Some(&x[1]), Some(&x[2]), 1e-5)
                .unwrap()
                .0
        },
    ));
    cs.push(case(
        "native_layer_norm",
        "two normalized dims, weight, non-contiguous",
        vec![r.nc(&[3, 2, 4]), r.pos(&[2, 4])],
        |x| {
            native_layer_norm(&x[0], &[2, 4], Some(&x[1]), None, 1e-5)
                .unwrap()
                .0
        },
    ));
    // The statistics are outputs too (PyTorch's formula ignores their gradients: the mean
    // and rstd of a layer norm have none of their own).
    cs.push(case(
        "native_layer_norm",
        "all dims normalized, no affine",
        vec![r.t(&[3, 4])],
        |x| {
            native_layer_norm(&x[0], &[3, 4], None, None, 1e-5)
                .unwrap()
                .0
        },
    ));
    // native_layer_norm_backward: the statistics are the input's own (the op's double
    // backward assumes it), computed from a constant copy so that only grad_out varies...
    for out in 0..3 {
        let xin: B = r.t(&[3, 4]);
        cs.push(case(
            "native_layer_norm_backward",
            &format!("grad_out, weight and bias, output {out}"),
            vec![r.t(&[3, 4]), r.pos(&[4]), r.t(&[4])],
            move |x| {
                let xv = c(&xin);
                let (_, m, s) = native_layer_norm(&xv, &[4], None, None, 1e-5).unwrap();
                let g = native_layer_norm_backward(
                    &x[0],
                    &xv,
                    &[4],
                    &m,
                    &s,
                    Some(&x[1]),
                    Some(&x[2]),
                    [true, true, true],
                )
                .unwrap();
                [g.0, g.1, g.2][out].clone()
            },
        ));
    }
    // ... and as a function of the input too, its statistics recomputed from it (first
    // order only: layer_norm_double_backward reads the saved statistics as constants, as
    // PyTorch's does, so its own derivative misses their dependence on the input).
    let mut of_input = case(
        "native_layer_norm_backward",
        "grad_out and input, statistics of the input",
        vec![r.t(&[2, 2, 3]), r.t(&[2, 2, 3])],
        |x| {
            let (_, m, s) = native_layer_norm(&x[1].detach(), &[2, 3], None, None, 1e-5).unwrap();
            native_layer_norm_backward(&x[0], &x[1], &[2, 3], &m, &s, None, None, [true; 3])
                .unwrap()
                .0
        },
    );
    of_input.no_gradgrad = Some("the saved statistics are constants of the double backward");
    cs.push(of_input);
}

/// The fixture dispatcher's arms of layer and group normalization (`None`: another op);
/// [`super::dispatch::dispatch`] falls back to it.
pub fn dispatch<B: ConformanceTensor>(
    op: &str,
    a: &super::args::Args<B>,
) -> Option<super::args::R<Vec<Variable<B>>>> {
    use autograd::runtime::AutogradError;
    type Three<B> = Result<(Variable<B>, Variable<B>, Variable<B>), AutogradError>;
    let three = |r: Three<B>| r.map(|(x, y, z)| vec![x, y, z]).map_err(|e| e.to_string());
    let call = || -> super::args::R<Vec<Variable<B>>> {
        let (w, b) = (a.ot("weight")?, a.ot("bias")?);
        match op {
            "native_layer_norm" => three(native_layer_norm(
                &a.t("input")?,
                &a.ints("normalized_shape")?,
                w.as_ref(),
                b.as_ref(),
                a.f("eps")?,
            )),
            _ => {
                let mask = a.get("output_mask")?;
                let m = |i: usize| mask[i].as_bool().unwrap_or(true);
                three(native_layer_norm_backward(
                    &a.t("grad_out")?,
                    &a.t("input")?,
                    &a.ints("normalized_shape")?,
                    &a.t("mean")?,
                    &a.t("rstd")?,
                    w.as_ref(),
                    b.as_ref(),
                    [m(0), m(1), m(2)],
                ))
            }
        }
    };
    const OPS: &[&str] = &["native_layer_norm", "native_layer_norm_backward"];
    OPS.contains(&op).then(call)
}
