#![allow(clippy::cloned_ref_to_slice_refs)] // `&[x.clone()]` reads better in tests
mod common;
use common::*;
use std::sync::{Arc, Mutex};

#[test]
fn tensor_hook_on_leaf_sees_summed_grad_and_can_replace_it() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    x.register_hook(move |g| {
        s.lock().unwrap().push(vals(g));
        Ok(Some(mul_scalar(g, 10.0)))
    })
    .unwrap();
    // x is used twice: the hook runs once with the sum.
    let y = add(&mul_scalar(&x, 2.0), &mul_scalar(&x, 3.0));
    sum(&y).backward().unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![vec![5.0, 5.0]]);
    assert_close(&grad_vals(&x), &[50.0, 50.0]);
}

#[test]
fn tensor_hook_on_non_leaf_changes_what_flows_on() {
    let x = leaf(&[1.0], &[1]);
    let h = mul_scalar(&x, 2.0);
    let id = h.register_hook(|g| Ok(Some(mul_scalar(g, -1.0)))).unwrap();
    let observed = Arc::new(Mutex::new(None));
    let o = observed.clone();
    h.register_hook(move |g| {
        *o.lock().unwrap() = Some(vals(g));
        Ok(None)
    })
    .unwrap();
    let y = mul_scalar(&h, 3.0);
    y.backward_with(None, Some(true), false).unwrap();
    assert_eq!(*observed.lock().unwrap(), Some(vec![-3.0]));
    assert_close(&grad_vals(&x), &[-6.0]);
    assert!(h.remove_hook(id));
    assert!(!h.remove_hook(id));
    x.zero_grad();
    y.backward().unwrap();
    assert_close(&grad_vals(&x), &[6.0]);
}

#[test]
fn node_pre_and_post_hooks() {
    let x = leaf(&[2.0], &[1]);
    let y = mul_scalar(&x, 3.0);
    let f = y.grad_fn().unwrap();
    f.register_prehook(|grads| {
        let g = grads[0].take().unwrap();
        grads[0] = Some(add_scalar(&g, 1.0)); // 1 -> 2
        Ok(())
    });
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    let post = f.register_hook(move |grad_inputs, grad_outputs| {
        l.lock().unwrap().push((
            vals(grad_outputs[0].as_ref().unwrap()),
            vals(grad_inputs[0].as_ref().unwrap()),
        ));
        grad_inputs[0] = Some(constant(&[100.0], &[1]));
        Ok(())
    });
    y.backward_with(None, Some(true), false).unwrap();
    assert_eq!(*log.lock().unwrap(), vec![(vec![2.0], vec![6.0])]);
    assert_close(&grad_vals(&x), &[100.0]);
    assert!(f.remove_hook(post));
    x.zero_grad();
    y.backward().unwrap();
    assert_close(&grad_vals(&x), &[6.0]);
}

#[test]
fn retain_grad_on_non_leaf_and_root() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let h = exp(&x);
    h.retain_grad().unwrap();
    assert!(h.retains_grad());
    let y = sum(&mul_scalar(&h, 2.0));
    y.retain_grad().unwrap();
    y.backward_with(None, Some(true), false).unwrap();
    assert_close(&grad_vals(&h), &[2.0, 2.0]);
    assert_close(&grad_vals(&y), &[1.0]);
    y.backward().unwrap();
    assert_close(&grad_vals(&h), &[4.0, 4.0]); // accumulates like a leaf
    x.retain_grad().unwrap(); // no-op on a leaf
    assert_eq!(
        constant(&[1.0], &[1])
            .retain_grad()
            .unwrap_err()
            .to_string(),
        "can't retain_grad on Tensor that has requires_grad=False"
    );
    assert_eq!(
        constant(&[1.0], &[1])
            .register_hook(|_| Ok(None))
            .unwrap_err()
            .to_string(),
        "cannot register a hook on a tensor that doesn't require gradient"
    );
}

#[test]
fn no_grad_and_requires_grad_propagation() {
    let x = leaf(&[1.0], &[1]);
    let c = constant(&[2.0], &[1]);
    assert!(mul(&x, &c).requires_grad());
    assert!(!mul(&c, &c).requires_grad());
    let y = {
        let _g = no_grad();
        assert!(!is_grad_enabled());
        let inner = {
            let _e = enable_grad();
            mul(&x, &c)
        };
        assert!(inner.requires_grad());
        mul(&x, &c)
    };
    assert!(is_grad_enabled());
    assert!(!y.requires_grad() && y.grad_fn().is_none() && y.is_leaf());
    {
        let _g = set_grad_enabled(false);
        assert!(!should_record(&[&x]));
    }
    assert!(should_record(&[&x]));
    assert!(!should_record(&[&c]));
}

#[test]
fn set_requires_grad_only_on_leaves() {
    let c = constant(&[1.0], &[1]);
    c.set_requires_grad(true).unwrap();
    assert!(c.requires_grad());
    let y = mul_scalar(&c, 2.0);
    assert_eq!(
        y.set_requires_grad(false).unwrap_err().to_string(),
        "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
    );
    y.backward().unwrap();
    assert_close(&grad_vals(&c), &[2.0]);
}

#[test]
fn backward_runs_formulas_without_grad_unless_create_graph() {
    let mode = Arc::new(Mutex::new(Vec::new()));
    let x = leaf(&[1.0], &[1]);
    let y = mul_scalar(&x, 2.0);
    let m = mode.clone();
    y.grad_fn().unwrap().register_prehook(move |_| {
        m.lock().unwrap().push(is_grad_enabled());
        Ok(())
    });
    y.backward_with(None, Some(true), false).unwrap();
    y.backward_with(None, Some(true), true).unwrap();
    assert_eq!(*mode.lock().unwrap(), vec![false, true]);
    assert!(is_grad_enabled());
}

#[test]
fn anomaly_mode_reports_nan_with_forward_trace() {
    let _a = detect_anomaly();
    let x = leaf(&[0.0], &[1]);
    let y = pow(&x, 0.5); // d/dx sqrt(x) at 0 = inf; times 0 from the next node -> NaN
    let z = mul_scalar(&y, 0.0);
    let err = z.backward().unwrap_err();
    let AutogradError::Anomaly {
        node,
        forward_trace,
        source,
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(node, "PowBackward0");
    assert_eq!(
        **source,
        AutogradError::NanInGradient {
            node: "PowBackward0".into(),
            index: 0
        }
    );
    let trace = forward_trace.as_ref().expect("recorded in anomaly mode");
    assert!(
        trace.contains("anomaly_mode_reports_nan_with_forward_trace"),
        "{trace}"
    );
    let msg = err.to_string();
    assert!(msg.starts_with("Function 'PowBackward0' returned nan values in its 0th output.\n\nError detected in PowBackward0. Traceback of forward call that caused the error:\n"), "{msg}");
}

#[test]
fn anomaly_mode_reports_failing_node() {
    let x = leaf(&[1.0], &[1]);
    let _a = detect_anomaly();
    let y = exp(&x);
    let w = exp(&y);
    add_scalar_(&y, 1.0).unwrap();
    let err = sum(&w).backward().unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("Hint: the backtrace further above shows the operation that failed to compute its gradient."), "{msg}");
    assert!(
        msg.contains(
            "Error detected in ExpBackward0. Traceback of forward call that caused the error:"
        ),
        "{msg}"
    );
    assert!(msg.contains("anomaly_mode_reports_failing_node"), "{msg}");
    assert!(matches!(
        err.root_cause(),
        AutogradError::VersionMismatch { .. }
    ));
    drop(_a);
    // A node recorded without anomaly mode has no forward trace.
    let x = leaf(&[1.0], &[1]);
    let y = exp(&x);
    add_scalar_(&y, 1.0).unwrap();
    let _a = detect_anomaly();
    let msg = y.backward().unwrap_err().to_string();
    assert!(msg.ends_with("Error detected in ExpBackward0. No forward pass information available. Enable detect anomaly during forward pass for more information."), "{msg}");
    // Without anomaly mode NaN is not checked.
    drop(_a);
    let x = leaf(&[0.0], &[1]);
    mul_scalar(&pow(&x, 0.5), 0.0).backward().unwrap();
    assert!(grad_vals(&x)[0].is_nan());
}

#[test]
fn graph_export_as_dot() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]).named("x");
    let w = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y = sum(&exp(&mul(&x, &w))).named("loss");
    let dot = y.to_dot();
    assert!(dot.starts_with("digraph autograd {"), "{dot}");
    assert!(
        dot.contains("label=\"loss\\n[]\", fillcolor=darkolivegreen1"),
        "{dot}"
    );
    assert!(dot.contains("label=\"SumBackward0\""), "{dot}");
    assert!(
        dot.contains("label=\"ExpBackward0\\nresult: [3]\""),
        "{dot}"
    );
    assert!(
        dot.contains("label=\"MulBackward0\\nself: [3]\\nother: [3]\""),
        "{dot}"
    );
    assert!(
        dot.contains("label=\"x\\n[3]\", fillcolor=lightblue"),
        "{dot}"
    );
    assert!(
        dot.contains("label=\"AccumulateGrad\\n[3]\", fillcolor=lightblue"),
        "{dot}"
    );
    assert_eq!(dot.matches(" -> ").count(), 5, "{dot}");
    assert!(dot.trim_end().ends_with('}'));
    y.backward().unwrap();
    let dot = to_dot(&[y]);
    assert!(dot.contains("ExpBackward0\\nresult: released"), "{dot}");
}

#[test]
fn a_node_recorded_where_a_hooked_node_was_freed_has_no_hooks() {
    // Node hooks and anomaly traces are kept outside the record, by the node's address;
    // the arena gives a freed node's address to the next node recorded. Run on a new
    // thread: its arena chunk starts empty, so the two nodes get the same address.
    std::thread::spawn(|| {
        let x = leaf(&[1.0], &[1]);
        let calls = Arc::new(Mutex::new(0));
        let c = calls.clone();
        let y = mul_scalar(&x, 2.0);
        let first = y.grad_fn().unwrap();
        first.register_prehook(move |_| {
            *c.lock().unwrap() += 1;
            Ok(())
        });
        let addr = format!("{first:?}");
        drop((first, y));
        let z = mul_scalar(&x, 3.0);
        let second = z.grad_fn().unwrap();
        // Same address (the `Debug` form names it), a different node.
        assert_eq!(format!("{second:?}"), addr);
        assert!(second.forward_trace().is_none());
        // A hook of its own: the first node's must not come back with it.
        let own = Arc::new(Mutex::new(0));
        let o = own.clone();
        second.register_prehook(move |_| {
            *o.lock().unwrap() += 1;
            Ok(())
        });
        z.backward().unwrap();
        assert_eq!(*calls.lock().unwrap(), 0, "the freed node's hook ran");
        assert_eq!(*own.lock().unwrap(), 1);
        assert_close(&grad_vals(&x), &[3.0]);
    })
    .join()
    .unwrap();
}

#[test]
fn each_backward_pass_has_its_own_graph_task_id() {
    use autograd_runtime::current_graph_task_id;
    assert_eq!(current_graph_task_id(), None);
    let x = leaf(&[1.0], &[1]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    x.register_hook(move |_| {
        s.lock().unwrap().push(current_graph_task_id());
        Ok(None)
    })
    .unwrap();
    let y = sum(&mul_scalar(&x, 2.0));
    autograd_runtime::backward(&[y.clone()], &[], Some(true), false).unwrap();
    autograd_runtime::backward(&[y], &[], None, false).unwrap();
    let ids = seen.lock().unwrap().clone();
    assert_eq!(ids.len(), 2);
    assert!(ids.iter().all(Option::is_some), "{ids:?}");
    assert_ne!(ids[0], ids[1]);
    assert_eq!(current_graph_task_id(), None);
}
