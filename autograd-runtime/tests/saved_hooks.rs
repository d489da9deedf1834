//! Saved-tensor hooks (PyTorch's `torch.autograd.graph.saved_tensors_hooks` and
//! `grad_fn._raw_saved_*.register_hooks`), against PyTorch 2.15 (float64; the comments give
//! what PyTorch printed).
#![allow(clippy::cloned_ref_to_slice_refs)] // `&[x.clone()]` reads better in tests
mod common;
use common::*;
use std::sync::{Arc, Mutex};

/// A saved tensor kept in single precision: half the bytes of the f64 original.
struct Compressed {
    values: Vec<f32>,
    shape: Vec<usize>,
}

fn compress(v: &V) -> Result<Compressed, AutogradError> {
    let t = v.data();
    Ok(Compressed {
        values: t.data.iter().map(|&x| x as f32).collect(),
        shape: t.shape.clone(),
    })
}

fn decompress(c: &Compressed) -> Result<V, AutogradError> {
    let values: Vec<f64> = c.values.iter().map(|&x| x as f64).collect();
    Ok(constant(&values, &c.shape))
}

type Log = Arc<Mutex<Vec<String>>>;

/// Hooks that compress and log what they do.
fn logged(log: &Log) -> SavedTensorsHooksGuard {
    let (p, u) = (log.clone(), log.clone());
    saved_tensors_hooks(
        move |v: &V| {
            p.lock().unwrap().push(format!("pack {:?}", v.shape()));
            compress(v)
        },
        move |c: &Compressed| {
            u.lock().unwrap().push("unpack".into());
            decompress(c)
        },
    )
}

#[test]
fn scoped_hooks_pack_at_save_and_unpack_at_backward() {
    // PyTorch: with saved_tensors_hooks(pack to float16, unpack to float64):
    // y = (x*x).sum() -> [('pack', (3,)), ('pack', (3,))]; y.backward() -> + 'unpack',
    // 'unpack'; x.grad [3., 4., 6.].
    let log = Log::default();
    let x = leaf(&[1.5, 2.0, 3.0], &[3]);
    let y = {
        let _hooks = logged(&log);
        sum(&mul(&x, &x))
    };
    assert_eq!(*log.lock().unwrap(), ["pack [3]", "pack [3]"]);
    y.backward().unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        ["pack [3]", "pack [3]", "unpack", "unpack"]
    );
    assert_close(&grad_vals(&x), &[3.0, 4.0, 6.0]);
    // Out of scope: nothing is packed any more.
    let _ = sum(&mul(&x, &x));
    assert_eq!(log.lock().unwrap().len(), 4);
}

#[test]
fn a_compressed_activation_frees_the_original() {
    // The point of packing: the node keeps the compressed copy, not the activation.
    let x = leaf(&[0.5, 1.0, 2.0], &[3]);
    let log = Log::default();
    let (y, activation) = {
        let _hooks = logged(&log);
        let h = exp(&x); // ExpBackward0 saves h, MulBackward0 saves h twice
        let activation = Arc::downgrade(&h.data().data);
        (sum(&mul(&h, &h)), activation)
    };
    assert_eq!(log.lock().unwrap().len(), 3);
    assert!(activation.upgrade().is_none(), "h's data is kept");
    y.backward().unwrap();
    // d/dx sum(exp(x)²) = 2 exp(2x), from f32-rounded saved values.
    let expected: Vec<f64> = [0.5f64, 1.0, 2.0]
        .iter()
        .map(|&v| 2.0 * (v.exp() as f32 as f64) * (v.exp() as f32 as f64))
        .collect();
    assert_close(&grad_vals(&x), &expected);
    // Without hooks the activation lives as long as the graph.
    let h = exp(&x);
    let activation = Arc::downgrade(&h.data().data);
    let y = sum(&mul(&h, &h));
    drop(h);
    assert!(activation.upgrade().is_some());
    drop(y);
    assert!(activation.upgrade().is_none());
}

#[test]
fn no_version_check_with_hooks() {
    // PyTorch: a = x*1; with hooks (lambda t: t.clone(), lambda p: p): y = (a*a).sum();
    // a.mul_(10) under no_grad; y.backward() -> no error, x.grad [3., 4., 6.] (the packed
    // copy). Without hooks it is the version error.
    let x = leaf(&[1.5, 2.0, 3.0], &[3]);
    let a = mul_scalar(&x, 1.0);
    let y = {
        let _hooks = saved_tensors_hooks(
            |v: &V| Ok(v.data()),
            |t: &TT| Ok(Variable::from_data(t.clone())),
        );
        sum(&mul(&a, &a))
    };
    {
        let _g = no_grad();
        mul_(&a, &constant(&[10.0; 3], &[3])).unwrap();
    }
    y.backward().unwrap();
    assert_close(&grad_vals(&x), &[3.0, 4.0, 6.0]);
}

#[test]
fn an_unpack_hook_returning_a_wrong_shape_is_an_error() {
    // PyTorch fails later, in the kernel: "The size of tensor a (3) must match the size of
    // tensor b (2) at non-singleton dimension 0". Here the unpacked tensor is checked.
    let x = leaf(&[1.5, 2.0, 3.0], &[3]);
    let y = {
        let _hooks = saved_tensors_hooks(|_: &V| Ok(()), |_: &()| Ok(constant(&[1.0, 1.0], &[2])));
        sum(&mul(&x, &x))
    };
    let err = y.backward().unwrap_err();
    assert_eq!(
        err.to_string(),
        "Output of saved tensor unpack_hook expected to have shape [3] but got [2]"
    );
    assert!(x.grad().is_none());
}

#[test]
fn a_second_backward_through_hooked_tensors_fails() {
    // PyTorch: "Trying to backward through the graph a second time ..."
    let x = leaf(&[1.5, 2.0, 3.0], &[3]);
    let y = {
        let _hooks = saved_tensors_hooks(
            |v: &V| Ok(v.data()),
            |t: &TT| Ok(Variable::from_data(t.clone())),
        );
        sum(&mul(&x, &x))
    };
    y.backward().unwrap();
    assert_eq!(y.backward().unwrap_err(), AutogradError::BackwardTwice);
}

#[test]
fn a_pack_hook_modifying_its_input_in_place_is_pytorchs_error() {
    // PyTorch raises it in the forward op; here SavedVariable::new cannot fail, so backward
    // returns it.
    let x = leaf(&[1.5, 2.0, 3.0], &[3]);
    let a = mul_scalar(&x, 1.0);
    let y = {
        let _hooks = saved_tensors_hooks(
            |v: &V| {
                mul_(v, &constant(&[2.0; 3], &[3]))?;
                Ok(v.data())
            },
            |t: &TT| Ok(Variable::from_data(t.clone())),
        );
        sum(&mul(&a, &a))
    };
    assert_eq!(
        y.backward().unwrap_err().to_string(),
        "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook cannot be modified by in-place operations as this can lead to unexpected side-effects. Please open an issue if you need to perform in-place operations on the input to a pack hook."
    );
}

#[test]
fn nested_scopes_the_innermost_wins() {
    // PyTorch: outer(inner(y = x.exp()); z = y.exp()) -> ['inner', 'outer'].
    let calls = Arc::new(Mutex::new(Vec::new()));
    let hooks = |name: &'static str| {
        let c = calls.clone();
        saved_tensors_hooks(
            move |v: &V| {
                c.lock().unwrap().push(name);
                Ok(v.data())
            },
            |t: &TT| Ok(Variable::from_data(t.clone())),
        )
    };
    let x = leaf(&[1.5], &[1]);
    let _outer = hooks("outer");
    let y = {
        let _inner = hooks("inner");
        exp(&x)
    };
    let _z = exp(&y);
    assert_eq!(*calls.lock().unwrap(), ["inner", "outer"]);
}

#[test]
fn second_order_gradients_through_a_packed_leaf() {
    // PyTorch: with hooks (lambda t: t.detach().clone(), lambda p: p): y = (x*x*x).sum();
    // g = grad(y, x, create_graph=True) -> [6.75, 12.]; g.sum().backward() -> x.grad [9., 12.].
    let x = leaf(&[1.5, 2.0], &[2]);
    let y = {
        let _hooks = saved_tensors_hooks(
            |v: &V| Ok(v.data()),
            |t: &TT| Ok(Variable::from_data(t.clone())),
        );
        sum(&mul(&mul(&x, &x), &x))
    };
    let g = grad(&[y], &[x.clone()], &[], None, true, false).unwrap();
    let g = g[0].clone().unwrap();
    assert_close(&vals(&g), &[6.75, 12.0]);
    sum(&g).backward().unwrap();
    assert_close(&grad_vals(&x), &[9.0, 12.0]);
}

#[test]
fn hooks_registered_on_one_saved_variable() {
    // PyTorch: y = x.exp(); y.grad_fn._raw_saved_result.register_hooks(p2, u2);
    // again -> "Calling register_hooks on a saved tensor whose hooks have already been
    // set. ..."; y.sum().backward() -> ['p2', 'u2'], x.grad = exp(x); after that ->
    // "Calling register_hooks on a saved tensor after it has been freed. ...".
    let calls = Arc::new(Mutex::new(Vec::new()));
    let x = leaf(&[1.5, 2.0, 3.0], &[3]);
    let ([y], handle) = record(
        ExpBackward0 {
            result: SavedVariable::default(),
        },
        &[Some(&x)],
        [x.data().map(f64::exp)],
    );
    let (p, u) = (calls.clone(), calls.clone());
    let register = move |n: &mut ExpBackward0| {
        let (p, u) = (p.clone(), u.clone());
        n.result.register_hooks(
            move |v: &V| {
                p.lock().unwrap().push("p2");
                Ok(v.data())
            },
            move |t: &TT| {
                u.lock().unwrap().push("u2");
                Ok(Variable::from_data(t.clone()))
            },
        )
    };
    let err = handle.with(register.clone()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Calling register_hooks on a saved tensor with value None is forbidden"
    );
    handle.with(|n| n.result = SavedVariable::new(&y, true));
    handle.with(register.clone()).unwrap();
    let err = handle.with(register.clone()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one pair of hooks is allowed at a time."
    );
    sum(&y).backward().unwrap();
    assert_eq!(*calls.lock().unwrap(), ["p2", "u2"]);
    assert_close(&grad_vals(&x), &[1.5f64.exp(), 2.0f64.exp(), 3.0f64.exp()]);
    let err = handle.with(register).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved variables after calling backward."
    );
}

#[test]
fn pack_receives_inputs_themselves_and_outputs_detached() {
    // PyTorch: a = x*2; y = a*x under hooks -> pack gets x itself (requires_grad True,
    // grad_fn None) and a itself (grad_fn MulBackward0). For an op's own output (exp's
    // result) PyTorch passes the output with its grad_fn; here a detached alias of it.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let x = leaf(&[1.5], &[1]);
    let a = mul_scalar(&x, 2.0);
    let s = seen.clone();
    let _hooks = saved_tensors_hooks(
        move |v: &V| {
            s.lock().unwrap().push(v.clone());
            Ok(v.data())
        },
        |t: &TT| Ok(Variable::from_data(t.clone())),
    );
    let _y = mul(&a, &x);
    let e = exp(&x);
    let seen = seen.lock().unwrap();
    assert!(seen[0].ptr_eq(&a) && seen[1].ptr_eq(&x));
    assert!(!seen[2].ptr_eq(&e) && seen[2].grad_fn().is_none() && !seen[2].requires_grad());
    assert_eq!(vals(&seen[2]), vals(&e));
}

#[test]
fn a_pack_hook_keeping_what_it_is_given_makes_no_cycle() {
    // An identity pack hook (PyTorch's documented example) on an op that saves its own
    // output: the node keeps what pack returned; had that been a `detach()` of the output
    // (which keeps its origin, and so the node, alive), the graph would never be freed.
    // Without a backward pass (which would release the saved tensor and break a cycle).
    let start = live_nodes();
    {
        let x = leaf(&[0.5], &[1]);
        let _hooks = saved_tensors_hooks(|v: &V| Ok(v.clone()), |p: &V| Ok(p.clone()));
        let e = exp(&x);
        assert!(live_nodes() > start);
        drop(e);
    }
    assert_eq!(live_nodes(), start);
    // And the gradient through it is right: d/dx exp(x) = exp(0.5).
    let x = leaf(&[0.5], &[1]);
    let _hooks = saved_tensors_hooks(|v: &V| Ok(v.clone()), |p: &V| Ok(p.clone()));
    exp(&x).backward().unwrap();
    assert!((vals(&x.grad().unwrap())[0] - 0.5f64.exp()).abs() < 1e-12);
}
