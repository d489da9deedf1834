//! Built-in differentiable ops the engine itself needs.

use crate::error::AutogradError;
use crate::node::{Node, VariableList, record, should_record};
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
    if !should_record(&[a, b]) {
        return Variable::from_data(raw);
    }
    let ([out], _) = record(AddBackward0, &[Some(a), Some(b)], [raw]);
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
    if !should_record(&[a]) {
        return Variable::from_data(raw);
    }
    let ([out], _) = record(CloneBackward0, &[Some(a)], [raw]);
    out
}
