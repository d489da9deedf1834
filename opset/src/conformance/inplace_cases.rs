//! One case per in-place operator, and the kit's in-place checks
//! ([`run_inplace_cases`]).

use super::*;
use crate::ops::*;
use autograd::runtime::Variable;
use autograd::types::Scalar;

/// An in-place op (or its functional twin) on `x` and the other inputs.
pub type Op<B> = Box<dyn Fn(&Variable<B>, &[Variable<B>]) -> Variable<B>>;

/// One in-place operator: its in-place and functional forms and inputs.
pub struct InplaceCase<B: ConformanceTensor> {
    pub op: &'static str,
    pub inplace: Op<B>,
    pub functional: Op<B>,
    pub x: B,
    pub others: Vec<B>,
}

pub fn ic<B: ConformanceTensor>(
    op: &'static str,
    x: B,
    others: Vec<B>,
    inplace: impl Fn(&Variable<B>, &[Variable<B>]) -> Variable<B> + 'static,
    functional: impl Fn(&Variable<B>, &[Variable<B>]) -> Variable<B> + 'static,
) -> InplaceCase<B> {
    InplaceCase {
        op,
        inplace: Box::new(inplace),
        functional: Box::new(functional),
        x,
        others,
    }
}

/// One case per in-place operator (long on purpose: a flat table of the operators).
#[allow(
    clippy::too_many_lines,
    reason = "a flat table, one case per in-place operator"
)]
pub fn inplace_cases<B: ConformanceTensor>() -> Vec<InplaceCase<B>> {
    let r = Rng::new(77);
    let s = r.shape(2);
    let row = [s[1]];
    vec![
        ic(
            "add_.Tensor",
            r.t(&s),
            vec![r.t(&row)],
            |x, o| add_tensor_(x, &o[0], 2.0).unwrap(),
            |x, o| add_tensor(x, &o[0], 2.0).unwrap(),
        ),
        ic(
            "add_.Scalar",
            r.t(&s),
            vec![],
            |x, _| add_scalar_(x, 1.5, 2.0).unwrap(),
            |x, _| add_scalar(x, 1.5, 2.0).unwrap(),
        ),
        ic(
            "sub_.Tensor",
            r.t(&s),
            vec![r.t(&s)],
            |x, o| sub_tensor_(x, &o[0], 0.5).unwrap(),
            |x, o| sub_tensor(x, &o[0], 0.5).unwrap(),
        ),
        ic(
            "mul_.Tensor",
            r.t(&s),
            vec![r.t(&row)],
            |x, o| mul_tensor_(x, &o[0]).unwrap(),
            |x, o| mul_tensor(x, &o[0]).unwrap(),
        ),
        ic(
            "mul_.Scalar",
            r.t(&s),
            vec![],
            |x, _| mul_scalar_(x, -3.0).unwrap(),
            |x, _| mul_scalar(x, -3.0).unwrap(),
        ),
        ic(
            "div_.Tensor",
            r.t(&s),
            vec![r.pos(&s)],
            |x, o| div_tensor_(x, &o[0]).unwrap(),
            |x, o| div_tensor(x, &o[0]).unwrap(),
        ),
        ic(
            "div_.Scalar",
            r.t(&s),
            vec![],
            |x, _| div_scalar_(x, 4.0).unwrap(),
            |x, _| div_scalar(x, 4.0).unwrap(),
        ),
        ic(
            "neg_",
            r.t(&s),
            vec![],
            |x, _| neg_(x).unwrap(),
            |x, _| neg(x).unwrap(),
        ),
        ic(
            "exp_",
            r.t(&s),
            vec![],
            |x, _| exp_(x).unwrap(),
            |x, _| exp(x).unwrap(),
        ),
        ic(
            "log_",
            r.pos(&s),
            vec![],
            |x, _| log_(x).unwrap(),
            |x, _| log(x).unwrap(),
        ),
        ic(
            "sqrt_",
            r.pos(&s),
            vec![],
            |x, _| sqrt_(x).unwrap(),
            |x, _| sqrt(x).unwrap(),
        ),
        ic(
            "sin_",
            r.t(&s),
            vec![],
            |x, _| sin_(x).unwrap(),
            |x, _| sin(x).unwrap(),
        ),
        ic(
            "tanh_",
            r.t(&s),
            vec![],
            |x, _| tanh_(x).unwrap(),
            |x, _| tanh(x).unwrap(),
        ),
        ic(
            "sigmoid_",
            r.t(&s),
            vec![],
            |x, _| sigmoid_(x).unwrap(),
            |x, _| sigmoid(x).unwrap(),
        ),
        ic(
            "relu_",
            r.away(&s),
            vec![],
            |x, _| relu_(x).unwrap(),
            |x, _| relu(x).unwrap(),
        ),
        ic(
            "gelu_",
            r.t(&s),
            vec![],
            |x, _| gelu_(x, "tanh").unwrap(),
            |x, _| gelu(x, "tanh").unwrap(),
        ),
        ic(
            "clamp_",
            r.away(&s),
            vec![],
            |x, _| clamp_(x, Some(Scalar::Float(-0.5)), Some(Scalar::Float(0.5))).unwrap(),
            |x, _| clamp(x, Some(Scalar::Float(-0.5)), Some(Scalar::Float(0.5))).unwrap(),
        ),
        ic(
            "sub_.Scalar",
            r.t(&s),
            vec![],
            |x, _| sub_scalar_(x, 0.5, 2.0).unwrap(),
            |x, _| sub_scalar(x, 0.5, 2.0).unwrap(),
        ),
        ic(
            "abs_",
            r.away(&s),
            vec![],
            |x, _| abs_(x).unwrap(),
            |x, _| abs(x).unwrap(),
        ),
        ic(
            "pow_.Scalar",
            r.t(&s),
            vec![],
            |x, _| pow_scalar_(x, 2.0).unwrap(),
            |x, _| pow_tensor_scalar(x, 2.0).unwrap(),
        ),
        ic(
            "leaky_relu_",
            r.away(&s),
            vec![],
            |x, _| leaky_relu_(x, 0.1).unwrap(),
            |x, _| leaky_relu(x, 0.1).unwrap(),
        ),
        // The old values no longer matter: the gradient through them is zero.
        ic(
            "zero_",
            r.t(&s),
            vec![],
            |x, _| zero_(x).unwrap(),
            |x, _| mul_scalar(x, 0.0).unwrap(),
        ),
        ic(
            "fill_.Scalar",
            r.t(&s),
            vec![],
            |x, _| fill_scalar_(x, 0.25).unwrap(),
            |x, _| add_scalar(&mul_scalar(x, 0.0).unwrap(), 0.25, 1.0).unwrap(),
        ),
        // ---- masked (issue 30)
        masked_fill_case(&r, &s, None),
        masked_fill_case(&r, &s, Some(v(&[0.3], &[]))),
        ic(
            "lerp_.Scalar",
            r.t(&s),
            vec![r.t(&row)],
            |x, o| lerp_scalar_(x, &o[0], 0.75).unwrap(),
            |x, o| lerp_scalar(x, &o[0], 0.75).unwrap(),
        ),
        ic(
            "lerp_.Tensor",
            r.t(&s),
            vec![r.t(&s), r.t(&row)],
            |x, o| lerp_tensor_(x, &o[0], &o[1]).unwrap(),
            |x, o| lerp_tensor(x, &o[0], &o[1]).unwrap(),
        ),
        ic(
            "addcmul_",
            r.t(&s),
            vec![r.t(&s), r.t(&row)],
            |x, o| addcmul_(x, &o[0], &o[1], 0.5).unwrap(),
            |x, o| addcmul(x, &o[0], &o[1], 0.5).unwrap(),
        ),
        ic(
            "addcdiv_",
            r.t(&s),
            vec![r.t(&s), r.away(&row)],
            |x, o| addcdiv_(x, &o[0], &o[1], 0.5).unwrap(),
            |x, o| addcdiv(x, &o[0], &o[1], 0.5).unwrap(),
        ),
        ic(
            "clamp_min_",
            r.away(&s),
            vec![],
            |x, _| clamp_min_(x, 0.0).unwrap(),
            |x, _| clamp_min(x, 0.0).unwrap(),
        ),
        ic(
            "clamp_max_",
            r.away(&s),
            vec![],
            |x, _| clamp_max_(x, 0.0).unwrap(),
            |x, _| clamp_max(x, 0.0).unwrap(),
        ),
        ic(
            "clamp_min_.Tensor",
            r.t(&s),
            vec![r.t(&row)],
            |x, o| clamp_min_tensor_(x, &o[0]).unwrap(),
            |x, o| clamp_min_tensor(x, &o[0]).unwrap(),
        ),
        ic(
            "clamp_max_.Tensor",
            r.t(&s),
            vec![r.t(&row)],
            |x, o| clamp_max_tensor_(x, &o[0]).unwrap(),
            |x, o| clamp_max_tensor(x, &o[0]).unwrap(),
        ),
    ]
    .into_iter()
    // In-place forms of the functional operators.
    .chain(super::inplace_forms_cases::cases())
    .collect()
}

/// `masked_fill_.Scalar` (`value` `None`) or `masked_fill_.Tensor` (a 0-d `value`) on an
/// `s`-shaped input, with a mask of its rows' shape, every other element set (the masked
/// family's in-place cases; the mask is a constant, not an input).
fn masked_fill_case<B: ConformanceTensor>(
    r: &Rng,
    s: &[usize],
    value: Option<B>,
) -> InplaceCase<B> {
    let row = [s[1]];
    let bits: Vec<bool> = (0..row[0]).map(|i| i % 2 == 0).collect();
    let m: B = B::from_bool(&bits, &row);
    let m2 = m.clone();
    match value {
        None => ic(
            "masked_fill_.Scalar",
            r.t(s),
            vec![],
            move |x, _| masked_fill_scalar_(x, &Variable::from_data(m.clone()), -0.5).unwrap(),
            move |x, _| masked_fill_scalar(x, &Variable::from_data(m2.clone()), -0.5).unwrap(),
        ),
        Some(val) => ic(
            "masked_fill_.Tensor",
            r.t(s),
            vec![val],
            move |x, o| masked_fill_tensor_(x, &Variable::from_data(m.clone()), &o[0]).unwrap(),
            move |x, o| masked_fill_tensor(x, &Variable::from_data(m2.clone()), &o[0]).unwrap(),
        ),
    }
}

/// Runs every in-place case that `kit`'s options select: `inplace` (on a non-leaf, the op
/// returns its input, bumps its version, and gives the values and gradients of its
/// functional twin), `inplace gradgradcheck` and `inplace forward` (the forward-mode check)
/// of the in-place form.
pub fn run_inplace_cases<B: ConformanceTensor>(kit: &mut Kit) {
    let jobs = jobs_of(kit, "in-place cases", inplace_cases::<B>, |c| {
        (c.op.to_string(), c.op.to_string())
    });
    let run = |cs: &Vec<InplaceCase<B>>, i: usize, ctx: &Ctx| {
        let c = &cs[i];
        let second = Tolerances {
            eps: 1e-5,
            atol: 1e-4,
            rtol: 1e-3,
        };
        let inputs: Vec<B> = std::iter::once(c.x.clone())
            .chain(c.others.iter().cloned())
            .collect();
        // In place on a differentiable non-leaf copy of the first input.
        let f = |x: &[Variable<B>]| {
            let t = mul_scalar(&x[0], 1.0).unwrap();
            (c.inplace)(&t, &x[1..]);
            t
        };
        ctx.check((c.op, "inplace", "f64"), c.op, || same_as_functional(c));
        ctx.check((c.op, "inplace gradgradcheck", "f64"), c.op, || {
            gradgradcheck(f, &inputs, second).map_err(|e| e.to_string())
        });
        ctx.check((c.op, "inplace forward", "f64"), c.op, || {
            check_forward(f, &inputs, Tolerances::default()).map_err(|e| e.to_string())
        });
    };
    run_jobs(
        kit,
        "in-place cases (f64)",
        &jobs,
        Arc::new(inplace_cases::<B>),
        Arc::new(run),
    );
}

/// The in-place form on a non-leaf `t = x * 1` returns `t`, bumps its version, and gives
/// the functional form's values and (with a random cotangent) gradients, to 1e-12.
fn same_as_functional<B: ConformanceTensor>(c: &InplaceCase<B>) -> Result<(), String> {
    let es = |e: autograd::runtime::AutogradError| e.to_string();
    let w: Variable<B> = Variable::from_data(Rng::new(5).t(c.x.shape()));
    let grads = |inplace: bool| -> Result<(Vec<f64>, Vec<Vec<f64>>), String> {
        let x = Variable::new(c.x.clone(), true);
        let others: Vec<Variable<B>> = c
            .others
            .iter()
            .map(|o| Variable::new(o.clone(), true))
            .collect();
        let t = mul_scalar(&x, 1.0).map_err(es)?;
        let y = if inplace {
            let before = t.version();
            let y = (c.inplace)(&t, &others);
            if !y.ptr_eq(&t) {
                return Err("the in-place op does not return its input".into());
            }
            if t.version() != before + 1 {
                return Err(format!(
                    "version {} after the op, {before} before",
                    t.version()
                ));
            }
            y
        } else {
            (c.functional)(&t, &others)
        };
        sum(&mul_tensor(&y, &w).map_err(es)?, None)
            .map_err(es)?
            .backward()
            .map_err(es)?;
        let mut gs = vec![grad_values(&x)?];
        for o in &others {
            gs.push(grad_values(o)?);
        }
        Ok((y.data().to_f64_vec(), gs))
    };
    let (want, got) = (grads(false)?, grads(true)?);
    close_all("values", &got.0, &want.0)?;
    for (i, (g, w)) in got.1.iter().zip(&want.1).enumerate() {
        close_all(&format!("gradient of input {i}"), g, w)?;
    }
    Ok(())
}

/// The values of a leaf's gradient (an error without one).
fn grad_values<B: ConformanceTensor>(x: &Variable<B>) -> Result<Vec<f64>, String> {
    x.grad()
        .map(|g| g.data().to_f64_vec())
        .ok_or_else(|| "no gradient".to_string())
}

/// `got` equals `want` to 1e-12 (NaN equal to NaN), element by element.
fn close_all(what: &str, got: &[f64], want: &[f64]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} elements, the functional form {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if !(g == w || (g - w).abs() <= 1e-12 || (g.is_nan() && w.is_nan())) {
            return Err(format!("{what}[{i}]: {g}, the functional form {w}"));
        }
    }
    Ok(())
}
