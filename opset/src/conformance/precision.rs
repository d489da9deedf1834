//! The gradcheck cases in another floating dtype (f32): each case is built in that dtype
//! (its inputs and constants rounded to it) and its value, its gradients (a backward pass
//! with a fixed random cotangent) and its jvp (fixed random tangents) are compared with
//! those of the same case in f64 on the same rounded inputs, within [`F32_TOLERANCE`].
//! Finite differences in f32 would be too noisy to tell a wrong kernel from rounding; a
//! comparison with f64 is not. The results must keep the dtype (an f32 value and f32
//! gradients).

use super::case::Case;
use super::cases::cases;
use super::runner::{Ctx, run_jobs};
use super::*;
use autograd::runtime::{self as rt, AutogradError, GradOptions};

/// How close an f32 result must be to the f64 one: `|f32 - f64| <= atol + rtol * |f64|`,
/// with `atol` scaled by the largest `|f64|` of the tensor (a sum of terms of that size
/// carries rounding errors of that size).
#[derive(Debug, Clone, Copy)]
pub struct Tolerance {
    /// Relative to each element.
    pub rtol: f64,
    /// Relative to the tensor's largest element (and at least this much absolutely).
    pub atol: f64,
}

/// f32's tolerance: about a hundred times f32's rounding error (6e-8; ndtensor's and
/// candletensor's worst case is 1.6e-7), far below what a wrong kernel, or one that
/// rounds to half precision (5e-4), gives.
pub const F32_TOLERANCE: Tolerance = Tolerance {
    rtol: 1e-5,
    atol: 1e-5,
};

/// A case's results: its value, the gradients of its inputs, the jvp.
struct Results {
    dtype: &'static str,
    shape: Vec<usize>,
    value: Vec<f64>,
}

/// Compares every gradcheck case that `kit`'s options select, built in `dtype` with `Lo`,
/// with the same case built in f64 with `Hi` (the same type for most backends; see
/// [`ConformanceTensor::f32_checks`]): checks `value`, `gradient` and `jvp`, recorded in
/// `dtype`. A backend without tensors of `dtype` ([`ConformanceTensor::from_f64_as`] gives
/// `None`) has each operator's checks recorded as not implemented.
pub fn compare_dtype<Lo: ConformanceTensor, Hi: ConformanceTensor>(
    kit: &mut Kit,
    dtype: &'static str,
) {
    let jobs = jobs_of(kit, "f32 cases", cases::<Hi>, |c| {
        (c.op.to_string(), format!("{} ({})", c.op, c.label))
    });
    let probe = dispatch::guarded(|| {
        Ok(Lo::from_f64_as(&[0.5], &[1], dtype).map(|t| autograd::runtime::Tensor::dtype(&t)))
    });
    if probe != Ok(Some(dtype)) {
        let why = format!(
            "the backend has no {dtype} tensors: from_f64_as(.., \"{dtype}\") gives {probe:?}"
        );
        let mut seen = BTreeSet::new();
        for j in jobs.iter().filter(|j| seen.insert(j.op.clone())) {
            let mut r = report::Record::of(&j.op, "value", &j.label, Err(why.clone()));
            r.status = report::Status::NotImplemented;
            kit.records.push(r.in_dtype(dtype));
        }
        println!("[kit] {dtype} cases: {why}");
        return;
    }
    let setup = move || {
        let lo = with_dtype(dtype, cases::<Lo>);
        let mut hi = cases::<Hi>();
        // The f64 case on the inputs rounded to `dtype`.
        for (h, l) in hi.iter_mut().zip(&lo) {
            for (x, y) in h.inputs.iter_mut().zip(&l.inputs) {
                *x = x.with_f64_vec(&y.to_f64_vec());
            }
        }
        (lo, hi)
    };
    let run = move |(lo, hi): &(Vec<Case<Lo>>, Vec<Case<Hi>>), i: usize, ctx: &Ctx| {
        compare_case(&lo[i], &hi[i], i as u64, dtype, ctx);
    };
    let kind = format!("gradcheck cases in {dtype} against f64");
    run_jobs(kit, &kind, &jobs, Arc::new(setup), Arc::new(run));
}

/// The three checks of one case.
fn compare_case<Lo: ConformanceTensor, Hi: ConformanceTensor>(
    lo: &Case<Lo>,
    hi: &Case<Hi>,
    seed: u64,
    dtype: &'static str,
    ctx: &Ctx,
) {
    let name = format!("{} ({})", lo.op, lo.label);
    ctx.check((lo.op, "value", dtype), &name, || {
        let (l, h) = (with_dtype(dtype, || value(lo))?, value(hi)?);
        compare("value", &l, &h, dtype)
    });
    // An op whose backward PyTorch refuses has no gradient to compare (the f64 gradcheck
    // checks the refusal).
    if lo.backward_refusal.is_some() {
        return;
    }
    ctx.check((lo.op, "gradient", dtype), &name, || {
        let (l, h) = (
            with_dtype(dtype, || gradients(lo, seed))?,
            gradients(hi, seed)?,
        );
        for (k, (l, h)) in l.iter().zip(&h).enumerate() {
            compare(&format!("gradient of input {k}"), l, h, dtype)?;
        }
        Ok(())
    });
    // A function PyTorch refuses forward AD for has no jvp to compare (the f64 forward check
    // checks the refusal).
    if super::case::forward_refusal(lo.op).is_some() {
        return;
    }
    ctx.check((lo.op, "jvp", dtype), &name, || {
        let (l, h) = (with_dtype(dtype, || jvp(lo, seed))?, jvp(hi, seed)?);
        compare("jvp", &l, &h, dtype)
    });
}

fn es(e: AutogradError) -> String {
    e.to_string()
}

fn results<B: ConformanceTensor>(t: &B) -> Results {
    Results {
        dtype: autograd::runtime::Tensor::dtype(t),
        shape: t.shape().to_vec(),
        value: t.to_f64_vec(),
    }
}

/// The case's value.
fn value<B: ConformanceTensor>(c: &Case<B>) -> Result<Results, String> {
    let xs: Vec<Variable<B>> = c.inputs.iter().cloned().map(Variable::from_data).collect();
    Ok(results(&(c.f)(&xs).data()))
}

/// Values in `[-1, 1)` from a seed.
fn random(seed: u64, n: usize) -> Vec<f64> {
    let g = Generator::new(seed);
    (0..n).map(|_| 2.0 * g.next_f64() - 1.0).collect()
}

/// The gradients of every input for the cotangent `random(seed)` (zeros for an input the
/// output does not depend on).
fn gradients<B: ConformanceTensor>(c: &Case<B>, seed: u64) -> Result<Vec<Results>, String> {
    let xs: Vec<Variable<B>> = c
        .inputs
        .iter()
        .map(|t| Variable::new(t.clone(), true))
        .collect();
    let y = (c.f)(&xs);
    let seed = y.with_data(|d| d.with_f64_vec(&random(seed, d.numel())));
    let opts = GradOptions {
        allow_unused: true,
        ..GradOptions::default()
    };
    let gs = grad_with(&[y], &xs, &[Some(Variable::from_data(seed))], opts).map_err(es)?;
    Ok(gs
        .iter()
        .zip(&c.inputs)
        .map(|(g, x)| match g {
            Some(g) => results(&g.data()),
            None => results(&x.with_f64_vec(&vec![0.0; x.numel()])),
        })
        .collect())
}

/// The jvp along the tangents `random(seed + 1000 k)` of input `k`.
fn jvp<B: ConformanceTensor>(c: &Case<B>, seed: u64) -> Result<Results, String> {
    let _level = rt::dual_level();
    let mut xs = Vec::new();
    for (k, x) in c.inputs.iter().enumerate() {
        let t = x.with_f64_vec(&random(seed + 1000 * (k as u64 + 1), x.numel()));
        let p = Variable::from_data(x.clone());
        xs.push(rt::make_dual(&p, &Variable::from_data(t)).map_err(es)?);
    }
    let y = (c.f)(&xs);
    match rt::unpack_dual(&y).map_err(es)?.tangent {
        Some(t) => Ok(results(&t.data())),
        None => {
            let d = y.data();
            Ok(results(&d.with_f64_vec(&vec![0.0; d.numel()])))
        }
    }
}

/// `lo` (in `dtype`) is `hi` within [`F32_TOLERANCE`], of the same shape, and in `dtype`.
fn compare(what: &str, lo: &Results, hi: &Results, dtype: &str) -> Result<(), String> {
    if lo.dtype != dtype {
        return Err(format!("{what}: dtype {}, not {dtype}", lo.dtype));
    }
    if lo.shape != hi.shape {
        return Err(format!(
            "{what}: shape {:?}, in f64 {:?}",
            lo.shape, hi.shape
        ));
    }
    let tol = F32_TOLERANCE;
    let scale = hi.value.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    for (i, (l, h)) in lo.value.iter().zip(&hi.value).enumerate() {
        let close = l == h || (l - h).abs() <= tol.atol * scale + tol.rtol * h.abs();
        if !(close || l.is_nan() && h.is_nan()) {
            return Err(format!("{what}[{i}]: {l} in {dtype}, {h} in f64"));
        }
    }
    Ok(())
}
