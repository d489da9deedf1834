//! Backward nodes ([`Node`]), the references to them ([`NodeRef`], [`NodeHandle`]:
//! the records and their reference counts are `mem`'s, `mem/node_ptr.rs`),
//! [`Edge`]s, hooks, and [`record`], which puts a node into the graph.

use std::any::Any;
use std::backtrace::Backtrace;
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use crate::error::AutogradError;
use crate::list::OptList;
use crate::mode::is_anomaly_enabled;
use crate::tensor::{Tensor, TensorMeta};
use crate::variable::{VarInner, Variable};

pub(crate) use crate::mem::NODE_COUNTERS;
use crate::mem::{
    self as rec, Erase, Kind, Locked, NewCell, NodeGuard, NodeRc, OutputRefs, Pending, VarWeak,
    WeakRc,
};
use crate::node_meta::NodeMeta;

mod edge;
mod extras;
mod hook;
mod record;
mod saved_state;

pub use edge::Edge;
pub use extras::HookId;
pub(crate) use extras::{HooksSnapshot, forget_extras, next_hook_id};
pub(crate) use hook::{
    Hook, PostHookFn, PreHookFn, TensorHookFn, leaf_hooks_registered, note_leaf_hook,
};
pub use record::{
    ERR_NO_JVP, NewOutputs, check_out, record, record_generated, record_inplace,
    record_inplace_generated, record_saving, record_vec, record_vec_generated, should_record,
};
pub use saved_state::SavedVariable;
pub(crate) use saved_state::{
    Hooked, Origin, OutputLink, SavedHooks, State, default_hooks, push_default_hooks,
    remove_default_hooks,
};

/// Gradients passed to and returned by [`Node::apply`]: one `Option<Variable<T>>`
/// per slot, `None` meaning an undefined (all-zero) gradient. Inline for up to
/// two entries. Build with [`variable_list!`](crate::variable_list).
pub type VariableList<T> = OptList<Variable<T>, 2>;

/// The gradients of a backward pass without `create_graph`, as raw tensors: [`Node::apply_raw`]
/// takes and returns them (no `Variable` per gradient).
pub type RawList<T> = OptList<T, 2>;

pub(crate) type EdgeList<T> = OptList<Edge<T>, 2>;

pub(crate) fn lock<X: ?Sized>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A backward function: the node a forward op leaves in the graph.
///
/// * [`apply`](Self::apply) receives one gradient per forward **output** of the
///   op (`grads.len()` = number of outputs recorded) and returns one gradient
///   per **next edge** (= per input passed to [`record`], in order), `None`
///   meaning "no gradient" (undefined, treated as zero, never allocated).
/// * The engine calls `apply` with grad mode **off** unless `create_graph` is
///   set; with `create_graph` grad mode is on, so a formula written with
///   differentiable ops on [`Variable`]s records its own graph and higher-order
///   gradients work.
/// * [`release_variables`](Self::release_variables) is called right after
///   `apply` unless `retain_graph`; it should [`reset`](SavedVariable::reset)
///   every [`SavedVariable`], so a second backward fails with PyTorch's
///   "Trying to backward through the graph a second time" message.
/// * [`visit_saved`](Self::visit_saved) lists the saved variables by name, for
///   [`to_dot`](crate::to_dot).
/// * A node type may be aligned to at most 32 bytes (a record keeps its node right
///   after a 32-byte header); recording one aligned to more fails to compile.
///
/// A user-written node is the equivalent of `torch.autograd.Function`. (The supertrait
/// `Run` is the runtime's: it is implemented for every node type, and there is nothing to
/// write for it.)
pub trait Node<T: Tensor>: Send + 'static + run::Run<T> {
    /// Whether the node takes no sequence number when it is recorded, and has the largest
    /// there is instead (`u64::MAX`), as PyTorch's `NotImplemented` node has: the engine
    /// then runs it as soon as it is ready, as PyTorch does. `false` for every other node.
    fn takes_last_sequence_nr() -> bool
    where
        Self: Sized,
    {
        false
    }
    /// The node's name, e.g. `"MulBackward0"`.
    fn name(&self) -> &str;
    /// Computes the gradients of the inputs from the gradients of the outputs.
    fn apply(&mut self, grads: VariableList<T>) -> Result<VariableList<T>, AutogradError>;
    /// [`apply`](Self::apply) on raw tensors, for a backward pass without `create_graph`
    /// (nothing records a graph then, so a gradient needs no `Variable`). It must compute
    /// what `apply` computes. `grads` holds the gradients of the node's outputs (take what
    /// you need); `out` arrives empty and receives one gradient per input (`out.reset(n)`,
    /// then assign): written in place, so large tensors are not moved around. The default
    /// wraps the gradients in variables, calls `apply` and unwraps the results; generated
    /// nodes implement it on raw tensors directly.
    fn apply_raw(
        &mut self,
        grads: &mut RawList<T>,
        out: &mut RawList<T>,
    ) -> Result<(), AutogradError> {
        let vars: VariableList<T> = grads
            .iter_mut()
            .map(|g| g.take().map(Variable::from_data))
            .collect();
        for g in self.apply(vars)? {
            out.push(g.map(|v| v.data()));
        }
        Ok(())
    }
    /// Frees saved variables (called after `apply` unless `retain_graph`).
    fn release_variables(&mut self) {}
    /// Calls `f(name, saved)` for every saved variable (for graph export).
    fn visit_saved(&self, _f: &mut dyn FnMut(&str, &SavedVariable<T>)) {}
    /// [`visit_saved`](Self::visit_saved) with mutable access (for
    /// [`NodeRef::register_saved_hooks`]); generated nodes implement both.
    fn visit_saved_mut(&mut self, _f: &mut dyn FnMut(&str, &mut SavedVariable<T>)) {}
}

/// What the engine calls on a node: `apply` and `release_variables` through one dynamic
/// call. A supertrait of [`Node`] implemented for every node type (so no one implements it
/// by hand, and it cannot be named outside the crate): its methods are generated for each
/// node type, which calls its own `apply_raw` and `release_variables` directly. Measured on
/// the chain bench: the second dynamic call was about 10 instructions a node.
pub(crate) mod run {
    use super::{Node, RawList, VariableList};
    use crate::error::AutogradError;
    use crate::tensor::Tensor;

    /// See the module documentation.
    pub trait Run<T: Tensor> {
        /// [`Node::apply_raw`], then [`Node::release_variables`] if `release` and it
        /// succeeded.
        fn run_raw(
            &mut self,
            grads: &mut RawList<T>,
            out: &mut RawList<T>,
            release: bool,
        ) -> Result<(), AutogradError>;
        /// [`Node::apply`], then [`Node::release_variables`] if `release` and it
        /// succeeded.
        fn run_vars(
            &mut self,
            grads: VariableList<T>,
            release: bool,
        ) -> Result<VariableList<T>, AutogradError>;
    }

    impl<T: Tensor, N: Node<T>> Run<T> for N {
        #[inline]
        fn run_raw(
            &mut self,
            grads: &mut RawList<T>,
            out: &mut RawList<T>,
            release: bool,
        ) -> Result<(), AutogradError> {
            let r = self.apply_raw(grads, out);
            if release && r.is_ok() {
                self.release_variables();
            }
            r
        }
        #[inline]
        fn run_vars(
            &mut self,
            grads: VariableList<T>,
            release: bool,
        ) -> Result<VariableList<T>, AutogradError> {
            let r = self.apply(grads);
            if release && r.is_ok() {
                self.release_variables();
            }
            r
        }
    }
}

/// A node's graph metadata: the part of its record every node type has (before the
/// node itself, in one arena allocation: `mem/node_ptr.rs`).
pub(crate) struct CellInfo<T: Tensor> {
    pub(crate) edges: EdgeList<T>,
    pub(crate) meta: NodeMeta,
    pub(crate) seq: u64,
    /// Claimed by the running graph task: `task id << 32 | vertex index`.
    pub(crate) task_slot: AtomicU64,
}

/// The kind of record (`mem`'s [`Kind`]) of the graph's nodes on tensor type `T`: the
/// record holds a [`CellInfo<T>`] and a node seen as a `dyn Node<T>`.
pub(crate) struct Graph<T>(PhantomData<fn() -> T>);

/// The node has hooks or an anomaly trace, kept outside the record ([`EXTRAS`]).
const HAS_EXTRAS: u8 = 2;
/// A hook was registered on the node (the engine then takes a snapshot).
const HAS_HOOKS: u8 = 4;

impl<T: Tensor> Kind for Graph<T> {
    type Info = CellInfo<T>;
    type Dyn = dyn Node<T>;
    const FREED_FLAG: u8 = HAS_EXTRAS;

    type Slot = Option<Edge<T>>;

    #[inline]
    fn slots(info: &mut CellInfo<T>) -> &mut [Option<Edge<T>>] {
        &mut info.edges
    }

    /// An edge's node, moved out (a leaf edge stays).
    #[inline]
    fn take_ref(e: &mut Option<Edge<T>>) -> Option<NodeRc<Self>> {
        if !matches!(e, Some(Edge::Node { .. })) {
            return None;
        }
        let Some(Edge::Node { node, .. }) = e.take() else {
            unreachable!("matched above")
        };
        Some(node.0)
    }

    fn freed(addr: usize) {
        forget_extras(addr);
    }
}

impl<T: Tensor, N: Node<T>> Erase<Graph<T>> for N {
    #[inline(always)]
    fn erase(node: &Locked<N>) -> &Locked<dyn Node<T>> {
        node
    }
}

/// A shared, type-erased reference to a node in the graph (PyTorch's
/// `std::shared_ptr<Node>`): what [`Variable::grad_fn`](crate::Variable::grad_fn)
/// returns and what [`Edge`](crate::Edge)s point to. Cheap to clone (one
/// atomic increment).
pub struct NodeRef<T: Tensor>(pub(crate) NodeRc<Graph<T>>);

impl<T: Tensor> Clone for NodeRef<T> {
    #[inline]
    fn clone(&self) -> Self {
        NodeRef(self.0.clone())
    }
}

impl<T: Tensor> NodeRef<T> {
    #[inline]
    pub(crate) fn cell(&self) -> &CellInfo<T> {
        self.0.info()
    }

    /// The version counter of output `k` (`k < NODE_COUNTERS`).
    #[inline]
    pub(crate) fn version_slot(&self, k: u32) -> &AtomicU32 {
        self.0.version_slot(k)
    }

    /// Whether every node below this one has a smaller sequence number than each node
    /// its edges come from (true for a graph recorded on one thread; sequence numbers
    /// count per thread, as in PyTorch). The lazy backward pass needs it
    /// (`engine/ready.rs`).
    #[inline]
    pub(crate) fn ordered(&self) -> bool {
        self.0.ordered()
    }

    /// Whether the node saved an output of its own (`record_saving`): the engine then
    /// runs its `apply` as the node ([`run_as`](rec::run_as)).
    #[inline]
    pub(crate) fn own_outputs(&self) -> bool {
        self.0.own_outputs()
    }

    /// The node's address: its identity while it lives.
    #[inline]
    pub(crate) fn addr(&self) -> usize {
        self.0.addr()
    }

    /// Locks the typed node, waiting while another thread holds it.
    #[inline]
    pub(crate) fn lock(&self) -> NodeGuard<'_, dyn Node<T>> {
        self.0.lock()
    }

    /// The typed node's lock, if it is free now.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<NodeGuard<'_, dyn Node<T>>> {
        self.0.try_lock()
    }

    pub(crate) fn downgrade(&self) -> WeakNode<T> {
        WeakNode(self.0.downgrade())
    }

    /// Runs `f` as this node: its own saved outputs reach it meanwhile.
    #[inline(always)]
    pub(crate) fn run_as<R>(&self, f: impl FnOnce() -> R) -> R {
        rec::run_as(&self.0, f)
    }

    /// Whether both refer to the same node.
    pub fn ptr_eq(&self, other: &NodeRef<T>) -> bool {
        self.0.ptr_eq(&other.0)
    }
}

/// A weak reference to a node: keeps its header (its outputs' version counters), not
/// the node (saved outputs refer to their own node this way, so that there is no cycle).
pub(crate) struct WeakNode<T: Tensor>(WeakRc<Graph<T>>);

impl<T: Tensor> Clone for WeakNode<T> {
    fn clone(&self) -> Self {
        WeakNode(self.0.clone())
    }
}

impl<T: Tensor> WeakNode<T> {
    /// The version counter of output `k` (`k < NODE_COUNTERS`).
    #[inline]
    pub(crate) fn version_slot(&self, k: u32) -> &AtomicU32 {
        self.0.version_slot(k)
    }

    /// A strong reference, if the node is still alive.
    pub(crate) fn upgrade(&self) -> Option<NodeRef<T>> {
        self.0.upgrade().map(NodeRef)
    }
}

/// A node's own saved output's way back to its node, without a count (`mem`'s
/// `OwnNode`): it reaches the node only while the node runs on this thread.
pub(crate) struct OwnNode<T: Tensor>(rec::OwnNode<Graph<T>>);

impl<T: Tensor> OwnNode<T> {
    /// The version counter of output `k` (`k < NODE_COUNTERS`), if the node runs.
    #[inline]
    pub(crate) fn version(&self, k: u32) -> Option<u32> {
        self.0.version(k)
    }

    /// A strong reference, if the node runs on this thread.
    pub(crate) fn upgrade(&self) -> Option<NodeRef<T>> {
        self.0.upgrade().map(NodeRef)
    }
}

/// Typed access to a node after it was put in the graph, returned by
/// [`record`](crate::record): the generated code uses it to save the op's
/// outputs (`handle.with(|n| n.result = SavedVariable::new(&out, true))`).
pub struct NodeHandle<T: Tensor, N: Node<T>>(rec::TypedRc<Graph<T>, N>);

impl<T: Tensor, N: Node<T>> NodeHandle<T, N> {
    /// Runs `f` with mutable access to the node (locks it). The node runs
    /// meanwhile: its own saved outputs unpack.
    pub fn with<R>(&self, f: impl FnOnce(&mut N) -> R) -> R {
        self.0.with(f)
    }

    /// The type-erased reference (what `grad_fn()` returns).
    pub fn node_ref(&self) -> NodeRef<T> {
        NodeRef(self.0.node_ref())
    }
}

thread_local! {
    static LIVE_NODES: Cell<isize> = const { Cell::new(0) };
    static SEQUENCE_NR: Cell<u64> = const { Cell::new(0) };
}

/// Debug counter: nodes created on this thread minus nodes dropped on this thread.
///
/// Thread-local so that tests running in parallel do not disturb each other
/// (and so that counting costs nothing measurable). A loop that builds and
/// frees graphs on one thread must bring it back to its starting value;
/// anything else is a leak (e.g. a reference cycle). A node this thread recorded
/// whose last reference went on another thread is freed by this thread (its
/// counts are merged here: at the next backward pass, record, or this call), so
/// it is subtracted here too.
pub fn live_nodes() -> isize {
    // Nodes whose last references other threads dropped are freed first.
    crate::mem::drain_merges();
    LIVE_NODES.with(Cell::get)
}

impl<T: Tensor> Drop for CellInfo<T> {
    fn drop(&mut self) {
        let _ = LIVE_NODES.try_with(|c| c.set(c.get() - 1));
    }
}

impl<T: Tensor> fmt::Debug for NodeRef<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} object at {:p}>", self.name(), self.cell())
    }
}

impl<T: Tensor> NodeRef<T> {
    /// The node's name (locks the node).
    pub fn name(&self) -> String {
        self.lock().name().to_string()
    }

    /// The name if the node is not locked right now.
    pub(crate) fn try_name(&self) -> Option<String> {
        self.try_lock().map(|n| n.name().to_string())
    }

    /// The next edges: one per input given to [`record`], `None` for inputs
    /// that are not differentiable or do not require grad.
    pub fn next_edges(&self) -> &[Option<Edge<T>>] {
        &self.cell().edges
    }

    /// Number of gradients `apply` receives (forward outputs recorded).
    pub fn num_inputs(&self) -> usize {
        self.cell().meta.len()
    }

    /// Shape and dtype of forward output `i` (a copy: the node keeps them packed).
    pub fn input_metadata(&self, i: usize) -> Option<TensorMeta> {
        self.cell().meta.get(i)
    }

    /// Creation order on the recording thread (the engine runs ready nodes
    /// with the highest sequence number first, like PyTorch).
    pub fn sequence_nr(&self) -> u64 {
        self.cell().seq
    }

    /// Calls [`Node::release_variables`] now.
    pub fn release_variables(&self) {
        self.lock().release_variables();
    }

    /// Backtrace of the forward call that created this node, if it was
    /// recorded with anomaly mode on.
    pub fn forward_trace(&self) -> Option<String> {
        let e = self.extras()?;
        e.anomaly.as_ref().map(|a| a.0.to_string())
    }

    /// `(name, shape)` of every saved variable (`None` shape once released). Slots that were
    /// never filled (a formula's input that needed no gradient) are left out.
    pub fn saved_tensors(&self) -> Vec<(String, Option<Vec<usize>>)> {
        let mut out = Vec::new();
        self.lock().visit_saved(&mut |name, sv| {
            if !sv.is_empty() {
                out.push((name.to_string(), sv.shape()));
            }
        });
        out
    }

    /// Runs `f` on the locked node (type-erased). The node runs meanwhile: its own saved
    /// outputs unpack.
    pub fn with_node<R>(&self, f: impl FnOnce(&mut dyn Node<T>) -> R) -> R {
        self.run_as(|| f(&mut *self.lock()))
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod sizes {
    use super::{CellInfo, Edge, Graph, SavedVariable};
    use crate::mem::record_layout;
    use crate::tensor::testing::Handle;

    #[test]
    fn a_record_is_a_32_byte_header_and_80_bytes_of_cell_before_its_node() {
        // The header: counts (16), the chunk offset, the flags, the lock's flag and the
        // depth (8), the version counters (8). The cell: edges (40: a thin node pointer
        // and an input number each), meta (16), sequence number and task slot (8 each),
        // then `mem`'s cast to the node type (8). With the flags and depth in the cell,
        // the dtype's length in its own word, fat node pointers and a pointer to hooks, a
        // node with nothing in it took 144.
        type One = Handle<u32>;
        type Two = Handle<[usize; 2]>;
        assert_eq!(std::mem::size_of::<Edge<One>>(), 16);
        assert_eq!(std::mem::size_of::<Option<Edge<One>>>(), 16);
        assert_eq!(std::mem::size_of::<CellInfo<One>>(), 72);
        assert_eq!(record_layout::<Graph<One>, ()>(), (112, 32));
        assert_eq!(record_layout::<Graph<One>, f32>().0, 120);
        assert_eq!(
            record_layout::<Graph<Two>, SavedVariable<Two>>().0,
            112 + std::mem::size_of::<SavedVariable<Two>>()
        );
    }
}
