//! [`Variable`]: a raw tensor plus autograd metadata.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::error::AutogradError;
use crate::mode::is_grad_enabled;
use crate::node::{Edge, HookId, NodeRef, TensorHook, lock, next_hook_id};
use crate::tensor::{Tensor, TensorMeta};

/// A tensor with autograd metadata (PyTorch's `Variable`/`at::Tensor` with
/// `AutogradMeta`).
///
/// A cheap handle (`Arc`): clones refer to the same variable, exactly like
/// Python references to one tensor object. `Send + Sync`.
///
/// * **leaf** (no `grad_fn`): created by [`new`](Self::new); if it requires
///   grad, backward accumulates into [`grad`](Self::grad).
/// * **non-leaf**: created by [`record`](crate::record); carries the node that
///   computed it ([`grad_fn`](Self::grad_fn)) and which output of it it is
///   ([`output_nr`](Self::output_nr)). Its gradient is not kept unless
///   [`retain_grad`](Self::retain_grad) was called.
/// * **version counter**: bumped by in-place ops, shared with aliases
///   ([`detach`](Self::detach), [`share_version_counter`](Self::share_version_counter));
///   [`SavedVariable`](crate::SavedVariable) compares it at unpack time.
pub struct Variable<T: Tensor>(pub(crate) Arc<VarInner<T>>);

pub(crate) struct VarInner<T: Tensor> {
    state: Mutex<VarState<T>>,
    requires_grad: AtomicBool,
    version: AtomicU32,
    shared_version: OnceLock<Arc<AtomicU32>>,
    /// Claimed by the running graph task (see the engine).
    pub(crate) task_slot: AtomicU64,
}

pub(crate) type LeafHooks<T> = Vec<(HookId, TensorHook<T>)>;

pub(crate) struct VarState<T: Tensor> {
    pub(crate) data: T,
    pub(crate) grad_fn: Option<NodeRef<T>>,
    pub(crate) output_nr: u32,
    pub(crate) grad: Option<Variable<T>>,
    pub(crate) retains_grad: bool,
    pub(crate) name: Option<String>,
    pub(crate) hooks: LeafHooks<T>,
}

impl<T: Tensor> Clone for Variable<T> {
    fn clone(&self) -> Self {
        Variable(self.0.clone())
    }
}

impl<T: Tensor> fmt::Debug for Variable<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state();
        let mut d = f.debug_struct("Variable");
        if let Some(n) = &st.name {
            d.field("name", n);
        }
        d.field("meta", &TensorMeta::of(&st.data))
            .field("requires_grad", &self.requires_grad());
        if let Some(g) = &st.grad_fn {
            d.field("grad_fn", g).field("output_nr", &st.output_nr);
        }
        d.finish()
    }
}

impl<T: Tensor> VarInner<T> {
    fn new(data: T, grad_fn: Option<NodeRef<T>>, output_nr: u32, requires_grad: bool) -> Self {
        VarInner {
            state: Mutex::new(VarState {
                data,
                grad_fn,
                output_nr,
                grad: None,
                retains_grad: false,
                name: None,
                hooks: Vec::new(),
            }),
            requires_grad: AtomicBool::new(requires_grad),
            version: AtomicU32::new(0),
            shared_version: OnceLock::new(),
            task_slot: AtomicU64::new(0),
        }
    }
}

impl<T: Tensor> Variable<T> {
    /// A variable that does not require grad (no history).
    pub fn from_data(data: T) -> Self {
        Variable(Arc::new(VarInner::new(data, None, 0, false)))
    }

    /// A leaf variable; with `requires_grad`, backward accumulates into its `.grad`.
    pub fn new(data: T, requires_grad: bool) -> Self {
        Variable(Arc::new(VarInner::new(data, None, 0, requires_grad)))
    }

    pub(crate) fn with_grad_fn(data: T, grad_fn: NodeRef<T>, output_nr: u32) -> Self {
        Variable(Arc::new(VarInner::new(
            data,
            Some(grad_fn),
            output_nr,
            true,
        )))
    }

    /// Rebuilds a saved output: same data and version counter, given history.
    pub(crate) fn reconstructed(
        data: T,
        grad_fn: Option<NodeRef<T>>,
        output_nr: u32,
        requires_grad: bool,
        counter: Arc<AtomicU32>,
    ) -> Self {
        let mut inner = VarInner::new(data, grad_fn, output_nr, requires_grad);
        inner.shared_version = OnceLock::from(counter);
        Variable(Arc::new(inner))
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, VarState<T>> {
        lock(&self.0.state)
    }

    /// The raw tensor (a clone: make `T` cheap to clone, e.g. `Arc`-backed).
    pub fn data(&self) -> T {
        self.state().data.clone()
    }

    /// Runs `f` on the raw tensor without cloning it.
    pub fn with_data<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.state().data)
    }

    /// Replaces the raw tensor without touching history or version (PyTorch's
    /// `x.data = ...`). In-place ops use [`record_inplace`](crate::record_inplace)
    /// or this plus [`bump_version`](Self::bump_version).
    pub fn set_data(&self, data: T) {
        self.state().data = data;
    }

    /// Shape of the raw tensor.
    pub fn shape(&self) -> Vec<usize> {
        self.with_data(|d| d.shape().to_vec())
    }

    /// Whether gradients flow to this variable (always true for non-leaves).
    #[inline]
    pub fn requires_grad(&self) -> bool {
        self.0.requires_grad.load(Ordering::Relaxed)
    }

    /// Sets `requires_grad` on a leaf; fails on non-leaves with PyTorch's message.
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<(), AutogradError> {
        let st = self.state();
        if st.grad_fn.is_some() {
            return Err(AutogradError::NonLeafRequiresGrad);
        }
        self.0.requires_grad.store(requires_grad, Ordering::Relaxed);
        Ok(())
    }

    /// Whether this is a leaf (no `grad_fn`).
    pub fn is_leaf(&self) -> bool {
        self.state().grad_fn.is_none()
    }

    /// The node that computed this variable, if any.
    pub fn grad_fn(&self) -> Option<NodeRef<T>> {
        self.state().grad_fn.clone()
    }

    /// Which output of `grad_fn` this is.
    pub fn output_nr(&self) -> usize {
        self.state().output_nr as usize
    }

    /// Where this variable's gradient goes: `(grad_fn, output_nr)` for a
    /// non-leaf, the leaf itself if it requires grad, else `None`.
    pub fn gradient_edge(&self) -> Option<Edge<T>> {
        let st = self.state();
        match &st.grad_fn {
            Some(f) => Some(Edge::Node {
                node: f.clone(),
                input_nr: st.output_nr,
            }),
            None if self.requires_grad() => Some(Edge::Leaf(self.clone())),
            None => None,
        }
    }

    /// The accumulated gradient (leaves, and non-leaves after `retain_grad`).
    pub fn grad(&self) -> Option<Variable<T>> {
        self.state().grad.clone()
    }

    /// Replaces the accumulated gradient.
    pub fn set_grad(&self, grad: Option<Variable<T>>) {
        self.state().grad = grad;
    }

    /// Clears the accumulated gradient (sets it to `None`, like
    /// `zero_grad(set_to_none=True)`).
    pub fn zero_grad(&self) {
        self.set_grad(None);
    }

    fn counter(&self) -> &AtomicU32 {
        match self.0.shared_version.get() {
            Some(c) => c,
            None => &self.0.version,
        }
    }

    /// The version counter: number of in-place modifications (shared with aliases).
    pub fn version(&self) -> u32 {
        self.counter().load(Ordering::Acquire)
    }

    /// Increments the version counter (done by in-place ops).
    pub fn bump_version(&self) {
        if let Some(c) = self.0.shared_version.get() {
            c.fetch_add(1, Ordering::AcqRel);
            return;
        }
        let _st = self.state();
        match self.0.shared_version.get() {
            Some(c) => c.fetch_add(1, Ordering::AcqRel),
            None => self.0.version.fetch_add(1, Ordering::AcqRel),
        };
    }

    /// The version counter as a shareable object (converts the inline counter
    /// on first use).
    pub(crate) fn shared_counter(&self) -> Arc<AtomicU32> {
        if let Some(c) = self.0.shared_version.get() {
            return c.clone();
        }
        let st = self.state();
        self.shared_counter_locked(&st)
    }

    /// `shared_counter` with the state lock already held by the caller.
    pub(crate) fn shared_counter_locked(
        &self,
        _held: &MutexGuard<'_, VarState<T>>,
    ) -> Arc<AtomicU32> {
        self.0
            .shared_version
            .get_or_init(|| Arc::new(AtomicU32::new(self.0.version.load(Ordering::Acquire))))
            .clone()
    }

    /// Makes this variable use `base`'s version counter, as a view or alias
    /// of `base` must (an in-place change of either is seen by both). Call it
    /// on a freshly created output; fails if this variable already shares a
    /// counter with another one.
    pub fn share_version_counter(&self, base: &Variable<T>) -> Result<(), AutogradError> {
        let c = base.shared_counter();
        if let Some(mine) = self.0.shared_version.get() {
            if Arc::ptr_eq(mine, &c) {
                return Ok(());
            }
            return Err(AutogradError::msg(
                "share_version_counter: this variable already shares a version counter",
            ));
        }
        let _st = self.state();
        self.0
            .shared_version
            .set(c)
            .map_err(|_| AutogradError::msg("share_version_counter: already shared"))
    }

    /// A new variable with the same data and version counter but no history
    /// and `requires_grad == false` (PyTorch's `detach()`).
    pub fn detach(&self) -> Variable<T> {
        let c = self.shared_counter();
        Variable::reconstructed(self.data(), None, 0, false, c)
    }

    /// An alias of this variable with other raw data (e.g. a reshaped view)
    /// sharing its version counter, without history.
    pub fn alias(&self, data: T) -> Variable<T> {
        Variable::reconstructed(data, None, 0, false, self.shared_counter())
    }

    /// Whether both handles refer to the same variable.
    pub fn ptr_eq(&self, other: &Variable<T>) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The variable's name (shown by [`to_dot`](crate::to_dot)).
    pub fn name(&self) -> Option<String> {
        self.state().name.clone()
    }

    /// Sets the variable's name.
    pub fn set_name(&self, name: impl Into<String>) {
        self.state().name = Some(name.into());
    }

    /// Builder form of [`set_name`](Self::set_name).
    pub fn named(self, name: impl Into<String>) -> Self {
        self.set_name(name);
        self
    }

    /// Whether `.grad` is kept for this non-leaf.
    pub fn retains_grad(&self) -> bool {
        self.state().retains_grad
    }

    /// Keeps the gradient of a non-leaf in [`grad`](Self::grad) during
    /// backward (no-op for leaves).
    pub fn retain_grad(&self) -> Result<(), AutogradError> {
        if !self.requires_grad() {
            return Err(AutogradError::RetainGradOnNoGrad);
        }
        let mut st = self.state();
        let Some(f) = st.grad_fn.clone() else {
            return Ok(());
        };
        if st.retains_grad {
            return Ok(());
        }
        st.retains_grad = true;
        let nr = st.output_nr as usize;
        drop(st);
        let weak = Arc::downgrade(&self.0);
        f.cell().add_hooks(|h| h.retain.push((nr, weak)));
        Ok(())
    }

    /// Registers a hook on this variable's gradient: it sees the gradient
    /// before it is used (accumulated into a leaf, or given to `grad_fn`) and
    /// may return a replacement. Runs once per backward with the summed
    /// gradient.
    pub fn register_hook(
        &self,
        f: impl FnMut(&Variable<T>) -> Option<Variable<T>> + Send + 'static,
    ) -> Result<HookId, AutogradError> {
        if !self.requires_grad() {
            return Err(AutogradError::HookOnNoGrad);
        }
        let mut st = self.state();
        match st.grad_fn.clone() {
            Some(node) => {
                let nr = st.output_nr as usize;
                drop(st);
                Ok(node.register_tensor_prehook(nr, Box::new(f)))
            }
            None => {
                let id = next_hook_id();
                st.hooks.push((id, Box::new(f)));
                Ok(id)
            }
        }
    }

    /// Removes a hook registered with [`register_hook`](Self::register_hook).
    pub fn remove_hook(&self, id: HookId) -> bool {
        let mut st = self.state();
        let n = st.hooks.len();
        st.hooks.retain(|(i, _)| *i != id);
        if st.hooks.len() != n {
            return true;
        }
        match st.grad_fn.clone() {
            Some(f) => {
                drop(st);
                f.remove_hook(id)
            }
            None => false,
        }
    }

    /// PyTorch's `check_inplace`: with grad mode on, an in-place op on a leaf
    /// that requires grad is an error.
    pub fn check_inplace(&self) -> Result<(), AutogradError> {
        if is_grad_enabled() && self.requires_grad() && self.is_leaf() {
            return Err(AutogradError::InplaceOnLeaf);
        }
        Ok(())
    }

    /// Sets the history to `(node, 0)` after an in-place op (see
    /// [`record_inplace`](crate::record_inplace)); a retained gradient
    /// follows the variable to the new node.
    pub fn rebase_history(&self, node: NodeRef<T>) {
        let mut st = self.state();
        let old = st.grad_fn.replace(node.clone());
        st.output_nr = 0;
        let retains = st.retains_grad;
        drop(st);
        self.0.requires_grad.store(true, Ordering::Relaxed);
        if retains {
            let me = Arc::as_ptr(&self.0);
            if let Some(old) = old
                && let Some(h) = old.cell().hooks().as_mut()
            {
                h.retain.retain(|(_, w)| w.as_ptr() != me);
            }
            let weak = Arc::downgrade(&self.0);
            node.cell().add_hooks(|h| h.retain.push((0, weak)));
        }
    }

    /// `backward()` on a scalar: `crate::backward(&[self], &[], false, false)`.
    pub fn backward(&self) -> Result<(), AutogradError> {
        crate::engine::backward(std::slice::from_ref(self), &[], false, false)
    }

    /// `backward(gradient, retain_graph, create_graph)`.
    pub fn backward_with(
        &self,
        gradient: Option<&Variable<T>>,
        retain_graph: bool,
        create_graph: bool,
    ) -> Result<(), AutogradError> {
        crate::engine::backward(
            std::slice::from_ref(self),
            &[gradient.cloned()],
            retain_graph,
            create_graph,
        )
    }

    /// The graph reachable from this variable as Graphviz DOT.
    pub fn to_dot(&self) -> String {
        crate::dot::to_dot(std::slice::from_ref(self))
    }

    pub(crate) fn take_leaf_hooks(&self) -> LeafHooks<T> {
        std::mem::take(&mut self.state().hooks)
    }

    pub(crate) fn restore_leaf_hooks(&self, mut hooks: LeafHooks<T>) {
        let mut st = self.state();
        hooks.append(&mut st.hooks);
        st.hooks = hooks;
    }

    pub(crate) fn inner_ptr(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}
