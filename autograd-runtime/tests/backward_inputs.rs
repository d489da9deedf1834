//! `retain_graph` defaulting to `create_graph`, and `backward(inputs=...)` /
//! `grad(..., inputs)`, against PyTorch 2.15 (float64; the values in the
//! comments are what PyTorch printed).
#![allow(clippy::cloned_ref_to_slice_refs)] // `&[x.clone()]` reads better in tests
mod common;
use common::*;
use std::sync::{Arc, Mutex};

fn inputs_opts(inputs: &[V]) -> BackwardOptions<'_, TT> {
    BackwardOptions {
        inputs: Some(inputs),
        ..Default::default()
    }
}

#[test]
fn retain_graph_defaults_to_create_graph_in_backward() {
    // PyTorch: y = exp(x*x); y.backward(create_graph=True); y.backward()
    // works, x.grad = 436.7852 (twice 4·e⁴).
    let x = scalar(2.0);
    let y = exp(&mul(&x, &x));
    y.backward_with(None, None, true).unwrap();
    y.backward_with(None, None, false).unwrap();
    assert_close(&grad_vals(&x), &[2.0 * 4.0 * 4f64.exp()]);
    // The second call defaulted to retain_graph = create_graph = false: freed.
    let err = y.backward().unwrap_err();
    assert_eq!(err, AutogradError::BackwardTwice);
    x.zero_grad();
}

#[test]
fn retain_graph_defaults_to_create_graph_in_grad() {
    // PyTorch: grad(y, x, create_graph=True) then grad(y, x) (218.3926 both),
    // then a third grad(y, x) fails: "Trying to backward through the graph a s...".
    let x = scalar(2.0);
    let y = exp(&mul(&x, &x));
    let g = grad(&[y.clone()], &[x.clone()], &[], None, true, false).unwrap();
    let g2 = grad(&[y.clone()], &[x.clone()], &[], None, false, false).unwrap();
    let expected = 4.0 * 4f64.exp();
    assert_close(&vals(g[0].as_ref().unwrap()), &[expected]);
    assert_close(&vals(g2[0].as_ref().unwrap()), &[expected]);
    let err = grad(&[y], &[x], &[], None, false, false).unwrap_err();
    assert_eq!(err, AutogradError::BackwardTwice);
}

#[test]
fn backward_inputs_accumulates_only_into_named_leaves() {
    // PyTorch: z = a*b; z.backward(inputs=[a]) -> a.grad 3., b.grad None.
    let (a, b) = (scalar(2.0), scalar(3.0));
    let z = mul(&a, &b);
    backward_with(&[z], &[], inputs_opts(&[a.clone()])).unwrap();
    assert_close(&grad_vals(&a), &[3.0]);
    assert!(b.grad().is_none());
}

#[test]
fn empty_inputs_are_errors_with_pytorchs_text() {
    let (a, b) = (scalar(2.0), scalar(3.0));
    let z = mul(&a, &b);
    let err = backward_with(&[z.clone()], &[], inputs_opts(&[])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`inputs` argument to `backward()` cannot be empty."
    );
    let err = grad(&[z], &[], &[], None, false, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`inputs` argument to `grad()` cannot be empty."
    );
}

#[test]
fn backward_input_that_does_not_require_grad_is_an_error() {
    // PyTorch: z.backward(inputs=[torch.tensor(1.)]) ->
    // "can't retain_grad on Tensor that has requires_grad=False".
    let a = scalar(2.0);
    let z = mul(&a, &a);
    let c = constant(&[1.0], &[]);
    let err = backward_with(&[z], &[], inputs_opts(&[c])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "can't retain_grad on Tensor that has requires_grad=False"
    );
    assert!(a.grad().is_none());
}

#[test]
fn backward_input_not_in_the_graph_gets_nothing() {
    // PyTorch: z = a*2; z.backward(inputs=[b]) -> no error, b.grad None.
    let (a, b) = (scalar(2.0), scalar(3.0));
    let z = mul_scalar(&a, 2.0);
    backward_with(&[z], &[], inputs_opts(&[b.clone()])).unwrap();
    assert!(a.grad().is_none());
    assert!(b.grad().is_none());
}

#[test]
fn backward_non_leaf_input_retains_its_grad_and_runs_its_grad_fn_only() {
    // PyTorch: h = a.exp(); z = h*h; z.backward(inputs=[h]) -> h.grad 14.7781,
    // h.retains_grad True, a.grad None; h's grad_fn ran (released its saved
    // result): h.backward() -> "Trying to backward through the graph a second time".
    let a = scalar(2.0);
    let h = exp(&a);
    let z = mul(&h, &h);
    backward_with(&[z], &[], inputs_opts(&[h.clone()])).unwrap();
    assert_close(&grad_vals(&h), &[2.0 * 2f64.exp()]);
    assert!(h.retains_grad());
    assert!(a.grad().is_none());
    assert_eq!(h.backward().unwrap_err(), AutogradError::BackwardTwice);
}

#[test]
fn backward_inputs_runs_only_the_part_of_the_graph_they_need() {
    // PyTorch: e = w.exp(); m = x*w; y = m + e, hooks on e's grad_fn, e, w, m's grad_fn.
    // y.backward(inputs=[x], retain_graph=True): calls ['mul-pre'], x.grad 3, w.grad None.
    // y.backward(inputs=[w]): + ['mul-pre', 'e-tensor-hook', 'exp-pre', 'w-hook'],
    // w.grad 22.0855.
    let (x, w) = (scalar(2.0), scalar(3.0));
    let calls = Arc::new(Mutex::new(Vec::<&str>::new()));
    let log = |name: &'static str| {
        let c = calls.clone();
        move || c.lock().unwrap().push(name)
    };
    let e = exp(&w);
    let f = log("exp-pre");
    e.grad_fn().unwrap().register_prehook(move |_| {
        f();
        Ok(())
    });
    let f = log("e-tensor-hook");
    e.register_hook(move |_| {
        f();
        Ok(None)
    })
    .unwrap();
    let f = log("w-hook");
    w.register_hook(move |_| {
        f();
        Ok(None)
    })
    .unwrap();
    let m = mul(&x, &w);
    let f = log("mul-pre");
    m.grad_fn().unwrap().register_prehook(move |_| {
        f();
        Ok(())
    });
    let y = add(&m, &e);
    let only_x = [x.clone()];
    let opts = BackwardOptions {
        retain_graph: Some(true),
        ..inputs_opts(&only_x)
    };
    backward_with(&[y.clone()], &[], opts).unwrap();
    assert_eq!(*calls.lock().unwrap(), ["mul-pre"]);
    assert_close(&grad_vals(&x), &[3.0]);
    assert!(w.grad().is_none());
    backward_with(&[y], &[], inputs_opts(&[w.clone()])).unwrap();
    assert_eq!(
        *calls.lock().unwrap(),
        ["mul-pre", "mul-pre", "e-tensor-hook", "exp-pre", "w-hook"]
    );
    assert_close(&grad_vals(&x), &[3.0]);
    assert_close(&grad_vals(&w), &[2.0 + 3f64.exp()]);
}
