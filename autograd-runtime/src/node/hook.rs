//! A registered hook ([`Hook`]) and the closures' types: what variables and nodes hold. How
//! hooks run, and the checks on what they return, are `hooks.rs`'s.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{HookId, VariableList};
use crate::error::AutogradError;
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
