//! The backward engine: [`backward`] and [`grad`].
//!
//! Single-threaded per call, on the calling thread (several threads may run
//! their own backward passes at once). A vertex runs once all its gradients
//! are in; gradients that meet at the same input slot are summed
//! (differentiably under `create_graph`).
//!
//! Vertices run in PyTorch's order: the highest sequence number first, leaves as soon as
//! they are ready (`ready.rs`). `backward` on a graph recorded on one thread needs no pass
//! over the graph before it starts: a consumer then has a larger sequence number than
//! what it consumes, so running the vertices found so far in that order runs each one
//! after all of its consumers. `grad`, which must also know what lies between outputs and
//! inputs, and `backward` on other graphs count the edges into every reachable vertex
//! first, as PyTorch's engine does.
//!
//! By concern: this file has the entry points and the execution of a pass (the loop,
//! a node's run with its hooks, a chain run without vertex states, a leaf's
//! accumulation); `task.rs` the graph task (vertex states, their claims, the buffers
//! kept between passes); `ready.rs` the ready queue (delivering gradients, the order
//! vertices run in); `deps.rs` the dependency count of `grad()` and
//! `backward(inputs=...)`; `validate.rs` the checks of a node's gradients and the
//! errors; `grad.rs` what a gradient is during a pass (a variable or a raw tensor).
//! (The execution stays in this file: in its own module, rustc's codegen units put the
//! loop elsewhere and the chain bench measured 2% more instructions an op.)

mod deps;
mod grad;
mod heap;
mod ready;
mod task;
mod validate;

use std::sync::atomic::Ordering;

use crate::error::AutogradError;
use crate::hooks;
use crate::list::OptList;
use crate::mode::set_grad_enabled;
use crate::node::{CellInfo, Edge, HooksSnapshot, NodeRef, VariableList};
use crate::tensor::Tensor;
use crate::variable::Variable;
use deps::Targets;
use grad::Grad;
use ready::hand_in;
use task::{Task, Vertex};
use validate::{anomaly_wrap, check_nan, check_outputs, fits_edge};

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

thread_local! {
    /// The id of the backward pass running on this thread (0: none).
    static GRAPH_TASK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Ids of backward passes, unique in the process.
static NEXT_GRAPH_TASK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The id of the backward pass running on this thread (PyTorch's
/// `torch._C._current_graph_task_id()`), `None` outside backward: unique per call of
/// `backward`/`grad`, the same for every node that call runs. Saved-tensor hooks key
/// per-pass state on it (activation checkpointing recomputes once per pass).
pub fn current_graph_task_id() -> Option<u64> {
    Some(GRAPH_TASK.with(|c| c.get())).filter(|id| *id != 0)
}

/// Restores the previous pass's id (backward passes can nest).
struct GraphTaskGuard(u64);

impl Drop for GraphTaskGuard {
    fn drop(&mut self) {
        GRAPH_TASK.with(|c| c.set(self.0));
    }
}

/// Restores the previous `retain_graph` flag (backward passes can nest, e.g. from hooks).
struct RetainGuard(bool);

impl Drop for RetainGuard {
    fn drop(&mut self) {
        RETAINING_GRAPH.with(|c| c.set(self.0));
    }
}

/// Runs a pass: with `Variable` gradients under `create_graph` (the formulas record the
/// graph of the gradients), with raw tensors otherwise (`engine/grad.rs`).
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
    let id = NEXT_GRAPH_TASK.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let _task = GraphTaskGuard(GRAPH_TASK.with(|c| c.replace(id)));
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
    // backward() on a graph ordered by sequence number, with no hook on a leaf: no
    // dependency pass (`ready.rs`). Otherwise, and for grad() and backward(inputs), the
    // dependencies are counted (and what must run marked) first, as PyTorch does.
    task.lazy = matches!(targets, Targets::All) && lazy_possible(roots);
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

/// Whether a `backward()` from `roots` can run lazily (`ready.rs`): every root's graph
/// is ordered by sequence number, and no leaf ever had a hook.
fn lazy_possible<T: Tensor>(roots: &[(Edge<T>, Option<Variable<T>>)]) -> bool {
    !crate::node::leaf_hooks_registered()
        && roots.iter().all(|(edge, _)| match edge {
            Edge::Node { node, .. } => node.ordered(),
            Edge::Leaf(_) => true,
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{Node, record};
    use crate::ops::add;
    use crate::tensor::testing::{Val, val};
    use std::sync::{Arc, Mutex};

    #[test]
    fn raw_and_variable_passes_give_the_same_gradients() {
        // a = x + x, b = a + a, c = b + x: dc/dx = 5.
        let x = Variable::new(val(3.0), true);
        let a = add(&x, &x);
        let b = add(&a, &a);
        let c = add(&b, &x);
        let (outs, ins) = (std::slice::from_ref(&c), std::slice::from_ref(&x));
        let raw = grad(outs, ins, &[], Some(true), false, false).unwrap();
        let var = grad(outs, ins, &[], Some(true), true, false).unwrap();
        assert_eq!(raw[0].as_ref().unwrap().data(), val(5.0));
        assert_eq!(var[0].as_ref().unwrap().data(), val(5.0));
        assert!(x.grad().is_none(), "grad() accumulates nothing");
        c.backward().unwrap();
        assert_eq!(x.grad().unwrap().data(), val(5.0));
    }

    #[test]
    fn a_chain_runs_node_after_node_and_leaves_no_vertex_claimed() {
        let x = Variable::new(val(1.0), true);
        let one = Variable::from_data(val(1.0));
        let mut ys = vec![x.clone()];
        for _ in 0..50 {
            let y = add(ys.last().unwrap(), &one);
            ys.push(y);
        }
        ys.last().unwrap().backward().unwrap();
        assert_eq!(x.grad().unwrap().data(), val(1.0));
        for y in &ys[1..] {
            let f = y.grad_fn().unwrap();
            assert_eq!(f.cell().task_slot.load(Ordering::Relaxed), 0);
        }
    }

    #[test]
    fn a_graph_recorded_on_one_thread_runs_lazily_and_one_across_threads_does_not() {
        let x = Variable::new(val(1.0), true);
        let a = add(&x, &x);
        let b = add(&a, &x);
        assert!(a.grad_fn().unwrap().ordered() && b.grad_fn().unwrap().ordered());
        let root = |v: &Variable<Val>| vec![(v.gradient_edge().unwrap(), None)];
        // No leaf in this test binary has a hook (a unit test of hooks would set the
        // process's flag: then neither runs lazily, which the second check still sees).
        assert_eq!(
            lazy_possible(&root(&b)),
            !crate::node::leaf_hooks_registered()
        );
        // Recorded on a new thread, whose numbers start again at 0, over this thread's
        // nodes: its number is not larger than theirs.
        let a2 = a.clone();
        let c = std::thread::spawn(move || add(&a2, &a2)).join().unwrap();
        assert!(!c.grad_fn().unwrap().ordered());
        assert!(!lazy_possible(&root(&c)));
        // And neither is what is recorded over it, on any thread.
        let d = add(&c, &b);
        assert!(!d.grad_fn().unwrap().ordered());
        d.backward().unwrap();
        assert_eq!(x.grad().unwrap().data(), val(7.0));
    }

    /// A node that takes no sequence number, as PyTorch's `NotImplemented` node.
    struct Last;

    impl Node<Val> for Last {
        fn takes_last_sequence_nr() -> bool {
            true
        }
        fn name(&self) -> &str {
            "Last"
        }
        fn apply(&mut self, grads: VariableList<Val>) -> Result<VariableList<Val>, AutogradError> {
            Ok(grads)
        }
    }

    #[test]
    fn a_node_with_the_last_sequence_number_takes_none_and_runs_first() {
        let x = Variable::new(val(1.0), true);
        let a = add(&x, &x);
        let ([b], _) = record(Last, &[Some(&x)], [val(1.0)]);
        let c = add(&x, &x);
        let (sa, sc) = (
            a.grad_fn().unwrap().sequence_nr(),
            c.grad_fn().unwrap().sequence_nr(),
        );
        assert_eq!(b.grad_fn().unwrap().sequence_nr(), u64::MAX);
        assert_eq!(sc, sa + 1, "no number taken");
        // Over it, the graph is not ordered by sequence number: counted, not lazy.
        let d = add(&b, &c);
        assert!(!d.grad_fn().unwrap().ordered());
        let order = Arc::new(Mutex::new(Vec::new()));
        for (v, name) in [(&b, "last"), (&c, "c")] {
            let o = order.clone();
            v.grad_fn().unwrap().register_prehook(move |_| {
                o.lock().unwrap().push(name);
                Ok(())
            });
        }
        d.backward().unwrap();
        assert_eq!(*order.lock().unwrap(), ["last", "c"]);
    }

    /// A node that notes what `is_retaining_graph` says while it runs.
    struct Probe(Arc<Mutex<Vec<bool>>>);

    impl Node<Val> for Probe {
        fn name(&self) -> &str {
            "Probe"
        }
        fn apply(&mut self, grads: VariableList<Val>) -> Result<VariableList<Val>, AutogradError> {
            self.0.lock().unwrap().push(is_retaining_graph());
            Ok(grads)
        }
    }

    #[test]
    fn a_node_learns_whether_the_pass_keeps_the_graph() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let x = Variable::new(val(1.0), true);
        let ([y], _) = record(Probe(seen.clone()), &[Some(&x)], [val(1.0)]);
        y.backward_with(None, Some(true), false).unwrap();
        y.backward_with(None, None, true).unwrap();
        y.backward_with(None, Some(false), false).unwrap();
        assert_eq!(*seen.lock().unwrap(), [true, true, false]);
        assert!(!is_retaining_graph(), "false outside backward");
    }
}
