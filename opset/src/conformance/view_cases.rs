//! One case or more per view function (`select.int`, `transpose.int`, `split.Tensor`, ...),
//! and the kit's view checks ([`run_view_cases`]): PyTorch's storage semantics on tensors
//! that are values. A view shows its base's elements (traced by viewing a base that holds
//! each element's index), sees a later write to its base, and an in-place write through it
//! changes exactly those elements of its base; PyTorch refuses the write where several
//! elements of the view are one of the base (`expand`) and, under autograd, on the outputs
//! of a function that returns several views (`unbind`, `split`, `chunk`). `view
//! gradcheck` checks the gradients and tangents through such a write.

use super::runner::{Ctx, run_jobs};
use super::*;
use crate::ops::*;
use autograd::runtime::{AutogradError, Variable};

/// The views a function returns of its base.
pub type ViewOp<B> = Box<dyn Fn(&Variable<B>) -> Result<Vec<Variable<B>>, AutogradError>>;

/// What an in-place write through a view does, as in PyTorch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writes {
    /// It reaches the base.
    Reach,
    /// It is refused: several elements of the view are one element of the base.
    Overlapping,
    /// One of several views returned by one op: refused when the base requires grad,
    /// reaches the base otherwise.
    MultiOutput,
}

/// One view function on a base of a shape.
pub struct ViewCase<B: ConformanceTensor> {
    /// The view function (`select.int`).
    pub op: &'static str,
    /// What the case does (`dim 0, negative index`).
    pub label: &'static str,
    /// The base's shape.
    pub shape: Vec<usize>,
    /// Whether the base has the backend's non-contiguous layout.
    pub noncontiguous: bool,
    /// The view(s) of a base.
    pub view: ViewOp<B>,
    /// What a write through the (first) view does.
    pub writes: Writes,
}

fn vc<B: ConformanceTensor>(
    (op, label): (&'static str, &'static str),
    shape: &[usize],
    noncontiguous: bool,
    writes: Writes,
    view: impl Fn(&Variable<B>) -> Result<Vec<Variable<B>>, AutogradError> + 'static,
) -> ViewCase<B> {
    ViewCase {
        op,
        label,
        shape: shape.to_vec(),
        noncontiguous,
        view: Box::new(view),
        writes,
    }
}

/// Every view case (long on purpose: a flat table, one or more per view function).
#[allow(
    clippy::too_many_lines,
    reason = "a flat table, one or more cases per view function"
)]
pub fn view_cases<B: ConformanceTensor>() -> Vec<ViewCase<B>> {
    use Writes::*;
    let r = Rng::new(41);
    let (a, b, c) = (r.size(), r.size(), r.size());
    let one = |v: Variable<B>| vec![v];
    let (ab, abc) = ([a, b], [a, b, c]);
    let (ai, bi, ci) = (a as i64, b as i64, c as i64);
    vec![
        vc(
            ("transpose.int", "dims 0, 2"),
            &abc,
            true,
            Reach,
            move |x| transpose_int(x, 0, 2).map(one),
        ),
        vc(("t", ""), &ab, false, Reach, move |x| t(x).map(one)),
        vc(("alias", ""), &abc, false, Reach, move |x| {
            alias(x).map(one)
        }),
        vc(("permute", "dims 2, 0, 1"), &abc, false, Reach, move |x| {
            permute(x, &[2, 0, 1]).map(one)
        }),
        vc(("reshape", "(a, -1)"), &abc, false, Reach, move |x| {
            reshape(x, &[ai, -1]).map(one)
        }),
        vc(("view", "(a*b, c)"), &abc, false, Reach, move |x| {
            view(x, &[ai * bi, ci]).map(one)
        }),
        vc(
            ("expand", "(b, 1) -> (a, b, c)"),
            &[b, 1],
            false,
            Overlapping,
            move |x| expand(x, &[ai, bi, ci], false).map(one),
        ),
        vc(("expand", "same size, -1"), &ab, false, Reach, move |x| {
            expand(x, &[ai, -1], false).map(one)
        }),
        vc(("squeeze", ""), &[a, 1, b, 1], false, Reach, move |x| {
            squeeze(x).map(one)
        }),
        vc(
            ("squeeze.dim", "dim 1"),
            &[a, 1, b],
            false,
            Reach,
            move |x| squeeze_dim(x, 1).map(one),
        ),
        vc(
            ("squeeze.dims", "dims 1, -1"),
            &[2, 1, 3, 1],
            false,
            Reach,
            move |x| squeeze_dims(x, &[1, -1]).map(one),
        ),
        vc(("unsqueeze", "dim -1"), &ab, true, Reach, move |x| {
            unsqueeze(x, -1).map(one)
        }),
        vc(
            ("slice.Tensor", "step 2"),
            &[5, b],
            false,
            Reach,
            move |x| slice_tensor(x, 0, Some(1), None, 2).map(one),
        ),
        vc(
            ("narrow", "negative start"),
            &[a, 5],
            true,
            Reach,
            move |x| narrow(x, 1, -3, 2).map(one),
        ),
        vc(("diagonal", "offset 1"), &[3, 4], false, Reach, move |x| {
            diagonal(x, 1, 0, 1).map(one)
        }),
        vc(("as_strided", "a block"), &[3, 4], false, Reach, move |x| {
            as_strided(x, &[2, 2], &[4, 1], Some(1)).map(one)
        }),
        vc(
            ("select.int", "negative index"),
            &[4, b],
            true,
            Reach,
            move |x| select_int(x, 0, -2).map(one),
        ),
        vc(
            ("split.Tensor", "uneven"),
            &[5, b],
            false,
            MultiOutput,
            move |x| split_tensor(x, 2, 0),
        ),
        vc(
            ("split_with_sizes", "an empty piece, dim -1"),
            &[a, 5],
            true,
            MultiOutput,
            move |x| split_with_sizes(x, &[2, 0, 3], -1),
        ),
        vc(("chunk", "dim -1"), &[a, 6], false, MultiOutput, move |x| {
            chunk(x, 3, -1)
        }),
        vc(
            ("unbind.int", "dim 0"),
            &[3, b],
            false,
            MultiOutput,
            move |x| unbind_int(x, 0),
        ),
    ]
}

/// Runs every view case that `kit`'s options select: `view` ([`check_view`]) and, where
/// a write reaches the base, `view gradcheck` (gradcheck and the forward-mode check of
/// `x -> (b = x * 1; view(b) *= 3; b * b)`).
pub fn run_view_cases<B: ConformanceTensor>(kit: &mut Kit) {
    let jobs = jobs_of(kit, "view cases", view_cases::<B>, |c| {
        (c.op.to_string(), format!("{} ({})", c.op, c.label))
    });
    let run = |cs: &Vec<ViewCase<B>>, i: usize, ctx: &Ctx| {
        let c = &cs[i];
        let name = format!("{} ({})", c.op, c.label);
        ctx.check((c.op, "view", "f64"), &name, || check_view(c));
        if c.writes != Writes::Reach {
            return;
        }
        let f = |x: &[Variable<B>]| {
            let b = mul_scalar(&x[0], 1.0).unwrap();
            let v = (c.view)(&b).unwrap().remove(0);
            mul_scalar_(&v, 3.0).unwrap();
            mul_tensor(&b, &b).unwrap()
        };
        let x = vec![Rng::new(3).t::<B>(&c.shape)];
        ctx.check((c.op, "view gradcheck", "f64"), &name, || {
            gradcheck(f, &x, Tolerances::default()).map_err(|e| e.to_string())?;
            check_forward(f, &x, Tolerances::default()).map_err(|e| e.to_string())
        });
    };
    run_jobs(
        kit,
        "view cases (f64)",
        &jobs,
        Arc::new(view_cases::<B>),
        Arc::new(run),
    );
}

/// A base of the case's shape holding each element's index.
fn indexed<B: ConformanceTensor>(c: &ViewCase<B>) -> Variable<B> {
    let n: usize = c.shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let t: B = make(&v, &c.shape);
    Variable::from_data(if c.noncontiguous {
        t.noncontiguous()
    } else {
        t
    })
}

/// The view's storage semantics: its elements are its base's (their indices traced),
/// it sees a write to its base, and a write through it reaches its base, or is refused
/// as PyTorch refuses it.
pub fn check_view<B: ConformanceTensor>(c: &ViewCase<B>) -> Result<(), String> {
    let es = |e: AutogradError| e.to_string();
    let n: usize = c.shape.iter().product();
    let traces: Vec<Vec<f64>> = (c.view)(&indexed(c))
        .map_err(es)?
        .iter()
        .map(|v| v.data().to_f64_vec())
        .collect();
    if let Some(x) = traces
        .iter()
        .flatten()
        .find(|x| x.fract() != 0.0 || **x >= n as f64)
    {
        return Err(format!(
            "the view holds {x}, not an element of its base 0..{n}"
        ));
    }
    // A write to the base shows in every view of it.
    let base = indexed(c);
    let views = (c.view)(&base).map_err(es)?;
    mul_scalar_(&base, 2.0).map_err(|e| format!("doubling the base: {e}"))?;
    for (k, (v, tr)) in views.iter().zip(&traces).enumerate() {
        let want: Vec<f64> = tr.iter().map(|x| 2.0 * x).collect();
        if v.data().to_f64_vec() != want {
            let got = v.data().to_f64_vec();
            return Err(format!(
                "view {k} after doubling its base: {got:?}, not {want:?}"
            ));
        }
    }
    write_through(c, &traces[0])
}

/// An in-place write through the first view: reaches the base (exactly the traced
/// elements), or is refused with PyTorch's error.
fn write_through<B: ConformanceTensor>(c: &ViewCase<B>, trace: &[f64]) -> Result<(), String> {
    let refused = |r: Result<Variable<B>, AutogradError>, says: &str| match r {
        Err(e) if e.to_string().contains(says) => Ok(()),
        Err(e) => Err(format!(
            "the write through the view: {e}, not PyTorch's {says:?}"
        )),
        Ok(_) => Err(format!(
            "the write through the view is accepted; PyTorch: {says:?}"
        )),
    };
    if c.writes == Writes::Overlapping {
        let v = (c.view)(&indexed(c)).map_err(|e| e.to_string())?.remove(0);
        let says =
            "more than one element of the written-to tensor refers to a single memory location";
        return refused(add_scalar_(&v, 1000.0, 1.0), says);
    }
    if c.writes == Writes::MultiOutput {
        let x = Variable::new(indexed(c).data(), true);
        let b = mul_scalar(&x, 1.0).map_err(|e| e.to_string())?;
        let v = (c.view)(&b).map_err(|e| e.to_string())?.remove(0);
        let says = "This view is the output of a function that returns multiple views";
        refused(mul_scalar_(&v, 2.0), says)?;
    }
    let base = indexed(c);
    let v = (c.view)(&base).map_err(|e| e.to_string())?.remove(0);
    add_scalar_(&v, 1000.0, 1.0).map_err(|e| format!("the write through the view: {e}"))?;
    let n: usize = c.shape.iter().product();
    let want: Vec<f64> = (0..n)
        .map(|i| {
            i as f64
                + if trace.contains(&(i as f64)) {
                    1000.0
                } else {
                    0.0
                }
        })
        .collect();
    let got = base.data().to_f64_vec();
    if got != want {
        return Err(format!(
            "the base after a write through the view: {got:?}, not {want:?}"
        ));
    }
    let wanted_view: Vec<f64> = trace.iter().map(|x| x + 1000.0).collect();
    match v.data().to_f64_vec() {
        got if got == wanted_view => Ok(()),
        got => Err(format!(
            "the view after the write: {got:?}, not {wanted_view:?}"
        )),
    }
}
