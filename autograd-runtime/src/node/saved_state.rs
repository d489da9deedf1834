//! What a node keeps of the tensors it saves: [`SavedVariable`]'s state (the [`Node`] trait
//! names the type, so it lives with nodes), the saved-tensor hooks that may pack it and the
//! thread's stack of default hooks. Saving and unpacking are `saved.rs`'s; registering hooks
//! is `saved_hooks.rs`'s.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

use super::{NodeRef, OwnNode, WeakNode};
use crate::error::AutogradError;
use crate::tensor::{Tensor, TensorMeta};
use crate::variable::{SharedCounter, Snapshot, Variable};

/// A snapshot of a variable at a certain version, saved by a node for its
/// backward formula (PyTorch's `SavedVariable`).
///
/// * [`unpack`](Self::unpack) fails with PyTorch's message if the variable was
///   modified in place since it was saved (its version counter moved on), and
///   with "Trying to backward through the graph a second time …" after
///   [`reset`](Self::reset) (which the engine triggers through
///   [`Node::release_variables`](crate::Node::release_variables)).
/// * Saving an op's **own output** (`is_output = true`) keeps only the raw
///   data and a *weak* reference to the node (whose header holds the
///   output's version counter), so node → saved output → node is not a
///   reference cycle and saving allocates nothing; unpacking rebuilds a
///   variable with the node as `grad_fn` sharing that counter, as PyTorch
///   does (with or without grad mode).
///   Generated code saves its outputs through `record_saving`, with no weak
///   reference at all: such a saved output reaches its node only while the node
///   runs (its `apply`, [`NodeRef::with_node`], [`NodeHandle::with`](crate::NodeHandle::with)),
///   which is where it lives; moved out of its node, unpacking it is an error.
/// * Saving anything else (inputs, leaves) keeps the variable itself.
/// * With saved-tensor hooks in scope ([`saved_tensors_hooks`](crate::saved_tensors_hooks))
///   or registered on it ([`register_hooks`](Self::register_hooks)), it keeps what the pack
///   hook returned instead, and unpacking calls the unpack hook (no version check, as in
///   PyTorch).
pub struct SavedVariable<T: Tensor> {
    pub(crate) state: State<T>,
}

pub(crate) enum State<T: Tensor> {
    Empty,
    Released,
    Var {
        var: Variable<T>,
        version: u32,
    },
    Output {
        data: T,
        output_nr: u32,
        version: u32,
        /// The node and the rest, boxed: this is the path of custom nodes
        /// (`SavedVariable::new(&output, true)`), and inline it made every saved
        /// tensor, `OwnOutput`s and saved inputs included, 16 bytes larger.
        link: Box<OutputLink<T>>,
    },
    /// An op's own output saved by its node as generated code records it
    /// ([`crate::record_saving`]): no weak reference, the node is reached while it
    /// runs (`OwnNode`); its version counter is the node's slot.
    OwnOutput {
        data: T,
        node: OwnNode<T>,
        output_nr: u32,
        version: u32,
    },
    /// Packed by saved-tensor hooks.
    Hooked(Box<Hooked<T>>),
}

/// A saved output's node and what few saved outputs have ([`State::Output`]).
pub(crate) struct OutputLink<T: Tensor> {
    pub(crate) grad_fn: WeakNode<T>,
    /// The version counter when it is not the node's own slot for this
    /// output (the output shares another variable's, or had its history
    /// replaced by an in-place op).
    pub(crate) counter: Option<SharedCounter<T>>,
    /// Its tangents when it was saved under forward AD (forward-over-reverse: the
    /// backward formula that unpacks it sees them).
    pub(crate) fw: Option<Snapshot<T>>,
}

/// A tensor packed by saved-tensor hooks, and what is needed to give the unpacked tensor
/// the saved one's place in the graph.
pub(crate) struct Hooked<T: Tensor> {
    pub(crate) hooks: Arc<SavedHooks<T>>,
    /// The pack hook's result, or its error (returned at unpack).
    pub(crate) packed: Result<Packed, AutogradError>,
    pub(crate) meta: TensorMeta,
    pub(crate) origin: Origin<T>,
}

/// Where the saved tensor's gradient goes.
pub(crate) enum Origin<T: Tensor> {
    /// An output of the node that saved it (held weakly: no cycle).
    Output {
        grad_fn: WeakNode<T>,
        output_nr: u32,
    },
    /// An output of another node.
    NonLeaf { grad_fn: NodeRef<T>, output_nr: u32 },
    /// A leaf that requires grad (kept, as PyTorch's saved grad accumulator keeps it).
    Leaf(Variable<T>),
    /// Nothing: no history, no gradient.
    Constant,
}

impl<T: Tensor> Default for SavedVariable<T> {
    fn default() -> Self {
        SavedVariable {
            state: State::Empty,
        }
    }
}

impl<T: Tensor> SavedVariable<T> {
    /// What [`new`](Self::new)`(&output, true)` gives for output
    /// `output_nr < NODE_COUNTERS` of a node being recorded, when no
    /// saved-tensor hooks nor forward-mode AD are active: the output's data and
    /// the node's identity (whose header holds the output's version counter, at
    /// 0) ([`crate::record_saving`]). It unpacks only while its node runs: in the
    /// node's `apply` or through [`NodeRef::with_node`] /
    /// [`NodeHandle::with`](crate::NodeHandle::with) (it lives in the node);
    /// moved out of the node, unpacking it fails ([`ERR_OWN_OUTPUT`]).
    pub(crate) fn fresh_output(data: T, node: OwnNode<T>, output_nr: u32) -> Self {
        SavedVariable {
            state: State::OwnOutput {
                data,
                node,
                output_nr,
                version: 0,
            },
        }
    }

    /// Whether nothing was ever saved (default-constructed).
    pub fn is_empty(&self) -> bool {
        matches!(self.state, State::Empty)
    }

    /// Shape of the saved tensor (`None` if empty or released).
    pub fn shape(&self) -> Option<Vec<usize>> {
        match &self.state {
            State::Var { var, .. } => Some(var.shape()),
            State::Output { data, .. } | State::OwnOutput { data, .. } => {
                Some(data.shape().to_vec())
            }
            State::Hooked(h) => Some(h.meta.shape().to_vec()),
            _ => None,
        }
    }
}

/// What a pack hook returned, type-erased.
pub(crate) type Packed = Box<dyn Any + Send + Sync>;
type PackFn<T> = dyn Fn(&Variable<T>) -> Result<Packed, AutogradError> + Send + Sync;
type UnpackFn<T> =
    dyn Fn(&(dyn Any + Send + Sync)) -> Result<Variable<T>, AutogradError> + Send + Sync;

/// A pack/unpack pair.
pub(crate) struct SavedHooks<T: Tensor> {
    pub(crate) pack: Box<PackFn<T>>,
    pub(crate) unpack: Box<UnpackFn<T>>,
}

impl<T: Tensor> SavedHooks<T> {
    /// Erases the packed type `P` of a typed pair.
    pub(crate) fn new<P, Pk, Un>(pack: Pk, unpack: Un) -> Self
    where
        P: Send + Sync + 'static,
        Pk: Fn(&Variable<T>) -> Result<P, AutogradError> + Send + Sync + 'static,
        Un: Fn(&P) -> Result<Variable<T>, AutogradError> + Send + Sync + 'static,
    {
        SavedHooks {
            pack: Box::new(move |v| pack(v).map(|p| Box::new(p) as Packed)),
            unpack: Box::new(move |p| match p.downcast_ref::<P>() {
                Some(p) => unpack(p),
                None => Err(AutogradError::msg(
                    "saved tensor hooks: the packed value has another type than the unpack hook takes",
                )),
            }),
        }
    }
}

thread_local! {
    /// The scoped default hooks of this thread, innermost last: `Arc<SavedHooks<T>>` for
    /// whatever `T` each was made for.
    static DEFAULT_HOOKS: RefCell<Vec<Arc<dyn Any + Send + Sync>>> = const { RefCell::new(Vec::new()) };
    /// `DEFAULT_HOOKS.len()`, read on every save without borrowing the stack.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// The innermost default hooks for tensors of type `T`, if any are in scope on this thread.
#[inline]
pub(crate) fn default_hooks<T: Tensor>() -> Option<Arc<SavedHooks<T>>> {
    if DEPTH.with(Cell::get) == 0 {
        return None;
    }
    DEFAULT_HOOKS.with(|s| {
        s.borrow()
            .iter()
            .rev()
            .find_map(|h| h.clone().downcast::<SavedHooks<T>>().ok())
    })
}

/// Puts `hooks` (an `Arc<SavedHooks<T>>`) innermost on this thread's stack.
pub(crate) fn push_default_hooks(hooks: Arc<dyn Any + Send + Sync>) {
    DEFAULT_HOOKS.with(|s| {
        let mut s = s.borrow_mut();
        s.push(hooks);
        DEPTH.with(|d| d.set(s.len()));
    });
}

/// Takes `hooks` off this thread's stack, wherever it is (nothing during thread exit).
pub(crate) fn remove_default_hooks(hooks: &Arc<dyn Any + Send + Sync>) {
    let _ = DEFAULT_HOOKS.try_with(|s| {
        let mut s = s.borrow_mut();
        if let Some(i) = s.iter().rposition(|h| Arc::ptr_eq(h, hooks)) {
            s.remove(i);
        }
        let _ = DEPTH.try_with(|d| d.set(s.len()));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::testing::{Val, val};

    fn hooks(tag: f64) -> Arc<dyn Any + Send + Sync> {
        Arc::new(SavedHooks::<Val>::new(
            move |_: &Variable<Val>| Ok(tag),
            |t: &f64| Ok(Variable::from_data(val(*t))),
        ))
    }

    /// What the innermost hooks for `Val` pack.
    fn innermost() -> Option<Variable<Val>> {
        let h = default_hooks::<Val>()?;
        let packed = (h.pack)(&Variable::from_data(val(0.0))).unwrap();
        Some((h.unpack)(&*packed).unwrap())
    }

    #[test]
    fn the_innermost_default_hooks_of_the_tensor_type_apply() {
        assert!(default_hooks::<Val>().is_none());
        let (outer, inner) = (hooks(1.0), hooks(2.0));
        push_default_hooks(outer.clone());
        push_default_hooks(inner.clone());
        // Hooks for another tensor type are skipped.
        let other: Arc<dyn Any + Send + Sync> = Arc::new(SavedHooks::<Other>::new(
            |_: &Variable<Other>| Ok(()),
            |_: &()| Ok(Variable::from_data(Other)),
        ));
        push_default_hooks(other.clone());
        assert_eq!(innermost().unwrap().data(), val(2.0));
        remove_default_hooks(&inner);
        assert_eq!(innermost().unwrap().data(), val(1.0));
        remove_default_hooks(&other);
        remove_default_hooks(&outer);
        assert!(default_hooks::<Val>().is_none());
    }

    #[test]
    fn an_empty_saved_variable_has_no_shape_and_a_saved_one_has_its_variables() {
        let empty = SavedVariable::<Val>::default();
        assert!(empty.is_empty() && empty.shape().is_none());
        let x = Variable::new(val(1.0), true);
        let saved = SavedVariable {
            state: State::Var { var: x, version: 0 },
        };
        assert!(!saved.is_empty());
        assert_eq!(saved.shape(), Some(vec![]));
    }

    /// A second tensor type, for hooks of another type.
    #[derive(Clone, Debug)]
    struct Other;
    impl Tensor for Other {
        fn shape(&self) -> &[usize] {
            &[]
        }
        fn dtype(&self) -> &'static str {
            "f32"
        }
        fn ones_like(&self) -> Self {
            Other
        }
        fn zeros_like(&self) -> Self {
            Other
        }
        fn add(&self, _: &Self) -> Self {
            Other
        }
        fn has_nan(&self) -> bool {
            false
        }
    }
}
