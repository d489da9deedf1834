//! Hooks under faults (issue 15), each against PyTorch 2.15 (float64; the comments give
//! what PyTorch printed): errors reach the caller of backward, panics and self-removal lose
//! or keep nothing they should not, hooks that edit hook lists do not deadlock, and wrong
//! results are PyTorch's errors instead of a stored `.grad` or a panicking kernel.
#![allow(clippy::cloned_ref_to_slice_refs)] // `&[x.clone()]` reads better in tests
mod common;
use common::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Runs `f` on another thread and fails (instead of hanging) if it does not finish: the
/// deadlocks these tests guard against would otherwise block the test run.
fn finishes(f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let t = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(()) => t.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(t.join().unwrap_err())
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("backward deadlocked"),
    }
}

type Log = Arc<Mutex<Vec<&'static str>>>;

fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

#[derive(Debug)]
struct Boom;
impl std::fmt::Display for Boom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("boom")
    }
}
impl std::error::Error for Boom {}

#[test]
fn error_in_a_leaf_hook_reaches_the_caller_and_later_hooks_still_run() {
    // PyTorch: a leaf hook raising ValueError('boom') -> (x*3).backward() raises
    // ValueError 'boom'; x.grad stays None. After removing it, a second hook runs:
    // calls ['boom', 'second'], x.grad 3.
    let x = scalar(2.0);
    let calls = log();
    let c = calls.clone();
    let id = x
        .register_hook(move |_| {
            c.lock().unwrap().push("boom");
            Err(AutogradError::hook(Boom))
        })
        .unwrap();
    let err = mul_scalar(&x, 3.0).backward().unwrap_err();
    assert_eq!(err.to_string(), "boom");
    let AutogradError::Hook(inner) = &err else {
        panic!("{err:?}")
    };
    assert!(inner.downcast_ref::<Boom>().is_some());
    assert!(x.grad().is_none());
    assert!(x.remove_hook(id));
    let c = calls.clone();
    x.register_hook(move |_| {
        c.lock().unwrap().push("second");
        Ok(None)
    })
    .unwrap();
    mul_scalar(&x, 3.0).backward().unwrap();
    assert_eq!(*calls.lock().unwrap(), ["boom", "second"]);
    assert_close(&grad_vals(&x), &[3.0]);
}

#[test]
fn error_in_a_node_post_hook_reaches_the_caller() {
    // PyTorch: y.grad_fn.register_hook(bad) raising ValueError('post') -> ValueError 'post'.
    let x = leaf(&[1.0, 1.0, 1.0], &[3]);
    let y = mul_scalar(&x, 2.0);
    y.grad_fn()
        .unwrap()
        .register_hook(|_, _| Err(AutogradError::msg("post")));
    let err = sum(&y).backward().unwrap_err();
    assert_eq!(err.to_string(), "post");
    assert!(x.grad().is_none());
}

#[test]
fn a_panicking_leaf_hook_stays_registered() {
    // PyTorch keeps a hook that raised registered; here the hook panics on its first
    // call, and both it and the hook after it run again on the next backward.
    let x = scalar(2.0);
    let (first, second) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let f = first.clone();
    x.register_hook(move |_| {
        if f.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("hook panics once");
        }
        Ok(None)
    })
    .unwrap();
    let s = second.clone();
    x.register_hook(move |g| {
        s.fetch_add(1, Ordering::SeqCst);
        Ok(Some(mul_scalar(g, 10.0)))
    })
    .unwrap();
    let y = mul_scalar(&x, 3.0);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| y.backward()));
    assert!(caught.is_err());
    mul_scalar(&x, 3.0).backward().unwrap();
    assert_eq!(first.load(Ordering::SeqCst), 2);
    assert_eq!(second.load(Ordering::SeqCst), 1);
    assert_close(&grad_vals(&x), &[30.0]);
}

#[test]
fn a_leaf_hook_that_removes_itself_runs_once() {
    // PyTorch: def once(g): calls.append('once'); handle.remove()
    // two backward calls -> ['once'].
    finishes(|| {
        let x = scalar(2.0);
        let calls = log();
        let id = Arc::new(Mutex::new(None));
        let (c, me, x2) = (calls.clone(), id.clone(), x.clone());
        let h = x
            .register_hook(move |_| {
                c.lock().unwrap().push("once");
                assert!(x2.remove_hook(me.lock().unwrap().unwrap()));
                Ok(None)
            })
            .unwrap();
        *id.lock().unwrap() = Some(h);
        mul_scalar(&x, 3.0).backward().unwrap();
        mul_scalar(&x, 3.0).backward().unwrap();
        assert_eq!(*calls.lock().unwrap(), ["once"]);
        assert_close(&grad_vals(&x), &[6.0]);
    });
}

#[test]
fn a_non_leaf_hook_that_removes_hooks_does_not_deadlock_and_runs_its_snapshot() {
    // PyTorch: y = x*3, h1 removes h1 and h2 (registered after it); z = y*y;
    // z.backward(retain_graph=True); z.backward() -> ['h1', 'h2']: this pass runs the
    // hooks it started with, the next one none.
    finishes(|| {
        let x = scalar(2.0);
        let y = mul_scalar(&x, 3.0);
        let calls = log();
        let ids = Arc::new(Mutex::new(Vec::new()));
        let (c, i, y2) = (calls.clone(), ids.clone(), y.clone());
        let h1 = y
            .register_hook(move |_| {
                c.lock().unwrap().push("h1");
                for id in i.lock().unwrap().iter() {
                    assert!(y2.remove_hook(*id));
                }
                Ok(None)
            })
            .unwrap();
        let c = calls.clone();
        let h2 = y
            .register_hook(move |_| {
                c.lock().unwrap().push("h2");
                Ok(None)
            })
            .unwrap();
        ids.lock().unwrap().extend([h1, h2]);
        let z = mul(&y, &y);
        z.backward_with(None, Some(true), false).unwrap();
        z.backward().unwrap();
        assert_eq!(*calls.lock().unwrap(), ["h1", "h2"]);
        assert_close(&grad_vals(&x), &[2.0 * 36.0]); // dz/dx = 2y·3 = 36, twice
    });
}

#[test]
fn a_non_leaf_hook_that_registers_a_hook_does_not_deadlock() {
    // PyTorch: r registers a new hook on its own tensor each time it runs;
    // pass 1 -> ['r'], pass 2 -> ['r', 'r', 'new'].
    finishes(|| {
        let x = scalar(2.0);
        let y = mul_scalar(&x, 3.0);
        let calls = log();
        let (c, y2) = (calls.clone(), y.clone());
        let r = y
            .register_hook(move |_| {
                c.lock().unwrap().push("r");
                let c2 = c.clone();
                y2.register_hook(move |_| {
                    c2.lock().unwrap().push("new");
                    Ok(None)
                })?;
                Ok(None)
            })
            .unwrap();
        let z = mul(&y, &y);
        z.backward_with(None, Some(true), false).unwrap();
        assert_eq!(*calls.lock().unwrap(), ["r"]);
        z.backward().unwrap();
        assert_eq!(*calls.lock().unwrap(), ["r", "r", "new"]);
        // `r` holds `y`, which holds the node that holds `r`: a cycle (Python's collector
        // would free it), broken by removing the hook.
        assert!(y.remove_hook(r));
    });
}

#[test]
fn node_hooks_that_remove_themselves_do_not_deadlock() {
    finishes(|| {
        let x = scalar(2.0);
        let y = mul_scalar(&x, 3.0);
        let f = y.grad_fn().unwrap();
        let calls = log();
        let ids = Arc::new(Mutex::new(Vec::new()));
        let (c, i, f2) = (calls.clone(), ids.clone(), f.clone());
        let pre = f.register_prehook(move |_| {
            c.lock().unwrap().push("pre");
            assert!(f2.remove_hook(i.lock().unwrap()[0]));
            Ok(())
        });
        let (c, i, f2) = (calls.clone(), ids.clone(), f.clone());
        let post = f.register_hook(move |_, _| {
            c.lock().unwrap().push("post");
            assert!(f2.remove_hook(i.lock().unwrap()[1]));
            Ok(())
        });
        ids.lock().unwrap().extend([pre, post]);
        y.backward_with(None, Some(true), false).unwrap();
        y.backward().unwrap();
        assert_eq!(*calls.lock().unwrap(), ["pre", "post"]);
    });
}

/// Named like PyTorch's `def hook(g)`, so the message names it `hook` as PyTorch does.
fn hook(_: &V) -> Result<Option<V>, AutogradError> {
    Ok(Some(leaf(&[1.0, 1.0], &[2])))
}

#[test]
fn a_leaf_hook_returning_another_shape_is_an_error_and_stores_nothing() {
    // PyTorch: x = ones(3); x.register_hook(hook) returning ones(2);
    // (x*2).sum().backward() -> "hook 'hook' has changed the size of value"; x.grad None.
    let x = leaf(&[1.0, 1.0, 1.0], &[3]);
    x.register_hook(hook).unwrap();
    let err = sum(&mul_scalar(&x, 2.0)).backward().unwrap_err();
    assert_eq!(err.to_string(), "hook 'hook' has changed the size of value");
    assert!(x.grad().is_none());
}

#[test]
fn a_non_leaf_hook_returning_another_shape_is_an_error_not_a_kernel_panic() {
    // PyTorch: y = x*2; y.register_hook(lambda g: torch.ones(2)); y.sum().backward()
    // -> "hook '<lambda>' has changed the size of value". A closure is named by the
    // function it is written in.
    let x = leaf(&[1.0, 1.0, 1.0], &[3]);
    let y = mul(&x, &constant(&[2.0, 2.0, 2.0], &[3]));
    y.register_hook(|_| Ok(Some(constant(&[1.0, 1.0], &[2]))))
        .unwrap();
    let err = sum(&y).backward().unwrap_err();
    assert_eq!(
        err.to_string(),
        "hook 'a_non_leaf_hook_returning_another_shape_is_an_error_not_a_kernel_panic::{{closure}}' has changed the size of value"
    );
    assert!(x.grad().is_none());
}

#[test]
fn a_hook_returning_another_dtype_is_an_error() {
    // PyTorch: y.register_hook(lambda g: torch.ones(3, dtype=torch.float32)) ->
    // "hook '<lambda>' has changed the type of value (was torch.DoubleTensor got
    // torch.FloatTensor)"; here the type names are `Tensor::type_name`'s.
    let x = leaf(&[1.0, 1.0, 1.0], &[3]);
    let y = mul_scalar(&x, 2.0);
    y.register_hook(|_| {
        let mut t = tensor(&[1.0, 1.0, 1.0], &[3]);
        t.dtype = "f32";
        Ok(Some(Variable::from_data(t)))
    })
    .unwrap();
    let err = sum(&y).backward().unwrap_err();
    assert_eq!(
        err.to_string(),
        "hook 'a_hook_returning_another_dtype_is_an_error::{{closure}}' has changed the type of value (was Tensor<f64> got Tensor<f32>)"
    );
}

#[test]
fn node_hooks_returning_wrong_results_are_pytorchs_errors() {
    fn check(set: impl FnOnce(&NodeRef<TT>), expected: &str) {
        let x = leaf(&[1.0, 1.0, 1.0], &[3]);
        let y = mul(&x, &constant(&[2.0, 2.0, 2.0], &[3]));
        set(&y.grad_fn().unwrap());
        let err = sum(&y).backward().unwrap_err();
        assert_eq!(err.to_string(), expected);
        assert!(x.grad().is_none());
    }
    // PyTorch: register_prehook(lambda go: (torch.ones(2),)) ->
    // "hook '<lambda>' has changed the size of value"
    fn pre_shape(f: &NodeRef<TT>) {
        f.register_prehook(|g| {
            g[0] = Some(constant(&[1.0, 1.0], &[2]));
            Ok(())
        });
    }
    check(
        pre_shape,
        "hook 'pre_shape::{{closure}}' has changed the size of value",
    );
    // PyTorch: register_prehook(lambda go: (torch.ones(3), torch.ones(3))) ->
    // "hook '<lambda>' has returned an incorrect number of values (got 2, but expected 1)"
    fn pre_count(f: &NodeRef<TT>) {
        f.register_prehook(|g| {
            *g = variable_list![g[0].clone(), g[0].clone()];
            Ok(())
        });
    }
    check(
        pre_count,
        "hook 'pre_count::{{closure}}' has returned an incorrect number of values (got 2, but expected 1)",
    );
    // PyTorch: register_hook(lambda gi, go: (torch.ones(2), None)) ->
    // "hook '<lambda>' has changed the size of value"
    fn post_shape(f: &NodeRef<TT>) {
        f.register_hook(|gi, _| {
            gi[0] = Some(constant(&[1.0, 1.0], &[2]));
            Ok(())
        });
    }
    check(
        post_shape,
        "hook 'post_shape::{{closure}}' has changed the size of value",
    );
}

#[test]
fn a_node_hook_filling_a_none_gradient_is_an_error() {
    // PyTorch: a hook putting a tensor where the gradient was None ->
    // "can't replace a None gradient with a non-None value".
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let (_l, r) = split2(&x);
    r.grad_fn().unwrap().register_prehook(|g| {
        assert!(g[0].is_none());
        g[0] = Some(constant(&[1.0, 1.0], &[2]));
        Ok(())
    });
    let err = sum(&mul_scalar(&r, 3.0)).backward().unwrap_err();
    assert_eq!(
        err.to_string(),
        "can't replace a None gradient with a non-None value"
    );
}
