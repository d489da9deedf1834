#![allow(clippy::cloned_ref_to_slice_refs)] // `&[x.clone()]` reads better in tests
//! Leak test, in its own test binary (the live-node counter is per thread).
mod common;
use common::*;

#[test]
fn training_loop_that_saves_outputs_leaks_no_nodes() {
    let start = live_nodes();
    let chunks = live_chunks();
    let w = leaf(&[0.3, -0.2], &[2]);
    for i in 0..100_000 {
        let x = constant(&[1.0, (i % 7) as f64], &[2]);
        // exp and tanh save their own outputs: with a strong reference this
        // would be a node <-> output cycle and every iteration would leak.
        let h = tanh(&exp(&mul(&w, &x)));
        let loss = sum(&mul(&h, &h));
        assert!(live_nodes() > start);
        loss.backward().unwrap();
        {
            let _g = no_grad();
            let g = w.grad().unwrap();
            w.set_data(w.data().zip(&g.data(), |a, b| a - 1e-3 * b));
            w.bump_version();
        }
        w.zero_grad();
        // Each step's graph is gone after backward: its nodes' arena chunk
        // is reused from the start, so memory for nodes does not grow.
        assert!(live_chunks() <= chunks + 1, "{} chunks", live_chunks());
    }
    assert_eq!(live_nodes(), start);
}

#[test]
fn a_long_lived_node_keeps_one_chunk_and_frees_it_when_dropped() {
    std::thread::spawn(|| {
        let x = leaf(&[1.0], &[1]);
        let start = live_chunks();
        let kept = exp(&x); // outlives the graphs built after it
        for _ in 0..10_000 {
            let y = tanh(&mul_scalar(&x, 2.0));
            sum(&y).backward().unwrap();
        }
        // The kept node's chunk and the current one at most.
        assert!(
            live_chunks() <= start + 2,
            "{} chunks",
            live_chunks() - start
        );
        drop(kept);
        assert!(live_chunks() <= start + 1);
    })
    .join()
    .unwrap();
}

#[test]
fn graphs_that_are_never_backpropagated_are_freed_too() {
    let start = live_nodes();
    let x = leaf(&[1.0], &[1]);
    for _ in 0..10_000 {
        let y = exp(&tanh(&x));
        let _s = SavedVariable::new(&y, true);
        let _z = mul(&y, &y);
    }
    assert_eq!(live_nodes(), start);
    // retain_graph + create_graph graphs as well.
    for _ in 0..1_000 {
        let y = pow(&x, 3.0);
        let g = grad(&[y], &[x.clone()], &[], Some(true), true, false).unwrap();
        let g2 = grad(
            &[g[0].clone().unwrap()],
            &[x.clone()],
            &[],
            Some(true),
            true,
            false,
        )
        .unwrap();
        assert_close(&vals(g2[0].as_ref().unwrap()), &[6.0]);
    }
    assert_eq!(live_nodes(), start);
}

/// Issue 15: a variable whose data is replaced in place used to keep its original raw
/// tensor alive beside the current one (lock-free reads of an immutable field), so an
/// optimizer updating parameters in place kept a second copy of each. PyTorch frees the
/// old storage once nothing else refers to it; so does the runtime now. Observed through
/// the storage's `Arc`: a weak reference to the original dies with the last copy.
#[test]
fn replaced_data_is_freed() {
    // An optimizer step, in place without recording (as the leak loop above does).
    let w = leaf(&[0.3, -0.2], &[2]);
    let original = std::sync::Arc::downgrade(&w.data().data);
    let mut previous = original.clone();
    for _ in 0..3 {
        sum(&mul(&w, &w)).backward().unwrap();
        {
            let _g = no_grad();
            let g = w.grad().unwrap();
            w.set_data(w.data().zip(&g.data(), |a, b| a - 0.1 * b));
            w.bump_version();
        }
        w.zero_grad();
        assert!(previous.upgrade().is_none(), "the replaced tensor is alive");
        previous = std::sync::Arc::downgrade(&w.data().data);
    }
    assert!(original.upgrade().is_none());
    assert_close(&vals(&w), &[0.3 * 0.8f64.powi(3), -0.2 * 0.8f64.powi(3)]);

    // A recorded in-place op whose node saves nothing: the old data goes at once.
    let a = mul_scalar(&leaf(&[1.0, 2.0], &[2]), 1.0);
    let before = std::sync::Arc::downgrade(&a.data().data);
    add_scalar_(&a, 1.0).unwrap();
    assert!(before.upgrade().is_none());
    // One whose node saves the original (mul_): alive while the graph is, then freed.
    let b = mul_scalar(&leaf(&[1.0, 2.0], &[2]), 1.0);
    let before = std::sync::Arc::downgrade(&b.data().data);
    mul_(&b, &constant(&[3.0, 3.0], &[2])).unwrap();
    assert!(before.upgrade().is_some());
    sum(&b).backward().unwrap();
    assert!(before.upgrade().is_none());
    assert_close(&vals(&b), &[3.0, 6.0]);
}

#[test]
fn a_detached_alias_does_not_keep_the_graph_alive() {
    // PyTorch: `d = y.detach()` keeps y's storage, not y's graph.
    let start = live_nodes();
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = exp(&exp(&x));
    let d = y.detach();
    assert!(live_nodes() > start);
    drop(y);
    assert_eq!(live_nodes(), start, "the detached alias kept the graph");
    // The alias stands alone now: its values stay, and in-place ops still work on it.
    assert_close(&vals(&d), &[1f64.exp().exp(), 2f64.exp().exp()]);
    add_scalar_(&d, 1.0).unwrap();
    assert_close(&vals(&d), &[1f64.exp().exp() + 1.0, 2f64.exp().exp() + 1.0]);
}
