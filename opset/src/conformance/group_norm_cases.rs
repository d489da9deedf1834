//! The gradcheck cases of group normalization (issue 30): `native_group_norm`'s three
//! outputs (the mean's and rstd's gradients run `native_group_norm_backward_dispatcher`'s
//! statistics path), with and without an affine transform, one group and a group per
//! channel, a 2-d input (`HxW` = 1), and `group_norm`, PyTorch's composite; and the fixture
//! dispatch of the family (`native_group_norm_backward` has no derivative: fixtures only).

use super::args::{Args, R};
use super::case::{Case, case};
use super::*;
use crate::ops::*;
use autograd::runtime::{AutogradError, Variable};

/// `native_group_norm`'s output `out` of `x[0]` (and weight `x[1]`, bias `x[2]` when given),
/// with `N`, `C` and `HxW` read from the input's shape.
fn gn_output<B: ConformanceTensor>(x: &[Variable<B>], group: i64, out: usize) -> Variable<B> {
    let s = x[0].shape();
    let hxw = s[2..].iter().product::<usize>() as i64;
    let (n, c) = (s[0] as i64, s[1] as i64);
    let (w, b) = (x.get(1), x.get(2));
    let r = native_group_norm(&x[0], w, b, n, c, hxw, group, 1e-5).unwrap();
    [r.0, r.1, r.2][out].clone()
}

/// Without `create_graph` PyTorch's entry calls the `native_group_norm_backward` kernel, with
/// it `native_group_norm_backward_dispatcher`'s differentiable ops: the same gradients to
/// the last bits.
const KERNEL_OR_OPS: &str = "the raw form runs the kernel, the Variable form the dispatcher";

/// The cases, appended to [`cases::cases`](super::cases::cases).
pub fn cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(3131);
    let mut cs = Vec::new();
    for out in 0..3 {
        cs.push(case(
            "native_group_norm",
            &format!("two groups, weight and bias, output {out}"),
            vec![r.t(&[2, 4, 3]), r.pos(&[4]), r.t(&[4])],
            move |x| gn_output(x, 2, out),
        ));
    }
    cs.push(case(
        "native_group_norm",
        "one group, weight, non-contiguous",
        vec![r.nc(&[2, 3, 4]), r.pos(&[3])],
        |x| gn_output(x, 1, 0),
    ));
    cs.push(case(
        "native_group_norm",
        "a group per channel, no affine, 2x2 planes",
        vec![r.t(&[2, 3, 2, 2])],
        |x| gn_output(x, 3, 0),
    ));
    cs.push(case(
        "native_group_norm",
        "a 2-d input (HxW = 1), rstd",
        vec![r.t(&[3, 4])],
        |x| gn_output(x, 2, 2),
    ));
    cs.push(case(
        "group_norm",
        "weight and bias",
        vec![r.t(&[2, 4, 2, 2]), r.pos(&[4]), r.t(&[4])],
        |x| group_norm(&x[0], 2, Some(&x[1]), Some(&x[2]), 1e-5, true).unwrap(),
    ));
    for c in &mut cs {
        c.raw_close = Some(KERNEL_OR_OPS);
    }
    cs
}

/// The fixture dispatcher's arms of group normalization (`None`: another op);
/// [`super::dispatch::dispatch`] falls back to it.
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> Option<R<Vec<Variable<B>>>> {
    const OPS: &[&str] = &[
        "native_group_norm",
        "native_group_norm_backward",
        "group_norm",
    ];
    OPS.contains(&op).then(|| dispatch_group_norm(op, a))
}

/// One of the family's operators on the program's arguments.
fn dispatch_group_norm<B: ConformanceTensor>(op: &str, a: &Args<B>) -> R<Vec<Variable<B>>> {
    type Three<B> = Result<(Variable<B>, Variable<B>, Variable<B>), AutogradError>;
    let three = |r: Three<B>| r.map(|(x, y, z)| vec![x, y, z]).map_err(|e| e.to_string());
    let w = a.ot("weight")?;
    if op == "group_norm" {
        let b = a.ot("bias")?;
        let (g, eps) = (a.i("num_groups")?, a.f("eps")?);
        let y = group_norm(
            &a.t("input")?,
            g,
            w.as_ref(),
            b.as_ref(),
            eps,
            a.b("cudnn_enabled")?,
        );
        return y.map(|y| vec![y]).map_err(|e| e.to_string());
    }
    let sizes = [a.i("N")?, a.i("C")?, a.i("HxW")?, a.i("group")?];
    let [n, c, hxw, g] = sizes;
    if op == "native_group_norm" {
        let b = a.ot("bias")?;
        let x = a.t("input")?;
        return three(native_group_norm(
            &x,
            w.as_ref(),
            b.as_ref(),
            n,
            c,
            hxw,
            g,
            a.f("eps")?,
        ));
    }
    let mask = a.get("output_mask")?;
    let m = |i: usize| mask[i].as_bool().unwrap_or(true);
    three(native_group_norm_backward(
        &a.t("grad_out")?,
        &a.t("input")?,
        &a.t("mean")?,
        &a.t("rstd")?,
        w.as_ref(),
        n,
        c,
        hxw,
        g,
        [m(0), m(1), m(2)],
    ))
}
