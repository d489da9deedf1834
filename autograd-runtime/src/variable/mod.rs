//! [`Variable`]: a raw tensor plus autograd metadata. A variable's rarely used parts have
//! files of their own: `view.rs` (a view's base and how it is computed again from it) and
//! `fw.rs` (its tangents).

use std::fmt;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::AutogradError;
use crate::mem::{CounterSlot, DataLock, ReadGuard, VarArc};
use crate::mode::is_grad_enabled;
use crate::node::{
    Edge, Hook, HookId, NODE_COUNTERS, NodeRef, TensorHookFn, WeakNode, lock, next_hook_id,
};
use crate::tensor::{Tensor, TensorMeta};

mod fw;
mod view;

pub(crate) use fw::{Snapshot, Tangent, Tangents};
pub(crate) use view::{BaseRef, Parent, ViewMeta, parent, set_synced};
pub use view::{ScatterFn, ViewFn, ViewInverse};

/// A tensor with autograd metadata (PyTorch's `Variable`/`at::Tensor` with
/// `AutogradMeta`).
///
/// A cheap reference-counted handle: clones refer to the same variable, exactly like
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
///   [`SavedVariable`](crate::SavedVariable) compares it at unpack time. An
///   op's output keeps it in its node's header (so a node saving its own
///   output needs no extra allocation); other variables keep it inline until
///   it is shared.
///
/// The data is behind a read-write lock: reads take it shared, and an
/// in-place replacement ([`set_data`](Self::set_data)) swaps the raw tensor
/// and frees the old one (an optimizer updating a parameter keeps one copy of
/// it, as PyTorch does). The history is read without a lock: it is stored
/// immutably at creation; [`rebase_history`](Self::rebase_history) stores
/// the new one beside it and sets a flag, and from then on history reads go
/// through a mutex.
pub struct Variable<T: Tensor>(pub(crate) VarArc<VarInner<T>>);

const REQUIRES_GRAD: u8 = 1;
/// History was replaced: read it from `mutable`.
const REPLACED: u8 = 2;
const RETAINS_GRAD: u8 = 4;
/// A view of another variable ([`crate::view`]): data and history are brought up to date
/// from the base before they are read (the history then lives in `mutable`).
const IS_VIEW: u8 = 8;

pub(crate) struct VarInner<T: Tensor> {
    flags: AtomicU8,
    version: AtomicU32,
    output_nr: u32,
    /// The current raw tensor. A lock rather than a value read without one: a
    /// replaced tensor must be freed, and a reader may be using it. One reader at a time
    /// takes it with one atomic operation (`data_lock.rs`).
    data: DataLock<T>,
    grad_fn: Option<NodeRef<T>>,
    /// What an op's output hardly ever needs, allocated on first use: one pointer in every
    /// variable instead of 32 bytes (measured: a variable of the chain bench's tensor went
    /// from 104 to 80 bytes with its counts).
    rare: CounterSlot<Rare<T>>,
}

/// The part of a variable allocated on first use ([`VarInner::rare`]).
pub(crate) struct Rare<T: Tensor> {
    /// Claimed by the running graph task (see the engine): a leaf's vertex.
    pub(crate) task_slot: AtomicU64,
    /// Set when the version counter is shared with other variables and is
    /// not this variable's node slot (see [`Variable::shared_counter`]).
    shared_version: CounterSlot<SharedCounter<T>>,
    mutable: Mutex<Option<Box<Mutable<T>>>>,
}

impl<T: Tensor> VarInner<T> {
    /// The rarely needed part, allocated now if it was not yet.
    #[inline]
    pub(crate) fn rare(&self) -> &Rare<T> {
        self.rare.get_or_init(|| Rare {
            task_slot: AtomicU64::new(0),
            shared_version: CounterSlot::empty(),
            mutable: Mutex::new(None),
        })
    }

    /// The shared version counter, if one was set.
    #[inline]
    fn shared_version(&self) -> Option<&SharedCounter<T>> {
        self.rare.get().and_then(|r| r.shared_version.get())
    }
}

pub(crate) type LeafHooks<T> = Vec<Hook<TensorHookFn<T>>>;

/// The rarely written part of a variable, allocated on first write.
pub(crate) struct Mutable<T: Tensor> {
    history: Option<(Option<NodeRef<T>>, u32)>,
    pub(crate) grad: Option<Variable<T>>,
    name: Option<String>,
    hooks: LeafHooks<T>,
    pub(crate) view: Option<Box<ViewMeta<T>>>,
    /// Tangents per dual level ([`crate::forward`]).
    fw: Tangents<T>,
}

impl<T: Tensor> Default for Mutable<T> {
    fn default() -> Self {
        Mutable {
            history: None,
            grad: None,
            name: None,
            hooks: Vec::new(),
            view: None,
            fw: Vec::new(),
        }
    }
}

type MutGuard<'a, T> = MutexGuard<'a, Option<Box<Mutable<T>>>>;

impl<T: Tensor> Clone for Variable<T> {
    fn clone(&self) -> Self {
        Variable(self.0.clone())
    }
}

impl<T: Tensor> fmt::Debug for Variable<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Variable");
        if let Some(n) = self.name() {
            d.field("name", &n);
        }
        d.field("meta", &self.with_data(TensorMeta::of))
            .field("requires_grad", &self.requires_grad());
        if let Some(g) = self.grad_fn() {
            d.field("grad_fn", &g).field("output_nr", &self.output_nr());
        }
        d.finish()
    }
}

impl<T: Tensor> VarInner<T> {
    fn new(data: T, grad_fn: Option<NodeRef<T>>, output_nr: u32, requires_grad: bool) -> Self {
        VarInner {
            flags: AtomicU8::new(if requires_grad { REQUIRES_GRAD } else { 0 }),
            version: AtomicU32::new(0),
            data: DataLock::new(data),
            grad_fn,
            output_nr,
            rare: CounterSlot::empty(),
        }
    }
}

impl<T: Tensor> Variable<T> {
    /// A variable that does not require grad (no history).
    #[inline]
    pub fn from_data(data: T) -> Self {
        Variable(VarArc::new_with(|| VarInner::new(data, None, 0, false)))
    }

    /// A leaf variable; with `requires_grad`, backward accumulates into its `.grad`.
    pub fn new(data: T, requires_grad: bool) -> Self {
        Variable(VarArc::new(VarInner::new(data, None, 0, requires_grad)))
    }

    #[inline(always)]
    pub(crate) fn with_grad_fn(data: T, grad_fn: NodeRef<T>, output_nr: u32) -> Self {
        Variable(VarArc::new_with(|| {
            VarInner::new(data, Some(grad_fn), output_nr, true)
        }))
    }

    /// Rebuilds a saved output or makes an alias: given data and history,
    /// the version counter `counter`.
    pub(crate) fn reconstructed(
        data: T,
        grad_fn: Option<NodeRef<T>>,
        output_nr: u32,
        requires_grad: bool,
        counter: SharedCounter<T>,
    ) -> Self {
        let inner = VarInner::new(data, grad_fn, output_nr, requires_grad);
        let _ = inner.rare().shared_version.set(counter);
        Variable(VarArc::new(inner))
    }

    /// The history lives in the mutable part (replaced, or a view brought up to date
    /// first).
    #[inline]
    fn replaced(&self) -> bool {
        let flags = self.0.flags.load(Ordering::Acquire);
        if flags & IS_VIEW != 0 {
            self.sync_view();
        }
        flags & (REPLACED | IS_VIEW) != 0
    }

    /// Whether this variable is a view of another ([`crate::view::make_view`]), or a
    /// `detach()`ed alias of one (it shares its origin's values the same way; PyTorch's
    /// `_is_view()` is false for those, and [`base`](Self::base) is `None`).
    pub fn is_view(&self) -> bool {
        self.0.flags.load(Ordering::Acquire) & IS_VIEW != 0
    }

    /// The variable this one is a view of (PyTorch's `._base`): the root of a chain of views.
    /// A `detach()`ed variable shares its origin's values but is no view (`None`), as in
    /// PyTorch.
    pub fn base(&self) -> Option<Variable<T>> {
        if !self.is_view() {
            return None;
        }
        let g = self.mutable();
        g.as_ref()?
            .view
            .as_ref()
            .filter(|v| !v.is_data_alias())
            .and_then(|v| v.base.get())
    }

    /// Marks this variable a view with `meta` (its data and history are current now).
    pub(crate) fn set_view(&self, meta: ViewMeta<T>) {
        let mut g = self.mutable();
        let m = Self::mutable_mut(&mut g);
        m.view = Some(Box::new(meta));
        self.0.flags.fetch_or(IS_VIEW, Ordering::Release);
    }

    /// Brings a stale view up to date: its base changed since its data and history were
    /// computed, so they are computed again from the base (PyTorch regenerates a view's
    /// `grad_fn` the same way).
    fn sync_view(&self) {
        let Some(fresh) = view::refreshed(self) else {
            return;
        };
        let (data, history, requires_grad) = fresh;
        // Not under the mutable lock: a reader holding the data lock may be
        // about to take it.
        self.set_data(data);
        let Some(history) = history else {
            return;
        };
        let mut g = self.mutable();
        Self::mutable_mut(&mut g).history = Some(history);
        if requires_grad {
            self.0.flags.fetch_or(REQUIRES_GRAD, Ordering::Release);
        }
    }

    /// Takes `new`'s data, and its history when it has one (an in-place change written
    /// into a base through one of its views); under forward AD its tangents too.
    pub(crate) fn replace_with(&self, new: &Variable<T>) {
        self.set_data(new.data());
        if let Some((node, nr)) = new.with_history(|n, nr| n.cloned().map(|n| (n, nr))) {
            self.rebase_history_at(node, nr);
        }
        if crate::levels::is_forward_ad_enabled() {
            self.take_tangents_of(new);
        }
    }

    pub(crate) fn mutable(&self) -> MutGuard<'_, T> {
        lock(&self.0.rare().mutable)
    }

    /// `f` of the mutable part if it exists (a read that allocates nothing).
    fn peek<R>(&self, f: impl FnOnce(&Mutable<T>) -> Option<R>) -> Option<R> {
        let rare = self.0.rare.get()?;
        lock(&rare.mutable).as_deref().and_then(f)
    }

    fn mutable_mut<'a>(g: &'a mut MutGuard<'_, T>) -> &'a mut Mutable<T> {
        g.get_or_insert_with(Default::default)
    }

    /// The raw tensor (a clone: make `T` cheap to clone, e.g. `Arc`-backed).
    #[inline]
    pub fn data(&self) -> T {
        self.with_data(T::clone)
    }

    /// The raw tensor under the read lock (brought up to date first if a view), for a
    /// caller that needs it beyond a closure ([`crate::SavedVariable::data_ref`]).
    pub(crate) fn read_data(&self) -> ReadGuard<'_, T> {
        if self.0.flags.load(Ordering::Acquire) & IS_VIEW != 0 {
            self.sync_view();
        }
        self.0.data.read()
    }

    /// Runs `f` on the raw tensor without cloning it.
    #[inline]
    pub fn with_data<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        if self.0.flags.load(Ordering::Acquire) & IS_VIEW != 0 {
            self.sync_view();
        }
        let data = self.0.data.read();
        f(&data)
    }

    /// The current history, given the locked mutable state.
    fn history_in<'g>(&'g self, g: &'g MutGuard<'_, T>) -> (Option<&'g NodeRef<T>>, u32) {
        match g.as_ref().and_then(|m| m.history.as_ref()) {
            Some((node, nr)) => (node.as_ref(), *nr),
            None => (self.0.grad_fn.as_ref(), self.0.output_nr),
        }
    }

    /// Replaces the raw tensor without touching history or version (PyTorch's
    /// `x.data = ...`). In-place ops use [`record_inplace`](crate::record_inplace)
    /// or this plus [`bump_version`](Self::bump_version).
    /// The old raw tensor is dropped (after the lock is released).
    pub fn set_data(&self, data: T) {
        let mut slot = self.0.data.write();
        let old = std::mem::replace(&mut *slot, data);
        drop(slot);
        drop(old);
    }

    /// Shape of the raw tensor.
    pub fn shape(&self) -> Vec<usize> {
        self.with_data(|d| d.shape().to_vec())
    }

    /// Whether gradients flow to this variable (always true for non-leaves).
    #[inline]
    pub fn requires_grad(&self) -> bool {
        let flags = self.0.flags.load(Ordering::Relaxed);
        if flags & IS_VIEW != 0 {
            return self.view_requires_grad();
        }
        flags & REQUIRES_GRAD != 0
    }

    /// A view requires grad when its base does, even one made in no_grad mode
    /// (PyTorch's `DifferentiableViewMeta::requires_grad`). Out of line: every recorded
    /// op asks each input, and views are few.
    #[cold]
    #[inline(never)]
    fn view_requires_grad(&self) -> bool {
        self.sync_view();
        self.0.flags.load(Ordering::Relaxed) & REQUIRES_GRAD != 0
            || self.base().is_some_and(|b| b.requires_grad())
    }

    /// Runs `f` on `(grad_fn, output_nr)`.
    #[inline]
    pub(crate) fn with_history<R>(&self, f: impl FnOnce(Option<&NodeRef<T>>, u32) -> R) -> R {
        if self.0.flags.load(Ordering::Acquire) & (REPLACED | IS_VIEW) == 0 {
            return f(self.0.grad_fn.as_ref(), self.0.output_nr);
        }
        self.with_replaced_history(f)
    }

    /// [`with_history`](Self::with_history) of a variable whose history was replaced or
    /// is a view's (read under the lock). Out of line: the common case is one flag test.
    #[cold]
    #[inline(never)]
    fn with_replaced_history<R>(&self, f: impl FnOnce(Option<&NodeRef<T>>, u32) -> R) -> R {
        if !self.replaced() {
            return f(self.0.grad_fn.as_ref(), self.0.output_nr);
        }
        let g = self.mutable();
        let (node, nr) = self.history_in(&g);
        f(node, nr)
    }

    /// Sets `requires_grad` on a leaf; fails on non-leaves with PyTorch's message.
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<(), AutogradError> {
        let g = self.mutable();
        if self.with_history_locked(&g).is_some() {
            return Err(AutogradError::NonLeafRequiresGrad);
        }
        if requires_grad {
            self.0.flags.fetch_or(REQUIRES_GRAD, Ordering::Relaxed);
        } else {
            self.0.flags.fetch_and(!REQUIRES_GRAD, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Whether this is a leaf (no `grad_fn`).
    pub fn is_leaf(&self) -> bool {
        self.with_history(|f, _| f.is_none())
    }

    /// The node that computed this variable, if any.
    pub fn grad_fn(&self) -> Option<NodeRef<T>> {
        self.with_history(|f, _| f.cloned())
    }

    /// Which output of `grad_fn` this is.
    pub fn output_nr(&self) -> usize {
        self.with_history(|_, nr| nr as usize)
    }

    /// Where this variable's gradient goes: `(grad_fn, output_nr)` for a
    /// non-leaf, the leaf itself if it requires grad, else `None`.
    #[inline]
    pub fn gradient_edge(&self) -> Option<Edge<T>> {
        // `requires_grad` is read outside `with_history`: for a view it may lock the variable.
        let node = self.with_history(|f, nr| {
            f.map(|f| Edge::Node {
                node: f.clone(),
                input_nr: nr,
            })
        });
        node.or_else(|| self.requires_grad().then(|| Edge::Leaf(self.clone())))
    }

    /// The accumulated gradient (leaves, and non-leaves after `retain_grad`).
    pub fn grad(&self) -> Option<Variable<T>> {
        self.peek(|m| m.grad.clone())
    }

    /// Replaces the accumulated gradient.
    pub fn set_grad(&self, grad: Option<Variable<T>>) {
        let mut g = self.mutable();
        if grad.is_none() && g.is_none() {
            return;
        }
        Self::mutable_mut(&mut g).grad = grad;
    }

    /// Clears the accumulated gradient (sets it to `None`, like
    /// `zero_grad(set_to_none=True)`).
    pub fn zero_grad(&self) {
        self.set_grad(None);
    }

    /// Runs `f` on the accumulated gradient slot, with the variable's lock held.
    pub(crate) fn with_grad_slot<R>(&self, f: impl FnOnce(&mut Option<Variable<T>>) -> R) -> R {
        let mut g = self.mutable();
        f(&mut Self::mutable_mut(&mut g).grad)
    }

    /// The node slot holding this variable's counter: an op's output
    /// (`output_nr < NODE_COUNTERS`) whose counter was not replaced by a
    /// shared one. (The node is the one it was created with, kept alive by
    /// the variable even after an in-place op rebased its history.)
    #[inline]
    fn node_counter(&self) -> Option<(&NodeRef<T>, u32)> {
        match &self.0.grad_fn {
            Some(f) if (self.0.output_nr as usize) < NODE_COUNTERS => Some((f, self.0.output_nr)),
            _ => None,
        }
    }

    /// The counter when it is not the inline one: the shared one if set,
    /// else the node slot of an op's output. Neither moves once there.
    #[inline]
    fn outside_counter(&self) -> Option<&AtomicU32> {
        if let Some(c) = self.0.shared_version() {
            return Some(c.atomic());
        }
        self.node_counter().map(|(f, k)| f.version_slot(k))
    }

    #[inline]
    fn counter(&self) -> &AtomicU32 {
        self.outside_counter().unwrap_or(&self.0.version)
    }

    /// The version counter: number of in-place modifications (shared with aliases).
    #[inline]
    pub fn version(&self) -> u32 {
        self.counter().load(Ordering::Acquire)
    }

    /// Increments the version counter (done by in-place ops).
    pub fn bump_version(&self) {
        if let Some(c) = self.outside_counter() {
            c.fetch_add(1, Ordering::AcqRel);
            return;
        }
        // The lock orders this against a concurrent conversion of the inline
        // counter to a shared one.
        let _g = self.mutable();
        self.counter().fetch_add(1, Ordering::AcqRel);
    }

    /// The version counter, for another variable to share: the shared one
    /// if there is one, the node slot of an op's output, else the inline
    /// counter moved (under the lock) to a shared cell on first use.
    pub(crate) fn shared_counter(&self) -> SharedCounter<T> {
        if let Some(c) = self.0.shared_version() {
            return c.clone();
        }
        if let Some((f, k)) = self.node_counter() {
            return SharedCounter::Node(f.downgrade(), k);
        }
        let _g = self.mutable();
        if let Some(c) = self.0.shared_version() {
            return c.clone();
        }
        let cell = Arc::new(AtomicU32::new(self.0.version.load(Ordering::Acquire)));
        let _ = self
            .0
            .rare()
            .shared_version
            .set(SharedCounter::Cell(cell.clone()));
        SharedCounter::Cell(cell)
    }

    /// Whether this variable's version counter is the slot of output `nr`
    /// of `node` (what a saved output of `node` reaches through its weak
    /// reference to the node); otherwise a saved output keeps
    /// [`shared_counter`](Self::shared_counter). Takes no lock.
    pub(crate) fn counter_is_slot_of(&self, node: &NodeRef<T>, nr: u32) -> bool {
        self.0.shared_version().is_none()
            && self
                .node_counter()
                .is_some_and(|(f, k)| f.ptr_eq(node) && k == nr)
    }

    /// Makes this variable use `base`'s version counter, as a view or alias
    /// of `base` must (an in-place change of either is seen by both). Call it
    /// on a freshly created output; fails if this variable already shares a
    /// counter with another one.
    pub fn share_version_counter(&self, base: &Variable<T>) -> Result<(), AutogradError> {
        let c = base.shared_counter();
        if let Some(mine) = self.0.shared_version() {
            if std::ptr::eq(mine.atomic(), c.atomic()) {
                return Ok(());
            }
            return Err(AutogradError::msg(
                "share_version_counter: this variable already shares a version counter",
            ));
        }
        if std::ptr::eq(self.counter(), c.atomic()) {
            return Ok(());
        }
        let _g = self.mutable();
        self.0
            .rare()
            .shared_version
            .set(c)
            .map_err(|_| AutogradError::msg("share_version_counter: already shared"))
    }

    /// A new variable with the same data and version counter but no history
    /// and `requires_grad == false` (PyTorch's `detach()`).
    ///
    /// As in PyTorch the result shares this variable's values: an in-place op on either is
    /// seen by the other (and bumps the shared version counter), while neither's history
    /// changes through the other.
    pub fn detach(&self) -> Variable<T> {
        let alias = Variable::from_data(self.data());
        view::make_data_alias(&alias, self);
        alias
    }

    /// An alias of this variable with other raw data (e.g. a reshaped view)
    /// sharing its version counter, without history.
    pub fn alias(&self, data: T) -> Variable<T> {
        Variable::reconstructed(data, None, 0, false, self.shared_counter())
    }

    /// Whether both handles refer to the same variable.
    pub fn ptr_eq(&self, other: &Variable<T>) -> bool {
        VarArc::ptr_eq(&self.0, &other.0)
    }

    /// The variable's name (shown by [`to_dot`](crate::to_dot)).
    pub fn name(&self) -> Option<String> {
        self.peek(|m| m.name.clone())
    }

    /// Sets the variable's name.
    pub fn set_name(&self, name: impl Into<String>) {
        let mut g = self.mutable();
        Self::mutable_mut(&mut g).name = Some(name.into());
    }

    /// Builder form of [`set_name`](Self::set_name).
    pub fn named(self, name: impl Into<String>) -> Self {
        self.set_name(name);
        self
    }

    /// Whether `.grad` is kept for this non-leaf.
    pub fn retains_grad(&self) -> bool {
        self.0.flags.load(Ordering::Relaxed) & RETAINS_GRAD != 0
    }

    /// Keeps the gradient of a non-leaf in [`grad`](Self::grad) during
    /// backward (no-op for leaves).
    pub fn retain_grad(&self) -> Result<(), AutogradError> {
        if !self.requires_grad() {
            return Err(AutogradError::RetainGradOnNoGrad);
        }
        let g = self.mutable();
        let Some((f, nr)) = self.with_history_locked(&g) else {
            return Ok(());
        };
        if self.retains_grad() {
            return Ok(());
        }
        self.0.flags.fetch_or(RETAINS_GRAD, Ordering::Relaxed);
        drop(g);
        let weak = VarArc::downgrade(&self.0);
        f.add_hooks(|h| h.retain.push((nr as usize, weak)));
        Ok(())
    }

    /// `(grad_fn, output_nr)` of a non-leaf, read with the lock already held.
    fn with_history_locked(&self, g: &MutGuard<'_, T>) -> Option<(NodeRef<T>, u32)> {
        let (node, nr) = self.history_in(g);
        node.map(|n| (n.clone(), nr))
    }

    /// Registers a hook on this variable's gradient: it sees the gradient
    /// before it is used (accumulated into a leaf, or given to `grad_fn`) and
    /// may return a replacement (`Ok(Some(g))`) of the same shape and dtype.
    /// Runs once per backward with the summed gradient.
    ///
    /// As in PyTorch:
    /// * an error the hook returns ends the backward pass and reaches its
    ///   caller (wrap foreign errors with [`AutogradError::hook`]); so does a
    ///   replacement of another shape (`hook 'name' has changed the size of
    ///   value`) or dtype (`hook 'name' has changed the type of value (was X
    ///   got Y)`), where `name` is the function's name for a `fn` item and
    ///   `enclosing_fn::{{closure}}` for a closure; nothing is accumulated then;
    /// * hooks run with no runtime lock held, on a snapshot of the list taken
    ///   when the gradient is ready: a hook may remove itself or others (from
    ///   the next backward on; this pass runs the snapshot) or register new
    ///   ones (which run from the next backward on);
    /// * a hook that panics stays registered (as every other hook does).
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
    /// let x = Variable::new(S(1.0), true);
    /// x.register_hook(|g| Ok(Some(ops::add(g, g))))?; // doubles the gradient
    /// ops::add(&x, &x).backward()?;
    /// assert_eq!(x.grad().unwrap().data().0, 4.0);
    /// # Ok::<(), AutogradError>(())
    /// ```
    pub fn register_hook<F>(&self, f: F) -> Result<HookId, AutogradError>
    where
        F: Fn(&Variable<T>) -> Result<Option<Variable<T>>, AutogradError> + Send + Sync + 'static,
    {
        if !self.requires_grad() {
            return Err(AutogradError::HookOnNoGrad);
        }
        let hook = Hook::new::<F>(next_hook_id(), Arc::new(f) as Arc<TensorHookFn<T>>);
        let id = hook.id;
        let mut g = self.mutable();
        match self.with_history_locked(&g) {
            Some((node, nr)) => {
                drop(g);
                Ok(node.register_tensor_prehook(nr as usize, hook))
            }
            None => {
                crate::node::note_leaf_hook();
                Self::mutable_mut(&mut g).hooks.push(hook);
                Ok(id)
            }
        }
    }

    /// Removes a hook registered with [`register_hook`](Self::register_hook).
    pub fn remove_hook(&self, id: HookId) -> bool {
        let mut g = self.mutable();
        if let Some(m) = g.as_mut() {
            let n = m.hooks.len();
            m.hooks.retain(|h| h.id != id);
            if m.hooks.len() != n {
                return true;
            }
        }
        match self.with_history_locked(&g) {
            Some((f, _)) => {
                drop(g);
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
        self.rebase_history_at(node, 0);
    }

    /// [`rebase_history`](Self::rebase_history) onto output `nr` of `node`.
    pub(crate) fn rebase_history_at(&self, node: NodeRef<T>, nr: u32) {
        let mut g = self.mutable();
        let old = self.with_history_locked(&g).map(|(n, _)| n);
        Self::mutable_mut(&mut g).history = Some((Some(node.clone()), nr));
        self.0
            .flags
            .fetch_or(REPLACED | REQUIRES_GRAD, Ordering::Release);
        drop(g);
        if self.retains_grad() {
            let me = VarArc::as_ptr(&self.0);
            if let Some(old) = old {
                old.with_hooks(|h| h.retain.retain(|(_, w)| w.as_ptr() != me));
            }
            let weak = VarArc::downgrade(&self.0);
            node.add_hooks(|h| h.retain.push((nr as usize, weak)));
        }
    }

    /// A snapshot of the leaf hooks (the engine calls them without the lock held).
    pub(crate) fn leaf_hooks(&self) -> LeafHooks<T> {
        self.peek(|m| Some(m.hooks.clone())).unwrap_or_default()
    }

    pub(crate) fn inner_ptr(&self) -> usize {
        VarArc::as_ptr(&self.0) as usize
    }
}

/// Where a shared version counter lives.
pub(crate) enum SharedCounter<T: Tensor> {
    /// A cell of its own (the inline counter of a variable that was not an
    /// op's output, moved here when first shared).
    Cell(Arc<AtomicU32>),
    /// Output `k`'s slot in a node's header, held weakly (the header
    /// outlives the node).
    Node(WeakNode<T>, u32),
}

impl<T: Tensor> Clone for SharedCounter<T> {
    fn clone(&self) -> Self {
        match self {
            SharedCounter::Cell(c) => SharedCounter::Cell(c.clone()),
            SharedCounter::Node(w, k) => SharedCounter::Node(w.clone(), *k),
        }
    }
}

impl<T: Tensor> SharedCounter<T> {
    #[inline]
    pub(crate) fn atomic(&self) -> &AtomicU32 {
        match self {
            SharedCounter::Cell(c) => c,
            SharedCounter::Node(w, k) => w.version_slot(*k),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A two-word tensor handle (what the size check below is about).
    type S = crate::tensor::testing::Handle<std::sync::Arc<[f32]>>;

    #[test]
    fn reads_allocate_no_rare_part_and_writes_do() {
        let v = Variable::new(S::new(std::sync::Arc::from([1.0f32])), true);
        assert!(v.grad().is_none() && v.name().is_none() && v.leaf_hooks().is_empty());
        assert_eq!(v.version(), 0);
        assert!(v.0.rare.get().is_none(), "a read allocated the rare part");
        v.set_name("x");
        assert!(v.0.rare.get().is_some());
        assert_eq!(v.name().as_deref(), Some("x"));
        // A variable's fixed part: flags, version, output number, the data's lock, `grad_fn`
        // (a node pointer with its vtable) and the rare pointer: 72 bytes for a two-word
        // tensor on 64-bit targets (104 with the rare part inline).
        assert!(std::mem::size_of::<VarInner<S>>() <= 72);
    }

    #[test]
    fn variables_of_handle_sized_tensors_take_pool_blocks() {
        // A tensor as the examples' backends have them: a shape and a shared buffer. Five
        // words fill the 128-byte block exactly; a larger tensor, or a larger `VarInner`,
        // would silently go back to `malloc` (`mem/var_ptr.rs`).
        type Shared = crate::tensor::testing::Handle<(Vec<usize>, std::sync::Arc<[f32]>)>;
        assert!(crate::mem::takes_pool_block::<VarInner<Shared>>());
    }
}
