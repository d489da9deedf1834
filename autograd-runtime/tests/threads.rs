#![allow(clippy::cloned_ref_to_slice_refs)] // `&[x.clone()]` reads better in tests
mod common;
use common::*;

fn assert_send_sync<X: Send + Sync>() {}

#[test]
fn variables_and_nodes_are_send_and_sync() {
    assert_send_sync::<V>();
    assert_send_sync::<NodeRef<TT>>();
    assert_send_sync::<SavedVariable<TT>>();
    assert_send_sync::<Edge<TT>>();
}

#[test]
fn backward_on_separate_graphs_from_several_threads() {
    let handles: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let x = leaf(&[t as f64 * 0.1, 1.0], &[2]);
                for _ in 0..200 {
                    let mut y = x.clone();
                    for _ in 0..50 {
                        y = tanh(&add_scalar(&mul_scalar(&y, 0.9), 0.01));
                    }
                    sum(&exp(&y)).backward().unwrap();
                }
                // Reference: the same computation on plain f64 with the chain rule.
                let expect = |x0: f64| {
                    let mut y = x0;
                    let mut d = 1.0;
                    for _ in 0..50 {
                        let t = (y * 0.9 + 0.01).tanh();
                        d *= 0.9 * (1.0 - t * t);
                        y = t;
                    }
                    200.0 * y.exp() * d
                };
                let g = grad_vals(&x);
                assert_close(&g, &[expect(t as f64 * 0.1), expect(1.0)]);
                g
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn shared_leaf_accumulates_from_concurrent_backward_passes() {
    let w = leaf(&[2.0], &[1]);
    // Fewer rounds under Miri (interpreted, it would take minutes).
    let rounds = if cfg!(miri) { 25 } else { 250 };
    std::thread::scope(|s| {
        for _ in 0..4 {
            let w = w.clone();
            s.spawn(move || {
                for _ in 0..rounds {
                    sum(&mul_scalar(&w, 3.0)).backward().unwrap();
                }
            });
        }
    });
    assert_close(&grad_vals(&w), &[(4 * rounds * 3) as f64]);
}

#[test]
fn graph_recorded_on_one_thread_backpropagated_on_another() {
    let x = leaf(&[0.5], &[1]);
    let y = sum(&exp(&x));
    std::thread::spawn(move || y.backward().unwrap())
        .join()
        .unwrap();
    assert_close(&grad_vals(&x), &[0.5f64.exp()]);
}

#[test]
fn data_reads_race_with_replacements() {
    // One thread replaces the data (as in-place ops do) while another reads it
    // through the lock-free path: every read sees a complete value that was
    // written, and values never go back in time.
    let v = constant(&[0.0], &[1]);
    let w = v.clone();
    let writes = if cfg!(miri) { 200 } else { 2000 };
    let writer = std::thread::spawn(move || {
        for i in 1..=writes {
            w.set_data(tensor(&[i as f64], &[1]));
            w.bump_version();
        }
    });
    let mut last = 0.0;
    for _ in 0..10 * writes {
        let x = val(&v);
        assert!(
            x >= last && x <= writes as f64 && x.fract() == 0.0,
            "{x} after {last}"
        );
        last = x;
    }
    writer.join().unwrap();
    assert_eq!(val(&v), writes as f64);
    assert_eq!(v.version(), writes);
}

#[test]
fn graph_outlives_the_thread_that_recorded_it() {
    // The recording thread's arena chunk is released by the thread when it
    // exits, and freed here, with the last node.
    let x = leaf(&[0.5, -0.25], &[2]);
    let xc = x.clone();
    let n = if cfg!(miri) { 100 } else { 500 };
    let loss = std::thread::spawn(move || {
        let mut y = xc;
        for _ in 0..n {
            y = tanh(&mul_scalar(&y, 1.1));
        }
        sum(&y)
    })
    .join()
    .unwrap();
    loss.backward().unwrap();
    drop(loss);
    let expect = |x0: f64| {
        let (mut y, mut d) = (x0, 1.0);
        for _ in 0..n {
            y = (1.1 * y).tanh();
            d *= 1.1 * (1.0 - y * y);
        }
        d
    };
    let g = grad_vals(&x);
    assert!((g[0] - expect(0.5)).abs() < 1e-12 && (g[1] - expect(-0.25)).abs() < 1e-12);
}

#[test]
fn graphs_recorded_on_one_thread_and_freed_on_another_while_recording_goes_on() {
    // The producer keeps recording into its arena chunk while the consumer
    // runs backward on earlier graphs and drops them: the producer reuses
    // the chunk only once every node in it is gone.
    let (tx, rx) = std::sync::mpsc::sync_channel::<(V, V, f64)>(4);
    let n = if cfg!(miri) { 20 } else { 2_000 };
    let producer = std::thread::spawn(move || {
        for i in 0..n {
            let x0 = (i % 17) as f64 * 0.05 - 0.4;
            let x = leaf(&[x0], &[1]);
            let y = sum(&tanh(&mul_scalar(&exp(&x), 0.5)));
            tx.send((x, y, x0)).unwrap();
        }
    });
    let mut count = 0;
    for (x, y, x0) in rx {
        y.backward().unwrap();
        drop(y);
        let t = (0.5 * x0.exp()).tanh();
        let expect = (1.0 - t * t) * 0.5 * x0.exp();
        assert!((grad_vals(&x)[0] - expect).abs() < 1e-12);
        count += 1;
    }
    producer.join().unwrap();
    assert_eq!(count, n);
}

#[test]
fn a_graph_in_a_thread_local_is_freed_at_thread_exit() {
    // The thread-local holding the graph is set before the runtime's own
    // thread-locals exist, so its destructor runs after theirs (last in,
    // first out): freeing the graph then must not touch them (it aborted the
    // process with "thread local panicked on drop").
    thread_local! {
        static KEEP: std::cell::RefCell<Option<V>> = const { std::cell::RefCell::new(None) };
    }
    std::thread::spawn(|| {
        let x = leaf(&[0.5], &[1]);
        KEEP.with(|k| *k.borrow_mut() = Some(tanh(&mul_scalar(&x, 2.0))));
        // A graph freed now makes the runtime's thread-locals.
        drop(tanh(&mul_scalar(&x, 3.0)));
    })
    .join()
    .unwrap();
}

/// The data of `v`, shared with whatever keeps it (a saved output in its node): the
/// count of the returned handle says whether the node is gone.
fn probe(v: &V) -> std::sync::Arc<Vec<f64>> {
    v.data().data.clone()
}

#[test]
fn a_node_whose_last_reference_goes_on_another_thread_is_freed_by_its_owner() {
    // The recording thread counts its references to a node without atomics
    // (biased counts); a reference it counted, dropped on another thread, is
    // queued back to it and merged at its next backward pass, `live_nodes()`
    // or record. Without the merge the node would leak.
    let x = leaf(&[0.5], &[1]);
    let y = tanh(&mul_scalar(&x, 2.0));
    let p = probe(&y);
    std::thread::spawn(move || drop(y)).join().unwrap();
    live_nodes();
    assert_eq!(
        std::sync::Arc::strong_count(&p),
        1,
        "merged at live_nodes()"
    );

    let y = tanh(&mul_scalar(&x, 3.0));
    let p = probe(&y);
    std::thread::spawn(move || drop(y)).join().unwrap();
    sum(&mul_scalar(&x, 1.0)).backward().unwrap();
    assert_eq!(std::sync::Arc::strong_count(&p), 1, "merged at backward");

    let y = tanh(&mul_scalar(&x, 4.0));
    let p = probe(&y);
    std::thread::spawn(move || drop(y)).join().unwrap();
    for _ in 0..300 {
        drop(mul_scalar(&x, 1.0));
    }
    assert_eq!(
        std::sync::Arc::strong_count(&p),
        1,
        "merged while recording"
    );
}

#[test]
fn a_node_whose_owner_exited_is_freed_where_its_last_reference_goes() {
    let x = leaf(&[0.5], &[1]);
    let xc = x.clone();
    let (y, p) = std::thread::spawn(move || {
        let y = tanh(&mul_scalar(&xc, 2.0));
        let p = probe(&y);
        (y, p)
    })
    .join()
    .unwrap();
    let g = y.grad_fn().unwrap();
    drop(y);
    assert_eq!(std::sync::Arc::strong_count(&p), 2, "the node is alive");
    drop(g);
    assert_eq!(std::sync::Arc::strong_count(&p), 1, "freed at once");
}

#[test]
fn references_to_one_node_taken_and_dropped_on_several_threads_at_once() {
    // The owner counts in `local`, the others in `shared`; whoever drops last
    // (here: any of them), the node is freed once, after the owner's merge.
    let rounds = if cfg!(miri) { 20 } else { 2_000 };
    let x = leaf(&[0.5], &[1]);
    let y = tanh(&mul_scalar(&x, 2.0));
    let p = probe(&y);
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let y = y.clone();
            std::thread::spawn(move || {
                let mut kept = Vec::new();
                for i in 0..rounds {
                    let g = y.grad_fn().unwrap();
                    if i % 7 == 0 {
                        kept.push(g);
                    }
                }
                kept
            })
        })
        .collect();
    let mut mine = Vec::new();
    for i in 0..rounds {
        let g = y.grad_fn().unwrap();
        if i % 5 == 0 {
            mine.push(g);
        }
    }
    let theirs: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    drop(y);
    drop(mine);
    assert_eq!(
        std::sync::Arc::strong_count(&p),
        2,
        "their references keep it"
    );
    std::thread::spawn(move || drop(theirs)).join().unwrap();
    live_nodes();
    assert_eq!(std::sync::Arc::strong_count(&p), 1);
}
