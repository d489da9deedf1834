//! PyTorch's own answers, replayed on any backend: every fixture of `opset/fixtures/*.json`
//! (recorded in float64 by `tools/pytorch_fixtures/record.py`, which needs PyTorch) is a
//! small program of ATen operators. [`dispatch`] maps each step
//! (the op's schema name and its arguments by schema name) to the op set's generated
//! function; the values, the gradients of `sum(output * proj)` (or `sum(output)`), the
//! second-order gradients, tangents (jvp) and Hessian-vector products, and PyTorch's error
//! messages are compared (rtol 1e-6), and the dtypes of values where the fixture records
//! them (`"f64"`, `"i64"`, `"bool"`). Inputs are built with their recorded dtype.

use super::ConformanceTensor;
use super::args::{Args, R, es, guarded, num};
use super::dispatch::dispatch;
use super::report::{Status, classify};
use super::runner::{Ctx, run_jobs};
use crate::ops::*;
use autograd::runtime::{self as rt, GradModeGuard, Variable};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Pseudo-ops of the program format (not ATen operators).
pub const SPECIAL: &[&str] = &["detach", "set_grad_enabled", "requires_grad_"];

const RTOL: f64 = 1e-6;
const ATOL: f64 = 1e-9;

// ------------------------------------------------------------------------------- fixtures

/// Every recorded fixture, in file order.
pub fn fixtures() -> Vec<Value> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("opset/fixtures")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{f:?}: {e}"));
        out.extend(v["fixtures"].as_array().expect("fixtures").iter().cloned());
    }
    out
}

fn shape_of(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect()
}

fn tensor<B: ConformanceTensor>(data: &Value, shape: &[usize]) -> B {
    let d: Vec<f64> = data.as_array().unwrap().iter().map(num).collect();
    B::from_f64(&d, shape)
}

/// A fixture's input with its recorded dtype (`"f64"`, `"i64"` or `"bool"`).
fn input<B: ConformanceTensor>(i: &Value) -> R<B> {
    let shape = shape_of(&i["shape"]);
    let data = i["data"].as_array().ok_or("input data")?;
    match i.get("dtype").and_then(Value::as_str) {
        Some("i64") => {
            let v: Option<Vec<i64>> = data.iter().map(Value::as_i64).collect();
            Ok(B::from_i64(&v.ok_or("i64 input data")?, &shape))
        }
        Some("bool") => {
            let v: Option<Vec<bool>> = data.iter().map(Value::as_bool).collect();
            Ok(B::from_bool(&v.ok_or("bool input data")?, &shape))
        }
        _ => Ok(tensor(&i["data"], &shape)),
    }
}

// ------------------------------------------------------------------------------- replay

fn close<B: ConformanceTensor>(got: &B, want: &Value, what: &str) -> R<()> {
    if let Some(d) = want.get("dtype").and_then(Value::as_str) {
        let dtype = autograd::runtime::Tensor::dtype(got);
        if dtype != d {
            return Err(format!("{what}: dtype {dtype}, PyTorch {d}"));
        }
    }
    let shape = shape_of(&want["shape"]);
    if got.shape() != shape.as_slice() {
        return Err(format!(
            "{what}: shape {:?}, PyTorch {:?}",
            got.shape(),
            shape
        ));
    }
    let w: Vec<f64> = want["data"].as_array().unwrap().iter().map(num).collect();
    for (i, (g, e)) in got.to_f64_vec().iter().zip(&w).enumerate() {
        let ok = (g.is_nan() && e.is_nan()) || g == e || (g - e).abs() <= ATOL + RTOL * e.abs();
        if !ok {
            return Err(format!("{what}[{i}]: {g}, PyTorch {e}"));
        }
    }
    Ok(())
}

fn check_error(got: &str, want: &Value, stage: &str) -> R<()> {
    let msg = want["message"].as_str().unwrap();
    let ok = match want.get("prefix").and_then(Value::as_str) {
        Some(p) => got.starts_with(p),
        None => got == msg,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{stage} error: the backend says {got:?}, PyTorch {msg:?}"
        ))
    }
}

struct State<B: ConformanceTensor> {
    env: HashMap<String, Variable<B>>,
    guard: Option<GradModeGuard>,
}

fn constant<B: ConformanceTensor>(data: &Value, shape: &[usize]) -> Variable<B> {
    Variable::from_data(tensor(data, shape))
}

/// Replays one fixture: `Ok` when the backend gives PyTorch's answer.
/// Replays one fixture: `Err` with what differs from PyTorch.
pub fn replay<B: ConformanceTensor>(fx: &Value) -> R<()> {
    let mut st = State::<B> {
        env: HashMap::new(),
        guard: None,
    };
    let r = replay_in(fx, &mut st);
    drop(st.guard.take());
    r
}

/// One fixture: the inputs, the steps (forward), then first- and second-order gradients.
fn replay_in<B: ConformanceTensor>(fx: &Value, st: &mut State<B>) -> R<()> {
    if fx.get("mode").is_some() {
        return replay_forward(fx, st);
    }
    let expect = &fx["expect"];
    let err = expect.get("error");
    let mut leaves = Vec::new();
    for i in fx["inputs"].as_array().unwrap() {
        let rg = i["requires_grad"].as_bool().unwrap();
        let v = Variable::new(input(i)?, rg);
        if rg {
            leaves.push(v.clone());
        }
        st.env.insert(i["name"].as_str().unwrap().to_string(), v);
    }
    if let Some(done) = run_steps(fx, st)? {
        return done;
    }
    drop(st.guard.take());
    let out = st.env[fx["output"].as_str().unwrap()].clone();
    close(&out.data(), &expect["value"], "value")?;
    if leaves.is_empty() || (expect.get("grads").is_none() && err.is_none()) {
        return Ok(());
    }
    let Some(gs) = first_order(fx, &out, &leaves)? else {
        return Ok(());
    };
    second_order(fx, &gs, &leaves)
}

/// A forward-mode fixture: dual inputs, the steps, then the output's tangent (`jvp`), the
/// gradients of that tangent (`grad_of_jvp`, reverse over forward) or the tangents of the
/// output's gradients (`hvp`, forward over reverse). `jvp_jvp` fixtures nest two levels.
fn replay_forward<B: ConformanceTensor>(fx: &Value, st: &mut State<B>) -> R<()> {
    if fx["mode"] == "jvp_jvp" {
        return replay_jvp_jvp(fx, st);
    }
    let _level = rt::dual_level();
    let tangents = fx["tangents"].as_array().ok_or("no tangents")?;
    let (mut leaves, mut duals) = (Vec::new(), 0);
    for i in fx["inputs"].as_array().unwrap() {
        let shape = shape_of(&i["shape"]);
        let mut v = Variable::new(input(i)?, i["requires_grad"].as_bool().unwrap());
        if v.requires_grad() {
            leaves.push(v.clone());
        }
        // Inputs that require grad are dual unless marked `"dual": false`, and those marked
        // `"dual": true`.
        let dual = i.get("dual").and_then(Value::as_bool);
        if dual.unwrap_or(v.requires_grad()) {
            let t = constant(&tangents[duals], &shape);
            duals += 1;
            v = rt::make_dual(&v, &t).map_err(|e| e.to_string())?;
        }
        st.env.insert(i["name"].as_str().unwrap().to_string(), v);
    }
    if let Some(done) = run_steps(fx, st)? {
        return done;
    }
    drop(st.guard.take());
    let expect = &fx["expect"];
    let out = st.env[fx["output"].as_str().unwrap()].clone();
    let u = rt::unpack_dual(&out).map_err(|e| e.to_string())?;
    close(&u.primal.data(), &expect["value"], "value")?;
    if fx["mode"] == "jvp" {
        return close(
            &tangent_of(&out, None)?.data(),
            &expect["tangent"],
            "tangent",
        );
    }
    if fx["mode"] == "grad_of_jvp" {
        return grad_of_jvp(fx, &tangent_of(&out, None)?, &leaves);
    }
    let gs =
        rt::grad(&[out], &leaves, &[None], Some(true), true, true).map_err(|e| e.to_string())?;
    for (i, ((g, x), w)) in gs
        .iter()
        .zip(&leaves)
        .zip(expect["hvp"].as_array().unwrap())
        .enumerate()
    {
        let hv = match g {
            Some(g) => tangent_of(g, None)?.data(),
            None => zeros::<B>(&x.shape()),
        };
        close(&hv, w, &format!("hvp of input {i}"))?;
    }
    Ok(())
}

/// The tangent of `v` at `level` (the innermost when `None`), zeros of `v`'s dtype when it has
/// none (PyTorch's fixtures record `zeros_like(primal)`: an integer or boolean output's
/// tangent is integer or boolean zeros).
fn tangent_of<B: ConformanceTensor>(v: &Variable<B>, level: Option<rt::Level>) -> R<Variable<B>> {
    let u = match level {
        Some(l) => rt::forward::unpack_dual_at(v, l),
        None => rt::unpack_dual(v),
    };
    match u.map_err(|e| e.to_string())?.tangent {
        Some(t) => Ok(t),
        None => {
            zeros_like(&Variable::from_data(v.data()), None, None, None, None, None).map_err(es)
        }
    }
}

/// Reverse over forward: the gradients of `sum(tangent * proj)` against `grads`.
fn grad_of_jvp<B: ConformanceTensor>(
    fx: &Value,
    tangent: &Variable<B>,
    leaves: &[Variable<B>],
) -> R<()> {
    let expect = &fx["expect"];
    close(&tangent.data(), &expect["tangent"], "tangent")?;
    let proj = constant(&fx["proj"], &tangent.shape());
    let gs = guarded(|| {
        let l = sum(&mul_tensor(tangent, &proj).map_err(es)?, None).map_err(es)?;
        rt::grad(&[l], leaves, &[None], None, false, true).map_err(|e| e.to_string())
    });
    let gs = match (gs, expect.get("error")) {
        (Err(e), Some(want)) => return check_error(&e, want, "backward"),
        (Err(e), None) => return Err(format!("backward failed: {e}")),
        (Ok(_), Some(_)) => {
            return Err("PyTorch raised in the backward, the backend did not".into());
        }
        (Ok(g), None) => g,
    };
    let want = expect["grads"].as_array().ok_or("no grads")?;
    for (i, ((g, x), w)) in gs.into_iter().zip(leaves).zip(want).enumerate() {
        let g = g.map_or_else(|| zeros::<B>(&x.shape()), |g| g.data());
        close(&g, w, &format!("grad of input {i}"))?;
    }
    Ok(())
}

/// A jvp inside a jvp: every input that requires grad gets the outer tangent (`tangents2`)
/// at an outer level, then the inner one (`tangents`) at a level inside it; the output's
/// inner tangent, its outer tangent and the outer tangent of its inner tangent are compared.
fn replay_jvp_jvp<B: ConformanceTensor>(fx: &Value, st: &mut State<B>) -> R<()> {
    let outer = rt::dual_level();
    let inner = rt::dual_level();
    let (t_in, t_out) = (&fx["tangents"], &fx["tangents2"]);
    let mut k = 0;
    for i in fx["inputs"].as_array().unwrap() {
        let shape = shape_of(&i["shape"]);
        let mut v = Variable::new(input(i)?, false);
        if i["requires_grad"].as_bool() == Some(true) {
            let dual = |v: &Variable<B>, t: &Value, l: rt::Level| {
                rt::forward::make_dual_at(v, &constant(&t[k], &shape), l).map_err(|e| e.to_string())
            };
            v = dual(&v, t_out, outer.level())?;
            v = dual(&v, t_in, inner.level())?;
            k += 1;
        }
        st.env.insert(i["name"].as_str().unwrap().to_string(), v);
    }
    if let Some(done) = run_steps(fx, st)? {
        return done;
    }
    drop(st.guard.take());
    let expect = &fx["expect"];
    let out = st.env[fx["output"].as_str().unwrap()].clone();
    close(&out.data(), &expect["value"], "value")?;
    let t1 = tangent_of(&out, Some(inner.level()))?;
    close(&t1.data(), &expect["tangent"], "inner tangent")?;
    let to = tangent_of(&out, Some(outer.level()))?;
    close(&to.data(), &expect["tangent_outer"], "outer tangent")?;
    let t2 = tangent_of(&t1, Some(outer.level()))?;
    close(
        &t2.data(),
        &expect["tangent2"],
        "outer tangent of the inner tangent",
    )
}

/// The forward steps. `Some(result)` ends the fixture there (an expected forward error).
fn run_steps<B: ConformanceTensor>(fx: &Value, st: &mut State<B>) -> R<Option<R<()>>> {
    let err = fx["expect"].get("error");
    let err_stage = err.map(|e| e["stage"].as_str().unwrap());
    for (k, step) in fx["steps"].as_array().unwrap().iter().enumerate() {
        let op = step["op"].as_str().unwrap();
        let args = step["args"].as_object().unwrap();
        let res = match op {
            "set_grad_enabled" => {
                let on = args["enabled"].as_bool().unwrap();
                st.guard = None;
                if !on {
                    st.guard = Some(rt::set_grad_enabled(false));
                }
                continue;
            }
            "requires_grad_" => {
                let a = Args {
                    a: args,
                    env: &st.env,
                };
                let v = a.t("self")?;
                guarded(|| {
                    v.set_requires_grad(a.ob("requires_grad")?.unwrap_or(true))
                        .map_err(|e| e.to_string())?;
                    Ok(vec![v.clone()])
                })
            }
            _ => {
                let a = Args {
                    a: args,
                    env: &st.env,
                };
                guarded(|| dispatch(op, &a))
            }
        };
        match res {
            Err(e) => {
                return if err_stage == Some("forward")
                    && err.unwrap()["step"].as_u64() == Some(k as u64)
                {
                    Ok(Some(check_error(&e, err.unwrap(), "forward")))
                } else {
                    Err(format!("step {k} ({op}) failed: {e}"))
                };
            }
            Ok(outs) => match &step.get("out") {
                Some(Value::String(n)) => {
                    let v = outs.into_iter().next().ok_or("no output")?;
                    st.env.insert(n.clone(), v);
                }
                Some(Value::Array(ns)) => {
                    if ns.len() != outs.len() {
                        return Err(format!(
                            "step {k} ({op}): {} outputs, PyTorch {}",
                            outs.len(),
                            ns.len()
                        ));
                    }
                    for (n, v) in ns.iter().zip(outs) {
                        st.env.insert(n.as_str().unwrap().to_string(), v);
                    }
                }
                _ => {}
            },
        }
    }
    if err_stage == Some("forward") {
        return Err("PyTorch raised in the forward, the backend did not".into());
    }
    Ok(None)
}

/// Gradients of `sum(out * proj)` (or `sum(out)`) with `create_graph`, compared; `None` when
/// the fixture ends with them (an expected backward error).
fn first_order<B: ConformanceTensor>(
    fx: &Value,
    out: &Variable<B>,
    leaves: &[Variable<B>],
) -> R<Option<Vec<Variable<B>>>> {
    let expect = &fx["expect"];
    let err = expect.get("error");
    let err_stage = err.map(|e| e["stage"].as_str().unwrap());
    let gs = guarded(|| {
        let l = match fx.get("proj") {
            Some(p) => sum(
                &mul_tensor(out, &constant(p, &out.shape())).map_err(es)?,
                None,
            ),
            None => sum(out, None),
        }
        .map_err(es)?;
        rt::grad(&[l], leaves, &[None], Some(true), true, true).map_err(|e| e.to_string())
    });
    let gs = match gs {
        Err(e) if err_stage == Some("backward") => {
            return check_error(&e, err.unwrap(), "backward").map(|()| None);
        }
        Err(e) => return Err(format!("backward failed: {e}")),
        Ok(_) if err_stage == Some("backward") => {
            return Err("PyTorch raised in the backward, the backend did not".into());
        }
        Ok(g) => g,
    };
    let gs: Vec<Variable<B>> = gs
        .into_iter()
        .zip(leaves)
        .map(|(g, x)| g.unwrap_or_else(|| Variable::from_data(zeros::<B>(&x.shape()))))
        .collect();
    for (i, (g, w)) in gs
        .iter()
        .zip(expect["grads"].as_array().unwrap())
        .enumerate()
    {
        close(&g.data(), w, &format!("grad of input {i}"))?;
    }
    Ok(Some(gs))
}

/// Second order: the gradient of `sum_i <g_i, gv_i>`, compared.
fn second_order<B: ConformanceTensor>(
    fx: &Value,
    gs: &[Variable<B>],
    leaves: &[Variable<B>],
) -> R<()> {
    let expect = &fx["expect"];
    let err = expect.get("error");
    let err_stage = err.map(|e| e["stage"].as_str().unwrap());
    let Some(gv) = fx.get("gv") else {
        return Ok(());
    };
    let g2 = guarded(|| {
        let mut s: Option<Variable<B>> = None;
        for (g, v) in gs.iter().zip(gv.as_array().unwrap()) {
            if !g.requires_grad() {
                continue;
            }
            let term = sum(&mul_tensor(g, &constant(v, &g.shape())).map_err(es)?, None);
            s = Some(match s {
                None => term.map_err(es)?,
                Some(acc) => add_tensor(&acc, &term.map_err(es)?, 1.0).map_err(es)?,
            });
        }
        match s {
            None => Ok(vec![None; leaves.len()]),
            Some(s) => {
                rt::grad(&[s], leaves, &[None], None, false, true).map_err(|e| e.to_string())
            }
        }
    });
    let g2 = match g2 {
        Err(e) if err_stage == Some("grad2") => return check_error(&e, err.unwrap(), "grad2"),
        Err(e) => return Err(format!("second-order backward failed: {e}")),
        Ok(_) if err_stage == Some("grad2") => {
            return Err("PyTorch raised in the double backward, the backend did not".into());
        }
        Ok(g) => g,
    };
    for (i, ((g, x), w)) in g2
        .into_iter()
        .zip(leaves)
        .zip(expect["grad2"].as_array().unwrap())
        .enumerate()
    {
        let g = g
            .map(|g| g.data())
            .unwrap_or_else(|| zeros::<B>(&x.shape()));
        close(&g, w, &format!("second-order grad of input {i}"))?;
    }
    Ok(())
}

/// Zeros of a shape.
fn zeros<B: ConformanceTensor>(shape: &[usize]) -> B {
    B::from_f64(&vec![0.0; shape.iter().product()], shape)
}

/// What a replay of every fixture found, against a list of known differences
/// `(fixture name, reason)`.
pub struct Replay {
    /// Fixtures that match.
    pub passed: usize,
    /// Known differences that still differ.
    pub known_failing: usize,
    /// `name: what differs`, for fixtures that are not known differences (a kernel the
    /// backend has not written among them: see [`Replay::not_implemented`]).
    pub failures: Vec<String>,
    /// `name (reason)`, for known differences that now match.
    pub fixed: Vec<String>,
    /// One record per fixture (known differences that still differ pass).
    pub records: Vec<super::report::Record>,
}

impl Replay {
    /// How many of [`Replay::failures`] need a kernel the backend has not written.
    pub fn not_implemented(&self) -> usize {
        self.failures
            .iter()
            .filter(|f| classify(f) == Status::NotImplemented)
            .count()
    }

    /// The failures (but those that need a kernel the backend has not written) and the
    /// known differences that now match, one line each.
    pub fn failure_lines(&self) -> Vec<String> {
        let failed = self
            .failures
            .iter()
            .filter(|f| classify(f) != Status::NotImplemented)
            .cloned();
        let fixed = self
            .fixed
            .iter()
            .map(|f| format!("known difference now passes (remove it from the list): {f}"));
        failed.chain(fixed).collect()
    }
}

/// The operator a fixture tests, as native_functions.yaml names it: the step operator
/// that its name names (`sweep/grad/abs/0d/all`: `abs`; `view_inplace/slice`:
/// `slice.Tensor`; `zero_dim/sum.dim_IntList_0_False`: `sum.dim_IntList`), else its last
/// step's (pseudo-ops of the program format aside), else its category.
pub fn tested_op(fx: &Value) -> String {
    let steps: Vec<&str> = fx["steps"]
        .as_array()
        .map(|s| s.iter().filter_map(|st| st["op"].as_str()).collect())
        .unwrap_or_default();
    let steps: Vec<&str> = steps
        .into_iter()
        .filter(|op| !SPECIAL.contains(op))
        .collect();
    let name = fx["name"].as_str().unwrap_or_default();
    let base = |op: &str| op.split('.').next().unwrap_or(op).to_string();
    for seg in name.split('/') {
        let named = steps
            .iter()
            .filter(|op| seg == **op || seg.starts_with(&format!("{op}_")))
            .max_by_key(|op| op.len());
        if let Some(op) = named {
            return op.to_string();
        }
        if let Some(op) = steps.iter().find(|op| base(op) == seg) {
            return op.to_string();
        }
    }
    match steps.last() {
        Some(op) => op.to_string(),
        None => fx["category"].as_str().unwrap_or(name).to_string(),
    }
}

/// Replays every fixture on `B`, each under the kit's default time limit.
pub fn replay_all<B: ConformanceTensor>(known: &[(&str, &str)]) -> Replay {
    let mut kit = super::Kit::new(super::KitOptions::default());
    replay_with::<B>(&mut kit, known)
}

/// Replays every fixture on `B` whose operator ([`tested_op`]) `kit`'s options select,
/// each on the kit's worker thread under its time limit; adds one record per fixture to
/// `kit` (check `fixture`, under the fixture's operator).
pub fn replay_with<B: ConformanceTensor>(kit: &mut super::Kit, known: &[(&str, &str)]) -> Replay {
    let known: BTreeMap<String, String> = known
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let all = Arc::new(fixtures());
    let jobs = super::jobs_of(
        kit,
        "fixture",
        || (0..all.len()).collect(),
        |i: &usize| {
            let fx = &all[*i];
            (
                tested_op(fx),
                fx["name"].as_str().unwrap_or_default().to_string(),
            )
        },
    );
    let known = Arc::new(known);
    let k = known.clone();
    let setup = Arc::new(move || all.clone());
    let run = Arc::new(move |fxs: &Arc<Vec<Value>>, i: usize, ctx: &Ctx| {
        let fx = &fxs[i];
        let name = fx["name"].as_str().unwrap_or_default();
        let op = tested_op(fx);
        ctx.check((&op, "fixture", "f64"), name, || {
            match (guarded(|| replay::<B>(fx)), k.get(name)) {
                (Err(_), Some(_)) | (Ok(()), None) => Ok(()),
                (Err(e), None) => Err(e),
                (Ok(()), Some(why)) => Err(format!("a known difference now matches ({why})")),
            }
        });
    });
    let per_job = run_jobs(kit, "pytorch fixtures (f64)", &jobs, setup, run);
    let mut r = Replay {
        passed: 0,
        known_failing: 0,
        failures: Vec::new(),
        fixed: Vec::new(),
        records: Vec::new(),
    };
    for (job, records) in jobs.iter().zip(per_job) {
        let why = known.get(&job.label);
        for rec in &records {
            let e = rec.detail.strip_prefix(&format!("{}: ", job.label));
            match (rec.status, why) {
                (Status::Pass, None) => r.passed += 1,
                (Status::Pass, Some(_)) => r.known_failing += 1,
                (_, Some(why)) if e.is_some_and(|e| e.starts_with("a known difference")) => {
                    r.fixed.push(format!("{} ({why})", job.label))
                }
                _ => r.failures.push(rec.detail.clone()),
            }
        }
        r.records.extend(records);
    }
    r
}
