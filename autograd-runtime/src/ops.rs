//! Built-in differentiable ops the engine itself needs.

use crate::error::AutogradError;
use crate::node::{Node, VariableList, should_record};
use crate::tensor::Tensor;
use crate::variable::Variable;

/// Backward of [`add`]: passes the gradient to both inputs.
#[derive(Debug, Default, Clone, Copy)]
pub struct AddBackward0;

impl<T: Tensor> Node<T> for AddBackward0 {
    fn name(&self) -> &str {
        "AddBackward0"
    }

    fn apply(&mut self, mut grads: VariableList<T>) -> Result<VariableList<T>, AutogradError> {
        let g = grads.take(0);
        Ok(crate::variable_list![g.clone(), g])
    }
}

/// Differentiable sum of two variables of the same shape, with
/// [`Tensor::add`]. The engine uses it to sum the gradients of a shared input
/// and to accumulate `.grad` under `create_graph`, so that gradients of
/// gradients see those sums.
pub fn add<T: Tensor>(a: &Variable<T>, b: &Variable<T>) -> Variable<T> {
    let x = a.data();
    let raw = b.with_data(|y| x.add(y));
    let out = if should_record(&[a, b]) {
        crate::node::record_generated(AddBackward0, &[Some(a), Some(b)], [raw]).0[0].clone()
    } else {
        Variable::from_data(raw)
    };
    if crate::levels::is_forward_ad_enabled() {
        crate::tangents::propagate_deferred(&out, &[a, b], |level| {
            let ta = crate::tangents::tangent_or_zeros(a, level)?;
            Ok(add(&ta, &crate::tangents::tangent_or_zeros(b, level)?))
        });
    }
    out
}

/// Backward of [`clone`]: the identity.
#[derive(Debug, Default, Clone, Copy)]
pub struct CloneBackward0;

impl<T: Tensor> Node<T> for CloneBackward0 {
    fn name(&self) -> &str {
        "CloneBackward0"
    }

    fn apply(&mut self, mut grads: VariableList<T>) -> Result<VariableList<T>, AutogradError> {
        Ok(crate::variable_list![grads.take(0)])
    }
}

/// A differentiable copy of `a` with its own version counter (PyTorch's `self.clone()`).
/// Generated in-place wrappers save it when a formula needs the value `self` had before the
/// op: the copy is not modified by the op, and gradients of gradients still flow through it
/// to `self`'s earlier history.
pub fn clone<T: Tensor>(a: &Variable<T>) -> Variable<T> {
    let raw = a.data();
    let out = if should_record(&[a]) {
        crate::node::record_generated(CloneBackward0, &[Some(a)], [raw]).0[0].clone()
    } else {
        Variable::from_data(raw)
    };
    if crate::levels::is_forward_ad_enabled() {
        crate::tangents::propagate_deferred(&out, &[a], |level| {
            crate::tangents::tangent_or_zeros(a, level)
        });
    }
    out
}

/// PyTorch's message when the tensor library has no [`Tensor::select_where`].
pub const ERR_NO_SELECT_WHERE: &str = "an in-place operation on one of several views returned by one op needs Tensor::select_where, which this tensor library does not provide";

/// `b` where `mask` is nonzero, `a` elsewhere ([`Tensor::select_where`]), with tangents (the
/// same selection of the inputs' tangents; `mask` is a constant). It records no history:
/// the runtime calls it only where nothing records.
pub fn select_where<T: Tensor>(
    a: &Variable<T>,
    mask: &Variable<T>,
    b: &Variable<T>,
) -> Result<Variable<T>, AutogradError> {
    let m = mask.data();
    let raw = a.with_data(|x| b.with_data(|y| x.select_where(&m, y)));
    let out = Variable::from_data(raw.ok_or_else(|| AutogradError::msg(ERR_NO_SELECT_WHERE))?);
    if crate::levels::is_forward_ad_enabled() {
        crate::tangents::propagate(&out, &[a, b], |level| {
            let ta = crate::tangents::tangent_or_zeros(a, level)?;
            select_where(&ta, mask, &crate::tangents::tangent_or_zeros(b, level)?)
        })?;
    }
    Ok(out)
}

/// Backward of [`sum_to`]: the gradient broadcast back to the input's shape.
#[derive(Debug, Clone)]
pub struct SumToBackward0 {
    /// The input's shape.
    pub shape: Vec<usize>,
}

impl<T: Tensor> Node<T> for SumToBackward0 {
    fn name(&self) -> &str {
        "SumToBackward0"
    }

    fn apply(&mut self, mut grads: VariableList<T>) -> Result<VariableList<T>, AutogradError> {
        let g = grads
            .take(0)
            .map(|g| expand_to(&g, &self.shape))
            .transpose()?;
        Ok(crate::variable_list![g])
    }
}

/// Backward of [`expand_to`]: the gradient summed back to the input's shape.
#[derive(Debug, Clone)]
pub struct ExpandToBackward0 {
    /// The input's shape.
    pub shape: Vec<usize>,
}

impl<T: Tensor> Node<T> for ExpandToBackward0 {
    fn name(&self) -> &str {
        "ExpandToBackward0"
    }

    fn apply(&mut self, mut grads: VariableList<T>) -> Result<VariableList<T>, AutogradError> {
        let g = grads.take(0).map(|g| sum_to(&g, &self.shape)).transpose()?;
        Ok(crate::variable_list![g])
    }
}

/// Backward of [`to_dtype`]: the gradient converted back to the input's dtype.
#[derive(Debug, Clone)]
pub struct ToDtypeBackward0 {
    /// The input's dtype.
    pub dtype: &'static str,
}

impl<T: Tensor> Node<T> for ToDtypeBackward0 {
    fn name(&self) -> &str {
        "ToDtypeBackward0"
    }

    fn apply(&mut self, mut grads: VariableList<T>) -> Result<VariableList<T>, AutogradError> {
        let g = grads
            .take(0)
            .map(|g| to_dtype(&g, self.dtype))
            .transpose()?;
        Ok(crate::variable_list![g])
    }
}

/// A gradient the engine must adjust with an optional method the tensor type lacks.
fn missing<T: Tensor>(method: &str, dtype: &str) -> AutogradError {
    AutogradError::Other(format!(
        "the tensor type {} does not implement Tensor::{method} (needed for a {dtype} gradient)",
        std::any::type_name::<T>()
    ))
}

/// `a`'s output of `raw`, recorded with `node` when `a` needs one, its tangent (at each
/// level where `a` has one) `linear` of `a`'s: the three ops below are linear.
fn unary<T: Tensor, N: Node<T>>(
    a: &Variable<T>,
    raw: T,
    node: N,
    linear: impl Fn(&Variable<T>) -> Result<Variable<T>, AutogradError>,
) -> Variable<T> {
    let out = if should_record(&[a]) {
        crate::node::record_generated(node, &[Some(a)], [raw]).0[0].clone()
    } else {
        Variable::from_data(raw)
    };
    if crate::levels::is_forward_ad_enabled() {
        crate::tangents::propagate_deferred(&out, &[a], |level| {
            linear(&crate::tangents::tangent_or_zeros(a, level)?)
        });
    }
    out
}

/// Differentiable [`Tensor::sum_to`]: what the engine does with a gradient of a broadcast
/// shape under `create_graph`. An error when the tensor type does not provide it.
pub fn sum_to<T: Tensor>(a: &Variable<T>, shape: &[usize]) -> Result<Variable<T>, AutogradError> {
    let (raw, from) = a.with_data(|d| (d.sum_to(shape), d.shape().to_vec()));
    let raw = raw.ok_or_else(|| missing::<T>("sum_to", a.with_data(|d| d.dtype())))?;
    let shape = shape.to_vec();
    Ok(unary(a, raw, SumToBackward0 { shape: from }, |t| {
        sum_to(t, &shape)
    }))
}

/// Differentiable [`Tensor::expand_to`] (the backward of [`sum_to`]).
pub fn expand_to<T: Tensor>(
    a: &Variable<T>,
    shape: &[usize],
) -> Result<Variable<T>, AutogradError> {
    let (raw, from) = a.with_data(|d| (d.expand_to(shape), d.shape().to_vec()));
    let raw = raw.ok_or_else(|| missing::<T>("expand_to", a.with_data(|d| d.dtype())))?;
    let shape = shape.to_vec();
    Ok(unary(a, raw, ExpandToBackward0 { shape: from }, |t| {
        expand_to(t, &shape)
    }))
}

/// Differentiable [`Tensor::to_dtype`]: what the engine does with a gradient of another
/// floating dtype under `create_graph`.
pub fn to_dtype<T: Tensor>(
    a: &Variable<T>,
    dtype: &'static str,
) -> Result<Variable<T>, AutogradError> {
    let (raw, from) = a.with_data(|d| (d.to_dtype(dtype), d.dtype()));
    let raw = raw.ok_or_else(|| missing::<T>("to_dtype", from))?;
    Ok(unary(a, raw, ToDtypeBackward0 { dtype: from }, |t| {
        to_dtype(t, dtype)
    }))
}
