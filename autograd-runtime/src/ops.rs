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
    if crate::forward::is_forward_ad_enabled() {
        crate::forward::propagate_deferred(&out, &[a, b], |level| {
            let ta = crate::forward::tangent_or_zeros(a, level)?;
            Ok(add(&ta, &crate::forward::tangent_or_zeros(b, level)?))
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
    if crate::forward::is_forward_ad_enabled() {
        crate::forward::propagate_deferred(&out, &[a], |level| {
            crate::forward::tangent_or_zeros(a, level)
        });
    }
    out
}
