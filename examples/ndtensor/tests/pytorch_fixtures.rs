//! PyTorch's own answers, replayed: every fixture of `opset/fixtures/*.json` (recorded in
//! float64 by `tools/pytorch_fixtures/record.py`, which needs PyTorch; CI only replays) is a
//! small program of ATen operators. One dispatcher (the op set's conformance kit,
//! `autograd_opset::conformance::dispatch`) maps each step (the op's schema
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
//! (PyTorch bugs that finite differences show, and a forward formula PyTorch lacks). Every other fixture must pass, and every listed
//! fixture must still fail: fixing a difference forces removing it from the list.

mod common;

use autograd_opset::conformance::OP_SET_DIFFERENCES;
use autograd_opset::conformance::fixtures::{SPECIAL, fixtures, replay_all};
use common::T;
use std::collections::{BTreeMap, BTreeSet};

/// Fixtures ndtensor does not match: `(fixture name, reason)`. Each must FAIL. They are the
/// op set's own differences (its formulas, on purpose), none of ndtensor's kernels.
const KNOWN_DIFFERENCES: &[(&str, &str)] = OP_SET_DIFFERENCES;

/// Functions of ndtensor's YAML that no fixture exercises: `(schema name, reason)`.
const EXCLUDED: &[(&str, &str)] = &[];

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
    let r = replay_all::<T>(KNOWN_DIFFERENCES);
    let (passed, known_failing, failures, fixed) = (r.passed, r.known_failing, r.failures, r.fixed);
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

#[test]
fn every_function_of_the_yaml_is_in_the_sweep_of_0d_empty_and_size_1_inputs() {
    let swept: BTreeSet<String> = fixtures()
        .iter()
        .filter(|fx| fx["category"] == "sweep")
        .flat_map(|fx| fx["steps"].as_array().unwrap().iter())
        .map(|s| s["op"].as_str().unwrap().to_string())
        .collect();
    let missing: Vec<String> = common::all_functions()
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| !swept.contains(n))
        .collect();
    assert!(missing.is_empty(), "not in record.py's sweep: {missing:?}");
}
