#![allow(clippy::cloned_ref_to_slice_refs)] // `&[x.clone()]` reads better in tests
//! Random programs: the engine's gradients against central differences of the
//! same program run without grad, with shared inputs (diamonds), in-place ops,
//! dropped intermediates, backward on another thread and a retained second
//! backward.
mod common;
use common::*;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Mul(usize, usize),
    Add(usize, usize),
    MulScalar(usize, f64),
    Tanh(usize),
    /// exp(tanh(x)): bounded, so differences stay accurate.
    ExpTanh(usize),
    Square(usize),
    /// A copy of x modified in place: `t = x * 1; t += c` (history rebased).
    InplaceAdd(usize, f64),
    /// `t = x * 1; t *= y` in place.
    InplaceMul(usize, usize),
}

#[derive(Clone, Debug)]
struct Program {
    leaves: Vec<[f64; 2]>,
    ops: Vec<Op>,
    /// How many of the last values the loss sums.
    outputs: usize,
    other_thread: bool,
    twice: bool,
}

fn op(n: usize) -> impl Strategy<Value = Op> {
    let i = 0..n;
    prop_oneof![
        (i.clone(), 0..n).prop_map(|(a, b)| Op::Mul(a, b)),
        (i.clone(), 0..n).prop_map(|(a, b)| Op::Add(a, b)),
        (i.clone(), -1.5..1.5f64).prop_map(|(a, c)| Op::MulScalar(a, c)),
        i.clone().prop_map(Op::Tanh),
        i.clone().prop_map(Op::ExpTanh),
        i.clone().prop_map(Op::Square),
        (i.clone(), -1.0..1.0f64).prop_map(|(a, c)| Op::InplaceAdd(a, c)),
        (i, 0..n).prop_map(|(a, b)| Op::InplaceMul(a, b)),
    ]
}

fn program() -> impl Strategy<Value = Program> {
    (1..4usize)
        .prop_flat_map(|n_leaves| {
            let leaves = prop::collection::vec([-1.0..1.0f64, -1.0..1.0f64], n_leaves);
            // Op k may use any of the n_leaves + k values before it.
            let ops = (0..10usize).prop_flat_map(move |n_ops| {
                (0..n_ops)
                    .map(|k| op(n_leaves + k).boxed())
                    .collect::<Vec<_>>()
            });
            (leaves, ops, 1..4usize, any::<bool>(), any::<bool>())
        })
        .prop_map(|(leaves, ops, outputs, other_thread, twice)| Program {
            leaves,
            ops,
            outputs,
            other_thread,
            twice,
        })
}

/// Runs the program on `leaves`; returns the loss and the values (dropped by
/// the caller in any order).
fn run(p: &Program, leaves: &[V]) -> (V, Vec<V>) {
    let mut vals: Vec<V> = leaves.to_vec();
    for o in &p.ops {
        let v = match *o {
            Op::Mul(a, b) => mul(&vals[a], &vals[b]),
            Op::Add(a, b) => add(&vals[a], &vals[b]),
            Op::MulScalar(a, c) => mul_scalar(&vals[a], c),
            Op::Tanh(a) => tanh(&vals[a]),
            Op::ExpTanh(a) => exp(&tanh(&vals[a])),
            Op::Square(a) => pow(&vals[a], 2.0),
            Op::InplaceAdd(a, c) => {
                let t = mul_scalar(&vals[a], 1.0);
                add_scalar_(&t, c).unwrap();
                t
            }
            Op::InplaceMul(a, b) => {
                let t = mul_scalar(&vals[a], 1.0);
                mul_(&t, &vals[b]).unwrap();
                t
            }
        };
        vals.push(v);
    }
    let k = p.outputs.min(vals.len());
    let mut loss = sum(&vals[vals.len() - 1]);
    for v in &vals[vals.len() - k..vals.len() - 1] {
        loss = add(&loss, &sum(v));
    }
    (loss, vals)
}

fn loss_value(p: &Program, leaves: &[[f64; 2]]) -> f64 {
    let _g = no_grad();
    let vars: Vec<V> = leaves.iter().map(|l| constant(l, &[2])).collect();
    val(&run(p, &vars).0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn gradients_match_central_differences(p in program()) {
        let leaves: Vec<V> = p.leaves.iter().map(|l| leaf(l, &[2])).collect();
        let (loss, vals) = run(&p, &leaves);
        // Intermediates go before backward, in reverse order of creation
        // for odd programs: the graph must keep what backward needs.
        if p.ops.len() % 2 == 1 {
            for v in vals.into_iter().rev() {
                drop(v);
            }
        } else {
            drop(vals);
        }
        let backward = move |loss: V, twice: bool| {
            loss.backward_with(None, Some(twice), false).unwrap();
            if twice {
                loss.backward().unwrap();
            }
        };
        if p.other_thread {
            let twice = p.twice;
            std::thread::spawn(move || backward(loss, twice)).join().unwrap();
        } else {
            backward(loss, p.twice);
        }
        let times = if p.twice { 2.0 } else { 1.0 };
        let h = 1e-6;
        for (li, l) in leaves.iter().enumerate() {
            let got = l.grad().map(|g| common::vals(&g)).unwrap_or(vec![0.0, 0.0]);
            for e in 0..2 {
                let mut plus = p.leaves.clone();
                let mut minus = p.leaves.clone();
                plus[li][e] += h;
                minus[li][e] -= h;
                let num = (loss_value(&p, &plus) - loss_value(&p, &minus)) / (2.0 * h) * times;
                prop_assert!(
                    (got[e] - num).abs() <= 1e-5 * (1.0 + num.abs()),
                    "leaf {li}[{e}]: engine {} vs numeric {num}", got[e]
                );
            }
        }
    }
}
