//! Activation checkpointing (`autograd_opset::nn::checkpoint`, `autograd::checkpoint`)
//! against PyTorch's non-reentrant `torch.utils.checkpoint.checkpoint`
//! (`checkpoint.json`, recorded by `tools/pytorch_fixtures/checkpoint.py`): gradients and
//! second derivatives through a checkpointed segment, recomputation once per backward pass,
//! the random state replayed, PyTorch's errors when the recomputation differs.

use autograd::checkpoint::{CheckpointOptions, checkpoint_with};
use autograd::gradcheck::ElementAccess;
use autograd::runtime::{AutogradError, GradOptions, Variable, grad_with};
use autograd_opset::nn::{checkpoint, dropout};
use ndtensor::ops::*;
use ndtensor::{NdTensor, Var};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

type R<T> = Result<T, AutogradError>;

fn fixture() -> Value {
    serde_json::from_str(include_str!("checkpoint.json")).expect("checkpoint.json")
}

fn leaf(v: &Value) -> Var {
    let xs: Vec<f64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let n = xs.len();
    Variable::new(NdTensor::from_f64(&xs, &[n]), true)
}

fn values(v: &Var) -> Vec<f64> {
    v.data().to_f64_vec()
}

fn close(a: &[f64], b: &Value, what: &str) {
    let b: Vec<f64> = b
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(&b) {
        assert!(
            (x - y).abs() <= 1e-10 + 1e-8 * y.abs(),
            "{what}: {a:?} != {b:?}"
        );
    }
}

/// PyTorch's segment: `sin(tanh(exp(x) * w))`.
fn segment(p: &[Var]) -> R<Vec<Var>> {
    let h = mul_tensor(&exp(&p[0])?, &p[1])?;
    Ok(vec![sin(&tanh(&h)?)?])
}

fn grads(outputs: &[Var], inputs: &[Var], create_graph: bool) -> R<Vec<Var>> {
    let opts = GradOptions {
        retain_graph: None,
        create_graph,
        allow_unused: false,
        materialize_grads: false,
    };
    let g = grad_with(outputs, inputs, &[], opts)?;
    Ok(g.into_iter().map(|g| g.expect("a gradient")).collect())
}

#[test]
fn gradients_and_second_derivatives_are_pytorchs() -> R<()> {
    let fx = fixture();
    let f = &fx["grads"];
    let (x, w) = (leaf(&f["x"]), leaf(&f["w"]));
    let y = checkpoint(segment, &[x.clone(), w.clone()])?.remove(0);
    close(&values(&y), &f["y"], "y");
    let g = grads(&[sum(&y, None)?], &[x.clone(), w.clone()], true)?;
    close(&values(&g[0]), &f["grad_x"], "grad_x");
    close(&values(&g[1]), &f["grad_w"], "grad_w");
    let s = add_tensor(
        &sum(&mul_tensor(&g[0], &g[0])?, None)?,
        &sum(&mul_tensor(&g[1], &g[1])?, None)?,
        1.0,
    )?;
    let h = grads(&[s], &[x, w], false)?;
    close(&values(&h[0]), &f["grad2_x"], "grad2_x");
    close(&values(&h[1]), &f["grad2_w"], "grad2_w");
    Ok(())
}

#[test]
fn each_backward_pass_recomputes_once() -> R<()> {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let f = move |p: &[Var]| {
        c.fetch_add(1, Ordering::SeqCst);
        segment(p)
    };
    let x = Variable::new(NdTensor::from_f64(&[0.1, 0.2, 0.3], &[3]), true);
    let w = Variable::new(NdTensor::from_f64(&[1.0, -1.0, 2.0], &[3]), true);
    let loss = sum(&checkpoint(f, &[x.clone(), w])?[0], None)?;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "forward");
    let retained = GradOptions {
        retain_graph: Some(true),
        create_graph: false,
        allow_unused: false,
        materialize_grads: false,
    };
    let a = grad_with(
        std::slice::from_ref(&loss),
        std::slice::from_ref(&x),
        &[],
        retained,
    )?;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "one recomputation in the first pass"
    );
    let b = grad_with(&[loss], &[x], &[], retained)?;
    assert_eq!(calls.load(Ordering::SeqCst), 3, "and one in the second");
    assert_eq!(
        values(a[0].as_ref().unwrap()),
        values(b[0].as_ref().unwrap())
    );
    Ok(())
}

#[test]
fn dropout_draws_the_forwards_mask_again() -> R<()> {
    let run = |checkpointed: bool| -> R<Vec<f64>> {
        ndtensor::manual_seed(7);
        let x = Variable::new(NdTensor::from_f64(&[1.0; 64], &[64]), true);
        let f = |p: &[Var]| -> R<Vec<Var>> { Ok(vec![exp(&dropout(&p[0], 0.5, true)?)?]) };
        let y = match checkpointed {
            true => checkpoint(f, std::slice::from_ref(&x))?.remove(0),
            false => f(std::slice::from_ref(&x))?.remove(0),
        };
        // Draws between forward and backward must not change the recomputed mask.
        let other = Variable::from_data(NdTensor::<f64>::from_f64(&[1.0; 8], &[8]));
        let _ = dropout(&other, 0.5, true)?;
        Ok(values(&grads(&[sum(&y, None)?], &[x], false)?[0]))
    };
    let plain = run(false)?;
    assert!(
        plain.contains(&0.0) && plain.iter().any(|g| *g > 0.0),
        "{plain:?}"
    );
    assert_eq!(run(true)?, plain);
    Ok(())
}

#[test]
fn recomputations_that_differ_fail_with_pytorchs_errors() {
    for e in fixture()["errors"].as_array().unwrap() {
        let (kind, early_stop) = (
            e["kind"].as_str().unwrap(),
            e["early_stop"].as_bool().unwrap(),
        );
        let calls = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&calls);
        let kind_ = kind.to_string();
        let f = move |p: &[Var]| -> R<Vec<Var>> {
            let second = c.fetch_add(1, Ordering::SeqCst) > 0;
            let y = match kind_.as_str() {
                "more" => {
                    let y = exp(&p[0])?;
                    if second { exp(&y)? } else { y }
                }
                "fewer" => {
                    let y = exp(&p[0])?;
                    if second { y } else { exp(&y)? }
                }
                _ => exp(&if second {
                    slice_tensor(&p[0], 0, Some(0), Some(2), 1)?
                } else {
                    p[0].clone()
                })?,
            };
            Ok(vec![sin(&y)?])
        };
        let x = Variable::new(NdTensor::from_f64(&[0.1, 0.2, 0.3], &[3]), true);
        let options = CheckpointOptions {
            early_stop,
            ..CheckpointOptions::default()
        };
        let y = checkpoint_with(f, &[x], options).unwrap().remove(0);
        let got = sum(&y, None)
            .unwrap()
            .backward()
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            got.as_deref(),
            e["message"].as_str(),
            "{kind}, early_stop {early_stop}"
        );
    }
}

/// Forward mode goes through a checkpointed segment as through the segment itself (no
/// saved tensor is involved); with grad mode off the segment just runs.
#[test]
fn forward_mode_and_no_grad_see_the_plain_segment() -> R<()> {
    use autograd::functional::jvp;
    let p = |v: &[f64]| Variable::from_data(NdTensor::from_f64(v, &[2]));
    let (x, w, t) = (p(&[0.3, -0.4]), p(&[1.5, 0.5]), p(&[1.0, 2.0]));
    let plain = jvp(
        |q| Ok(segment(q)?.remove(0)),
        &[x.clone(), w.clone()],
        &[t.clone(), t.clone()],
    )?;
    let ck = jvp(
        |q| Ok(checkpoint(segment, q)?.remove(0)),
        &[x.clone(), w.clone()],
        &[t.clone(), t],
    )?;
    assert_eq!(values(&plain.1), values(&ck.1));
    let _off = autograd::runtime::no_grad();
    let leaf = Variable::new(NdTensor::from_f64(&[0.3, -0.4], &[2]), true);
    let y = checkpoint(segment, &[leaf, w])?.remove(0);
    assert!(!y.requires_grad());
    Ok(())
}
