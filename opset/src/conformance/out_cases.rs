//! One case per out= function (`mul.out`), and the kit's out= checks ([`run_out_cases`]):
//! an out= function writes its functional twin's result into `out`, resized as PyTorch
//! resizes it (an empty `out` or one of another shape takes the result's shape), returns
//! `out` and bumps its version; a write into a view of a base reaches the base; and it
//! refuses inputs that require grad with PyTorch's error.

use super::runner::{Ctx, run_jobs};
use super::*;
use crate::ops::*;
use autograd::runtime::{AutogradError, Variable};
use autograd::types::Scalar;

/// An out= function of the inputs, writing into the last argument.
pub type OutOp<B> = Box<dyn Fn(&[Variable<B>], &Variable<B>) -> Result<Variable<B>, AutogradError>>;
/// The functional twin of the inputs.
pub type FnOp<B> = Box<dyn Fn(&[Variable<B>]) -> Variable<B>>;

/// One out= function: its name, inputs, out= form and functional form.
pub struct OutCase<B: ConformanceTensor> {
    /// The out= overload (`mul.out`).
    pub op: &'static str,
    /// The inputs (floating point).
    pub inputs: Vec<B>,
    /// The out= form.
    pub out: OutOp<B>,
    /// The functional form.
    pub functional: FnOp<B>,
}

fn oc<B: ConformanceTensor>(
    op: &'static str,
    inputs: Vec<B>,
    out: impl Fn(&[Variable<B>], &Variable<B>) -> Result<Variable<B>, AutogradError> + 'static,
    functional: impl Fn(&[Variable<B>]) -> Variable<B> + 'static,
) -> OutCase<B> {
    OutCase {
        op,
        inputs,
        out: Box::new(out),
        functional: Box::new(functional),
    }
}

/// One case per out= function of the op set (a flat table).
pub fn out_cases<B: ConformanceTensor>() -> Vec<OutCase<B>> {
    let r = Rng::new(9);
    let s = r.shape(2);
    let sq = [s[1], s[0]];
    let row = [s[1]];
    vec![
        oc(
            "add.out",
            vec![r.t(&s), r.t(&row)],
            |x, o| add_out(&x[0], &x[1], 2.0, o),
            |x| add_tensor(&x[0], &x[1], 2.0).unwrap(),
        ),
        oc(
            "sub.out",
            vec![r.t(&s), r.t(&s)],
            |x, o| sub_out(&x[0], &x[1], 1.0, o),
            |x| sub_tensor(&x[0], &x[1], 1.0).unwrap(),
        ),
        oc(
            "mul.out",
            vec![r.nc(&s), r.t(&s)],
            |x, o| mul_out(&x[0], &x[1], o),
            |x| mul_tensor(&x[0], &x[1]).unwrap(),
        ),
        oc(
            "div.out",
            vec![r.t(&s), r.pos(&s)],
            |x, o| div_out(&x[0], &x[1], o),
            |x| div_tensor(&x[0], &x[1]).unwrap(),
        ),
        oc(
            "neg.out",
            vec![r.t(&s)],
            |x, o| neg_out(&x[0], o),
            |x| neg(&x[0]).unwrap(),
        ),
        oc(
            "exp.out",
            vec![r.nc(&s)],
            |x, o| exp_out(&x[0], o),
            |x| exp(&x[0]).unwrap(),
        ),
        oc(
            "tanh.out",
            vec![r.t(&s)],
            |x, o| tanh_out(&x[0], o),
            |x| tanh(&x[0]).unwrap(),
        ),
        oc(
            "atan2.out",
            vec![r.t(&s), r.t(&s)],
            |x, o| atan2_out(&x[0], &x[1], o),
            |x| atan2(&x[0], &x[1]).unwrap(),
        ),
        oc(
            "clamp.out",
            vec![r.t(&s)],
            |x, o| clamp_out(&x[0], Some(Scalar::Float(-0.2)), None, o),
            |x| clamp(&x[0], Some(Scalar::Float(-0.2)), None).unwrap(),
        ),
        oc(
            "mm.out",
            vec![r.t(&s), r.t(&sq)],
            |x, o| mm_out(&x[0], &x[1], o),
            |x| mm(&x[0], &x[1]).unwrap(),
        ),
        oc(
            "sum.IntList_out",
            vec![r.t(&s)],
            |x, o| sum_intlist_out(&x[0], Some(&[1]), false, None, o),
            |x| sum_dim_intlist(&x[0], Some(&[1]), false, None).unwrap(),
        ),
        oc(
            "cat.out",
            vec![r.t(&s), r.t(&s)],
            |x, o| cat_out(&[x[0].clone(), x[1].clone()], 0, o),
            |x| cat(&[x[0].clone(), x[1].clone()], 0).unwrap(),
        ),
    ]
}

/// Runs every out= case that `kit`'s options select through [`check_out`] (check `out=`).
pub fn run_out_cases<B: ConformanceTensor>(kit: &mut Kit) {
    let jobs = jobs_of(kit, "out= cases", out_cases::<B>, |c| {
        (c.op.to_string(), c.op.to_string())
    });
    let run = |cs: &Vec<OutCase<B>>, i: usize, ctx: &Ctx| {
        let c = &cs[i];
        ctx.check((c.op, "out=", "f64"), c.op, || check_out(c));
    };
    run_jobs(
        kit,
        "out= cases (f64)",
        &jobs,
        Arc::new(out_cases::<B>),
        Arc::new(run),
    );
}

/// The checks of one out= function: into an empty `out`, one of the result's shape, one
/// of another shape, and a view of a base; then the error for inputs that require grad.
pub fn check_out<B: ConformanceTensor>(c: &OutCase<B>) -> Result<(), String> {
    let es = |e: AutogradError| e.to_string();
    let xs: Vec<Variable<B>> = c.inputs.iter().cloned().map(Variable::from_data).collect();
    let want = (c.functional)(&xs).data();
    let (shape, values) = (want.shape().to_vec(), want.to_f64_vec());
    let n = values.len();
    for (what, init) in [
        ("an empty out", make::<B>(&[], &[0])),
        (
            "an out of the result's shape",
            make::<B>(&vec![7.0; n], &shape),
        ),
        ("an out of another shape", make::<B>(&[7.0; 3], &[3])),
    ] {
        let out = Variable::from_data(init);
        let r = (c.out)(&xs, &out).map_err(|e| format!("into {what}: {e}"))?;
        if !r.ptr_eq(&out) {
            return Err(format!("into {what}: the result is not out"));
        }
        if out.version() != 1 {
            return Err(format!(
                "into {what}: out's version is {}, not 1",
                out.version()
            ));
        }
        let got = out.data();
        if got.shape() != shape.as_slice() || got.to_f64_vec() != values {
            return Err(format!(
                "into {what}: out is {:?} of shape {:?}, the functional result {values:?} of \
                 shape {shape:?}",
                got.to_f64_vec(),
                got.shape()
            ));
        }
    }
    // A view of a base (row 1 of a base with two rows of the result's shape): the write
    // reaches the base, and row 0 keeps its values.
    let mut dims = vec![2];
    dims.extend(&shape);
    let base = Variable::from_data(make::<B>(&vec![7.0; 2 * n], &dims));
    let row = select_int(&base, 0, 1).map_err(es)?;
    (c.out)(&xs, &row).map_err(|e| format!("into a view: {e}"))?;
    let mut expected = vec![7.0; n];
    expected.extend(&values);
    if base.data().to_f64_vec() != expected {
        return Err(format!(
            "into a view: the base is {:?}, not {expected:?}",
            base.data().to_f64_vec()
        ));
    }
    let xg: Vec<Variable<B>> = c
        .inputs
        .iter()
        .map(|t| Variable::new(t.clone(), true))
        .collect();
    let out = Variable::from_data(make::<B>(&values, &shape));
    match (c.out)(&xg, &out) {
        Err(e)
            if e.to_string()
                .contains("don't support automatic differentiation") =>
        {
            Ok(())
        }
        Err(e) => Err(format!(
            "inputs that require grad: the error is {e}, not PyTorch's"
        )),
        Ok(_) => Err("inputs that require grad: accepted (PyTorch refuses)".into()),
    }
}
