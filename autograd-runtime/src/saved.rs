//! Saving a variable for backward and unpacking it ([`SavedVariable`]'s operations; its state
//! is `node/saved_state.rs`'s).

use std::fmt;
use std::sync::Arc;

use crate::error::AutogradError;
use crate::mode::{is_anomaly_enabled, is_grad_enabled, no_grad};
use crate::node::{
    Hooked, Node, Origin, OutputLink, OwnNode, SavedHooks, SavedVariable, State, VariableList,
    WeakNode, default_hooks,
};
use crate::tensor::{Tensor, TensorMeta};
use crate::variable::{SharedCounter, Variable};

/// A saved tensor's data from [`SavedVariable::data_ref`]: dereferences to the raw tensor.
pub struct SavedData<'a, T: Tensor>(DataRepr<'a, T>);

enum DataRepr<'a, T: Tensor> {
    Borrowed(&'a T),
    Read(crate::mem::ReadGuard<'a, T>),
    Owned(T),
}

impl<T: Tensor> SavedData<'_, T> {
    /// The tensor itself: moved out if it was given back by an unpack hook, else a clone
    /// of the handle.
    pub fn into_owned(self) -> T {
        match self.0 {
            DataRepr::Owned(t) => t,
            DataRepr::Borrowed(t) => t.clone(),
            DataRepr::Read(g) => (*g).clone(),
        }
    }
}

impl<T: Tensor> std::ops::Deref for SavedData<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        match &self.0 {
            DataRepr::Borrowed(t) => t,
            DataRepr::Read(g) => g,
            DataRepr::Owned(t) => t,
        }
    }
}

/// PyTorch's message when a pack hook modifies its input in place.
const ERR_PACK_INPLACE: &str = "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook cannot be modified by in-place operations as this can lead to unexpected side-effects. Please open an issue if you need to perform in-place operations on the input to a pack hook.";

impl<T: Tensor> fmt::Debug for SavedVariable<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.state {
            State::Empty => f.write_str("SavedVariable(empty)"),
            State::Released => f.write_str("SavedVariable(released)"),
            State::Var { version, .. }
            | State::Output { version, .. }
            | State::OwnOutput { version, .. } => {
                write!(f, "SavedVariable({:?}, version {version})", self.shape())
            }
            State::Hooked(_) => write!(f, "SavedVariable({:?}, packed)", self.shape()),
        }
    }
}

impl<T: Tensor> SavedVariable<T> {
    /// Saves `var` at its current version. `is_output` must be true when `var`
    /// is an output of the node that saves it (breaks the reference cycle).
    pub fn new(var: &Variable<T>, is_output: bool) -> Self {
        if let Some(hooks) = default_hooks::<T>() {
            return Self::hooked(var, is_output, hooks);
        }
        let version = var.version();
        // The weak reference is taken from the borrowed history: no strong
        // count is added and dropped (two atomic read-modify-writes).
        let history = is_output
            .then(|| {
                var.with_history(|f, nr| {
                    f.map(|f| (f.downgrade(), var.counter_is_slot_of(f, nr), nr))
                })
            })
            .flatten();
        if let Some((grad_fn, own_slot, output_nr)) = history {
            let counter = (!own_slot).then(|| var.shared_counter());
            return SavedVariable {
                state: State::Output {
                    data: var.data(),
                    output_nr,
                    version,
                    link: Box::new(OutputLink {
                        grad_fn,
                        counter,
                        fw: crate::tangents::snapshot(var),
                    }),
                },
            };
        }
        SavedVariable {
            state: State::Var {
                var: var.clone(),
                version,
            },
        }
    }

    /// Saves an optional variable (`None` unpacks to `None`).
    pub fn new_opt(var: Option<&Variable<T>>, is_output: bool) -> Self {
        var.map_or_else(Self::default, |v| Self::new(v, is_output))
    }

    /// Whether the variable was released by [`reset`](Self::reset).
    pub fn was_released(&self) -> bool {
        matches!(self.state, State::Released)
    }

    /// Frees the saved data; a later `unpack` fails with the "backward through
    /// the graph a second time" error.
    pub fn reset(&mut self) {
        if !matches!(self.state, State::Empty) {
            self.state = State::Released;
        }
    }

    /// The saved variable, checked against in-place modification.
    pub fn unpack(&self) -> Result<Variable<T>, AutogradError> {
        self.unpack_opt()?
            .ok_or(AutogradError::UndefinedSavedVariable)
    }

    /// Like [`unpack`](Self::unpack), but an empty (never saved) variable
    /// gives `Ok(None)` (for optional tensor arguments).
    pub fn unpack_opt(&self) -> Result<Option<Variable<T>>, AutogradError> {
        match &self.state {
            State::Empty => Ok(None),
            State::Released => Err(AutogradError::BackwardTwice),
            State::Var { var, version } => {
                let current = var.version();
                if current != *version {
                    let output_of = var.with_history(|f, nr| f.map(|f| (nr as usize, f.name())));
                    return Err(var.with_data(|d| mismatch(d, output_of, current, *version)));
                }
                Ok(Some(var.clone()))
            }
            State::Output {
                data,
                output_nr,
                version,
                link,
            } => {
                let (grad_fn, counter) = (&link.grad_fn, link.counter.as_ref());
                let current = output_version(grad_fn, *output_nr, counter);
                if current != *version {
                    // The node that saved its output is usually the one
                    // unpacking it, inside `apply`, with its lock held: the
                    // engine fills in the name when it cannot be read here.
                    let output_of = grad_fn
                        .upgrade()
                        .map(|f| (*output_nr as usize, f.try_name().unwrap_or_default()));
                    return Err(mismatch(data, output_of, current, *version));
                }
                let v = rebuild_output(data, grad_fn, *output_nr, counter);
                if let Some(fw) = &link.fw {
                    crate::tangents::restore(&v, fw);
                }
                Ok(Some(v))
            }
            State::OwnOutput {
                data,
                node,
                output_nr,
                version,
            } => unpack_own(data, node, *output_nr, *version).map(Some),
            State::Hooked(h) => h.unpack().map(Some),
        }
    }

    /// The saved raw tensor only, checked like [`unpack`](Self::unpack) but
    /// without building a variable. Use it only for values a formula treats
    /// as constants (their gradient is never needed, even with `create_graph`).
    pub fn unpack_data(&self) -> Result<T, AutogradError> {
        self.data_ref().map(SavedData::into_owned)
    }

    /// The saved raw tensor, checked like [`unpack_data`](Self::unpack_data), borrowed where
    /// it can be: a saved output's own data, a saved input's data under its variable's read
    /// lock (held while the result lives: do not modify that variable meanwhile), or a
    /// tensor given back by an unpack hook. The generated raw formulas read saved tensors
    /// this way when they only borrow them (no clone of the tensor handle).
    ///
    /// The usual cases (an op's own output, a saved input, each unchanged since) are
    /// inlined into the formula; the others go through a call. Measured on the chain
    /// bench: called, the result (with room for an error) came back through memory.
    #[inline]
    pub fn data_ref(&self) -> Result<SavedData<'_, T>, AutogradError> {
        match &self.state {
            State::OwnOutput {
                data,
                node,
                output_nr,
                version,
            } if node.version(*output_nr) == Some(*version) => {
                Ok(SavedData(DataRepr::Borrowed(data)))
            }
            State::Var { var, version } if var.version() == *version => {
                Ok(SavedData(DataRepr::Read(var.read_data())))
            }
            _ => self.data_ref_other(),
        }
    }

    /// [`data_ref`](Self::data_ref)'s other cases.
    #[inline(never)]
    fn data_ref_other(&self) -> Result<SavedData<'_, T>, AutogradError> {
        let repr = match &self.state {
            State::Output {
                data,
                output_nr,
                version,
                link,
            } if output_version(&link.grad_fn, *output_nr, link.counter.as_ref()) == *version => {
                DataRepr::Borrowed(data)
            }
            State::OwnOutput {
                data,
                node,
                output_nr,
                version,
            } if node.version(*output_nr) == Some(*version) => DataRepr::Borrowed(data),
            State::Var { var, version } if var.version() == *version => {
                DataRepr::Read(var.read_data())
            }
            _ => DataRepr::Owned(self.unpack()?.data()),
        };
        Ok(SavedData(repr))
    }

    /// [`unpack_data`](Self::unpack_data) for an optional tensor argument: `Ok(None)` when
    /// nothing was saved.
    pub fn unpack_opt_data(&self) -> Result<Option<T>, AutogradError> {
        match &self.state {
            State::Empty => Ok(None),
            _ => self.unpack_data().map(Some),
        }
    }
}

/// PyTorch has no such case: a saved output lives in its node.
const ERR_OWN_OUTPUT: &str = "a saved output made by record_saving was unpacked outside its node (it unpacks in the node's apply, NodeRef::with_node or NodeHandle::with)";

/// An own saved output (`State::OwnOutput`) as a variable again, checked against its
/// version, with the running node as `grad_fn`.
fn unpack_own<T: Tensor>(
    data: &T,
    node: &OwnNode<T>,
    output_nr: u32,
    version: u32,
) -> Result<Variable<T>, AutogradError> {
    let v = own_variable(data, node, output_nr)?;
    let current = v.version();
    if current != version {
        // Unpacked inside `apply`, with the node locked: the engine fills in the name.
        let output_of =
            v.with_history(|f, nr| f.map(|f| (nr as usize, f.try_name().unwrap_or_default())));
        return Err(mismatch(data, output_of, current, version));
    }
    Ok(v)
}

/// An own saved output as a variable again (no version check), with the running node as
/// `grad_fn`, sharing the node's version counter for it.
fn own_variable<T: Tensor>(
    data: &T,
    node: &OwnNode<T>,
    output_nr: u32,
) -> Result<Variable<T>, AutogradError> {
    let node = node
        .upgrade()
        .ok_or_else(|| AutogradError::msg(ERR_OWN_OUTPUT))?;
    Ok(Variable::with_grad_fn(data.clone(), node, output_nr))
}

/// A saved output as a variable again: its data, with the node (if alive) as `grad_fn`,
/// sharing its version counter.
fn rebuild_output<T: Tensor>(
    data: &T,
    grad_fn: &WeakNode<T>,
    output_nr: u32,
    counter: Option<&SharedCounter<T>>,
) -> Variable<T> {
    match (grad_fn.upgrade(), counter) {
        (Some(node), None) => Variable::with_grad_fn(data.clone(), node, output_nr),
        (node, counter) => {
            let counter = counter
                .cloned()
                .unwrap_or_else(|| SharedCounter::Node(grad_fn.clone(), output_nr));
            let requires_grad = node.is_some();
            Variable::reconstructed(data.clone(), node, output_nr, requires_grad, counter)
        }
    }
}

/// The current version of a saved output: its node's slot, or the counter
/// it shares.
fn output_version<T: Tensor>(
    grad_fn: &WeakNode<T>,
    output_nr: u32,
    counter: Option<&SharedCounter<T>>,
) -> u32 {
    match counter {
        None => grad_fn.version_slot(output_nr),
        Some(c) => c.atomic(),
    }
    .load(std::sync::atomic::Ordering::Acquire)
}

fn mismatch<T: Tensor>(
    data: &T,
    output_of: Option<(usize, String)>,
    current: u32,
    expected: u32,
) -> AutogradError {
    AutogradError::VersionMismatch {
        tensor: format!("{} {:?}", data.type_name(), data.shape()),
        output_of,
        current,
        expected,
        anomaly: is_anomaly_enabled(),
    }
}

impl<T: Tensor> SavedVariable<T> {
    /// Saves `var` through saved-tensor hooks: `pack` runs now (under no_grad), as in
    /// PyTorch's `set_hooks_and_pack_data`, on `var` itself, or on a history-less alias of it
    /// when it is the saving node's output (so that a pack hook that keeps what it is given
    /// makes no node → output → node cycle).
    fn hooked(var: &Variable<T>, is_output: bool, hooks: Arc<SavedHooks<T>>) -> Self {
        let origin = match var.with_history(|f, nr| f.map(|f| (f.clone(), nr))) {
            Some((f, output_nr)) if is_output => Origin::Output {
                grad_fn: f.downgrade(),
                output_nr,
            },
            Some((grad_fn, output_nr)) => Origin::NonLeaf { grad_fn, output_nr },
            None if var.requires_grad() => Origin::Leaf(var.clone()),
            None => Origin::Constant,
        };
        // An op's own output goes to `pack` as a history-less alias sharing its data and
        // version counter, but not a `detach()`: that keeps its origin alive (to share
        // replaced values), so a hook keeping what it is given (an identity pack hook, or
        // one that records its inputs) would make node -> packed -> output -> node, a
        // cycle that is never freed (Miri's leak check found it). Writes through the
        // alias are refused anyway: `pack` must not modify its input in place.
        let given = match origin {
            Origin::Output { .. } => var.alias(var.data()),
            _ => var.clone(),
        };
        let before = given.version();
        let packed = {
            let _g = no_grad();
            (hooks.pack)(&given)
        };
        let packed = match packed {
            Ok(_) if given.version() != before => Err(AutogradError::msg(ERR_PACK_INPLACE)),
            p => p,
        };
        SavedVariable {
            state: State::Hooked(Box::new(Hooked {
                hooks,
                packed,
                meta: var.with_data(TensorMeta::of),
                origin,
            })),
        }
    }

    /// Registers saved-tensor hooks on this saved variable only (PyTorch's
    /// `grad_fn._raw_saved_self.register_hooks(pack, unpack)`): `pack` runs now, and
    /// backward unpacks through `unpack`. See [`saved_tensors_hooks`](crate::saved_tensors_hooks)
    /// for the rules. Reach a node's saved variables through its typed
    /// [`NodeHandle`](crate::NodeHandle) (`handle.with(|n| n.result.register_hooks(..))`).
    ///
    /// Errors, with PyTorch's wording: hooks already set (by this call or a scoped default),
    /// nothing saved (`None`), or released by a backward pass.
    pub fn register_hooks<P, Pk, Un>(&mut self, pack: Pk, unpack: Un) -> Result<(), AutogradError>
    where
        P: Send + Sync + 'static,
        Pk: Fn(&Variable<T>) -> Result<P, AutogradError> + Send + Sync + 'static,
        Un: Fn(&P) -> Result<Variable<T>, AutogradError> + Send + Sync + 'static,
    {
        self.register_shared_hooks(Arc::new(SavedHooks::new(pack, unpack)))
    }

    /// [`register_hooks`](Self::register_hooks) with a pair that may be shared by several
    /// saved variables (a list of saved tensors).
    pub(crate) fn register_shared_hooks(
        &mut self,
        hooks: Arc<SavedHooks<T>>,
    ) -> Result<(), AutogradError> {
        let (var, is_output) = match &self.state {
            State::Hooked(_) => return Err(AutogradError::msg(ERR_HOOKS_SET)),
            State::Empty => return Err(AutogradError::msg(ERR_HOOKS_ON_NONE)),
            State::Released => return Err(AutogradError::msg(ERR_HOOKS_FREED)),
            State::Var { var, .. } => (var.clone(), false),
            State::Output {
                data,
                output_nr,
                link,
                ..
            } => (
                rebuild_output(data, &link.grad_fn, *output_nr, link.counter.as_ref()),
                true,
            ),
            State::OwnOutput {
                data,
                node,
                output_nr,
                ..
            } => (own_variable(data, node, *output_nr)?, true),
        };
        *self = Self::hooked(&var, is_output, hooks);
        Ok(())
    }
}

const ERR_HOOKS_SET: &str = "Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one pair of hooks is allowed at a time.";
const ERR_HOOKS_ON_NONE: &str =
    "Calling register_hooks on a saved tensor with value None is forbidden";
const ERR_HOOKS_FREED: &str = "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved variables after calling backward.";

impl<T: Tensor> Hooked<T> {
    /// Calls the unpack hook, checks its result against what was saved and gives it the
    /// saved tensor's place in the graph (PyTorch's `SavedVariable::unpack` with hooks).
    fn unpack(&self) -> Result<Variable<T>, AutogradError> {
        let packed = self.packed.as_ref().map_err(Clone::clone)?;
        let v = (self.hooks.unpack)(packed.as_ref())?;
        let got = v.with_data(TensorMeta::of);
        for (what, e, g) in [
            (
                "shape",
                format!("{:?}", self.meta.shape()),
                format!("{:?}", got.shape()),
            ),
            (
                "dtype",
                self.meta.dtype().to_string(),
                got.dtype().to_string(),
            ),
        ] {
            if e != g {
                return Err(AutogradError::msg(format!(
                    "Output of saved tensor unpack_hook expected to have {what} {e} but got {g}"
                )));
            }
        }
        Ok(match &self.origin {
            Origin::Output { grad_fn, output_nr } => match grad_fn.upgrade() {
                Some(node) => Variable::reconstructed(
                    v.data(),
                    Some(node),
                    *output_nr,
                    true,
                    v.shared_counter(),
                ),
                None => v,
            },
            Origin::NonLeaf { grad_fn, output_nr } => Variable::reconstructed(
                v.data(),
                Some(grad_fn.clone()),
                *output_nr,
                true,
                v.shared_counter(),
            ),
            Origin::Leaf(leaf) if is_grad_enabled() => {
                let ([out], _) =
                    crate::node::record_generated(AliasBackward0, &[Some(leaf)], [v.data()]);
                out
            }
            Origin::Leaf(_) | Origin::Constant => v,
        })
    }
}

/// The node that connects an unpacked leaf to the leaf when backward records a graph
/// (`create_graph`): the identity, as PyTorch's `alias`.
struct AliasBackward0;

impl<T: Tensor> Node<T> for AliasBackward0 {
    fn name(&self) -> &str {
        "AliasBackward0"
    }
    fn apply(&mut self, grads: VariableList<T>) -> Result<VariableList<T>, AutogradError> {
        Ok(grads)
    }
}

#[cfg(test)]
mod tests {
    use super::SavedVariable;
    use crate::tensor::testing::Handle;

    #[test]
    fn a_saved_tensor_is_its_data_and_two_words() {
        // Every node keeps its saved tensors inline: the largest state is the data plus the
        // output number and version (one word) and a pointer (the node's identity, or the
        // box of a custom node's saved output), plus the tag. With the weak pointer and the
        // rare part inline it was 16 bytes more (56 for a two-word tensor).
        type Two = Handle<[usize; 2]>;
        type One = Handle<usize>;
        assert!(std::mem::size_of::<SavedVariable<Two>>() <= 40);
        assert!(std::mem::size_of::<SavedVariable<One>>() <= 32);
    }
}
