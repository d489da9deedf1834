//! Saved-tensor hooks (PyTorch's `torch.autograd.graph.saved_tensors_hooks` and
//! `grad_fn._raw_saved_*.register_hooks`): a pack hook runs when a tensor is saved for
//! backward and its result is kept instead of the tensor; the unpack hook turns it back into
//! a tensor when backward needs it. Typical uses: keep saved activations compressed (a lower
//! precision, a sparse form) or off the device (on disk), and restore them at backward.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::error::AutogradError;
use crate::node::{NodeRef, SavedHooks, push_default_hooks, remove_default_hooks};
use crate::tensor::Tensor;
use crate::variable::Variable;

/// Saved-tensor hooks on one saved variable of a node (here, beside the hooks' type, so that
/// the node does not import this file).
impl<T: Tensor> NodeRef<T> {
    /// Registers saved-tensor hooks on the saved variable `name` of this node (PyTorch's
    /// `grad_fn._raw_saved_<name>.register_hooks(pack, unpack)`; see
    /// [`SavedVariable::register_hooks`](crate::SavedVariable::register_hooks) for the rules and errors). The node must implement
    /// [`Node::visit_saved_mut`](crate::Node::visit_saved_mut) (generated nodes do). A list of saved tensors gets the
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
}

/// Restores the previous default saved-tensor hooks when dropped (see
/// [`saved_tensors_hooks`]). Not `Send`: the hooks are the current thread's.
#[must_use = "the hooks are in effect until the guard is dropped"]
pub struct SavedTensorsHooksGuard {
    hooks: Arc<dyn Any + Send + Sync>,
    _not_send: PhantomData<*const ()>,
}

impl Drop for SavedTensorsHooksGuard {
    fn drop(&mut self) {
        remove_default_hooks(&self.hooks);
    }
}

/// Sets `pack`/`unpack` as the hooks of every tensor of type `T` saved for backward on this
/// thread until the guard drops (PyTorch's `torch.autograd.graph.saved_tensors_hooks`
/// context manager; nested calls: the innermost pair wins).
///
/// * `pack` runs when an op saves a tensor (under no_grad), on the tensor itself (an
///   input) or on a history-less alias of it (same data and version counter, no link to it: the
///   saving op's output); the node keeps what it returns instead of the tensor. `unpack` runs each time backward unpacks it, and must return a tensor of the
///   saved shape and dtype (`Output of saved tensor unpack_hook expected to have shape [3]
///   but got [2]`); the runtime gives the result the saved tensor's place in the graph.
/// * As in PyTorch, a saved tensor with hooks is not version-checked (the hooks decide what
///   backward sees); a pack hook must not modify its input in place (PyTorch's error, `A saved
///   tensor pack hook is modifying its input in place. ...`).
/// * An error from `pack` (or that check) is returned when backward unpacks the tensor
///   ([`SavedVariable::new`](crate::SavedVariable::new) cannot fail); PyTorch raises it
///   during the forward op.
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
/// // Keep saved tensors as f32, restore them as f64 at backward.
/// let x = Variable::new(S(1.5), true);
/// let saved = {
///     let _hooks = saved_tensors_hooks(
///         |v: &Variable<S>| Ok(v.data().0 as f32),
///         |p: &f32| Ok(Variable::from_data(S(*p as f64))),
///     );
///     SavedVariable::new(&x, false) // what an op saves: here an f32
/// };
/// assert_eq!(saved.unpack()?.data().0, 1.5);
/// # Ok::<(), AutogradError>(())
/// ```
pub fn saved_tensors_hooks<T, P, Pk, Un>(pack: Pk, unpack: Un) -> SavedTensorsHooksGuard
where
    T: Tensor,
    P: Send + Sync + 'static,
    Pk: Fn(&Variable<T>) -> Result<P, AutogradError> + Send + Sync + 'static,
    Un: Fn(&P) -> Result<Variable<T>, AutogradError> + Send + Sync + 'static,
{
    let hooks: Arc<dyn Any + Send + Sync> = Arc::new(SavedHooks::new(pack, unpack));
    push_default_hooks(hooks.clone());
    SavedTensorsHooksGuard {
        hooks,
        _not_send: PhantomData,
    }
}
