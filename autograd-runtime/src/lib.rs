//! The autograd runtime: variables, backward nodes, saved variables and the
//! backward engine, with PyTorch's semantics, generic over a tensor library's
//! raw tensor type.
//!
//! The model (see `docs/runtime.md` in the repository for the long version):
//!
//! * [`Tensor`]: the raw tensor type; the runtime needs only `add`,
//!   `ones_like`/`zeros_like`, shape, dtype and a NaN check.
//! * [`Variable<T>`]: data plus autograd metadata (requires_grad, `.grad`,
//!   `grad_fn` + output index, a version counter shared with aliases, hooks,
//!   a name). A cheap `Arc` handle, `Send + Sync`.
//! * [`Node<T>`]: a backward function. [`record`] puts one in the graph with
//!   one [`Edge`] per differentiable input and returns the output variables.
//! * [`SavedVariable<T>`]: what a node saves; detects in-place modification
//!   and use after release, and saves outputs without a reference cycle.
//! * Engine: [`backward`] and [`grad`] (`torch.autograd.backward` / `grad`),
//!   run on the calling thread; `create_graph` gives higher-order gradients.
//! * Modes: [`no_grad`], [`enable_grad`], [`set_grad_enabled`] (thread-local),
//!   [`detect_anomaly`] (anomaly mode, also thread-local).
//! * Hooks: [`Variable::register_hook`], [`NodeRef::register_prehook`],
//!   [`NodeRef::register_hook`] (fallible, run with no runtime lock held), and
//!   saved-tensor hooks ([`saved_tensors_hooks`], [`SavedVariable::register_hooks`]).
//! * [`to_dot`]: Graphviz export of the recorded graph.
//! * [`forward`]: forward-mode AD: dual levels ([`dual_level`]), [`make_dual`],
//!   [`unpack_dual`], tangents that follow views and in-place ops, and what generated
//!   wrappers call to compute their outputs' tangents.
//!
//! # What generated code looks like
//!
//! A differentiable op is a raw computation, a check whether anything needs
//! recording, a node with typed saved fields, and [`record`]. The same API
//! serves hand-written nodes (the equivalent of `torch.autograd.Function`):
//!
//! ```
//! use autograd_runtime::*;
//! # use std::sync::Arc;
//! # #[derive(Clone, Debug)]
//! # pub struct S(Arc<f64>);
//! # impl Tensor for S {
//! #     fn shape(&self) -> &[usize] { &[] }
//! #     fn dtype(&self) -> &'static str { "f64" }
//! #     fn ones_like(&self) -> Self { S(Arc::new(1.0)) }
//! #     fn zeros_like(&self) -> Self { S(Arc::new(0.0)) }
//! #     fn add(&self, o: &Self) -> Self { S(Arc::new(*self.0 + *o.0)) }
//! #     fn has_nan(&self) -> bool { self.0.is_nan() }
//! # }
//! # fn raw_mul(a: &S, b: &S) -> S { S(Arc::new(*a.0 * *b.0)) }
//! # fn raw_exp(a: &S) -> S { S(Arc::new(a.0.exp())) }
//!
//! /// Backward of `mul`: saves both inputs.
//! pub struct MulBackward0<T: Tensor> {
//!     pub self_: SavedVariable<T>,
//!     pub other: SavedVariable<T>,
//! }
//!
//! impl Node<S> for MulBackward0<S> {
//!     fn name(&self) -> &str { "MulBackward0" }
//!     fn apply(&mut self, grads: VariableList<S>) -> Result<VariableList<S>, AutogradError> {
//!         let Some(g) = &grads[0] else { return Ok(variable_list![None, None]) };
//!         // Formulas use differentiable ops on Variables: with create_graph
//!         // the engine runs this in grad mode and it records a graph.
//!         let (a, b) = (self.self_.unpack()?, self.other.unpack()?);
//!         Ok(variable_list![Some(mul(g, &b)), Some(mul(g, &a))])
//!     }
//!     fn release_variables(&mut self) { self.self_.reset(); self.other.reset(); }
//!     fn visit_saved(&self, f: &mut dyn FnMut(&str, &SavedVariable<S>)) {
//!         f("self", &self.self_); f("other", &self.other);
//!     }
//! }
//!
//! pub fn mul(a: &Variable<S>, b: &Variable<S>) -> Variable<S> {
//!     let raw = raw_mul(&a.data(), &b.data());
//!     if !should_record(&[a, b]) {
//!         return Variable::from_data(raw);
//!     }
//!     let node = MulBackward0 { self_: SavedVariable::new(a, false), other: SavedVariable::new(b, false) };
//!     let ([out], _handle) = record(node, &[Some(a), Some(b)], [raw]);
//!     out
//! }
//!
//! /// Backward of `exp`: saves its own output (weakly w.r.t. the node).
//! pub struct ExpBackward0<T: Tensor> { pub result: SavedVariable<T> }
//!
//! impl Node<S> for ExpBackward0<S> {
//!     fn name(&self) -> &str { "ExpBackward0" }
//!     fn apply(&mut self, grads: VariableList<S>) -> Result<VariableList<S>, AutogradError> {
//!         let result = self.result.unpack()?;
//!         Ok(variable_list![grads[0].as_ref().map(|g| mul(g, &result))])
//!     }
//!     fn release_variables(&mut self) { self.result.reset(); }
//! }
//!
//! pub fn exp(a: &Variable<S>) -> Variable<S> {
//!     let raw = raw_exp(&a.data());
//!     if !should_record(&[a]) {
//!         return Variable::from_data(raw);
//!     }
//!     let node = ExpBackward0 { result: SavedVariable::default() };
//!     let ([out], handle) = record(node, &[Some(a)], [raw]);
//!     // Save the output once it exists: typed access to the node in the graph.
//!     handle.with(|n| n.result = SavedVariable::new(&out, true));
//!     out
//! }
//!
//! let x = Variable::new(S(Arc::new(2.0)), true);
//! let y = exp(&mul(&x, &x)); // y = exp(x²), dy/dx = 2x·exp(x²)
//! y.backward()?;
//! let gx = *x.grad().unwrap().data().0;
//! assert!((gx - 4.0 * 4f64.exp()).abs() < 1e-9);
//!
//! // A second backward through released saved variables fails like PyTorch.
//! let err = y.backward().unwrap_err();
//! assert!(err.to_string().starts_with("Trying to backward through the graph a second time"));
//! # Ok::<(), AutogradError>(())
//! ```
//!
//! # In-place ops, views, `out=`
//!
//! * [`Variable::check_inplace`] (PyTorch's `check_inplace`), then
//!   [`record_inplace`] (edges from the old history, replace data, bump the
//!   version, rebase `grad_fn` to the new node), or, without recording,
//!   [`Variable::set_data`] + [`Variable::bump_version`].
//! * Views and aliases share the version counter:
//!   [`Variable::share_version_counter`], [`Variable::alias`],
//!   [`Variable::detach`].
//! * `out=` variants: generated code checks their arguments with
//!   `__private::check_out` (see below).
//!
//! # Performance
//!
//! Per recorded op: the node is bump-allocated in a per-thread arena chunk
//! (edges and output metadata inline for up to two inputs/one output), one
//! `Arc` per output variable; no allocation for gradient lists of up to two
//! entries ([`VariableList`]). Reading a variable's history takes no lock,
//! its data an uncontended shared lock (so that replaced data is freed). Backward runs on the calling thread with a dependency count per
//! vertex. Figures and the trade-offs: `docs/runtime.md`.
//!
//! # Debugging leaks
//!
//! [`live_nodes`] and [`live_chunks`] are debug counters (nodes and node
//! arena chunks alive, per thread): a loop that builds a graph, runs backward
//! and drops it must bring them back to where they started.
//!
//! # For generated code only
//!
//! The `__private` module (hidden from these docs) holds what only the code
//! generator's output calls (`check_out` for `out=` variants,
//! `is_retaining_graph` for formulas that use `retain_variables`); generated
//! code reaches it through the facade crate's `support::__prelude`. It is not
//! part of the API and may change with the generator.
//!
//! # Where things are
//!
//! The model, at the top of `src/`. Its types, which refer to each other, in two folders:
//! `variable/` ([`Variable`] in `mod.rs`; a variable's rarely used parts: a view's base and
//! its refresh in `view.rs`, its tangents in `fw.rs`) and `node/` ([`Node`] and [`NodeRef`]
//! in `mod.rs`, [`Edge`] in `edge.rs`, [`record`] and its variants in `record.rs`, a
//! registered hook and its closure's type in `hook.rs`, the hooks and anomaly traces of
//! nodes in `extras.rs`, what a [`SavedVariable`] keeps and the saved-tensor hooks'
//! types in `saved_state.rs`). Above them, what works on them: `engine/` (the backward
//! engine by concern: the entry points and the execution of a pass in `mod.rs`, the graph
//! task, the ready queue, dependencies, the checks of a node's gradients, raw or variable
//! gradients), `saved.rs` (saving and unpacking), `saved_hooks.rs` (registering
//! saved-tensor hooks), `hooks.rs` (how hooks run), `view.rs` (the public module
//! [`view`]: making views, in-place ops on them), `tangents.rs` (propagating tangents
//! through ops), `dual.rs` (dual variables), `ops.rs` and `raw_grad.rs` (the runtime's own
//! ops), `dot.rs`. Below them: `levels.rs` (forward mode's dual levels), `node_meta.rs` (a
//! node's output shapes and dtypes, packed), `mode.rs` (grad and anomaly modes),
//! `error.rs`, `tensor.rs` (the [`Tensor`] trait), `list.rs`. The public module
//! [`forward`] is defined in this file, over `levels`, `tangents` and `dual`.
//!
//! The memory plumbing, in the private module `mem/`: every raw pointer, reference count,
//! lock and arena of the crate, behind a small safe interface (its module documentation
//! says what it owns, the interface and the invariants). All of the crate's unsafe code is
//! there; the rest of the crate denies `unsafe_code`. Every unsafe block carries a
//! `SAFETY:` comment saying why it is sound (`clippy::undocumented_unsafe_blocks` is
//! denied). `mem`'s unit tests (with a toy record kind of their own) and the rest of the
//! test suite run under Miri (`docs/runtime.md`, "Unsafe code").
//!
//! Imports: `mem` imports nothing from the model (its node records are generic over a
//! `Kind` that the model implements for its graph). Among the model's modules (a folder
//! counts as one), the `crate::` and `super::` paths outside tests run one way but for one
//! pair, `node` and `variable`, which import each other (`tests/layers.rs` at the
//! repository's root checks that no circle of more than two modules exists anywhere in the
//! workspace). The pair is the graph itself: a variable holds its node, and a node's edges
//! hold variables. The types that refer back to both sit in the pair's folders: a
//! variable's view state and tangents hold variables, and the [`Node`] trait names
//! [`SavedVariable`], whose state holds a variable or a weak reference to its node, its
//! saved-tensor hooks and its tangents. Their operations sit above the pair, and the pair
//! calls none of them.
//!
//! # Unsafe code
//!
//! Only in `mem` (above). The public API is safe.

#![warn(missing_docs)]
// Unsafe code only in the files of `mem` marked `#[allow(unsafe_code)]` (see "Where things
// are" above), every block with a `SAFETY:` comment saying why it is sound.
#![deny(unsafe_code, unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

mod dot;
mod engine;
mod error;
pub mod forward {
    //! Forward-mode AD: dual levels and the tangents variables carry at each of them (PyTorch's
    //! `torch.autograd.forward_ad`, `forward_grad.h`).
    //!
    //! * [`dual_level`] enters a level until its guard drops (levels nest: a level entered inside
    //!   another is a new, independent one, as functorch's nested `jvp`s); [`make_dual`] gives a
    //!   variable a tangent at the innermost level, [`unpack_dual`] reads it back.
    //! * Generated wrappers compute their outputs' tangents from the entry's forward formula
    //!   ([`propagate`]) at every level where an input has one. While a level's formula runs the
    //!   level is *hidden* (its tangents are invisible), so the formula's own ops propagate the
    //!   tangents of the other levels only: nested levels never confuse their perturbations.
    //! * A view's tangent is the view of its base's tangent unless it was given one of its own;
    //!   in-place ops replace the tangent of the variable they modify (through a view: of the
    //!   base, see [`crate::view`]).
    //! * A function without a forward formula used under forward AD fails with PyTorch's
    //!   "Trying to use forward AD with `op` that does not support it" error. Wrappers that cannot
    //!   return an error (infallible backends) store it as the output's tangent: reading it
    //!   ([`unpack_dual`], [`Variable::fw_grad`](crate::Variable::fw_grad)) returns it, and ops on it pass it on.
    //!
    //! Levels are per thread, like grad mode. Programs that never enter a level pay one
    //! thread-local read per op ([`is_forward_ad_enabled`]).
    //!
    //! The items are `levels.rs`'s (the levels), `tangents.rs`'s (their propagation) and
    //! `dual.rs`'s (dual variables); a variable's tangents are `variable/fw.rs`'s.

    pub use crate::dual::*;
    pub use crate::levels::*;
    pub use crate::tangents::*;
}
mod dual;
mod hooks;
mod levels;
pub mod list;
mod mem;
mod mode;
mod node;
mod node_meta;
pub mod ops;
pub mod raw_grad;
mod saved;
mod saved_hooks;
mod tangents;
mod tensor;
mod variable;
pub mod view;

pub use dot::to_dot;
pub use engine::{
    BackwardOptions, GradOptions, backward, backward_with, current_graph_task_id, grad, grad_with,
    is_retaining_graph,
};
pub use error::{AutogradError, BackendError};
pub use forward::{
    DualLevel, Level, UnpackedDual, dual_level, is_forward_ad_enabled, make_dual, unpack_dual,
};
pub use list::OptList;
pub use mem::live_chunks;
pub use mode::{
    AnomalyModeGuard, GradModeGuard, detect_anomaly, enable_grad, is_anomaly_enabled,
    is_grad_enabled, no_grad, set_detect_anomaly, set_grad_enabled,
};
pub use node::{
    ERR_NO_JVP, Edge, HookId, Node, NodeHandle, NodeRef, RawList, SavedVariable, VariableList,
    live_nodes, record, record_inplace, record_vec, should_record,
};
pub use saved::SavedData;
pub use saved_hooks::{SavedTensorsHooksGuard, saved_tensors_hooks};
pub use tensor::{Tensor, TensorMeta, contiguous_strides};
pub use variable::Variable;

/// What only generated code calls (through the facade's `support::__prelude`),
/// not part of the runtime's API: it may change with the code generator.
#[doc(hidden)]
pub mod __private {
    pub use crate::engine::is_retaining_graph;
    pub use crate::node::{
        NewOutputs, check_out, record_generated, record_inplace_generated, record_saving,
        record_vec_generated,
    };
}
