//! What generated code calls besides the runtime: turning formula results into gradients,
//! `not_implemented`, `wrap_opt_if`. Not meant to be used by hand.

use autograd_runtime::{AutogradError, SavedVariable, Tensor, Variable};

/// A formula result that gives one input's gradient: a variable, an optional variable
/// (`None` = no gradient), a `Result` of either, or [`NotImplemented`].
pub trait IntoGrad<T: Tensor> {
    /// The gradient, `None` when undefined.
    fn into_grad(self) -> Result<Option<Variable<T>>, AutogradError>;
}

impl<T: Tensor> IntoGrad<T> for Variable<T> {
    fn into_grad(self) -> Result<Option<Variable<T>>, AutogradError> {
        Ok(Some(self))
    }
}

impl<T: Tensor> IntoGrad<T> for &Variable<T> {
    fn into_grad(self) -> Result<Option<Variable<T>>, AutogradError> {
        Ok(Some(self.clone()))
    }
}

impl<T: Tensor> IntoGrad<T> for Option<Variable<T>> {
    fn into_grad(self) -> Result<Option<Variable<T>>, AutogradError> {
        Ok(self)
    }
}

impl<T: Tensor, G: IntoGrad<T>> IntoGrad<T> for Result<G, AutogradError> {
    fn into_grad(self) -> Result<Option<Variable<T>>, AutogradError> {
        self?.into_grad()
    }
}

/// A formula result for a `Tensor[]` input: one gradient per element.
pub trait IntoGradList<T: Tensor> {
    /// The gradients, one per list element.
    fn into_grad_list(self) -> Result<Vec<Option<Variable<T>>>, AutogradError>;
}

impl<T: Tensor> IntoGradList<T> for Vec<Variable<T>> {
    fn into_grad_list(self) -> Result<Vec<Option<Variable<T>>>, AutogradError> {
        Ok(self.into_iter().map(Some).collect())
    }
}

impl<T: Tensor> IntoGradList<T> for Vec<Option<Variable<T>>> {
    fn into_grad_list(self) -> Result<Vec<Option<Variable<T>>>, AutogradError> {
        Ok(self)
    }
}

impl<T: Tensor, G: IntoGradList<T>> IntoGradList<T> for Result<G, AutogradError> {
    fn into_grad_list(self) -> Result<Vec<Option<Variable<T>>>, AutogradError> {
        self?.into_grad_list()
    }
}

/// The result of `not_implemented("reason")` in a formula: backward fails with PyTorch's
/// message, "the derivative for 'op' is not implemented." followed by the reason.
#[derive(Debug, Clone)]
pub struct NotImplemented {
    /// The op whose derivative is missing.
    pub op: String,
    /// Why (may be empty).
    pub reason: String,
}

impl NotImplemented {
    /// `not_implemented(reason)` in a formula of `op`'s entry.
    pub fn new(op: &str, reason: &str) -> Self {
        NotImplemented {
            op: op.to_string(),
            reason: reason.to_string(),
        }
    }

    fn error(self) -> AutogradError {
        let reason = (!self.reason.is_empty()).then_some(self.reason.as_str());
        AutogradError::not_implemented(self.op, reason)
    }
}

impl<T: Tensor> IntoGrad<T> for NotImplemented {
    fn into_grad(self) -> Result<Option<Variable<T>>, AutogradError> {
        Err(self.error())
    }
}

impl<T: Tensor> IntoGradList<T> for NotImplemented {
    fn into_grad_list(self) -> Result<Vec<Option<Variable<T>>>, AutogradError> {
        Err(self.error())
    }
}

/// The backward node of a function that has no derivatives entry: PyTorch's `NotImplemented`
/// node. Backward fails when it reaches it, with PyTorch's message ("derivative for
/// aten::heaviside is not implemented"), instead of silently stopping the gradient.
pub struct NotImplementedNode<T> {
    op: &'static str,
    marker: std::marker::PhantomData<fn() -> T>,
}

impl<T> NotImplementedNode<T> {
    /// The node for operator `op` (`heaviside`, `floor_divide.Scalar`: the base name is shown).
    pub fn new(op: &'static str) -> Self {
        NotImplementedNode {
            op,
            marker: std::marker::PhantomData,
        }
    }
}

impl<T: Tensor> autograd_runtime::Node<T> for NotImplementedNode<T> {
    // PyTorch's `NotImplemented` node takes no sequence number (its `sequence_nr()` is
    // `UINT64_MAX`): the engine runs it first among the ready nodes.
    fn takes_last_sequence_nr() -> bool {
        true
    }

    fn name(&self) -> &str {
        "NotImplemented"
    }

    fn apply(
        &mut self,
        _grads: autograd_runtime::VariableList<T>,
    ) -> Result<autograd_runtime::VariableList<T>, AutogradError> {
        let base = self.op.split('.').next().unwrap_or(self.op);
        Err(AutogradError::msg(format!(
            "derivative for aten::{base} is not implemented"
        )))
    }
}

/// An in-place op's result keeps `self`'s shape; a broadcast that would grow it is PyTorch's
/// error (`output with shape [3] doesn't match the broadcast shape [2, 3]`), raised before
/// `self` changes.
pub fn check_inplace_shape<T: Tensor>(self_: &Variable<T>, new: &T) -> Result<(), AutogradError> {
    if self_.with_data(|d| d.shape() == new.shape()) {
        return Ok(());
    }
    Err(AutogradError::msg(format!(
        "output with shape {:?} doesn't match the broadcast shape {:?}",
        self_.shape(),
        new.shape()
    )))
}

/// PyTorch's `check_no_requires_grad`: while grad mode is on, an input that the function's
/// entry gives no formula (and does not mark `non_differentiable`) must not require grad.
pub fn check_no_requires_grad<'a, T: Tensor + 'a>(
    inputs: impl IntoIterator<Item = &'a Variable<T>>,
    name: &str,
    function: &str,
) -> Result<(), AutogradError> {
    if !autograd_runtime::is_grad_enabled() || !inputs.into_iter().any(|v| v.requires_grad()) {
        return Ok(());
    }
    Err(AutogradError::msg(format!(
        "The function '{function}' is not differentiable with respect to argument '{name}'. This input cannot have requires_grad True."
    )))
}

/// Whether a function without a derivatives entry records a [`NotImplementedNode`]: grad
/// mode is on, an input requires grad, and the result's dtype can carry gradients.
pub fn should_record_not_implemented<T: Tensor>(needs: &[bool], result: &T) -> bool {
    should_record_any(needs) && result.is_differentiable()
}

/// Whether an in-place op records a node on `self_`: grad mode is on, an input requires
/// grad, and `self_`'s dtype can carry gradients (PyTorch's `isDifferentiableType`: `copy_` of
/// a float source that requires grad into a `long` tensor records nothing). `self_`'s data is
/// read only when the rest holds.
pub fn should_record_into<T: Tensor>(needs: &[bool], self_: &Variable<T>) -> bool {
    should_record_any(needs) && self_.with_data(T::is_differentiable)
}

/// [`should_record_any`] for an entry with `output_differentiability` conditions (PyTorch's
/// `_to_copy`): also every result's dtype can carry gradients.
pub fn should_record_differentiable<T: Tensor>(needs: &[bool], results: &[&T]) -> bool {
    should_record_any(needs) && results.iter().all(|r| r.is_differentiable())
}

/// Gradients of a joint formula (`self, other: ...`): a tuple, one element per name.
pub trait IntoGrads<T: Tensor, const N: usize> {
    /// The gradients, in the order of the names.
    fn into_grads(self) -> Result<[Option<Variable<T>>; N], AutogradError>;
}

macro_rules! tuple_into_grads {
    ($n:literal; $($g:ident $i:tt),+) => {
        impl<T: Tensor, $($g: IntoGrad<T>),+> IntoGrads<T, $n> for ($($g,)+) {
            fn into_grads(self) -> Result<[Option<Variable<T>>; $n], AutogradError> {
                Ok([$(self.$i.into_grad()?),+])
            }
        }
    };
}
tuple_into_grads!(1; A 0);
tuple_into_grads!(2; A 0, B 1);
tuple_into_grads!(3; A 0, B 1, C 2);
tuple_into_grads!(4; A 0, B 1, C 2, D 3);
tuple_into_grads!(5; A 0, B 1, C 2, D 3, E 4);

impl<T: Tensor, const N: usize> IntoGrads<T, N> for NotImplemented {
    fn into_grads(self) -> Result<[Option<Variable<T>>; N], AutogradError> {
        Err(self.error())
    }
}

impl<T: Tensor, const N: usize, G: IntoGrads<T, N>> IntoGrads<T, N> for Result<G, AutogradError> {
    fn into_grads(self) -> Result<[Option<Variable<T>>; N], AutogradError> {
        self?.into_grads()
    }
}

/// PyTorch's `wrap_opt_if(t, cond)`: `t` when `cond`, else undefined.
pub fn wrap_opt_if<T: Tensor>(t: Variable<T>, cond: bool) -> Option<Variable<T>> {
    cond.then_some(t)
}

/// What a kernel that a fallible backend has not written returns (the `Backend` trait's
/// default body): PyTorch's "Could not run 'aten::OP' with arguments from the 'X' backend"
/// error. A backend's `Error` converts from it (`From<KernelNotImplemented>` is part of the
/// generated trait's bound), so a backend can start with a few kernels and grow op by op.
///
/// ```
/// let e = autograd::support::KernelNotImplemented::new("aten::exp", "MyTensor");
/// assert!(e.to_string().starts_with(
///     "Could not run 'aten::exp' with arguments from the 'MyTensor' backend."
/// ));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelNotImplemented {
    /// The operator overload, as PyTorch names it (`aten::mul.Tensor`).
    pub op: &'static str,
    /// The backend (`Backend::backend_name()`).
    pub backend: &'static str,
}

impl KernelNotImplemented {
    /// The error for `op` on `backend`.
    pub fn new(op: &'static str, backend: &'static str) -> Self {
        KernelNotImplemented { op, backend }
    }
}

impl std::fmt::Display for KernelNotImplemented {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Could not run '{}' with arguments from the '{}' backend. This could be because the \
             operator doesn't exist for this backend, or was omitted during the \
             selective/custom build process (if using custom build).",
            self.op, self.backend
        )
    }
}

impl std::error::Error for KernelNotImplemented {}

/// The strides of a contiguous (row-major) tensor of `shape`, in elements: what
/// `x.sym_strides()` is in a formula.
pub use autograd_runtime::contiguous_strides;

/// PyTorch's `IndexError` when a tensor of `shape` has no dimension `d` (what reading
/// `x.sym_size(d)` raises).
///
/// ```
/// assert!(autograd::support::check_size_dim(&[2, 3], -2).is_ok());
/// assert_eq!(autograd::support::check_size_dim(&[3], -2).unwrap_err().to_string(),
///     "Dimension out of range (expected to be in range of [-1, 0], but got -2)");
/// ```
pub fn check_size_dim(shape: &[usize], d: i64) -> Result<(), AutogradError> {
    let n = shape.len() as i64;
    if n == 0 {
        return Err(AutogradError::msg(format!(
            "Dimension specified as {d} but tensor has no dimensions"
        )));
    }
    if d < -n || d >= n {
        return Err(AutogradError::msg(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {d})",
            -n,
            n - 1
        )));
    }
    Ok(())
}

/// `shape[d]` with PyTorch's negative dimensions (`-1` is the last).
pub fn size_at(shape: &[usize], d: i64) -> usize {
    let n = shape.len() as i64;
    let i = if d < 0 { d + n } else { d };
    shape.get(i as usize).copied().unwrap_or(1)
}

/// `var` saved for backward when `cond` (an input whose formula uses it needs a gradient),
/// else an empty slot.
pub fn save_if<T: Tensor>(cond: bool, var: &Variable<T>) -> SavedVariable<T> {
    if cond {
        SavedVariable::new(var, false)
    } else {
        SavedVariable::default()
    }
}

/// [`save_if`] for an optional tensor.
pub fn save_opt_if<T: Tensor>(cond: bool, var: Option<&Variable<T>>) -> SavedVariable<T> {
    if cond {
        SavedVariable::new_opt(var, false)
    } else {
        SavedVariable::default()
    }
}

/// Whether a wrapper records a node: grad mode is on and some differentiable input needs a
/// gradient.
pub fn should_record_any(needs: &[bool]) -> bool {
    autograd_runtime::is_grad_enabled() && needs.iter().any(|b| *b)
}

/// A forward formula's value as the output's tangent: a variable (or a list for a `Tensor[]`
/// output), or a `Result` of one.
pub trait IntoTangent<O> {
    /// The tangent.
    fn into_tangent(self) -> Result<O, AutogradError>;
}

impl<T: Tensor> IntoTangent<Variable<T>> for Variable<T> {
    fn into_tangent(self) -> Result<Variable<T>, AutogradError> {
        Ok(self)
    }
}

impl<T: Tensor> IntoTangent<Variable<T>> for &Variable<T> {
    fn into_tangent(self) -> Result<Variable<T>, AutogradError> {
        Ok(self.clone())
    }
}

impl<T: Tensor> IntoTangent<Vec<Variable<T>>> for Vec<Variable<T>> {
    fn into_tangent(self) -> Result<Vec<Variable<T>>, AutogradError> {
        Ok(self)
    }
}

impl<O, X: IntoTangent<O>> IntoTangent<O> for Result<X, AutogradError> {
    fn into_tangent(self) -> Result<O, AutogradError> {
        self?.into_tangent()
    }
}

/// `x.conj()` in the formulas torchgen's `auto_element_wise` writes: the identity, for the
/// real tensors this crate's backends have.
pub trait Conj {
    /// The complex conjugate (the value itself for real tensors).
    fn conj(&self) -> Self;
}

impl<T: Tensor> Conj for Variable<T> {
    fn conj(&self) -> Self {
        self.clone()
    }
}

/// The names generated code uses, under one short alias (`use ::autograd::support::__prelude
/// as __ag;` at the top of the expansion): fewer tokens per generated item, so the macro
/// expands faster, and generated code reads better.
#[doc(hidden)]
pub mod __prelude {
    pub use super::{
        Conj, IntoGrad, IntoGradList, IntoGrads, IntoTangent, KernelNotImplemented, NotImplemented,
        NotImplementedNode, ScalarTypeArg, check_inplace_shape, check_no_requires_grad,
        check_size_dim, contiguous_strides, save_if, save_opt_if, should_record_any,
        should_record_differentiable, should_record_into, should_record_not_implemented, size_at,
        wrap_opt_if,
    };
    pub use crate::runtime::__private::{
        check_out, is_retaining_graph, record_generated as record,
        record_inplace_generated as record_inplace, record_saving,
        record_vec_generated as record_vec,
    };
    pub use crate::runtime::forward::{
        forbid as fw_forbid, forbid_fallback as fw_forbid_fallback, original as fw_original,
        poison as fw_poison, propagate as fw_propagate, tangent_or_zeros, tangents_or_zeros,
    };
    pub use crate::runtime::is_forward_ad_enabled;
    pub use crate::runtime::ops::clone as clone_var;
    pub use crate::runtime::raw_grad::{IntoRawGrad, IntoRawGradList, IntoRawGrads};
    pub use crate::runtime::view::{ViewFn, ViewInverse, inplace_on_view, make_view};
    pub use crate::runtime::{
        AutogradError, Node, RawList, SavedVariable, Tensor, Variable, VariableList,
        is_grad_enabled,
    };
    pub use crate::types;
    pub use std::borrow::Borrow;
    pub use std::convert::Into;
    pub use std::default::Default;
    pub use std::format;
    pub use std::marker::PhantomData;
    pub use std::option::Option::{self, None, Some};
    pub use std::result::Result::{self, Err, Ok};
    pub use std::string::String;
    pub use std::sync::Arc;
    pub use std::vec::Vec;
}

/// A `ScalarType` argument of an operator, as formulas write it: the schema's type itself
/// (`input_dtype`, `at::kFloat`) or a tensor's dtype name (`self.scalar_type()`, which
/// formulas hold as the runtime's `&'static str`).
pub trait ScalarTypeArg: Sized {
    /// The dtype; an error for a name [`ScalarType`](crate::types::ScalarType) does not have.
    fn scalar_type_arg(self) -> Result<crate::types::ScalarType, AutogradError>;

    /// The dtype's name, as formulas hold a tensor's dtype (the two branches of a
    /// conditional dtype, `dtype.has_value() ? *dtype : self.scalar_type()`, meet as names).
    fn dtype_name(self) -> Result<&'static str, AutogradError> {
        self.scalar_type_arg().map(crate::types::ScalarType::name)
    }
}

impl ScalarTypeArg for crate::types::ScalarType {
    fn scalar_type_arg(self) -> Result<crate::types::ScalarType, AutogradError> {
        Ok(self)
    }
}

impl ScalarTypeArg for &str {
    fn scalar_type_arg(self) -> Result<crate::types::ScalarType, AutogradError> {
        crate::types::ScalarType::from_name(self)
            .ok_or_else(|| AutogradError::msg(format!("no ScalarType for the dtype `{self}`")))
    }
}
