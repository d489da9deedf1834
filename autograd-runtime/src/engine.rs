//! The backward engine: [`backward`] and [`grad`].
//!
//! Single-threaded per call, on the calling thread (several threads may run
//! their own backward passes at once). A vertex runs once all its gradients
//! are in; gradients that meet at the same input slot are summed
//! (differentiably under `create_graph`).
//!
//! `backward` needs no pass over the graph before it starts: every node
//! records its depth (one more than the deepest node its edges lead to), so a
//! consumer always outranks what it consumes, and running the vertices found
//! so far deepest first (then by sequence number, as PyTorch orders ready
//! nodes) runs each one after all of its consumers. `grad`, which must also
//! know what lies between outputs and inputs, counts the edges into every
//! reachable vertex first, as PyTorch's engine does.

use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::error::AutogradError;
use crate::grad::Grad;
use crate::hooks;
use crate::list::OptList;
use crate::mem::{forget_elements, recycle};
use crate::mode::{is_anomaly_enabled, set_grad_enabled};
use crate::node::{CellInfo, Edge, HooksSnapshot, NodeRef, VariableList};
use crate::tensor::{Tensor, TensorMeta, same_dtype};
use crate::variable::Variable;

/// Computes the gradients of `tensors` w.r.t. the graph leaves and
/// accumulates them into the leaves' `.grad` (and retained non-leaves)
/// (`torch.autograd.backward`).
///
/// * `grad_tensors`: one gradient per tensor (`None` = implicit ones, only
///   for one-element tensors), or an empty slice for all-implicit.
/// * `retain_graph`: keep saved variables so that the graph can be
///   backpropagated again; without it, saved variables are released as the
///   nodes run and a second backward through them fails. `None` means
///   `create_graph`, as in PyTorch.
/// * `create_graph`: run the backward formulas with grad mode on, so the
///   gradients have a graph of their own (higher-order derivatives).
///
/// [`backward_with`] also takes `inputs` (accumulate into those only).
///
/// ```
/// # use autograd_runtime::*;
/// # #[derive(Clone, Debug)] struct S(f64);
/// # impl Tensor for S {
/// #     fn shape(&self) -> &[usize] { &[] }
/// #     fn dtype(&self) -> &'static str { "f64" }
/// #     fn ones_like(&self) -> Self { S(1.0) }
/// #     fn zeros_like(&self) -> Self { S(0.0) }
/// #     fn add(&self, o: &Self) -> Self { S(self.0 + o.0) }
/// #     fn has_nan(&self) -> bool { self.0.is_nan() }
/// # }
/// let x = Variable::new(S(2.0), true);
/// let y = ops::add(&x, &x);
/// backward(&[y], &[], None, false)?;
/// assert_eq!(x.grad().unwrap().data().0, 2.0);
/// # Ok::<(), AutogradError>(())
/// ```
pub fn backward<T: Tensor>(
    tensors: &[Variable<T>],
    grad_tensors: &[Option<Variable<T>>],
    retain_graph: Option<bool>,
    create_graph: bool,
) -> Result<(), AutogradError> {
    backward_with(
        tensors,
        grad_tensors,
        BackwardOptions {
            retain_graph,
            create_graph,
            inputs: None,
        },
    )
}

/// `backward` as methods of the variable (here, beside the engine: the variable does not
/// depend on the engine).
impl<T: Tensor> Variable<T> {
    /// `backward()` on a scalar: `crate::backward(&[self], &[], None, false)`.
    pub fn backward(&self) -> Result<(), AutogradError> {
        backward(std::slice::from_ref(self), &[], None, false)
    }

    /// `backward(gradient, retain_graph, create_graph)`; `retain_graph: None`
    /// means `create_graph`, as in PyTorch. For `inputs`, see
    /// [`backward_with`](crate::backward_with).
    pub fn backward_with(
        &self,
        gradient: Option<&Variable<T>>,
        retain_graph: Option<bool>,
        create_graph: bool,
    ) -> Result<(), AutogradError> {
        backward(
            std::slice::from_ref(self),
            &[gradient.cloned()],
            retain_graph,
            create_graph,
        )
    }
}

/// Options of [`backward_with`]. `Default` is PyTorch's: `retain_graph = None`
/// (that is, `create_graph`), `create_graph = false`, no `inputs`.
pub struct BackwardOptions<'a, T: Tensor> {
    /// Keep saved variables for another backward; `None` means `create_graph`.
    pub retain_graph: Option<bool>,
    /// Record the backward pass (higher-order gradients).
    pub create_graph: bool,
    /// Accumulate only into these (leaves, or non-leaves whose gradient is
    /// then retained) and run only the part of the graph they need. `Some(&[])`
    /// is an error, as in PyTorch.
    pub inputs: Option<&'a [Variable<T>]>,
}

impl<T: Tensor> Default for BackwardOptions<'_, T> {
    fn default() -> Self {
        BackwardOptions {
            retain_graph: None,
            create_graph: false,
            inputs: None,
        }
    }
}

impl<T: Tensor> Clone for BackwardOptions<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Tensor> Copy for BackwardOptions<'_, T> {}

/// [`backward`] with all options, `inputs` among them (PyTorch's
/// `backward(inputs=...)`): only the named inputs get a gradient. A leaf
/// input accumulates into its `.grad`; a non-leaf input has
/// [`retain_grad`](Variable::retain_grad) called on it (so its `.grad` is
/// kept, now and in later passes, as in PyTorch) and its `grad_fn` runs, but
/// nothing beyond it does. An input the tensors do not depend on gets nothing.
///
/// Errors as PyTorch: `` `inputs` argument to `backward()` cannot be empty.``;
/// an input that does not require grad: `can't retain_grad on Tensor that has
/// requires_grad=False`.
pub fn backward_with<T: Tensor>(
    tensors: &[Variable<T>],
    grad_tensors: &[Option<Variable<T>>],
    opts: BackwardOptions<'_, T>,
) -> Result<(), AutogradError> {
    // Checked first, as PyTorch's Python `backward` does.
    if opts.inputs.is_some_and(<[_]>::is_empty) {
        return Err(AutogradError::EmptyInputs {
            function: "backward",
        });
    }
    let roots = make_roots(tensors, grad_tensors)?;
    let keep_graph = opts.retain_graph.unwrap_or(opts.create_graph);
    let Some(inputs) = opts.inputs else {
        run(&roots, Targets::All, keep_graph, opts.create_graph)?;
        return Ok(());
    };
    let mut edges = Vec::with_capacity(inputs.len());
    for v in inputs {
        // PyTorch calls retain_grad() on every input first (a no-op on leaves).
        v.retain_grad()?;
        edges.push(
            v.gradient_edge()
                .ok_or(AutogradError::InputDoesNotRequireGrad)?,
        );
    }
    run(
        &roots,
        Targets::Accumulate(&edges),
        keep_graph,
        opts.create_graph,
    )?;
    Ok(())
}

/// Computes and returns the gradients of `outputs` w.r.t. `inputs` without
/// touching any `.grad` (`torch.autograd.grad`). Only the part of the graph
/// between the outputs and the inputs runs. `retain_graph: None` means
/// `create_graph`, as in PyTorch.
///
/// With `allow_unused`, an input not reached from the outputs gets `None`;
/// without it that is an error. See [`grad_with`] for `materialize_grads`.
pub fn grad<T: Tensor>(
    outputs: &[Variable<T>],
    inputs: &[Variable<T>],
    grad_outputs: &[Option<Variable<T>>],
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> Result<Vec<Option<Variable<T>>>, AutogradError> {
    grad_with(
        outputs,
        inputs,
        grad_outputs,
        GradOptions {
            retain_graph,
            create_graph,
            allow_unused,
            materialize_grads: false,
        },
    )
}

/// Options of [`grad_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct GradOptions {
    /// Keep saved variables for another backward; `None` means `create_graph`.
    pub retain_graph: Option<bool>,
    /// Record the backward pass (higher-order gradients).
    pub create_graph: bool,
    /// Unreachable inputs give `None` instead of an error.
    pub allow_unused: bool,
    /// Unreachable inputs give zeros (`zeros_like`) instead of `None`
    /// (implies `allow_unused`).
    pub materialize_grads: bool,
}

/// [`grad`] with all options.
pub fn grad_with<T: Tensor>(
    outputs: &[Variable<T>],
    inputs: &[Variable<T>],
    grad_outputs: &[Option<Variable<T>>],
    opts: GradOptions,
) -> Result<Vec<Option<Variable<T>>>, AutogradError> {
    if inputs.is_empty() {
        return Err(AutogradError::EmptyInputs { function: "grad" });
    }
    let roots = make_roots(outputs, grad_outputs)?;
    let mut captures = Vec::with_capacity(inputs.len());
    for v in inputs {
        captures.push(
            v.gradient_edge()
                .ok_or(AutogradError::InputDoesNotRequireGrad)?,
        );
    }
    let mut res = run(
        &roots,
        Targets::Capture(&captures),
        opts.retain_graph.unwrap_or(opts.create_graph),
        opts.create_graph,
    )?;
    for (r, v) in res.iter_mut().zip(inputs) {
        if r.is_none() {
            if opts.materialize_grads {
                *r = Some(Variable::from_data(v.with_data(T::zeros_like)));
            } else if !opts.allow_unused {
                return Err(AutogradError::UnusedInput);
            }
        }
    }
    Ok(res)
}

/// What a pass computes gradients for.
enum Targets<'a, T: Tensor> {
    /// `backward()`: every leaf reached.
    All,
    /// `grad()`: these edges' gradients are returned; nothing is accumulated.
    Capture(&'a [Edge<T>]),
    /// `backward(inputs=...)`: only these edges' vertices run (a leaf
    /// accumulates, a node runs its hooks, retained gradient and itself).
    Accumulate(&'a [Edge<T>]),
}

impl<T: Tensor> Clone for Targets<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Tensor> Copy for Targets<'_, T> {}

/// Root edges with their seed gradients.
type Roots<T> = Vec<(Edge<T>, Option<Variable<T>>)>;

fn make_roots<T: Tensor>(
    tensors: &[Variable<T>],
    grads: &[Option<Variable<T>>],
) -> Result<Roots<T>, AutogradError> {
    if !grads.is_empty() && grads.len() != tensors.len() {
        return Err(AutogradError::GradOutputsLength {
            tensors: tensors.len(),
            grads: grads.len(),
        });
    }
    let mut seeds = Vec::with_capacity(tensors.len());
    for (i, t) in tensors.iter().enumerate() {
        let g = match grads.get(i).cloned().flatten() {
            Some(g) => {
                let (gs, os) = (g.shape(), t.shape());
                if gs != os {
                    return Err(AutogradError::GradOutputShape {
                        index: i,
                        grad: gs,
                        output: os,
                    });
                }
                Some(g)
            }
            None if t.requires_grad() => {
                let ones = t.with_data(|d| (d.numel() == 1).then(|| d.ones_like()));
                Some(Variable::from_data(
                    ones.ok_or(AutogradError::NonScalarImplicitGrad)?,
                ))
            }
            None => None,
        };
        seeds.push(g);
    }
    let mut roots = Vec::with_capacity(tensors.len());
    for (i, (t, g)) in tensors.iter().zip(seeds).enumerate() {
        let edge = t
            .gradient_edge()
            .ok_or(AutogradError::DoesNotRequireGrad { index: i })?;
        roots.push((edge, g));
    }
    Ok(roots)
}

/// Multiplicative hash for addresses (the std SipHash costs more than the
/// rest of a backward step on small tensors).
#[derive(Default)]
struct PtrHasher(u64);

impl Hasher for PtrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64 ^ self.0.rotate_left(8));
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        let h = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}

type PtrMap<V> = HashMap<usize, V, BuildHasherDefault<PtrHasher>>;

enum Vertex<'a, T: Tensor> {
    /// A node, by the edge's reference to it (its apply runs as that node: `run_as`).
    Node(&'a NodeRef<T>),
    Leaf(&'a Variable<T>),
}

impl<T: Tensor> Clone for Vertex<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Tensor> Copy for Vertex<'_, T> {}

impl<'a, T: Tensor> Vertex<'a, T> {
    fn of(edge: &'a Edge<T>) -> (Self, usize) {
        match edge {
            Edge::Node { node, input_nr } => (Vertex::Node(node), *input_nr as usize),
            Edge::Leaf(v) => (Vertex::Leaf(v), 0),
        }
    }

    fn slot(&self) -> &'a AtomicU64 {
        match self {
            Vertex::Node(n) => &n.cell().task_slot,
            Vertex::Leaf(v) => &v.0.rare().task_slot,
        }
    }

    fn key(&self) -> usize {
        match self {
            Vertex::Node(n) => n.cell() as *const CellInfo<T> as *const u8 as usize,
            Vertex::Leaf(v) => v.inner_ptr(),
        }
    }

    fn num_inputs(&self) -> usize {
        match self {
            Vertex::Node(n) => n.cell().meta.len(),
            Vertex::Leaf(_) => 1,
        }
    }

    /// Execution priority: the larger runs first. Topological depth first
    /// (a consumer always outranks what it consumes), then the sequence
    /// number as in PyTorch (leaves, PyTorch's `AccumulateGrad`, last among
    /// equals... they have depth 0, below every node).
    fn priority(&self) -> (u64, u64) {
        match self {
            Vertex::Node(n) => (u64::from(n.topo()), n.cell().seq),
            Vertex::Leaf(_) => (0, u64::MAX),
        }
    }
}

struct VState<'a, T: Tensor, G: 'static> {
    vertex: Vertex<'a, T>,
    claimed: bool,
    /// Run next without being found by anyone (see [`Task::deliver_direct`]): like a
    /// claimed state, free again once it ran.
    direct: bool,
    deps: u32,
    exec: bool,
    capture: bool,
    /// A `backward(inputs=...)` target: runs even if nothing below it must.
    needed: bool,
    buffer: OptList<G, 2>,
}

/// Per-call state. Each vertex gets an index into `states`; the index is
/// found through the vertex's own `task_slot` (claimed with one CAS), or
/// through `index` when another thread's backward holds that vertex.
struct Task<'a, T: Tensor, G: 'static> {
    id: u64,
    index: PtrMap<u32>,
    states: Vec<VState<'a, T, G>>,
    ready: BinaryHeap<((u64, u64), u32)>,
    /// `backward` without captures: vertices are found while running (no
    /// dependency pass), in decreasing `priority`, which is a valid order.
    lazy: bool,
    /// Vertices still claimed, gradient buffers not yet taken: when both are
    /// zero, dropping the task does not walk its states.
    claimed_left: u32,
    buffers_left: u32,
    /// The only ready vertex when `ready` is empty: a chain of single-input
    /// nodes never touches the heap.
    next: Option<u32>,
    stack: Vec<u32>,
    /// `lazy` only: states of vertices that ran and were claimed by this
    /// task, free for the next vertex found (nothing reaches a vertex after
    /// it ran). A chain's backward then uses two states instead of one per
    /// node: measured on the chain bench, the states of a 60,000-node graph
    /// (4 MB, allocated anew each pass above the cached size) were a share
    /// of the backward pass's memory traffic.
    free: Vec<u32>,
}

static NEXT_TASK_ID: AtomicU32 = AtomicU32::new(1);

impl<T: Tensor, G: 'static> Drop for Task<'_, T, G> {
    fn drop(&mut self) {
        if self.claimed_left > 0 {
            for st in &self.states {
                if st.claimed {
                    st.vertex.slot().store(0, Ordering::Release);
                }
            }
        }
        if self.buffers_left == 0 {
            // Every gradient buffer was taken, so every state holds an empty
            // inline list and nothing else that needs dropping: skip the walk.
            forget_elements(&mut self.states);
        }
        // Keep the buffers for the next backward on this thread (a training
        // loop runs graphs of one size again and again), up to a size: a
        // thread should not hold megabytes for the rest of its life, and a
        // large block kept in the heap slows the allocations of everything
        // else (measured: the chain benchmark's tape, 20-50% slower).
        if self.states.capacity() > MAX_CACHED_STATES {
            return;
        }
        self.states.clear();
        self.index.clear();
        self.ready.clear();
        self.stack.clear();
        self.free.clear();
        let bufs = TaskBuffers::<T, G> {
            states: recycle(std::mem::take(&mut self.states)),
            index: std::mem::take(&mut self.index),
            ready: std::mem::take(&mut self.ready),
            stack: std::mem::take(&mut self.stack),
            free: std::mem::take(&mut self.free),
        };
        let _ = TASK_BUFFERS.try_with(|c| {
            let mut c = c.borrow_mut();
            if c.is_none() {
                *c = Some(Box::new(bufs));
            }
        });
    }
}

/// Largest task (in vertices) whose buffers a thread keeps (about 1 MiB).
const MAX_CACHED_STATES: usize = 16_384;

/// The allocations of a finished task, reused by the next one on the thread.
struct TaskBuffers<T: Tensor, G: 'static> {
    states: Vec<VState<'static, T, G>>,
    index: PtrMap<u32>,
    ready: BinaryHeap<((u64, u64), u32)>,
    stack: Vec<u32>,
    free: Vec<u32>,
}

thread_local! {
    static TASK_BUFFERS: std::cell::RefCell<Option<Box<dyn std::any::Any>>> =
        const { std::cell::RefCell::new(None) };
}

impl<'a, T: Tensor, G: Grad<T>> Task<'a, T, G> {
    fn new() -> Self {
        let mut id = NEXT_TASK_ID.fetch_add(1, Ordering::Relaxed);
        if id == 0 {
            id = NEXT_TASK_ID.fetch_add(1, Ordering::Relaxed);
        }
        let cached = TASK_BUFFERS
            .try_with(|c| {
                let mut c = c.borrow_mut();
                match c.take().map(|b| b.downcast::<TaskBuffers<T, G>>()) {
                    Some(Ok(b)) => Some(b),
                    Some(Err(other)) => {
                        *c = Some(other);
                        None
                    }
                    None => None,
                }
            })
            .ok()
            .flatten();
        let b = cached.map(|b| *b).unwrap_or_else(|| TaskBuffers {
            states: Vec::new(),
            index: PtrMap::default(),
            ready: BinaryHeap::new(),
            stack: Vec::new(),
            free: Vec::new(),
        });
        Task {
            id: id as u64,
            index: b.index,
            states: recycle(b.states),
            ready: b.ready,
            lazy: false,
            claimed_left: 0,
            buffers_left: 0,
            next: None,
            stack: b.stack,
            free: b.free,
        }
    }

    #[inline]
    fn find(&self, v: &Vertex<'a, T>) -> Option<u32> {
        let cur = v.slot().load(Ordering::Acquire);
        if cur >> 32 == self.id {
            return Some(cur as u32);
        }
        if self.index.is_empty() {
            return None;
        }
        self.index.get(&v.key()).copied()
    }

    fn insert(&mut self, v: Vertex<'a, T>) -> (u32, bool) {
        if let Some(i) = self.find(&v) {
            return (i, false);
        }
        let n = self.new_state(v, false, false);
        let claimed = v
            .slot()
            .compare_exchange(
                0,
                self.id << 32 | n as u64,
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok();
        if claimed {
            self.states[n as usize].claimed = true;
            self.claimed_left += 1;
        } else {
            self.index.insert(v.key(), n);
        }
        (n, true)
    }

    /// A state for vertex `v`: a free one (of a vertex that ran) or a new one.
    fn new_state(&mut self, v: Vertex<'a, T>, claimed: bool, direct: bool) -> u32 {
        if let Some(i) = self.free.pop() {
            // The state of a vertex that ran: its buffer is already empty
            // (reset after the run), the rest is set anew.
            let st = &mut self.states[i as usize];
            st.vertex = v;
            (st.claimed, st.direct) = (claimed, direct);
            st.deps = 0;
            (st.exec, st.capture, st.needed) = (true, false, false);
            return i;
        }
        self.states.push(VState {
            vertex: v,
            claimed,
            direct,
            deps: 0,
            exec: true,
            capture: false,
            needed: false,
            buffer: OptList::new(),
        });
        self.states.len() as u32 - 1
    }

    /// Hands `grad` to the vertex of `edge` and makes it the next to run, without
    /// claiming or indexing it, when nothing else can reach it: a lazy pass whose ready
    /// set is empty after a vertex with this one edge ran (every vertex discovered so far
    /// has run, so whatever else could deliver to this vertex would have to be reached
    /// through it, which a graph without cycles rules out). `false` otherwise (the caller
    /// delivers as usual). A chain of single-input nodes runs through here: measured on
    /// the chain bench, finding, claiming and queueing each vertex was about a fifth of
    /// the backward pass's instructions.
    fn deliver_direct(&mut self, edge: &'a Edge<T>, grad: &mut Option<G>) -> bool {
        if !self.direct_possible() {
            return false;
        }
        let (v, nr) = Vertex::of(edge);
        let i = self.new_state(v, false, true);
        hand_in(
            &mut self.states[i as usize].buffer,
            v.num_inputs(),
            nr,
            grad,
        );
        self.buffers_left += 1;
        self.next = Some(i);
        true
    }

    /// Whether every vertex found so far has run (a lazy pass with nothing ready): then
    /// the one input of a node that just ran can be reached by nothing else.
    #[inline]
    fn direct_possible(&self) -> bool {
        self.lazy && self.next.is_none() && self.ready.is_empty()
    }

    fn lookup(&self, edge: &'a Edge<T>) -> Option<u32> {
        self.find(&Vertex::of(edge).0)
    }

    fn deliver(&mut self, edge: &'a Edge<T>, grad: &mut Option<G>) {
        let (v, nr) = Vertex::of(edge);
        let i = if self.lazy {
            let (i, new) = self.insert(v);
            if new {
                self.push_ready(i);
            }
            i
        } else {
            let Some(i) = self.find(&v) else {
                return;
            };
            i
        };
        let st = &mut self.states[i as usize];
        if st.buffer.is_empty() {
            st.buffer.set_none_len(st.vertex.num_inputs());
            self.buffers_left += 1;
        }
        if grad.is_some()
            && let Some(slot) = st.buffer.get_mut(nr)
        {
            match slot.take() {
                None => *slot = grad.take(),
                Some(old) => *slot = grad.take().map(|g| G::sum(old, &g)),
            }
        }
        if !self.lazy {
            st.deps -= 1;
            if st.deps == 0 && (st.exec || st.capture) {
                self.push_ready(i);
            }
        }
    }

    fn push_ready(&mut self, i: u32) {
        if self.next.is_none() && self.ready.is_empty() {
            self.next = Some(i);
            return;
        }
        if let Some(j) = self.next.take() {
            let key = self.states[j as usize].vertex.priority();
            self.ready.push((key, j));
        }
        let key = self.states[i as usize].vertex.priority();
        self.ready.push((key, i));
    }

    /// Claims every vertex reachable from `roots` and counts the edges into
    /// each (PyTorch's `compute_dependencies`).
    fn count_dependencies(&mut self, roots: &'a [(Edge<T>, Option<Variable<T>>)]) {
        let mut stack = std::mem::take(&mut self.stack);
        for (edge, _) in roots {
            let (i, new) = self.insert(Vertex::of(edge).0);
            if new {
                stack.push(i);
            }
            self.states[i as usize].deps += 1;
        }
        while let Some(i) = stack.pop() {
            if let Vertex::Node(node) = self.states[i as usize].vertex {
                for edge in node.cell().edges.iter().flatten() {
                    let (j, new) = self.insert(Vertex::of(edge).0);
                    if new {
                        stack.push(j);
                    }
                    self.states[j as usize].deps += 1;
                }
            }
        }
        self.stack = stack;
    }

    /// `grad()` and `backward(inputs)`: counts the dependencies of every
    /// reachable vertex and marks which must run to reach the targets
    /// (PyTorch's `compute_dependencies` and `init_to_execute`). Returns
    /// `(vertex, input slot, position in the captures)` for `grad()`.
    fn init_to_execute(
        &mut self,
        roots: &'a [(Edge<T>, Option<Variable<T>>)],
        targets: Targets<'a, T>,
    ) -> Vec<(u32, usize, usize)> {
        let mut slots = Vec::new();
        let (edges, capture) = match targets {
            Targets::All => return slots,
            Targets::Capture(caps) => (caps, true),
            Targets::Accumulate(inputs) => (inputs, false),
        };
        self.count_dependencies(roots);
        for (pos, edge) in edges.iter().enumerate() {
            if let Some(i) = self.lookup(edge) {
                let st = &mut self.states[i as usize];
                if capture {
                    slots.push((i, edge.input_nr(), pos));
                    st.capture = true;
                } else {
                    st.needed = true;
                }
            }
        }
        mark_needed(self);
        slots
    }

    /// The ready vertex with the highest priority.
    fn pop_ready(&mut self) -> Option<u32> {
        self.next
            .take()
            .or_else(|| self.ready.pop().map(|(_, i)| i))
    }
}

thread_local! {
    static RETAINING_GRAPH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the backward pass running on this thread keeps the graph (`retain_graph`, or
/// `create_graph` without it): PyTorch's `retain_variables` in derivative formulas. A
/// hand-written node's `apply` asks it to learn whether its saved state is needed again.
/// `false` outside backward.
pub fn is_retaining_graph() -> bool {
    RETAINING_GRAPH.with(|c| c.get())
}

/// Restores the previous `retain_graph` flag (backward passes can nest, e.g. from hooks).
struct RetainGuard(bool);

impl Drop for RetainGuard {
    fn drop(&mut self) {
        RETAINING_GRAPH.with(|c| c.set(self.0));
    }
}

/// Runs a pass: with `Variable` gradients under `create_graph` (the formulas record the
/// graph of the gradients), with raw tensors otherwise (`grad.rs`).
fn run<'a, T: Tensor>(
    roots: &'a [(Edge<T>, Option<Variable<T>>)],
    targets: Targets<'a, T>,
    keep_graph: bool,
    create_graph: bool,
) -> Result<Vec<Option<Variable<T>>>, AutogradError> {
    // Counts other threads dropped for this thread's nodes are merged first.
    crate::mem::drain_merges();
    let _mode = set_grad_enabled(create_graph);
    let _retain = RetainGuard(RETAINING_GRAPH.with(|c| c.replace(keep_graph)));
    if create_graph {
        run_with::<T, Variable<T>>(roots, targets, keep_graph, true)
    } else {
        run_with::<T, T>(roots, targets, keep_graph, false)
    }
}

/// What a pass keeps besides its task: where captured gradients go (`grad()`), the list
/// a node writes its gradients into (reused node after node), and the pass's options.
struct Pass<T: Tensor, G> {
    /// `(vertex, input slot, position in captured)` of each `grad()` input.
    slots: Vec<(u32, usize, usize)>,
    /// The hooks of the node running (`None` for a node without hooks).
    hooks: Option<HooksSnapshot<T>>,
    captured: Vec<Option<Variable<T>>>,
    out: OptList<G, 2>,
    keep_graph: bool,
    create_graph: bool,
}

fn run_with<'a, T: Tensor, G: Grad<T>>(
    roots: &'a [(Edge<T>, Option<Variable<T>>)],
    targets: Targets<'a, T>,
    keep_graph: bool,
    create_graph: bool,
) -> Result<Vec<Option<Variable<T>>>, AutogradError> {
    let mut task = Task::<T, G>::new();
    // backward(): no dependency pass. Vertices are found as gradients reach
    // them and run in decreasing (depth, sequence number) order: every
    // consumer of a vertex outranks it, so all its gradients are in when it
    // runs. grad() and backward(inputs) count dependencies (and mark what
    // must run), as PyTorch.
    task.lazy = matches!(targets, Targets::All);
    let slots = task.init_to_execute(roots, targets);
    let n_captures = match targets {
        Targets::Capture(caps) => caps.len(),
        _ => 0,
    };
    // 3. Execute.
    for (edge, g) in roots {
        task.deliver(edge, &mut g.clone().map(G::from_var));
    }
    let mut pass = Pass {
        slots,
        hooks: None,
        captured: vec![None; n_captures],
        out: OptList::new(),
        keep_graph,
        create_graph,
    };
    while let Some(i) = task.pop_ready() {
        let st = &mut task.states[i as usize];
        let (vertex, exec, capture) = (st.vertex, st.exec, st.capture);
        // Nothing is delivered to a vertex after it ran: give its slot back
        // now, while it is in cache, rather than in a second pass at the end.
        // Its state is then free for another vertex (`lazy`; a vertex held
        // by another task keeps its index in `index`).
        let reusable = task.lazy && (st.claimed || st.direct);
        if st.claimed {
            st.claimed = false;
            task.claimed_left -= 1;
            vertex.slot().store(0, Ordering::Release);
        }
        match vertex {
            Vertex::Node(node) => pass.run_node(&mut task, i, node, exec, capture)?,
            Vertex::Leaf(var) => pass.run_leaf(&mut task, i, var, exec, capture)?,
        }
        if reusable {
            task.free.push(i);
        }
    }
    Ok(pass.captured)
}

// The gradient buffer of the running vertex is used where it is (not moved out) and
// emptied before `buffers_left` counts it done: an error on the way leaves it counted, so
// dropping the task drops what it holds.
impl<T: Tensor, G: Grad<T>> Pass<T, G> {
    /// Runs node vertex `i`: tensor hooks, captures, the node, then its gradients on to
    /// the next vertices.
    fn run_node<'a>(
        &mut self,
        task: &mut Task<'a, T, G>,
        i: u32,
        node: &'a NodeRef<T>,
        exec: bool,
        capture: bool,
    ) -> Result<(), AutogradError> {
        let cell = node.cell();
        // The snapshot is kept in the pass, not in a local: a node without hooks after
        // one without hooks drops nothing (dropping a local's empty `Option` was a call
        // of 19 instructions per node on the chain bench).
        if node.has_hooks() {
            self.hooks = node.hooks_snapshot();
        } else if self.hooks.is_some() {
            self.hooks = None;
        }
        let hooks = self.hooks.as_ref();
        let buf = &mut task.states[i as usize].buffer;
        if let Some(h) = hooks {
            let mut vars = G::to_vars(std::mem::take(buf));
            run_tensor_hooks(h, &mut vars, self.create_graph).map_err(|e| anomaly_wrap(node, e))?;
            *buf = G::from_vars(vars);
        }
        if capture {
            for &(j, nr, pos) in &self.slots {
                if j == i {
                    self.captured[pos] = buf.get(nr).cloned().flatten().map(G::into_var);
                }
            }
        }
        if !exec {
            buf.reset(0);
            task.buffers_left -= 1;
            return Ok(());
        }
        self.out.reset(0);
        call_node(node, hooks, buf, &mut self.out, self.keep_graph)?;
        buf.reset(0);
        task.buffers_left -= 1;
        if let ([Some(edge)], [g]) = (&cell.edges[..], &mut self.out[..])
            && task.direct_possible()
        {
            let g = g.take();
            return self.run_chain(task, edge, g);
        }
        self.deliver_all(task, cell);
        Ok(())
    }

    /// Hands the gradients the node of `cell` returned (in `self.out`) to its edges.
    fn deliver_all<'a>(&mut self, task: &mut Task<'a, T, G>, cell: &'a CellInfo<T>) {
        for (edge, g) in cell.edges.iter().zip(self.out.iter_mut()) {
            if let Some(edge) = edge {
                task.deliver(edge, g);
            }
        }
    }

    /// Runs the chain below a node whose one gradient `g`, for `edge`, nothing else can
    /// reach ([`Task::direct_possible`]): each node without hooks in turn, its gradients in
    /// a local list rather than a vertex state, for as long as each has one input (which
    /// keeps the condition true: nothing is found or queued meanwhile). What ends the
    /// chain goes the usual way: a leaf or a node with hooks as a direct vertex
    /// ([`Task::deliver_direct`]), the gradients of a node with several inputs delivered.
    /// Measured on the chain bench: the vertex state of each node (taken, filled, run,
    /// given back) was about 50 instructions a node.
    fn run_chain<'a>(
        &mut self,
        task: &mut Task<'a, T, G>,
        mut edge: &'a Edge<T>,
        mut g: Option<G>,
    ) -> Result<(), AutogradError> {
        let mut buf = OptList::<G, 2>::new();
        while let Edge::Node { node, input_nr } = edge {
            let cell = node.cell();
            if node.has_hooks() {
                break;
            }
            hand_in(&mut buf, cell.meta.len(), *input_nr as usize, &mut g);
            self.out.reset(0);
            apply_node(node, &mut buf, &mut self.out, self.keep_graph)?;
            buf.reset(0);
            // The one-edge case checked here, where the lists are matched anyway.
            match (&cell.edges[..], &mut self.out[..]) {
                ([Some(next)], [o]) if fits_edge(next, o) => {
                    check_nan(node, std::slice::from_ref(o))?;
                    (edge, g) = (next, o.take());
                }
                _ => {
                    check_outputs(node, &mut self.out)?;
                    self.deliver_all(task, cell);
                    return Ok(());
                }
            }
        }
        let delivered = task.deliver_direct(edge, &mut g);
        debug_assert!(delivered, "nothing was found or queued in the chain");
        Ok(())
    }

    /// Runs leaf vertex `i`: its hooks, captures, then accumulation into `.grad`.
    fn run_leaf(
        &mut self,
        task: &mut Task<'_, T, G>,
        i: u32,
        var: &Variable<T>,
        exec: bool,
        capture: bool,
    ) -> Result<(), AutogradError> {
        let buf = &mut task.states[i as usize].buffer;
        let mut g = buf.take(0);
        buf.reset(0);
        task.buffers_left -= 1;
        if let Some(cur) = g.take() {
            // A snapshot: the hooks run with no lock held and stay
            // registered whatever they do (remove themselves, panic).
            let hooks = var.leaf_hooks();
            g = Some(if hooks.is_empty() {
                cur
            } else {
                G::from_var(hooks::run_tensor_hooks(&hooks, cur.into_var())?)
            });
        }
        if capture {
            for &(j, _, pos) in &self.slots {
                if j == i {
                    self.captured[pos] = g.clone().map(G::into_var);
                }
            }
        }
        if exec && let Some(g) = g {
            G::accumulate(var, g);
        }
        Ok(())
    }
}

/// Makes `buf` a vertex's gradient list of `len` slots holding the one gradient `g` in
/// slot `nr` (a direct vertex's, or a chain node's in `run_chain`).
#[inline]
fn hand_in<G>(buf: &mut OptList<G, 2>, len: usize, nr: usize, g: &mut Option<G>) {
    buf.set_none_len(len);
    if let Some(slot) = buf.get_mut(nr) {
        *slot = g.take();
    }
}

/// exec = a target of `backward(inputs)`, or some child must receive a
/// gradient (it runs or captures).
fn mark_needed<'a, T: Tensor, G: Grad<T>>(task: &mut Task<'a, T, G>) {
    let n = task.states.len();
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut indeg = vec![0u32; n];
    for (i, ch) in children.iter_mut().enumerate() {
        if let Vertex::Node(node) = task.states[i].vertex {
            for edge in node.cell().edges.iter().flatten() {
                if let Some(j) = task.lookup(edge) {
                    ch.push(j);
                    indeg[j as usize] += 1;
                }
            }
        }
    }
    let mut order = Vec::with_capacity(n);
    let mut queue: Vec<u32> = (0..n as u32).filter(|&i| indeg[i as usize] == 0).collect();
    while let Some(i) = queue.pop() {
        order.push(i);
        for &j in &children[i as usize] {
            indeg[j as usize] -= 1;
            if indeg[j as usize] == 0 {
                queue.push(j);
            }
        }
    }
    let mut should = vec![false; n];
    for &i in order.iter().rev() {
        let st = &task.states[i as usize];
        let exec = st.needed || children[i as usize].iter().any(|&j| should[j as usize]);
        let st = &mut task.states[i as usize];
        st.exec = exec;
        should[i as usize] = exec || st.capture;
    }
}

fn retain_into<T: Tensor>(var: &Variable<T>, g: &Variable<T>, create_graph: bool) {
    let old = var.grad();
    let new = match old {
        None if create_graph => g.clone(),
        None => Variable::from_data(g.data()),
        Some(old) => crate::ops::add(&old, g),
    };
    var.set_grad(Some(new));
}

/// A node's tensor hooks (on the gradients of its outputs), then the
/// retained gradients, as PyTorch's `call_tensor_pre_hooks`.
fn run_tensor_hooks<T: Tensor>(
    h: &HooksSnapshot<T>,
    buf: &mut VariableList<T>,
    create_graph: bool,
) -> Result<(), AutogradError> {
    for (nr, hook) in &h.tensor_pre {
        if let Some(slot) = buf.get_mut(*nr)
            && let Some(g) = slot.take()
        {
            *slot = Some(hooks::run_tensor_hooks(std::slice::from_ref(hook), g)?);
        }
    }
    for (nr, weak) in &h.retain {
        if let (Some(Some(g)), Some(inner)) = (buf.get(*nr), weak.upgrade()) {
            retain_into(&Variable(inner), g, create_graph);
        }
    }
    Ok(())
}

fn node_name<T: Tensor>(this: &NodeRef<T>) -> String {
    this.lock().name().to_string()
}

fn anomaly_wrap<T: Tensor>(this: &NodeRef<T>, mut e: AutogradError) -> AutogradError {
    if let AutogradError::VersionMismatch {
        output_of: Some((_, name)),
        ..
    } = &mut e
        && name.is_empty()
    {
        *name = node_name(this);
    }
    if !is_anomaly_enabled() || matches!(e, AutogradError::Anomaly { .. }) {
        return e;
    }
    AutogradError::Anomaly {
        node: node_name(this),
        forward_trace: this.forward_trace(),
        source: Box::new(e),
    }
}

/// Runs a node: its pre-hooks, `apply` ([`apply_node`]) and PyTorch's checks of what it
/// returned ([`check_outputs`]), its post-hooks.
fn call_node<T: Tensor, G: Grad<T>>(
    node_ref: &NodeRef<T>,
    hooks: Option<&HooksSnapshot<T>>,
    grads: &mut OptList<G, 2>,
    outputs: &mut OptList<G, 2>,
    keep_graph: bool,
) -> Result<(), AutogradError> {
    let mut post = None;
    if let Some(h) = hooks {
        let mut vars = G::to_vars(std::mem::take(grads));
        hooks::run_pre_hooks(&h.pre, &mut vars).map_err(|e| anomaly_wrap(node_ref, e))?;
        post = (!h.post.is_empty()).then(|| (h, vars.clone()));
        *grads = G::from_vars(vars);
    }
    apply_node(node_ref, grads, outputs, keep_graph)?;
    check_outputs(node_ref, outputs)?;
    if let Some((h, inputs)) = post {
        let mut vars = G::to_vars(std::mem::take(outputs));
        hooks::run_post_hooks(&h.post, &mut vars, &inputs)
            .map_err(|e| anomaly_wrap(node_ref, e))?;
        *outputs = G::from_vars(vars);
    }
    Ok(())
}

/// The node's `apply` under its lock, its saved variables released unless the graph is
/// kept; an error is wrapped with the anomaly trace.
#[inline(always)]
fn apply_node<T: Tensor, G: Grad<T>>(
    node_ref: &NodeRef<T>,
    grads: &mut OptList<G, 2>,
    outputs: &mut OptList<G, 2>,
    keep_graph: bool,
) -> Result<(), AutogradError> {
    let mut apply = || G::apply(&mut *node_ref.lock(), grads, outputs, !keep_graph);
    // As the node when its own saved outputs must reach it (`run_as`).
    let result = if node_ref.own_outputs() {
        node_ref.run_as(apply)
    } else {
        apply()
    };
    result.map_err(|e| anomaly_wrap(node_ref, e))
}

/// PyTorch's checks of a node's gradients: count, shapes and dtypes ([`validate`]),
/// and NaNs in anomaly mode ([`check_nan`]).
#[inline(always)]
fn check_outputs<T: Tensor, G: Grad<T>>(
    this: &NodeRef<T>,
    outputs: &mut OptList<G, 2>,
) -> Result<(), AutogradError> {
    validate(this, outputs).map_err(|e| anomaly_wrap(this, e))?;
    check_nan(this, outputs)
}

/// In anomaly mode, PyTorch's error for a NaN in one of `outputs`.
#[inline(always)]
fn check_nan<T: Tensor, G: Grad<T>>(
    this: &NodeRef<T>,
    outputs: &[Option<G>],
) -> Result<(), AutogradError> {
    if !is_anomaly_enabled() {
        return Ok(());
    }
    for (i, g) in outputs.iter().enumerate() {
        if let Some(g) = g
            && g.with_data(T::has_nan)
        {
            let e = AutogradError::NanInGradient {
                node: node_name(this),
                index: i,
            };
            return Err(anomaly_wrap(this, e));
        }
    }
    Ok(())
}

/// Checks `outputs` against the node's edges: one gradient per edge, each of its
/// input's shape and dtype. The check is inlined and the error built out of line
/// ([`invalid_gradients`]). Measured on the chain bench: as one function it was
/// 86 instructions a node, a third of them saving and restoring registers for the
/// error paths.
#[inline(always)]
fn validate<T: Tensor, G: Grad<T>>(
    this: &NodeRef<T>,
    outputs: &mut OptList<G, 2>,
) -> Result<(), AutogradError> {
    let (edges, grads) = (&this.cell().edges[..], &outputs[..]);
    if edges.len() == grads.len() && edges.iter().zip(grads).all(|(e, g)| fits(e, g)) {
        return Ok(());
    }
    adjust_gradients(this, outputs);
    let (edges, grads) = (&this.cell().edges[..], &outputs[..]);
    if edges.len() == grads.len() && edges.iter().zip(grads).all(|(e, g)| fits(e, g)) {
        return Ok(());
    }
    Err(invalid_gradients(this, outputs))
}

/// What PyTorch's `validate_outputs` does with a gradient that does not fit its input: one
/// of a shape the input's shape broadcasts to is summed to the input's shape, one of another
/// dtype converted to the input's dtype (when the tensor type provides
/// [`Tensor::sum_to`] / [`Tensor::to_dtype`]). Whatever still does not fit is refused by the
/// caller with PyTorch's error.
#[cold]
#[inline(never)]
fn adjust_gradients<T: Tensor, G: Grad<T>>(this: &NodeRef<T>, outputs: &mut OptList<G, 2>) {
    let cell = this.cell();
    if outputs.len() != cell.edges.len() {
        return;
    }
    for (edge, g) in cell.edges.iter().zip(outputs.iter_mut()) {
        let (Some(edge), Some(grad)) = (edge, g.as_mut()) else {
            continue;
        };
        if fits_edge(edge, &Some(grad.clone())) {
            continue;
        }
        let Some(expected) = edge_meta(edge) else {
            continue;
        };
        let got = grad.with_data(TensorMeta::of);
        if got.shape() != expected.shape()
            && broadcasts_to(expected.shape(), got.shape())
            && let Some(r) = grad.sum_to(expected.shape())
        {
            *grad = r;
        }
        let dtype = grad.with_data(|d| d.dtype());
        if !same_dtype(dtype, expected.dtype())
            && let Some(r) = grad.to_dtype(expected.dtype())
        {
            *grad = r;
        }
    }
}

/// The shape and dtype the input behind `edge` has.
fn edge_meta<T: Tensor>(edge: &Edge<T>) -> Option<TensorMeta> {
    match edge {
        Edge::Node { node, input_nr } => node.cell().meta.get(*input_nr as usize),
        Edge::Leaf(v) => Some(v.with_data(TensorMeta::of)),
    }
}

/// Whether `from` broadcasts to `to` (PyTorch's `is_expandable_to`): aligned from the
/// last dimension, each size of `from` is 1 or equal to `to`'s.
fn broadcasts_to(from: &[usize], to: &[usize]) -> bool {
    from.len() <= to.len()
        && from
            .iter()
            .rev()
            .zip(to.iter().rev())
            .all(|(f, t)| *f == 1 || f == t)
}

/// Whether gradient `g` (if any) may flow along `edge` (if any).
#[inline(always)]
fn fits<T: Tensor, G: Grad<T>>(edge: &Option<Edge<T>>, g: &Option<G>) -> bool {
    edge.as_ref().is_none_or(|e| fits_edge(e, g))
}

/// Whether gradient `g` (if any) may flow along `edge`.
#[inline(always)]
fn fits_edge<T: Tensor, G: Grad<T>>(edge: &Edge<T>, g: &Option<G>) -> bool {
    let Some(g) = g else {
        return true;
    };
    match edge {
        Edge::Node { node, input_nr } => {
            let meta = &node.cell().meta;
            g.with_data(|d| meta.matches(*input_nr as usize, d))
        }
        Edge::Leaf(v) => {
            let got = g.with_data(TensorMeta::of);
            v.with_data(|d| shape_ok(&got, d))
        }
    }
}

/// The error for `outputs` that [`validate`] refused.
#[cold]
#[inline(never)]
fn invalid_gradients<T: Tensor, G: Grad<T>>(
    this: &NodeRef<T>,
    outputs: &OptList<G, 2>,
) -> AutogradError {
    let cell = this.cell();
    if outputs.len() != cell.edges.len() {
        return AutogradError::InvalidGradientCount {
            node: node_name(this),
            expected: cell.edges.len(),
            got: outputs.len(),
        };
    }
    let (i, (edge, g)) = cell
        .edges
        .iter()
        .zip(outputs.iter())
        .enumerate()
        .find(|(_, (e, g))| !fits(e, g))
        .expect("validate found a gradient that does not fit");
    let (Some(edge), Some(g)) = (edge, g) else {
        unreachable!("a missing edge or gradient always fits")
    };
    invalid_gradient(this, i, edge, g.with_data(TensorMeta::of))
}

/// The error for gradient `i` of node `this` whose shape or dtype is not its input's.
fn invalid_gradient<T: Tensor>(
    this: &NodeRef<T>,
    i: usize,
    edge: &Edge<T>,
    got: TensorMeta,
) -> AutogradError {
    let expected = match edge {
        Edge::Node { node, input_nr } => node
            .cell()
            .meta
            .get(*input_nr as usize)
            .unwrap_or_else(|| got.clone()),
        Edge::Leaf(v) => v.with_data(TensorMeta::of),
    };
    if got.shape() != expected.shape() {
        return AutogradError::InvalidGradientShape {
            node: node_name(this),
            index: i,
            got: got.shape().to_vec(),
            expected: expected.shape().to_vec(),
        };
    }
    AutogradError::InvalidGradientDtype {
        node: node_name(this),
        index: i,
        got: got.dtype().to_string(),
        expected: expected.dtype().to_string(),
    }
}

fn shape_ok<T: Tensor>(m: &TensorMeta, t: &T) -> bool {
    m.shape() == t.shape() && same_dtype(m.dtype(), t.dtype())
}
