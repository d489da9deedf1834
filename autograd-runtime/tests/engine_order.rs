//! The order the engine runs nodes and leaves in, against PyTorch's: the programs of
//! `fixtures/engine_order.txt` (recorded by `tools/pytorch_fixtures/engine_order.py`)
//! replayed with a pre-hook on every node and, where the program says so, a tensor hook
//! on every leaf, each logging its value's number. Parts of a program are recorded on
//! threads of their own, as in the recording, so sequence numbers start anew there.
//!
//! One test function: a hook on a leaf makes every later `backward()` of the process
//! count its dependencies (`engine/ready.rs`), so the programs without leaf hooks run
//! first, on the lazy path where their graph allows it.
mod common;
use common::*;
use std::sync::{Arc, Mutex};

const FIXTURE: &str = include_str!("fixtures/engine_order.txt");

#[derive(Debug)]
struct Program {
    line: usize,
    leaves: usize,
    ops: Vec<Vec<String>>,
    /// `None`: one thread records everything.
    cuts: Option<Vec<usize>>,
    roots: Vec<usize>,
    pass: String,
    inputs: Vec<usize>,
    leaf_hooks: bool,
    order: Vec<String>,
}

fn list(s: &str) -> Vec<String> {
    if s == "-" {
        return Vec::new();
    }
    s.split(',').map(str::to_string).collect()
}

fn nums(s: &str) -> Vec<usize> {
    list(s).iter().map(|x| x.parse().unwrap()).collect()
}

fn parse(line: usize, text: &str) -> Program {
    let field = |name: &str| {
        text.split(' ')
            .find_map(|f| f.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
            .unwrap_or_else(|| panic!("line {line}: no `{name}`"))
    };
    Program {
        line,
        leaves: field("leaves").parse().unwrap(),
        ops: list(field("ops"))
            .iter()
            .map(|op| op.split(':').map(str::to_string).collect())
            .collect(),
        cuts: (field("cuts") != "one-thread").then(|| nums(field("cuts"))),
        roots: nums(field("roots")),
        pass: field("pass").to_string(),
        inputs: nums(field("inputs")),
        leaf_hooks: field("leaf_hooks") == "1",
        order: list(field("order")),
    }
}

fn apply(op: &[String], values: &[V]) -> V {
    let arg = |k: usize| &values[op[k].parse::<usize>().unwrap()];
    match op[0].as_str() {
        "mul" => mul(arg(1), arg(2)),
        "add" => add(arg(1), arg(2)),
        "mul_scalar" => mul_scalar(arg(1), op[2].parse().unwrap()),
        "exp" => exp(arg(1)),
        "tanh" => tanh(arg(1)),
        other => panic!("unknown op {other}"),
    }
}

/// The roots' sums and, for `backward`, their total.
fn roots(p: &Program, values: &[V]) -> (Vec<V>, Option<V>) {
    let sums: Vec<V> = p.roots.iter().map(|&r| sum(&values[r])).collect();
    let total = (p.pass == "backward").then(|| {
        let mut t = sums[0].clone();
        for s in &sums[1..] {
            t = add(&t, s);
        }
        t
    });
    (sums, total)
}

/// `f` on a new thread (whose sequence numbers start at 0).
fn on_new_thread<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|s| s.spawn(f).join().unwrap())
}

/// Records the program as PyTorch did: on one new thread, or a new thread per segment
/// and one more for the roots.
fn record(p: &Program, values: &mut Vec<V>) -> (Vec<V>, Option<V>) {
    let segment = |lo: usize, hi: usize, values: &mut Vec<V>| {
        for op in &p.ops[lo..hi] {
            let v = apply(op, values);
            values.push(v);
        }
    };
    let Some(cuts) = &p.cuts else {
        return on_new_thread(|| {
            segment(0, p.ops.len(), values);
            roots(p, values)
        });
    };
    let mut bounds = vec![0];
    bounds.extend(cuts);
    bounds.push(p.ops.len());
    for w in bounds.windows(2) {
        on_new_thread(|| segment(w[0], w[1], values));
    }
    on_new_thread(|| roots(p, values))
}

fn run(p: &Program) -> Vec<String> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let note = |log: &Arc<Mutex<Vec<String>>>, s: String| {
        let log = log.clone();
        move || log.lock().unwrap().push(s.clone())
    };
    let mut values: Vec<V> = (0..p.leaves).map(|_| leaf(&[0.5, 0.25], &[2])).collect();
    if p.leaf_hooks {
        for (k, x) in values.iter().enumerate() {
            let f = note(&log, format!("l{k}"));
            x.register_hook(move |_| {
                f();
                Ok(None)
            })
            .unwrap();
        }
    }
    let (sums, total) = record(p, &mut values);
    let named = values.iter().enumerate().map(|(k, v)| (format!("n{k}"), v));
    let sums_named = sums.iter().enumerate().map(|(j, s)| (format!("s{j}"), s));
    for (name, v) in named.chain(sums_named) {
        if let Some(node) = v.grad_fn() {
            let f = note(&log, name);
            node.register_prehook(move |_| {
                f();
                Ok(())
            });
        }
    }
    let inputs: Vec<V> = p.inputs.iter().map(|&i| values[i].clone()).collect();
    match p.pass.as_str() {
        "backward" => total.unwrap().backward().unwrap(),
        "backward_roots" => backward(&sums, &[], None, false).unwrap(),
        "grad" => drop(grad(&sums, &inputs, &[], None, false, true).unwrap()),
        "backward_inputs" => {
            let opts = BackwardOptions {
                inputs: Some(&inputs),
                ..Default::default()
            };
            backward_with(&sums, &[], opts).unwrap();
        }
        other => panic!("unknown pass {other}"),
    }
    log.lock().unwrap().clone()
}

#[test]
fn nodes_and_leaves_run_in_pytorchs_order() {
    let mut programs: Vec<Program> = FIXTURE
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#'))
        .map(|(i, l)| parse(i + 1, l))
        .collect();
    assert!(programs.len() >= 200, "{} programs", programs.len());
    // Without leaf hooks first (a stable sort keeps the file's order otherwise).
    programs.sort_by_key(|p| p.leaf_hooks);
    let mut wrong = Vec::new();
    for p in &programs {
        let got = run(p);
        if got != p.order {
            wrong.push(format!(
                "line {}: {:?}\n  PyTorch: {:?}\n  here:    {:?}",
                p.line, p, p.order, got
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} programs ran in another order:\n{}",
        wrong.len(),
        programs.len(),
        wrong.join("\n")
    );
}
