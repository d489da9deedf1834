//! How gradient hooks run: tensor hooks ([`Variable::register_hook`]), node pre- and
//! post-hooks ([`NodeRef::register_prehook`](crate::NodeRef::register_prehook),
//! [`NodeRef::register_hook`](crate::NodeRef::register_hook)), and the checks PyTorch applies
//! to what they return (`check_single_result` / `check_result` in `python_hook.cpp`). The
//! hooks themselves ([`Hook`], what variables and nodes hold) are `node/hook.rs`'s.
//!
//! Hooks are `Arc`'d closures. The engine copies the list of a tensor or node (a snapshot,
//! as PyTorch iterates over `PyDict_Values` of its hooks) and calls them with no runtime lock
//! held: a hook may remove itself or another hook (the removal takes effect from the next
//! backward; this one runs its snapshot, as in PyTorch), register new hooks (they run from
//! the next backward), or run a backward of its own. A hook that panics loses nothing: the
//! registered list is never taken out of its variable or node.

use crate::error::AutogradError;
use crate::node::{Hook, PostHookFn, PreHookFn, TensorHookFn, VariableList};
use crate::tensor::{Tensor, TensorMeta};
use crate::variable::Variable;

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
