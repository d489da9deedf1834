//! PyTorch's own answers, replayed: every fixture of `tests/fixtures/*.json` (recorded in
//! float64 by `tools/pytorch_fixtures/record.py`, which needs PyTorch; CI only replays) is a
//! small program of ATen operators. One dispatcher ([`dispatch`]) maps each step (the op's schema
//! name + its arguments by schema name) to ndtensor's generated wrapper; the values, the
//! gradients of `sum(output * proj)` (or `sum(output)`), the second-order gradients of
//! `sum_i <g_i, gv_i>`, and PyTorch's error messages are compared.
//!
//! Forward-mode fixtures (`"mode": "jvp"` / `"hvp"`) run the same steps inside a dual level with
//! the inputs that require grad made dual along the recorded tangents, and compare the output's
//! tangent (`jvp`) or the tangents of its gradients, forward-over-reverse Hessian-vector
//! products (`hvp`).
//!
//! `KNOWN_DIFFERENCES` lists the fixtures ndtensor does not match yet, each with its reason
//! (only a documented PyTorch difference is left). Every other fixture must pass, and every listed
//! fixture must still fail: fixing a difference forces removing it from the list.

mod common;

use common::dispatch::{Args, R, dispatch, es, guarded, num};

use autograd::runtime::{self as rt, GradModeGuard};
use ndtensor::ops::*;
use ndtensor::{NdTensor, Var};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

const RTOL: f64 = 1e-6;
const ATOL: f64 = 1e-9;

/// Fixtures ndtensor does not match yet: `(fixture name, reason)`. Each must FAIL.
#[rustfmt::skip]
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    // ---- a documented PyTorch difference
    ("shape_errors/mse_loss_mismatch_broadcast", "documented PyTorch difference: with a target that broadcasts, PyTorch's mse_loss_backward normalizes the target's gradient by the target's numel (PyTorch warns this 'will likely lead to incorrect results'); ndtensor gives the true derivative, half of it here"),
    // ---- a forward formula PyTorch does not have
    ("jvp/native_dropout_backward/0", "PyTorch 2.15 has no forward formula for native_dropout_backward and raises; ndtensor's (auto_linear: the op is linear in grad_output) gives the tangent"),
    ("jvp/native_dropout_backward/1", "as jvp/native_dropout_backward/0"),
];

/// Functions of ndtensor's YAML that no fixture exercises: `(schema name, reason)`.
const EXCLUDED: &[(&str, &str)] = &[];

/// Pseudo-ops of the program format (not ATen operators).
const SPECIAL: &[&str] = &["detach", "set_grad_enabled", "requires_grad_"];

// ------------------------------------------------------------------------------- fixtures

fn fixtures() -> Vec<Value> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("tests/fixtures")
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

fn tensor(data: &Value, shape: &[usize]) -> NdTensor<f64> {
    let d: Vec<f64> = data.as_array().unwrap().iter().map(num).collect();
    NdTensor::from_vec(d, shape)
}

// ------------------------------------------------------------------------------- replay

fn close(got: &NdTensor<f64>, want: &Value, what: &str) -> R<()> {
    let shape = shape_of(&want["shape"]);
    if got.shape() != shape.as_slice() {
        return Err(format!(
            "{what}: shape {:?}, PyTorch {:?}",
            got.shape(),
            shape
        ));
    }
    let w: Vec<f64> = want["data"].as_array().unwrap().iter().map(num).collect();
    for (i, (g, e)) in got.to_vec().iter().zip(&w).enumerate() {
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
            "{stage} error: ndtensor says {got:?}, PyTorch {msg:?}"
        ))
    }
}

struct State {
    env: HashMap<String, Var>,
    guard: Option<GradModeGuard>,
}

fn constant(data: &Value, shape: &[usize]) -> Var {
    Var::from_data(tensor(data, shape))
}

/// Replays one fixture: `Ok` when ndtensor gives PyTorch's answer.
fn replay(fx: &Value) -> R<()> {
    let mut st = State {
        env: HashMap::new(),
        guard: None,
    };
    let r = replay_in(fx, &mut st);
    drop(st.guard.take());
    r
}

/// One fixture: the inputs, the steps (forward), then first- and second-order gradients.
fn replay_in(fx: &Value, st: &mut State) -> R<()> {
    if fx.get("mode").is_some() {
        return replay_forward(fx, st);
    }
    let expect = &fx["expect"];
    let err = expect.get("error");
    let mut leaves = Vec::new();
    for i in fx["inputs"].as_array().unwrap() {
        let shape = shape_of(&i["shape"]);
        let rg = i["requires_grad"].as_bool().unwrap();
        let v = Var::new(tensor(&i["data"], &shape), rg);
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

/// A forward-mode fixture: dual inputs, the steps, then the output's tangent (`jvp`) or the
/// tangents of its gradients (`hvp`, forward over reverse).
fn replay_forward(fx: &Value, st: &mut State) -> R<()> {
    let _level = rt::dual_level();
    let tangents = fx["tangents"].as_array().ok_or("no tangents")?;
    let (mut leaves, mut duals) = (Vec::new(), 0);
    for i in fx["inputs"].as_array().unwrap() {
        let shape = shape_of(&i["shape"]);
        let mut v = Var::new(
            tensor(&i["data"], &shape),
            i["requires_grad"].as_bool().unwrap(),
        );
        if v.requires_grad() {
            leaves.push(v.clone());
        }
        // Inputs that require grad are dual, and those marked `"dual": true`.
        if v.requires_grad() || i.get("dual") == Some(&Value::Bool(true)) {
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
    let tangent_of = |v: &Var| -> R<NdTensor<f64>> {
        let t = rt::unpack_dual(v).map_err(|e| e.to_string())?.tangent;
        Ok(t.map_or_else(|| NdTensor::zeros(&v.shape()), |t| t.data()))
    };
    if fx["mode"] == "jvp" {
        return close(&tangent_of(&out)?, &expect["tangent"], "tangent");
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
            Some(g) => tangent_of(g)?,
            None => NdTensor::zeros(&x.shape()),
        };
        close(&hv, w, &format!("hvp of input {i}"))?;
    }
    Ok(())
}

/// The forward steps. `Some(result)` ends the fixture there (an expected forward error).
fn run_steps(fx: &Value, st: &mut State) -> R<Option<R<()>>> {
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
        return Err("PyTorch raised in the forward, ndtensor did not".into());
    }
    Ok(None)
}

/// Gradients of `sum(out * proj)` (or `sum(out)`) with `create_graph`, compared; `None` when
/// the fixture ends with them (an expected backward error).
fn first_order(fx: &Value, out: &Var, leaves: &[Var]) -> R<Option<Vec<Var>>> {
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
            return Err("PyTorch raised in the backward, ndtensor did not".into());
        }
        Ok(g) => g,
    };
    let gs: Vec<Var> = gs
        .into_iter()
        .zip(leaves)
        .map(|(g, x)| g.unwrap_or_else(|| Var::from_data(NdTensor::zeros(&x.shape()))))
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
fn second_order(fx: &Value, gs: &[Var], leaves: &[Var]) -> R<()> {
    let expect = &fx["expect"];
    let err = expect.get("error");
    let err_stage = err.map(|e| e["stage"].as_str().unwrap());
    let Some(gv) = fx.get("gv") else {
        return Ok(());
    };
    let g2 = guarded(|| {
        let mut s: Option<Var> = None;
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
            return Err("PyTorch raised in the double backward, ndtensor did not".into());
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
            .unwrap_or_else(|| NdTensor::zeros(&x.shape()));
        close(&g, w, &format!("second-order grad of input {i}"))?;
    }
    Ok(())
}

// ------------------------------------------------------------------------------- tests

#[test]
fn pytorch_fixtures_replay() {
    let all = fixtures();
    assert!(all.len() >= 400, "{} fixtures", all.len());
    let known: BTreeMap<&str, &str> = KNOWN_DIFFERENCES.iter().copied().collect();
    assert_eq!(
        known.len(),
        KNOWN_DIFFERENCES.len(),
        "duplicate known difference"
    );
    let names: BTreeSet<&str> = all.iter().map(|f| f["name"].as_str().unwrap()).collect();
    for k in known.keys() {
        assert!(names.contains(k), "known difference {k} names no fixture");
    }
    let mut failures = Vec::new();
    let mut fixed = Vec::new();
    let (mut passed, mut known_failing) = (0, 0);
    for fx in &all {
        let name = fx["name"].as_str().unwrap();
        let r = guarded(|| replay(fx));
        match (r, known.get(name)) {
            (Ok(()), None) => passed += 1,
            (Err(e), None) => failures.push(format!("{name}: {e}")),
            (Err(_), Some(_)) => known_failing += 1,
            (Ok(()), Some(why)) => fixed.push(format!("{name} ({why})")),
        }
    }
    println!(
        "pytorch fixtures: {passed} passed, {known_failing} known differences, {} failed, {} known differences now pass",
        failures.len(),
        fixed.len()
    );
    assert!(
        failures.is_empty() && fixed.is_empty(),
        "{} fixtures differ from PyTorch:\n{}\n\n{} known differences now pass (remove them from KNOWN_DIFFERENCES):\n{}",
        failures.len(),
        failures.join("\n"),
        fixed.len(),
        fixed.join("\n")
    );
}

#[test]
fn every_function_of_the_yaml_has_a_fixture_or_an_exclusion() {
    let all = fixtures();
    let mut random_ops = BTreeSet::new();
    let mut any_ops = BTreeSet::new();
    for fx in &all {
        for s in fx["steps"].as_array().unwrap() {
            let op = s["op"].as_str().unwrap().to_string();
            if fx["category"] == "random" {
                random_ops.insert(op.clone());
            }
            any_ops.insert(op);
        }
    }
    let yaml: BTreeSet<String> = common::all_functions()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let excluded: BTreeMap<&str, &str> = EXCLUDED.iter().copied().collect();
    let missing: Vec<&String> = yaml
        .iter()
        .filter(|f| !random_ops.contains(*f) && !excluded.contains_key(f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "functions of ndtensor's YAML without a random fixture or an exclusion: {missing:?}"
    );
    for f in excluded.keys() {
        assert!(yaml.contains(*f), "exclusion {f} is not in the YAML");
    }
    // Every op a fixture names is in the YAML, a pseudo-op, or an op ndtensor lacks, whose
    // fixtures are all known differences.
    let known: BTreeSet<&str> = KNOWN_DIFFERENCES.iter().map(|k| k.0).collect();
    for fx in &all {
        for s in fx["steps"].as_array().unwrap() {
            let op = s["op"].as_str().unwrap();
            if !yaml.contains(op) && !SPECIAL.contains(&op) {
                let name = fx["name"].as_str().unwrap();
                assert!(
                    known.contains(name),
                    "{name} uses {op}, which ndtensor lacks, and is not a known difference"
                );
            }
        }
    }
}

#[test]
fn every_function_of_the_yaml_has_a_jvp_fixture_and_there_are_hvp_fixtures() {
    let all = fixtures();
    let jvp_ops: BTreeSet<String> = all
        .iter()
        .filter(|fx| fx["category"] == "jvp" && fx["mode"] == "jvp")
        .flat_map(|fx| fx["steps"].as_array().unwrap().iter())
        .map(|s| s["op"].as_str().unwrap().to_string())
        .collect();
    let missing: Vec<String> = common::all_functions()
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| !jvp_ops.contains(n))
        .collect();
    assert!(missing.is_empty(), "no jvp fixture: {missing:?}");
    let hvp = all.iter().filter(|fx| fx["mode"] == "hvp").count();
    assert!(hvp >= 2, "{hvp} hvp fixtures");
}
