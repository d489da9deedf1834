//! `record_saving`: the generated code's way to record an op whose node saves its outputs,
//! filling them in before the node is in the graph (no lock, no handle) when neither
//! saved-tensor hooks nor forward-mode AD are active, and falling back to the handle
//! otherwise.
mod common;
use common::*;

use autograd_runtime::__private::record_saving;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `exp` as the generator writes it now.
fn exp_saving(a: &V) -> (V, bool) {
    let raw = a.data().map(f64::exp);
    let node = ExpBackward0 {
        result: SavedVariable::default(),
    };
    let ([out], h) = record_saving(node, &[Some(a)], [raw], |n, o| n.result = o.save(0));
    let fast = h.is_none();
    if let Some(h) = h {
        let saved = SavedVariable::new(&out, true);
        h.with(|n| n.result = saved);
    }
    (out, fast)
}

#[test]
fn saves_the_output_in_place_with_the_same_gradient_and_errors() {
    let x = leaf(&[0.5, -1.0, 2.0], &[3]);
    let (y, fast) = exp_saving(&x);
    assert!(
        fast,
        "no hooks, no forward AD: the node is filled before it is shared"
    );
    assert_eq!(y.grad_fn().unwrap().name(), "ExpBackward0");
    assert_eq!(y.version(), 0);
    sum(&y).backward().unwrap();
    let by_handle = leaf(&[0.5, -1.0, 2.0], &[3]);
    sum(&exp(&by_handle)).backward().unwrap();
    // Equal up to rounding: Miri varies the last bits of `exp` from call to call.
    let (a, b) = (x.grad().unwrap().data(), by_handle.grad().unwrap().data());
    let close = |(p, q): (&f64, &f64)| (p - q).abs() <= 1e-12 * q.abs();
    assert!(a.data.iter().zip(b.data.iter()).all(close));
    let err = sum(&y).backward().unwrap_err().to_string();
    assert!(
        err.starts_with("Trying to backward through the graph a second time"),
        "{err}"
    );
}

#[test]
fn the_saved_output_sees_in_place_changes() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let (y, _) = exp_saving(&x);
    add_scalar_(&y, 1.0).unwrap();
    let err = sum(&y).backward().unwrap_err().to_string();
    assert!(
        err.contains(
            "which is output 0 of ExpBackward0, is at version 1; expected version 0 instead."
        ),
        "{err}"
    );
}

#[test]
fn saved_tensor_hooks_take_the_handle_path() {
    let packed = Arc::new(AtomicUsize::new(0));
    let p = packed.clone();
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = {
        let _h = saved_tensors_hooks::<TT, _, _, _>(
            move |v: &V| {
                p.fetch_add(1, Ordering::Relaxed);
                Ok(v.data())
            },
            |d: &TT| Ok(Variable::from_data(d.clone())),
        );
        let (y, fast) = exp_saving(&x);
        assert!(!fast, "the pack hook must see the output");
        y
    };
    assert_eq!(packed.load(Ordering::Relaxed), 1);
    sum(&y).backward().unwrap();
    assert_eq!(x.grad().unwrap().data().data, y.data().data);
}

#[test]
fn forward_ad_takes_the_handle_path() {
    let x = leaf(&[1.0], &[1]);
    let _level = dual_level();
    let (_, fast) = exp_saving(&x);
    assert!(!fast, "tangents are set before the output is saved");
}

/// The address of `v`'s node (its `Debug` text, without the vtable, which Miri does not
/// keep unique).
fn address(v: &V) -> String {
    let text = format!("{:?}", v.grad_fn().unwrap());
    let at = text.find("0x").expect("an address");
    text[at..]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect()
}

#[test]
fn a_panic_while_saving_frees_the_half_built_node() {
    let x = leaf(&[1.0], &[1]);
    // The thread's current chunk exists from here; with nothing alive in it, the next node
    // starts it over at the same address.
    let first = address(&exp_saving(&x).0);
    let before = (live_nodes(), live_chunks());
    for _ in 0..3 {
        let r = std::panic::catch_unwind(|| {
            let node = ExpBackward0 {
                result: SavedVariable::default(),
            };
            record_saving(node, &[Some(&x)], [x.data()], |n, o| {
                n.result = o.save(0);
                panic!("a formula's capture failed");
            })
        });
        assert!(r.is_err());
    }
    assert_eq!((live_nodes(), live_chunks()), before);
    // The half-built nodes gave their chunk counts back: a new node starts it over.
    let again = address(&exp_saving(&x).0);
    assert_eq!(again, first);
}

#[test]
fn a_saved_output_cannot_reach_its_node_before_it_is_recorded() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let node = ExpBackward0 {
        result: SavedVariable::default(),
    };
    let ([y], _) = record_saving(node, &[Some(&x)], [x.data()], |n, o| {
        let early = o.save(0);
        // The node is not in the graph yet (nor running): the saved output reaches nothing.
        let e = early.unpack().unwrap_err().to_string();
        assert!(e.contains("unpacked outside its node"), "{e}");
        n.result = o.save(0);
    });
    assert_eq!(y.grad_fn().unwrap().name(), "ExpBackward0");
    sum(&y).backward().unwrap();
    assert_eq!(x.grad().unwrap().data().data, x.data().data);
}

#[test]
fn a_saved_output_unpacks_through_its_node_and_nowhere_else() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let (y, _) = exp_saving(&x);
    let f = y.grad_fn().unwrap();
    // Through the node: the output again, with the node as its history and its counter
    // (PyTorch 2.15.0: `y.grad_fn._saved_result` equals `y`, its `grad_fn` is `y.grad_fn`,
    // its `output_nr` 0).
    let (same, nr) = f.with_node(|n| {
        let mut got = None;
        n.visit_saved_mut(&mut |_, sv| {
            let v = sv.unpack().unwrap();
            got = Some((v.grad_fn().unwrap().ptr_eq(&f), v.output_nr()));
        });
        got.unwrap()
    });
    assert!(same && nr == 0);
    // Moved out of its node, it reaches nothing, even while another node runs.
    let moved = f.with_node(|n| {
        let mut out = None;
        n.visit_saved_mut(&mut |_, sv| out = Some(std::mem::take(sv)));
        out.unwrap()
    });
    let e = moved.unpack().unwrap_err().to_string();
    assert!(e.contains("unpacked outside its node"), "{e}");
    let (z, _) = exp_saving(&x);
    let other = z.grad_fn().unwrap();
    let e = other.with_node(|_| moved.unpack().unwrap_err().to_string());
    assert!(e.contains("unpacked outside its node"), "{e}");
    // Its node's backward now fails where the saved output is missing.
    assert!(sum(&y).backward().is_err());
}

#[test]
fn a_loop_of_saving_records_leaks_nothing() {
    let before = live_nodes();
    let x = leaf(&[0.1, 0.2], &[2]);
    for _ in 0..if cfg!(miri) { 10 } else { 200 } {
        let (y, _) = exp_saving(&exp_saving(&x).0);
        sum(&y).backward().unwrap();
    }
    assert_eq!(live_nodes(), before);
}
