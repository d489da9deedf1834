//! A node's hooks and anomaly trace: kept outside its record, in a map by node address
//! ([`EXTRAS`]), for the few nodes that have any; and their registration.

use super::*;

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

/// The rarely present part of a node: its hooks and anomaly trace, kept in [`EXTRAS`].
pub(crate) struct NodeExtras<T: Tensor> {
    hooks: Mutex<NodeHooks<T>>,
    /// The backtrace of the forward call (anomaly mode); set at creation.
    pub(super) anomaly: Option<AnomalyTrace>,
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
    pub(super) fn extras(&self) -> Option<Arc<NodeExtras<T>>> {
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
    pub(super) fn note_anomaly(&self) {
        self.attach_extras(NodeExtras {
            hooks: Mutex::new(NodeHooks::default()),
            anomaly: Some(AnomalyTrace(Backtrace::force_capture())),
        });
    }
}

impl<T: Tensor> NodeRef<T> {
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
}

#[cfg(test)]
mod tests {
    use crate::mode::detect_anomaly;
    use crate::ops::add;
    use crate::tensor::testing::val;
    use crate::variable::Variable;

    #[test]
    fn a_node_has_extras_only_once_it_has_hooks_or_a_trace() {
        let x = Variable::new(val(1.0), true);
        let n = add(&x, &x).grad_fn().unwrap();
        assert!(!n.has_hooks() && n.hooks_snapshot().is_none() && n.forward_trace().is_none());
        let pre = n.register_prehook(|_| Ok(()));
        let post = n.register_hook(|_, _| Ok(()));
        assert!(n.has_hooks());
        let h = n.hooks_snapshot().unwrap();
        assert_eq!((h.pre.len(), h.post.len(), h.tensor_pre.len()), (1, 1, 0));
        assert!(n.remove_hook(pre) && !n.remove_hook(pre));
        assert!(n.remove_hook(post));
        let h = n.hooks_snapshot().unwrap();
        assert!(h.pre.is_empty() && h.post.is_empty());
    }

    #[test]
    fn anomaly_mode_keeps_the_forward_trace_without_hooks() {
        let x = Variable::new(val(1.0), true);
        let n = {
            let _a = detect_anomaly();
            add(&x, &x).grad_fn().unwrap()
        };
        assert!(n.forward_trace().is_some_and(|t| !t.is_empty()));
        assert!(!n.has_hooks());
    }
}
