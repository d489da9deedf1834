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
use crate::hooks::{Hook, PostHookFn, PreHookFn, TensorHookFn};
use crate::list::OptList;
use crate::mode::is_anomaly_enabled;
use crate::saved::SavedVariable;
use crate::saved_hooks::SavedHooks;
use crate::tensor::{Tensor, TensorMeta};
use crate::variable::{VarInner, Variable};

pub(crate) use crate::mem::NODE_COUNTERS;
use crate::mem::{
    self as rec, Erase, Kind, Locked, NewCell, NodeGuard, NodeRc, OutputRefs, Pending, VarWeak,
    WeakRc,
};
use crate::node_meta::NodeMeta;

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

/// Identifies a registered hook, for removal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HookId(pub(crate) u64);

static NEXT_HOOK_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) fn next_hook_id() -> HookId {
    HookId(NEXT_HOOK_ID.fetch_add(1, Ordering::Relaxed))
}

pub(crate) struct NodeHooks<T: Tensor> {
    pub(crate) tensor_pre: Vec<(usize, Hook<TensorHookFn<T>>)>,
    pub(crate) retain: Vec<(usize, VarWeak<VarInner<T>>)>,
    pub(crate) pre: Vec<Hook<PreHookFn<T>>>,
    pub(crate) post: Vec<Hook<PostHookFn<T>>>,
}

/// A copy of a node's hooks, taken so that they run with no lock held.
pub(crate) struct HooksSnapshot<T: Tensor> {
    pub(crate) tensor_pre: Vec<(usize, Hook<TensorHookFn<T>>)>,
    pub(crate) retain: Vec<(usize, VarWeak<VarInner<T>>)>,
    pub(crate) pre: Vec<Hook<PreHookFn<T>>>,
    pub(crate) post: Vec<Hook<PostHookFn<T>>>,
}

impl<T: Tensor> Default for NodeHooks<T> {
    fn default() -> Self {
        NodeHooks {
            tensor_pre: Vec::new(),
            retain: Vec::new(),
            pre: Vec::new(),
            post: Vec::new(),
        }
    }
}

/// The backtrace of the forward call that created a node (anomaly mode).
pub(crate) struct AnomalyTrace(pub(crate) Backtrace);

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

    /// The node's depth: 1 + the largest of the nodes its edges lead to (0 for none).
    #[inline]
    pub(crate) fn topo(&self) -> u32 {
        self.0.topo()
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

/// The rarely present part of a node: its hooks and anomaly trace, kept in [`EXTRAS`].
pub(crate) struct NodeExtras<T: Tensor> {
    hooks: Mutex<NodeHooks<T>>,
    /// The backtrace of the forward call (anomaly mode); set at creation.
    anomaly: Option<AnomalyTrace>,
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

/// The hooks and anomaly traces of the nodes that have any, by node address
/// ([`NodeRef::addr`]; a node's entry goes with its cell, before another node can get
/// the address). Most nodes have neither: the record keeps a flag ([`HAS_EXTRAS`])
/// instead of a pointer, 8 bytes of every record. One lock for all threads: taken
/// when hooks are registered, by a backward pass for a node with hooks, and for every
/// record in anomaly mode (which captures a backtrace per record anyway).
type ExtrasMap = HashMap<usize, Arc<dyn Any + Send + Sync>>;
static EXTRAS: LazyLock<Mutex<ExtrasMap>> = LazyLock::new(Mutex::default);

/// Drops the extras of the node at `addr`, whose cell was just dropped: outside the
/// map's lock (a hook may hold variables, whose nodes may go with them).
pub(crate) fn forget_extras(addr: usize) {
    let gone = lock(&EXTRAS).remove(&addr);
    drop(gone);
}

impl<T: Tensor> NodeRef<T> {
    /// The node's hooks and anomaly trace, if it has any.
    fn extras(&self) -> Option<Arc<NodeExtras<T>>> {
        if !self.0.has_flag(HAS_EXTRAS) {
            return None;
        }
        let e = lock(&EXTRAS).get(&self.addr()).cloned()?;
        e.downcast::<NodeExtras<T>>().ok()
    }

    /// Attaches `extras` if the node has none yet; the node's extras.
    fn attach_extras(&self, extras: NodeExtras<T>) -> Arc<NodeExtras<T>> {
        let e = lock(&EXTRAS)
            .entry(self.addr())
            .or_insert_with(|| Arc::new(extras))
            .clone();
        self.0.set_flag(HAS_EXTRAS);
        e.downcast::<NodeExtras<T>>()
            .expect("a node's extras are of its tensor type")
    }

    /// Runs `f` on the node's hooks, if any were ever registered.
    pub(crate) fn with_hooks<R>(&self, f: impl FnOnce(&mut NodeHooks<T>) -> R) -> Option<R> {
        let e = self.extras()?;
        let r = f(&mut lock(&e.hooks));
        Some(r)
    }

    /// Whether a hook was ever registered on this node.
    #[inline]
    pub(crate) fn has_hooks(&self) -> bool {
        self.0.has_flag(HAS_HOOKS)
    }

    /// A copy of the hooks (the closures are shared), to call them unlocked.
    pub(crate) fn hooks_snapshot(&self) -> Option<HooksSnapshot<T>> {
        self.with_hooks(|h| HooksSnapshot {
            tensor_pre: h.tensor_pre.clone(),
            retain: h.retain.clone(),
            pre: h.pre.clone(),
            post: h.post.clone(),
        })
    }

    pub(crate) fn add_hooks(&self, f: impl FnOnce(&mut NodeHooks<T>)) {
        let e = self.attach_extras(NodeExtras {
            hooks: Mutex::new(NodeHooks::default()),
            anomaly: None,
        });
        f(&mut lock(&e.hooks));
        self.0.set_flag(HAS_HOOKS);
    }

    /// Keeps the backtrace of the forward call recording the node (anomaly mode; the
    /// callers check it, before they take a reference to the node).
    fn note_anomaly(&self) {
        self.attach_extras(NodeExtras {
            hooks: Mutex::new(NodeHooks::default()),
            anomaly: Some(AnomalyTrace(Backtrace::force_capture())),
        });
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

    /// Registers a pre-hook, called with the incoming gradients before `apply`;
    /// it may edit them (not their number, nor a gradient's shape or dtype, nor
    /// put one where there was `None`: PyTorch's errors, `hook 'name' has
    /// changed the size of value` ...). An error it returns ends the backward
    /// pass and reaches its caller. Hooks run with no runtime lock held (they
    /// may register or remove hooks; see [`Variable::register_hook`]).
    pub fn register_prehook<F>(&self, f: F) -> HookId
    where
        F: Fn(&mut VariableList<T>) -> Result<(), AutogradError> + Send + Sync + 'static,
    {
        let id = next_hook_id();
        let hook = Hook::new::<F>(id, Arc::new(f) as Arc<PreHookFn<T>>);
        self.add_hooks(|h| h.pre.push(hook));
        id
    }

    /// Registers a post-hook, called with `(grad_inputs, grad_outputs)` after
    /// `apply`; it may modify `grad_inputs` under the rules of
    /// [`register_prehook`](Self::register_prehook).
    pub fn register_hook<F>(&self, f: F) -> HookId
    where
        F: Fn(&mut VariableList<T>, &VariableList<T>) -> Result<(), AutogradError>
            + Send
            + Sync
            + 'static,
    {
        let id = next_hook_id();
        let hook = Hook::new::<F>(id, Arc::new(f) as Arc<PostHookFn<T>>);
        self.add_hooks(|h| h.post.push(hook));
        id
    }

    pub(crate) fn register_tensor_prehook(
        &self,
        output_nr: usize,
        hook: Hook<TensorHookFn<T>>,
    ) -> HookId {
        let id = hook.id;
        self.add_hooks(|h| h.tensor_pre.push((output_nr, hook)));
        id
    }

    /// Removes a hook registered on this node (pre, post or tensor hook);
    /// returns whether it was found.
    pub fn remove_hook(&self, id: HookId) -> bool {
        self.with_hooks(|h| {
            let before = h.pre.len() + h.post.len() + h.tensor_pre.len();
            h.pre.retain(|k| k.id != id);
            h.post.retain(|k| k.id != id);
            h.tensor_pre.retain(|(_, k)| k.id != id);
            before != h.pre.len() + h.post.len() + h.tensor_pre.len()
        })
        .unwrap_or(false)
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

    /// Registers saved-tensor hooks on the saved variable `name` of this node (PyTorch's
    /// `grad_fn._raw_saved_<name>.register_hooks(pack, unpack)`; see
    /// [`SavedVariable::register_hooks`] for the rules and errors). The node must implement
    /// [`Node::visit_saved_mut`] (generated nodes do). A list of saved tensors gets the
    /// hooks on each of its elements. `pack` runs with the node unlocked.
    ///
    /// An unknown name is PyTorch's `AttributeError` text: `'ExpBackward0' object has no
    /// attribute '_raw_saved_foo'`.
    pub fn register_saved_hooks<P, Pk, Un>(
        &self,
        name: &str,
        pack: Pk,
        unpack: Un,
    ) -> Result<(), AutogradError>
    where
        P: Send + Sync + 'static,
        Pk: Fn(&Variable<T>) -> Result<P, AutogradError> + Send + Sync + 'static,
        Un: Fn(&P) -> Result<Variable<T>, AutogradError> + Send + Sync + 'static,
    {
        // Take the saved variables out, so that the pack hook runs unlocked.
        let mut taken = Vec::new();
        self.with_node(|n| {
            n.visit_saved_mut(&mut |k, sv| {
                if k == name {
                    taken.push(std::mem::take(sv));
                }
            })
        });
        if taken.is_empty() {
            return Err(AutogradError::msg(format!(
                "'{}' object has no attribute '_raw_saved_{name}'",
                self.name()
            )));
        }
        let hooks = Arc::new(SavedHooks::new(pack, unpack));
        // As the node's: its own saved outputs reach it (unlocked, for `pack`).
        let result: Result<(), AutogradError> = self.run_as(|| {
            taken
                .iter_mut()
                .try_for_each(|sv| sv.register_shared_hooks(hooks.clone()))
        });
        let mut back = taken.into_iter();
        self.with_node(|n| {
            n.visit_saved_mut(&mut |k, sv| {
                if k == name
                    && let Some(v) = back.next()
                {
                    *sv = v;
                }
            })
        });
        result
    }

    /// Runs `f` on the locked node (type-erased). The node runs meanwhile: its own saved
    /// outputs unpack.
    pub fn with_node<R>(&self, f: impl FnOnce(&mut dyn Node<T>) -> R) -> R {
        self.run_as(|| f(&mut *self.lock()))
    }
}

/// An edge of the graph: where the gradient of one input of a node goes.
///
/// Either input slot `input_nr` of another node (the input was computed by
/// an op: its `grad_fn` and `output_nr`), or a leaf variable that requires
/// grad (gradients are accumulated into its `.grad`; PyTorch routes these
/// through an `AccumulateGrad` node, which is what the DOT export shows).
pub enum Edge<T: Tensor> {
    /// Slot `input_nr` of `node`.
    Node {
        /// The next node.
        node: NodeRef<T>,
        /// Which of its gradients.
        input_nr: u32,
    },
    /// A leaf variable that requires grad.
    Leaf(Variable<T>),
}

impl<T: Tensor> Clone for Edge<T> {
    fn clone(&self) -> Self {
        match self {
            Edge::Node { node, input_nr } => Edge::Node {
                node: node.clone(),
                input_nr: *input_nr,
            },
            Edge::Leaf(v) => Edge::Leaf(v.clone()),
        }
    }
}

impl<T: Tensor> fmt::Debug for Edge<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Edge::Node { node, input_nr } => write!(f, "({node:?}, {input_nr})"),
            Edge::Leaf(_) => write!(f, "(AccumulateGrad, 0)"),
        }
    }
}

impl<T: Tensor> Edge<T> {
    /// The next node, if this is not a leaf edge.
    pub fn node(&self) -> Option<&NodeRef<T>> {
        match self {
            Edge::Node { node, .. } => Some(node),
            Edge::Leaf(_) => None,
        }
    }

    /// The leaf, if this is a leaf edge.
    pub fn leaf(&self) -> Option<&Variable<T>> {
        match self {
            Edge::Leaf(v) => Some(v),
            Edge::Node { .. } => None,
        }
    }

    /// Input slot of the next node (0 for leaves).
    pub fn input_nr(&self) -> usize {
        match self {
            Edge::Node { input_nr, .. } => *input_nr as usize,
            Edge::Leaf(_) => 0,
        }
    }

    /// Name of the target (`"AccumulateGrad"` for leaves).
    pub fn name(&self) -> String {
        match self {
            Edge::Node { node, .. } => node.name(),
            Edge::Leaf(_) => "AccumulateGrad".to_string(),
        }
    }
}

/// Whether an op on `inputs` must be recorded: grad mode is on and at least one
/// input requires grad. The generated wrappers skip building a node otherwise.
#[inline]
pub fn should_record<T: Tensor>(inputs: &[&Variable<T>]) -> bool {
    crate::mode::is_grad_enabled() && inputs.iter().any(|v| v.requires_grad())
}

/// A node's graph metadata: its edges to `inputs`, the outputs' `meta`, its place in
/// the order of the thread's nodes (counted as live from here); and its depth.
///
/// Always inlined into its two callers: called, it cost a prologue and a copy of the
/// cell from its frame to the caller's (about 30 instructions an op on the chain bench).
#[inline(always)]
fn build_cell<T: Tensor, N: Node<T>>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    meta: NodeMeta,
) -> (NewCell<Graph<T>, N>, u32) {
    let mut edges = EdgeList::<T>::with_len(inputs.len());
    let mut depth = 0;
    for (slot, v) in edges.iter_mut().zip(inputs) {
        *slot = v.and_then(Variable::gradient_edge);
        if let Some(Edge::Node { node, .. }) = slot {
            depth = depth.max(node.topo());
        }
    }
    let topo = depth + 1;
    let seq = SEQUENCE_NR.with(|s| {
        let n = s.get();
        s.set(n + 1);
        n
    });
    LIVE_NODES.with(|c| c.set(c.get() + 1));
    let info = CellInfo {
        edges,
        meta,
        seq,
        task_slot: AtomicU64::new(0),
    };
    (NewCell::new(info, node), topo)
}

/// Puts a node in the arena: a handle, and `refs` references for the outputs.
fn new_cell<T: Tensor, N: Node<T>>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    meta: NodeMeta,
    refs: usize,
) -> (NodeHandle<T, N>, OutputRefs<Graph<T>, N>) {
    let (cell, topo) = build_cell(node, inputs, meta);
    let (handle, refs) = rec::TypedRc::new(cell, topo, refs);
    let handle = NodeHandle(handle);
    if is_anomaly_enabled() {
        handle.node_ref().note_anomaly();
    }
    (handle, refs)
}

/// The outputs of an op being recorded by [`record_saving`], for the node to
/// save: [`save`](Self::save) is what `SavedVariable::new(&output, true)`
/// gives once the output exists.
pub struct NewOutputs<'a, T: Tensor, N: Node<T>, const K: usize> {
    raw: &'a [T; K],
    node: &'a Pending<Graph<T>, N>,
    /// Whether [`save`](Self::save) was called (the node's `own_outputs`).
    saved: Cell<bool>,
}

impl<T: Tensor, N: Node<T>, const K: usize> NewOutputs<'_, T, N, K> {
    /// Output `k` (`k < K`), saved by its own node.
    pub fn save(&self, k: usize) -> SavedVariable<T> {
        self.saved.set(true);
        SavedVariable::fresh_output(self.raw[k].clone(), OwnNode(self.node.own()), k as u32)
    }
}

/// [`record_generated`] for an op whose node saves outputs, without locking
/// the node to store them: when neither saved-tensor hooks nor forward-mode
/// AD are active on this thread (and the op has at most two outputs), `save`
/// fills the node's saved outputs before the node is in the graph (the raw
/// data is cloned once, before it becomes a variable) and the handle is
/// `None`. Otherwise `save` is not called and the handle is returned: the
/// caller sets the outputs' tangents and saves them through it, as after
/// [`record_generated`]. Measured on the runtime's chain bench: locking the
/// node and the handle's reference count were 3 of a step's 32 atomic
/// read-modify-writes in the forward pass, saving an output 5 more.
pub fn record_saving<T: Tensor, N: Node<T>, const K: usize>(
    mut node: N,
    inputs: &[Option<&Variable<T>>],
    outputs: [T; K],
    save: impl FnOnce(&mut N, &NewOutputs<'_, T, N, K>),
) -> ([Variable<T>; K], Option<NodeHandle<T, N>>) {
    let fast = K > 0
        && K <= NODE_COUNTERS
        && crate::saved_hooks::default_hooks::<T>().is_none()
        && !crate::forward::is_forward_ad_enabled();
    if !fast {
        let (outs, handle) = record_generated(node, inputs, outputs);
        return (outs, Some(handle));
    }
    let pending = Pending::<Graph<T>, N>::new();
    let new = NewOutputs {
        raw: &outputs,
        node: &pending,
        saved: Cell::new(false),
    };
    save(&mut node, &new);
    if new.saved.get() {
        pending.set_own_outputs();
    }
    let meta = NodeMeta::of(&outputs);
    let (cell, topo) = build_cell(node, inputs, meta);
    let refs = pending.publish(cell, topo, K);
    let outs = wrap_outputs(outputs, refs);
    if is_anomaly_enabled()
        && let Some(node) = outs[0].grad_fn()
    {
        node.note_anomaly();
    }
    (outs, None)
}

/// The output variables of a new node: output `k` gets `grad_fn` = the node (one of the
/// counts `refs` hands out) and `output_nr` = `k`.
fn wrap_outputs<T: Tensor, N: Node<T>, const K: usize>(
    outputs: [T; K],
    mut refs: OutputRefs<Graph<T>, N>,
) -> [Variable<T>; K] {
    let mut nr = 0u32;
    outputs.map(|data| {
        let grad_fn = NodeRef(refs.next().expect("one reference per output"));
        let v = Variable::with_grad_fn(data, grad_fn, nr);
        nr += 1;
        v
    })
}

/// Records an op: puts `node` in the graph with one edge per entry of
/// `inputs` (`None` for non-differentiable inputs; inputs that do not require
/// grad get no edge either) and wraps the raw `outputs` into variables whose
/// `grad_fn` is the node, with `output_nr` 0, 1, ….
///
/// Returns the output variables and a typed [`NodeHandle`] for saving
/// outputs into the node afterwards. Outputs that are not differentiable
/// (e.g. integer indices) should not be passed here: wrap them with
/// [`Variable::from_data`]. Call it only when [`should_record`] is true.
///
/// Allocations: the node goes into the thread's arena chunk (edges and output
/// metadata inline for up to two inputs and one output); one `Arc` per output
/// variable.
///
/// Under forward-mode AD, a node recorded here has no forward rule: when an input has a
/// tangent, the outputs' tangent is PyTorch's error for a custom `Function` without `jvp`
/// (never a silent zero). Give a custom op a rule with
/// [`forward::propagate`](crate::forward::propagate) after recording.
pub fn record<T: Tensor, N: Node<T>, const K: usize>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    outputs: [T; K],
) -> ([Variable<T>; K], NodeHandle<T, N>) {
    let (outs, handle) = record_generated(node, inputs, outputs);
    no_forward_rule(inputs, &outs);
    (outs, handle)
}

/// [`record`] for generated code and the runtime's own ops, which set tangents themselves.
pub fn record_generated<T: Tensor, N: Node<T>, const K: usize>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    outputs: [T; K],
) -> ([Variable<T>; K], NodeHandle<T, N>) {
    let meta = NodeMeta::of(&outputs);
    let (handle, refs) = new_cell(node, inputs, meta, K);
    (wrap_outputs(outputs, refs), handle)
}

/// [`record`] for a number of outputs known only at run time.
pub fn record_vec<T: Tensor, N: Node<T>>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    outputs: Vec<T>,
) -> (Vec<Variable<T>>, NodeHandle<T, N>) {
    let (outs, handle) = record_vec_generated(node, inputs, outputs);
    no_forward_rule(inputs, &outs);
    (outs, handle)
}

/// [`record_vec`] for generated code, which sets tangents itself.
pub fn record_vec_generated<T: Tensor, N: Node<T>>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    outputs: Vec<T>,
) -> (Vec<Variable<T>>, NodeHandle<T, N>) {
    let meta = NodeMeta::of(&outputs);
    let (handle, refs) = new_cell(node, inputs, meta, outputs.len());
    let outs = outputs
        .into_iter()
        .zip(refs)
        .enumerate()
        .map(|(nr, (data, grad_fn))| Variable::with_grad_fn(data, NodeRef(grad_fn), nr as u32))
        .collect();
    (outs, handle)
}

/// Records an in-place op on `self_`: checks that `self_` is not a leaf
/// requiring grad, computes the edges from `inputs` (which normally include
/// `self_`, whose *old* history becomes an edge), replaces `self_`'s data with
/// `new_data` if given (pass `None` when the raw op already mutated shared
/// storage), bumps its version counter and rebases its history onto the new
/// node (`grad_fn` = node, `output_nr` = 0).
///
/// When nothing needs recording ([`should_record`] false), the wrapper should
/// still call [`Variable::check_inplace`], replace the data and
/// [`bump_version`](Variable::bump_version).
pub fn record_inplace<T: Tensor, N: Node<T>>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    self_: &Variable<T>,
    new_data: Option<T>,
) -> Result<NodeHandle<T, N>, AutogradError> {
    let handle = record_inplace_generated(node, inputs, self_, new_data)?;
    no_forward_rule(inputs, std::slice::from_ref(self_));
    Ok(handle)
}

/// PyTorch's error for a custom `Function` without `jvp`, raised when it is used under
/// forward-mode AD.
pub const ERR_NO_JVP: &str = "You must implement the jvp function for custom autograd.Function to use it with forward mode AD.";

/// Outputs of a node without a forward rule get [`ERR_NO_JVP`] as their tangent at every
/// visible level where an input has one.
fn no_forward_rule<T: Tensor>(inputs: &[Option<&Variable<T>>], outputs: &[Variable<T>]) {
    if !crate::forward::is_forward_ad_enabled() {
        return;
    }
    for level in crate::forward::visible_levels() {
        let tangent = inputs
            .iter()
            .flatten()
            .any(|i| !matches!(i.fw_grad_at(level), Ok(None)));
        if tangent {
            for o in outputs {
                o.set_own_tangent(
                    level,
                    crate::forward::Tangent::Error(AutogradError::msg(ERR_NO_JVP)),
                );
            }
        }
    }
}

/// [`record_inplace`] for generated code, which sets tangents itself.
pub fn record_inplace_generated<T: Tensor, N: Node<T>>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    self_: &Variable<T>,
    new_data: Option<T>,
) -> Result<NodeHandle<T, N>, AutogradError> {
    self_.check_inplace()?;
    let meta = match &new_data {
        Some(d) => NodeMeta::one(d),
        None => self_.with_data(NodeMeta::one),
    };
    let (handle, _) = new_cell(node, inputs, meta, 0);
    if let Some(d) = new_data {
        self_.set_data(d);
    }
    self_.bump_version();
    self_.rebase_history(handle.node_ref());
    Ok(handle)
}

/// Refuses arguments that require grad for an `out=` variant of `op`
/// (when grad mode is on), with PyTorch's message.
pub fn check_out<T: Tensor>(op: &str, args: &[&Variable<T>]) -> Result<(), AutogradError> {
    if should_record(args) {
        return Err(AutogradError::OutRequiresGrad { op: op.to_string() });
    }
    Ok(())
}

#[cfg(all(test, target_pointer_width = "64"))]
mod sizes {
    use super::{CellInfo, Edge, Graph};
    use crate::mem::record_layout;
    use crate::saved::SavedVariable;
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
