//! Gradient hooks: tensor hooks ([`Variable::register_hook`]), node pre- and post-hooks
//! ([`NodeRef::register_prehook`](crate::NodeRef::register_prehook),
//! [`NodeRef::register_hook`](crate::NodeRef::register_hook)), and the checks PyTorch applies
//! to what they return (`check_single_result` / `check_result` in `python_hook.cpp`).
//!
//! Hooks are `Arc`'d closures. The engine copies the list of a tensor or node (a snapshot,
//! as PyTorch iterates over `PyDict_Values` of its hooks) and calls them with no runtime lock
//! held: a hook may remove itself or another hook (the removal takes effect from the next
//! backward; this one runs its snapshot, as in PyTorch), register new hooks (they run from
//! the next backward), or run a backward of its own. A hook that panics loses nothing: the
//! registered list is never taken out of its variable or node.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::AutogradError;
use crate::node::{HookId, VariableList};
use crate::tensor::{Tensor, TensorMeta};
use crate::variable::Variable;

/// Whether a hook was ever registered on a leaf in this process. A plain `backward()`
/// runs leaves after every node when none was (`engine/ready.rs`): without a hook on a
/// leaf, nothing can tell when a leaf's gradient was accumulated.
static LEAF_HOOKS: AtomicBool = AtomicBool::new(false);

/// Notes that a leaf has a hook (for the rest of the process).
pub(crate) fn note_leaf_hook() {
    LEAF_HOOKS.store(true, Ordering::Relaxed);
}

/// Whether a leaf has ever had a hook in this process.
pub(crate) fn leaf_hooks_registered() -> bool {
    LEAF_HOOKS.load(Ordering::Relaxed)
}

/// A tensor hook: sees a gradient, may return a replacement.
pub(crate) type TensorHookFn<T> =
    dyn Fn(&Variable<T>) -> Result<Option<Variable<T>>, AutogradError> + Send + Sync;
/// A node pre-hook: may modify the gradients before `apply`.
pub(crate) type PreHookFn<T> =
    dyn Fn(&mut VariableList<T>) -> Result<(), AutogradError> + Send + Sync;
/// A node post-hook: `(grad_inputs, grad_outputs)`; may modify the gradients returned by
/// `apply` (the first argument).
pub(crate) type PostHookFn<T> =
    dyn Fn(&mut VariableList<T>, &VariableList<T>) -> Result<(), AutogradError> + Send + Sync;

/// A registered hook: its id (for removal), the type name of the closure (for messages, as
/// PyTorch names a hook by its `__name__`) and the closure.
pub(crate) struct Hook<F: ?Sized> {
    pub(crate) id: HookId,
    name: &'static str,
    pub(crate) f: Arc<F>,
}

impl<F: ?Sized> Clone for Hook<F> {
    fn clone(&self) -> Self {
        Hook {
            id: self.id,
            name: self.name,
            f: self.f.clone(),
        }
    }
}

impl<F: ?Sized> Hook<F> {
    pub(crate) fn new<G>(id: HookId, f: Arc<F>) -> Self {
        Hook {
            id,
            name: std::any::type_name::<G>(),
            f,
        }
    }

    /// The hook's name in messages: the function's name for a `fn` item (`hook`, as PyTorch
    /// prints a `def hook`), `enclosing_fn::{{closure}}` for a closure.
    pub(crate) fn name(&self) -> String {
        display_name(self.name)
    }
}

fn display_name(type_name: &str) -> String {
    let path = type_name.split('<').next().unwrap_or(type_name);
    let mut segs = path.rsplit("::");
    match (segs.next(), segs.next()) {
        (Some(last), Some(parent)) if last.starts_with("{{closure") => {
            format!("{parent}::{last}")
        }
        (Some(last), _) => last.to_string(),
        _ => type_name.to_string(),
    }
}

/// What a gradient was before a hook replaced it.
struct Was {
    meta: TensorMeta,
    type_name: String,
}

impl Was {
    fn of<T: Tensor>(v: &Variable<T>) -> Self {
        v.with_data(|d| Was {
            meta: TensorMeta::of(d),
            type_name: d.type_name(),
        })
    }
}

/// PyTorch's `check_single_result` for one gradient a hook replaced (`original`, `result`
/// both defined): same dtype, same shape.
fn check_single<T: Tensor>(
    hook: &Hook<impl ?Sized>,
    original: &Was,
    result: &Variable<T>,
) -> Result<(), AutogradError> {
    let got = result.with_data(TensorMeta::of);
    if got.dtype() != original.meta.dtype() {
        return Err(AutogradError::HookChangedType {
            hook: hook.name(),
            was: original.type_name.clone(),
            got: result.with_data(T::type_name),
        });
    }
    if got.shape() != original.meta.shape() {
        return Err(AutogradError::HookChangedSize { hook: hook.name() });
    }
    Ok(())
}

/// Runs tensor hooks on a gradient in order, each seeing the previous one's result.
pub(crate) fn run_tensor_hooks<T: Tensor>(
    hooks: &[Hook<TensorHookFn<T>>],
    mut grad: Variable<T>,
) -> Result<Variable<T>, AutogradError> {
    for h in hooks {
        if let Some(new) = (h.f)(&grad)? {
            check_single(h, &Was::of(&grad), &new)?;
            grad = new;
        }
    }
    Ok(grad)
}

/// The shape and dtype of every gradient of a list, before a hook may edit it.
fn metas<T: Tensor>(grads: &VariableList<T>) -> Vec<Option<Was>> {
    grads.iter().map(|g| g.as_ref().map(Was::of)).collect()
}

/// PyTorch's `check_result` for a list a node hook edited: same length, no `None` replaced
/// by a gradient, every replaced gradient of the same dtype and shape.
fn check_list<T: Tensor>(
    hook: &Hook<impl ?Sized>,
    before: &[Option<Was>],
    after: &VariableList<T>,
) -> Result<(), AutogradError> {
    if before.len() != after.len() {
        return Err(AutogradError::HookWrongCount {
            hook: hook.name(),
            got: after.len(),
            expected: before.len(),
        });
    }
    for (was, now) in before.iter().zip(after.iter()) {
        match (was, now) {
            (None, Some(_)) => return Err(AutogradError::HookReplacedNone),
            (Some(m), Some(v)) => check_single(hook, m, v)?,
            _ => {}
        }
    }
    Ok(())
}

/// Runs node pre-hooks on the gradients `apply` is about to receive.
pub(crate) fn run_pre_hooks<T: Tensor>(
    hooks: &[Hook<PreHookFn<T>>],
    grads: &mut VariableList<T>,
) -> Result<(), AutogradError> {
    for h in hooks {
        let before = metas(grads);
        (h.f)(grads)?;
        check_list(h, &before, grads)?;
    }
    Ok(())
}

/// Runs node post-hooks on what `apply` returned (`outputs`), given what it received.
pub(crate) fn run_post_hooks<T: Tensor>(
    hooks: &[Hook<PostHookFn<T>>],
    outputs: &mut VariableList<T>,
    inputs: &VariableList<T>,
) -> Result<(), AutogradError> {
    for h in hooks {
        let before = metas(outputs);
        (h.f)(outputs, inputs)?;
        check_list(h, &before, outputs)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::display_name;

    #[test]
    fn hook_names_read_like_pythons() {
        assert_eq!(display_name("hooks_modes::hook"), "hook");
        assert_eq!(
            display_name("hooks_modes::my_test::{{closure}}"),
            "my_test::{{closure}}"
        );
        assert_eq!(display_name("a::f<b::C>"), "f");
    }
}
