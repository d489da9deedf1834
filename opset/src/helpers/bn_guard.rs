//! PyTorch's guard against third derivatives of batch norm in training: its double
//! backward (`batchnorm_double_backward`) reads the saved mean and inverse standard
//! deviation as constants, though they are functions of the input, so PyTorch 2.15 gives
//! them, while it records a graph, the history of an `Error` node whose inputs are
//! `(save_mean, save_invstd, input)`: a derivative through them fails with "batch_norm does
//! not support 3rd+ order derivatives." instead of being silently wrong. Over raw tensors
//! (no graph) the guard is the identity. The same node is PyTorch's `DelayedError` of other
//! formulas ([`DelayedError`]).

use super::Backend;
use autograd::runtime::{AutogradError, Node, Variable, VariableList, is_grad_enabled, record};

/// PyTorch's message.
const THIRD_ORDER: &str = "batch_norm does not support 3rd+ order derivatives.";

/// The `Error` node: backward through it fails with its message.
struct ErrorNode(&'static str);

impl<T: Backend> Node<T> for ErrorNode {
    fn name(&self) -> &str {
        "Error"
    }
    fn apply(&mut self, _grads: VariableList<T>) -> Result<VariableList<T>, AutogradError> {
        Err(AutogradError::msg(self.0))
    }
}

/// A statistic of `batchnorm_double_backward` in training, guarded (see the module).
pub trait BatchNormStat: Sized {
    /// `self`, with the `Error` history when a graph is recorded and `input` (or a saved
    /// statistic) requires grad.
    fn guarded(&self, save_mean: &Self, save_invstd: &Self, input: &Self) -> Self;
}

impl<T: Backend> BatchNormStat for T {
    fn guarded(&self, _: &Self, _: &Self, _: &Self) -> Self {
        self.clone()
    }
}

impl<T: Backend> BatchNormStat for Variable<T> {
    fn guarded(&self, save_mean: &Self, save_invstd: &Self, input: &Self) -> Self {
        let inputs = [Some(save_mean), Some(save_invstd), Some(input)];
        if !is_grad_enabled() || !inputs.iter().flatten().any(|v| v.requires_grad()) {
            return self.clone();
        }
        let ([out], _) = record(ErrorNode(THIRD_ORDER), &inputs, [self.data()]);
        out
    }
}

/// PyTorch's `DelayedError` (`std::make_shared<DelayedError>(msg, 1)->apply({x})`): `x`
/// itself, with the history of an `Error` node when a graph is recorded and `x` requires
/// grad, so a gradient that is right to first order fails with `msg` when differentiated
/// again. Over raw tensors (no graph) the identity.
pub trait DelayedError: Sized {
    /// `self`, guarded (see the trait).
    fn delayed_error(&self, msg: &'static str) -> Self;
}

impl<T: Backend> DelayedError for T {
    fn delayed_error(&self, _: &'static str) -> Self {
        self.clone()
    }
}

impl<T: Backend> DelayedError for Variable<T> {
    fn delayed_error(&self, msg: &'static str) -> Self {
        if !is_grad_enabled() || !self.requires_grad() {
            return self.clone();
        }
        let ([out], _) = record(ErrorNode(msg), &[Some(self)], [self.data()]);
        out
    }
}
