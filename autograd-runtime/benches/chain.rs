//! Recording + backward of a 20,000-step chain `y = tanh(y * 0.999 + 0.001)`
//! on one-element tensors: this runtime against a minimal hand-written tape
//! (an arena of nodes with parent indices), interleaved, median of N runs.
//!
//! `cargo bench -p autograd-runtime --bench chain` (release). Reports ns per op
//! = total / 60,000 (three ops per step, forward and backward together,
//! including freeing the graph).
//!
//! Two raw tensor types: `HeapT`, a one-element f32 tensor with heap storage
//! like a real tensor library's (every op allocates its result), and `Inline`,
//! a bare f32 wrapper (no allocation at all in the raw ops).
//!
//! Besides the tapes, an "object-model floor": PyTorch's object model with
//! nothing else (an `Arc` node and an `Arc` output variable per op, an `Arc`
//! gradient per backward step), the least any runtime with shared,
//! individually freed nodes and variables pays; the same floor with raw
//! tensors as gradients (what skipping gradient `Variable`s would save); the
//! same floor with `Rc` (plain counts: a runtime whose graphs stay on their
//! thread); and the enum tape with one shared output variable per op (nodes in the tape,
//! freed all at once: the other end of the design space).
//!
//! `--profile tape|floor|runtime|tape-inline|floor-inline|runtime-inline`
//! runs one implementation `PROFILE_RUNS` times (default 200), for perf or
//! callgrind (instruction counts per op: see docs/runtime.md).

#[path = "chain/design_b.rs"]
mod design_b;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use autograd_runtime::__private::record_saving;
use autograd_runtime::{
    AutogradError, Node, RawList, SavedVariable, Tensor, Variable, VariableList, record,
    should_record, variable_list,
};

const STEPS: usize = 20_000;
const OPS: f64 = (STEPS * 3) as f64;

/// The raw ops the chain needs.
trait Raw: Tensor {
    fn scalar(x: f32) -> Self;
    fn value(&self) -> f32;
    fn mul_s(&self, s: f32) -> Self;
    fn add_s(&self, s: f32) -> Self;
    fn tanh(&self) -> Self;
    /// `g * (1 - y^2)`
    fn tanh_backward(g: &Self, y: &Self) -> Self;
}

#[derive(Clone, Debug)]
struct HeapT {
    data: Arc<[f32]>,
}
impl Tensor for HeapT {
    fn shape(&self) -> &[usize] {
        &[1]
    }
    fn dtype(&self) -> &'static str {
        "f32"
    }
    fn ones_like(&self) -> Self {
        Self::scalar(1.0)
    }
    fn zeros_like(&self) -> Self {
        Self::scalar(0.0)
    }
    fn add(&self, o: &Self) -> Self {
        Self::scalar(self.data[0] + o.data[0])
    }
    fn has_nan(&self) -> bool {
        self.data[0].is_nan()
    }
}
impl Raw for HeapT {
    fn scalar(x: f32) -> Self {
        HeapT {
            data: Arc::from([x]),
        }
    }
    fn value(&self) -> f32 {
        self.data[0]
    }
    fn mul_s(&self, s: f32) -> Self {
        Self::scalar(self.data[0] * s)
    }
    fn add_s(&self, s: f32) -> Self {
        Self::scalar(self.data[0] + s)
    }
    fn tanh(&self) -> Self {
        Self::scalar(self.data[0].tanh())
    }
    fn tanh_backward(g: &Self, y: &Self) -> Self {
        Self::scalar(g.data[0] * (1.0 - y.data[0] * y.data[0]))
    }
}

#[derive(Clone, Copy, Debug)]
struct Inline(f32);
impl Tensor for Inline {
    fn shape(&self) -> &[usize] {
        &[1]
    }
    fn dtype(&self) -> &'static str {
        "f32"
    }
    fn ones_like(&self) -> Self {
        Inline(1.0)
    }
    fn zeros_like(&self) -> Self {
        Inline(0.0)
    }
    fn add(&self, o: &Self) -> Self {
        Inline(self.0 + o.0)
    }
    fn has_nan(&self) -> bool {
        self.0.is_nan()
    }
}
impl Raw for Inline {
    fn scalar(x: f32) -> Self {
        Inline(x)
    }
    fn value(&self) -> f32 {
        self.0
    }
    fn mul_s(&self, s: f32) -> Self {
        Inline(self.0 * s)
    }
    fn add_s(&self, s: f32) -> Self {
        Inline(self.0 + s)
    }
    fn tanh(&self) -> Self {
        Inline(self.0.tanh())
    }
    fn tanh_backward(g: &Self, y: &Self) -> Self {
        Inline(g.0 * (1.0 - y.0 * y.0))
    }
}

// ------------------------------------------------------------------ runtime
// Nodes written as the code generator writes them: formulas on Variables with
// differentiable ops (so create_graph would work), saved output kept weakly.

struct MulScalarBackward {
    other: f32,
}
impl<T: Raw> Node<T> for MulScalarBackward {
    fn name(&self) -> &str {
        "MulBackward1"
    }
    fn apply(&mut self, grads: VariableList<T>) -> Result<VariableList<T>, AutogradError> {
        Ok(variable_list![
            grads[0].as_ref().map(|g| mul_scalar(g, self.other))
        ])
    }
    fn apply_raw(
        &mut self,
        grads: &mut RawList<T>,
        out: &mut RawList<T>,
    ) -> Result<(), AutogradError> {
        out.push(grads[0].as_ref().map(|g| g.mul_s(self.other)));
        Ok(())
    }
}
fn mul_scalar<T: Raw>(a: &Variable<T>, s: f32) -> Variable<T> {
    let raw = a.with_data(|d| d.mul_s(s));
    if !should_record(&[a]) {
        return Variable::from_data(raw);
    }
    let ([out], _) = record_saving(MulScalarBackward { other: s }, &[Some(a)], [raw], |_, _| {});
    out
}

struct AddScalarBackward;
impl<T: Raw> Node<T> for AddScalarBackward {
    fn name(&self) -> &str {
        "AddBackward1"
    }
    fn apply(&mut self, mut grads: VariableList<T>) -> Result<VariableList<T>, AutogradError> {
        Ok(variable_list![grads.take(0)])
    }
    fn apply_raw(
        &mut self,
        grads: &mut RawList<T>,
        out: &mut RawList<T>,
    ) -> Result<(), AutogradError> {
        out.push(grads.take(0));
        Ok(())
    }
}
fn add_scalar<T: Raw>(a: &Variable<T>, s: f32) -> Variable<T> {
    let raw = a.with_data(|d| d.add_s(s));
    if !should_record(&[a]) {
        return Variable::from_data(raw);
    }
    let ([out], _) = record_saving(AddScalarBackward, &[Some(a)], [raw], |_, _| {});
    out
}

struct TanhBackward0<T: Tensor> {
    result: SavedVariable<T>,
}
impl<T: Raw> Node<T> for TanhBackward0<T> {
    fn name(&self) -> &str {
        "TanhBackward0"
    }
    fn apply(&mut self, grads: VariableList<T>) -> Result<VariableList<T>, AutogradError> {
        let Some(g) = &grads[0] else {
            return Ok(variable_list![None]);
        };
        let y = self.result.unpack()?;
        Ok(variable_list![Some(tanh_backward(g, &y))])
    }
    fn apply_raw(
        &mut self,
        grads: &mut RawList<T>,
        out: &mut RawList<T>,
    ) -> Result<(), AutogradError> {
        let Some(g) = &grads[0] else {
            out.push(None);
            return Ok(());
        };
        // As the generator binds a saved tensor a raw formula only borrows.
        let y = self.result.data_ref()?;
        out.push(Some(T::tanh_backward(g, &y)));
        Ok(())
    }
    fn release_variables(&mut self) {
        self.result.reset();
    }
}
fn tanh<T: Raw>(a: &Variable<T>) -> Variable<T> {
    let raw = a.with_data(Raw::tanh);
    if !should_record(&[a]) {
        return Variable::from_data(raw);
    }
    let node = TanhBackward0 {
        result: SavedVariable::default(),
    };
    let ([out], h) = record_saving(node, &[Some(a)], [raw], |n, o| n.result = o.save(0));
    if let Some(h) = h {
        let saved = SavedVariable::new(&out, true);
        h.with(|n| n.result = saved);
    }
    out
}

struct TanhBackwardBackward0<T: Tensor> {
    grad_output: SavedVariable<T>,
    output: SavedVariable<T>,
}
impl<T: Raw> Node<T> for TanhBackwardBackward0<T> {
    fn name(&self) -> &str {
        "TanhBackwardBackward0"
    }
    fn apply(&mut self, _grads: VariableList<T>) -> Result<VariableList<T>, AutogradError> {
        let _ = (&self.grad_output, &self.output);
        Err(AutogradError::not_implemented(
            "tanh_backward_backward (not needed by the benchmark)",
            None,
        ))
    }
}
/// Differentiable `tanh_backward(grad, output)`, as PyTorch has it.
fn tanh_backward<T: Raw>(g: &Variable<T>, y: &Variable<T>) -> Variable<T> {
    let gd = g.data();
    let raw = y.with_data(|yd| T::tanh_backward(&gd, yd));
    if !should_record(&[g, y]) {
        return Variable::from_data(raw);
    }
    let node = TanhBackwardBackward0 {
        grad_output: SavedVariable::new(g, false),
        output: SavedVariable::new(y, false),
    };
    record(node, &[Some(g), Some(y)], [raw]).0[0].clone()
}

fn run_runtime<T: Raw>() -> f32 {
    let x = Variable::new(T::scalar(0.5), true);
    let mut y = x.clone();
    for _ in 0..STEPS {
        y = tanh(&add_scalar(&mul_scalar(&y, 0.999), 0.001));
    }
    y.backward().unwrap();
    drop(y);
    x.grad().unwrap().data().value()
}

/// The chain on design B (see `chain/design_b.rs`).
fn run_design_b<T: Raw + 'static>() -> f32 {
    design_b_chain::<T>(false, false)
}

/// Design B with PyTorch's per-node lifetime.
fn run_design_b_per_node<T: Raw + 'static>() -> f32 {
    design_b_chain::<T>(true, false)
}

/// Design B with PyTorch's per-node lifetime and a variable per gradient.
fn run_design_b_per_node_var_grads<T: Raw + 'static>() -> f32 {
    design_b_chain::<T>(true, true)
}

fn design_b_chain<T: Raw + 'static>(per_node: bool, var_grads: bool) -> f32 {
    use design_b::*;
    use std::sync::atomic::Ordering::Relaxed;
    PER_NODE.store(per_node, Relaxed);
    VAR_GRADS.store(var_grads, Relaxed);
    let g = design_b_run::<T>();
    PER_NODE.store(false, Relaxed);
    VAR_GRADS.store(false, Relaxed);
    g
}

fn design_b_run<T: Raw + 'static>() -> f32 {
    use design_b::*;
    let x = BVar::leaf(T::scalar(0.5), true);
    let mut y = x.clone();
    for _ in 0..STEPS {
        y = tanh(&add_scalar(&mul_scalar(&y, 0.999), 0.001));
    }
    backward(&y, false).unwrap();
    drop(y);
    x.grad().unwrap().value()
}

// ------------------------------------------------------------------ tapes

/// Minimal tape: an arena of nodes, each with its parent index and the local
/// information its backward needs (enum dispatch, no per-node allocation
/// beyond the raw tensors themselves).
mod tape {
    use super::Raw;

    pub enum Op<T> {
        Leaf,
        MulS(f32),
        AddS,
        Tanh(T),
    }
    pub struct Node<T> {
        pub parent: u32,
        pub op: Op<T>,
    }
    pub struct Tape<T> {
        pub nodes: Vec<Node<T>>,
    }
    #[derive(Clone, Copy)]
    pub struct Var(pub u32);

    impl<T: Raw> Tape<T> {
        pub fn push(&mut self, parent: Var, op: Op<T>) -> Var {
            self.nodes.push(Node {
                parent: parent.0,
                op,
            });
            Var(self.nodes.len() as u32 - 1)
        }
        pub fn backward(&self, root: Var) -> Vec<Option<T>> {
            let mut grads: Vec<Option<T>> = (0..self.nodes.len()).map(|_| None).collect();
            grads[root.0 as usize] = Some(T::scalar(1.0));
            for i in (0..=root.0 as usize).rev() {
                let Some(g) = grads[i].take() else { continue };
                let n = &self.nodes[i];
                let gi = match &n.op {
                    Op::Leaf => {
                        grads[i] = Some(g);
                        continue;
                    }
                    Op::MulS(s) => g.mul_s(*s),
                    Op::AddS => g,
                    Op::Tanh(y) => T::tanh_backward(&g, y),
                };
                let p = &mut grads[n.parent as usize];
                *p = Some(match p.take() {
                    None => gi,
                    Some(o) => o.add(&gi),
                });
            }
            grads
        }
    }
}

fn run_tape<T: Raw>() -> f32 {
    use tape::*;
    let mut t = Tape { nodes: Vec::new() };
    let x = T::scalar(0.5);
    let xv = t.push(Var(0), Op::Leaf);
    let (mut y, mut yv) = (x, xv);
    for _ in 0..STEPS {
        let a = y.mul_s(0.999);
        let av = t.push(yv, Op::MulS(0.999));
        let b = a.add_s(0.001);
        let bv = t.push(av, Op::AddS);
        y = b.tanh();
        yv = t.push(bv, Op::Tanh(y.clone()));
    }
    let grads = t.backward(yv);
    grads[xv.0 as usize].as_ref().unwrap().value()
}

/// The floor of PyTorch's object model, with nothing else: per op one node
/// (its one edge and what its backward needs) and one output variable holding
/// data and `grad_fn`, each behind its own counted pointer; per backward step
/// one gradient variable. No dependency counting, version counters,
/// validation, hooks, modes or dynamic dispatch: what any runtime with shared,
/// individually freed nodes and variables pays at least. `floor!(skeleton,
/// std::sync::Arc)` is the floor of a runtime whose graphs other threads may reach
/// (atomic counts); `floor!(skeleton_rc, std::rc::Rc)` that of one whose graphs stay on
/// their thread (plain counts).
macro_rules! floor {
    ($name:ident, $($ptr:ident)::+) => {
        mod $name {
            use super::Raw;
            use $($ptr)::+ as Ptr;

            pub enum Op<T> {
                MulS(f32),
                AddS,
                Tanh(T),
            }
            pub struct Node<T> {
                pub parent: Option<Ptr<Node<T>>>,
                pub op: Op<T>,
            }
            pub struct Var<T> {
                pub data: T,
                pub grad_fn: Option<Ptr<Node<T>>>,
            }
            impl<T> Drop for Node<T> {
                // Iterative, so that dropping a long chain does not overflow the stack.
                fn drop(&mut self) {
                    let mut next = self.parent.take();
                    while let Some(p) = next {
                        next = match Ptr::try_unwrap(p) {
                            Ok(mut n) => n.parent.take(),
                            Err(_) => None,
                        };
                    }
                }
            }

            /// The forward chain: a node and an output per op.
            fn forward<T: Raw>() -> Ptr<Var<T>> {
                let step = |y: &Ptr<Var<T>>, data: T, op: Op<T>| {
                    Ptr::new(Var {
                        data,
                        grad_fn: Some(Ptr::new(Node {
                            parent: y.grad_fn.clone(),
                            op,
                        })),
                    })
                };
                let mut y = Ptr::new(Var {
                    data: T::scalar(0.5),
                    grad_fn: None,
                });
                for _ in 0..super::STEPS {
                    let a = step(&y, y.data.mul_s(0.999), Op::MulS(0.999));
                    let b = step(&a, a.data.add_s(0.001), Op::AddS);
                    let t = b.data.tanh();
                    y = step(&b, t.clone(), Op::Tanh(t));
                }
                y
            }

            /// Forward and backward, a gradient variable per step.
            pub fn run<T: Raw>() -> f32 {
                let y = forward::<T>();
                let mut g = Ptr::new(Var {
                    data: T::scalar(1.0),
                    grad_fn: None,
                });
                let mut node = y.grad_fn.clone();
                while let Some(n) = node {
                    let data = match &n.op {
                        Op::MulS(s) => g.data.mul_s(*s),
                        Op::AddS => g.data.clone(),
                        Op::Tanh(r) => T::tanh_backward(&g.data, r),
                    };
                    g = Ptr::new(Var {
                        data,
                        grad_fn: None,
                    });
                    node = n.parent.clone();
                }
                drop(y);
                g.data.value()
            }

            /// Forward and backward with raw tensors as gradients.
            #[allow(dead_code)]
            pub fn run_raw<T: Raw>() -> f32 {
                let y = forward::<T>();
                let mut g = T::scalar(1.0);
                let mut node = y.grad_fn.clone();
                while let Some(n) = node {
                    g = match &n.op {
                        Op::MulS(s) => g.mul_s(*s),
                        Op::AddS => g,
                        Op::Tanh(r) => T::tanh_backward(&g, r),
                    };
                    node = n.parent.clone();
                }
                drop(y);
                g.value()
            }
        }
    };
}
floor!(skeleton, std::sync::Arc);
floor!(skeleton_rc, std::rc::Rc);

/// The enum tape plus one shared (`Arc`) output variable per op, holding the
/// data and its node's index: the least a design with PyTorch's variable
/// handles pays even with nodes in an arena and raw gradients.
fn run_tape_with_variables<T: Raw>() -> f32 {
    use std::sync::Arc;
    use tape::*;
    struct V<T> {
        data: T,
        node: Var,
    }
    let mut t = Tape { nodes: Vec::new() };
    let xv = t.push(Var(0), Op::Leaf);
    let mut y = Arc::new(V {
        data: T::scalar(0.5),
        node: xv,
    });
    for _ in 0..STEPS {
        let a = Arc::new(V {
            data: y.data.mul_s(0.999),
            node: t.push(y.node, Op::MulS(0.999)),
        });
        let b = Arc::new(V {
            data: a.data.add_s(0.001),
            node: t.push(a.node, Op::AddS),
        });
        let r = b.data.tanh();
        y = Arc::new(V {
            node: t.push(b.node, Op::Tanh(r.clone())),
            data: r,
        });
    }
    let grads = t.backward(y.node);
    grads[xv.0 as usize].as_ref().unwrap().value()
}

/// Tape with a boxed backward closure per node (the usual "generic" tape).
fn run_closure_tape<T: Raw>() -> f32 {
    type Back<T> = Box<dyn Fn(&T) -> T>;
    struct N<T> {
        parent: usize,
        back: Option<Back<T>>,
    }
    let mut nodes: Vec<N<T>> = vec![N {
        parent: 0,
        back: None,
    }];
    let mut y = T::scalar(0.5);
    let mut yi = 0;
    for _ in 0..STEPS {
        let a = y.mul_s(0.999);
        nodes.push(N {
            parent: yi,
            back: Some(Box::new(|g: &T| g.mul_s(0.999))),
        });
        let b = a.add_s(0.001);
        nodes.push(N {
            parent: nodes.len() - 1,
            back: Some(Box::new(|g: &T| g.clone())),
        });
        y = b.tanh();
        let yc = y.clone();
        nodes.push(N {
            parent: nodes.len() - 1,
            back: Some(Box::new(move |g: &T| T::tanh_backward(g, &yc))),
        });
        yi = nodes.len() - 1;
    }
    let mut grads: Vec<Option<T>> = (0..nodes.len()).map(|_| None).collect();
    grads[yi] = Some(T::scalar(1.0));
    for i in (1..=yi).rev() {
        let Some(g) = grads[i].take() else { continue };
        let n = &nodes[i];
        let gi = (n.back.as_ref().unwrap())(&g);
        let p = &mut grads[n.parent];
        *p = Some(match p.take() {
            None => gi,
            Some(o) => o.add(&gi),
        });
    }
    grads[0].as_ref().unwrap().value()
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A named benchmark body returning the gradient of x.
type Impl = (&'static str, fn() -> f32);

fn bench_type<T: Raw + 'static>(label: &str, reps: usize) {
    let impls: [Impl; 10] = [
        ("tape (arena, enum ops)", run_tape::<T>),
        ("tape (arena, boxed closures)", run_closure_tape::<T>),
        (
            "tape + Arc output variable per op",
            run_tape_with_variables::<T>,
        ),
        ("object-model floor (Arc per op)", skeleton::run::<T>),
        ("floor with raw gradients", skeleton::run_raw::<T>),
        ("thread-confined floor (Rc per op)", skeleton_rc::run::<T>),
        ("design B sketch (segments)", run_design_b::<T>),
        ("design B, per-node lifetime", run_design_b_per_node::<T>),
        (
            "  + a variable per gradient",
            run_design_b_per_node_var_grads::<T>,
        ),
        ("autograd-runtime", run_runtime::<T>),
    ];
    for per_node in [false, true] {
        design_b::PER_NODE.store(per_node, std::sync::atomic::Ordering::Relaxed);
        design_b::self_check::<T>();
    }
    design_b::PER_NODE.store(false, std::sync::atomic::Ordering::Relaxed);
    // Same gradient everywhere.
    let reference = run_tape::<T>();
    for (name, f) in &impls {
        let g = f();
        assert!(
            (g - reference).abs() <= 1e-6 * reference.abs().max(1e-30),
            "{name}: {g} vs {reference}"
        );
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); impls.len()];
    for _ in 0..3 {
        for (_, f) in &impls {
            black_box(f());
        }
    }
    for _ in 0..reps {
        for (i, (_, f)) in impls.iter().enumerate() {
            let t = Instant::now();
            black_box(f());
            times[i].push(t.elapsed());
        }
    }
    let ns: Vec<f64> = times
        .iter_mut()
        .map(|t| median(t).as_nanos() as f64 / OPS)
        .collect();
    println!("raw tensor: {label}");
    for (i, (name, _)) in impls.iter().enumerate() {
        println!(
            "  {name:<34} {:>8.1} ns/op   ({:.2}x enum tape)",
            ns[i],
            ns[i] / ns[0]
        );
    }
}

/// Forward (`forward(steps)` gives the output), backward and free of one
/// chain, in ns per op.
fn time_phases<Y>(
    steps: usize,
    forward: impl FnOnce(usize) -> Y,
    backward: impl FnOnce(&Y),
) -> [f64; 3] {
    let t0 = Instant::now();
    let y = forward(steps);
    let t1 = Instant::now();
    backward(&y);
    let t2 = Instant::now();
    drop(y);
    let t3 = Instant::now();
    let f = |d: Duration| d.as_nanos() as f64 / (3 * steps) as f64;
    [f(t1 - t0), f(t2 - t1), f(t3 - t2)]
}

/// [`time_phases`] of the runtime.
fn phases<T: Raw + 'static>(steps: usize) -> [f64; 3] {
    let x = Variable::new(T::scalar(0.5), true);
    let chain = |n| {
        let mut y = x.clone();
        for _ in 0..n {
            y = tanh(&add_scalar(&mul_scalar(&y, 0.999), 0.001));
        }
        y
    };
    time_phases(steps, chain, |y| y.backward().unwrap())
}

/// [`time_phases`] of design B.
fn phases_b<T: Raw + 'static>(steps: usize) -> [f64; 3] {
    use design_b::*;
    let x = BVar::leaf(T::scalar(0.5), true);
    let chain = |n| {
        let mut y = x.clone();
        for _ in 0..n {
            y = tanh(&add_scalar(&mul_scalar(&y, 0.999), 0.001));
        }
        y
    };
    time_phases(steps, chain, |y| backward(y, false).unwrap())
}

fn main() {
    if let Some(which) = std::env::args().skip_while(|a| a != "--profile").nth(1) {
        let f: fn() -> f32 = match which.as_str() {
            "tape" => run_tape::<HeapT>,
            "tape-inline" => run_tape::<Inline>,
            "floor" => skeleton::run::<HeapT>,
            "floor-inline" => skeleton::run::<Inline>,
            "runtime-inline" => run_runtime::<Inline>,
            "design-b" => run_design_b::<HeapT>,
            "design-b-inline" => run_design_b::<Inline>,
            "design-b-node" => run_design_b_per_node::<HeapT>,
            "design-b-node-inline" => run_design_b_per_node::<Inline>,
            "design-b-node-vars" => run_design_b_per_node_var_grads::<HeapT>,
            _ => run_runtime::<HeapT>,
        };
        let n: usize = std::env::var("PROFILE_RUNS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200);
        for _ in 0..n {
            black_box(f());
        }
        return;
    }
    if std::env::args().any(|a| a == "--phases") {
        println!("ns/op (HeapT): forward / backward / free");
        for steps in [200, 2000, 20000, 20000, 20000] {
            for _ in 0..3 {
                let [f, b, d] = phases::<HeapT>(steps);
                let [fb, bb, db] = phases_b::<HeapT>(steps);
                println!(
                    "  {steps:>5} steps: runtime {f:6.1} {b:6.1} {d:6.1}   design B {fb:6.1} {bb:6.1} {db:6.1}"
                );
            }
        }
        return;
    }
    // `cargo test --benches` runs this with `--bench` absent: keep it short.
    let quick = !std::env::args().any(|a| a == "--bench");
    let reps = if quick { 1 } else { 41 };
    println!(
        "chain of {STEPS} steps y = tanh(y * 0.999 + 0.001): recording + backward + free, median of {reps} interleaved runs"
    );
    bench_type::<HeapT>("HeapT (one f32 in an Arc<[f32]>, allocating ops)", reps);
    bench_type::<Inline>("Inline (bare f32 wrapper, non-allocating ops)", reps);
}
