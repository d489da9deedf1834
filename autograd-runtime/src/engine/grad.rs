//! What the engine's gradient buffers hold: `Variable`s when the pass records a graph of its
//! own (`create_graph`), raw tensors otherwise. Without `create_graph` nothing a formula
//! computes gets a history, so a gradient needs no variable (an allocation, reference counts
//! and a free per gradient): nodes run [`Node::apply_raw`] and `.grad` is wrapped once.

use crate::error::AutogradError;
use crate::list::OptList;
use crate::node::{Node, VariableList};
use crate::ops;
use crate::tensor::Tensor;
use crate::variable::Variable;

/// A gradient as the engine carries it: `Variable<T>` or raw `T`.
pub(crate) trait Grad<T: Tensor>: Clone + Send + Sync + 'static {
    /// From a variable (root seeds, what hooks return).
    fn from_var(v: Variable<T>) -> Self;
    /// As a variable (for hooks, captures and `.grad`).
    fn into_var(self) -> Variable<T>;
    /// `a + b` where two gradients meet at one input.
    fn sum(a: Self, b: &Self) -> Self;
    /// Runs `f` on the raw tensor.
    fn with_data<R>(&self, f: impl FnOnce(&T) -> R) -> R;
    /// Runs the node's formulas: `grads` in, the inputs' gradients into `out` (empty);
    /// then, if `release` and they succeeded, frees its saved variables.
    fn apply(
        node: &mut dyn Node<T>,
        grads: &mut OptList<Self, 2>,
        out: &mut OptList<Self, 2>,
        release: bool,
    ) -> Result<(), AutogradError>;
    /// Adds `g` into the leaf's `.grad` (PyTorch's `AccumulateGrad`): differentiably for a
    /// variable (the pass records, `create_graph`), in place for a raw tensor.
    fn accumulate(var: &Variable<T>, g: Self);
    /// Summed to `shape` ([`Tensor::sum_to`], differentiably for a variable); `None`
    /// when the tensor type does not provide it.
    fn sum_to(&self, shape: &[usize]) -> Option<Self>;
    /// Converted to `dtype` ([`Tensor::to_dtype`]); `None` when not provided.
    fn to_dtype(&self, dtype: &'static str) -> Option<Self>;

    /// A list as variables.
    fn to_vars(l: OptList<Self, 2>) -> VariableList<T> {
        l.into_iter().map(|g| g.map(Self::into_var)).collect()
    }
    /// A list of variables as gradients.
    fn from_vars(l: VariableList<T>) -> OptList<Self, 2> {
        l.into_iter().map(|g| g.map(Self::from_var)).collect()
    }
}

impl<T: Tensor> Grad<T> for Variable<T> {
    #[inline]
    fn from_var(v: Variable<T>) -> Self {
        v
    }
    #[inline]
    fn into_var(self) -> Variable<T> {
        self
    }
    fn sum(a: Self, b: &Self) -> Self {
        ops::add(&a, b)
    }
    #[inline]
    fn with_data<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        Variable::with_data(self, f)
    }
    fn apply(
        node: &mut dyn Node<T>,
        grads: &mut VariableList<T>,
        out: &mut VariableList<T>,
        release: bool,
    ) -> Result<(), AutogradError> {
        *out = node.run_vars(std::mem::take(grads), release)?;
        Ok(())
    }
    fn sum_to(&self, shape: &[usize]) -> Option<Self> {
        ops::sum_to(self, shape).ok()
    }
    fn to_dtype(&self, dtype: &'static str) -> Option<Self> {
        ops::to_dtype(self, dtype).ok()
    }
    fn accumulate(var: &Variable<T>, g: Self) {
        let new = match var.grad() {
            None => g,
            Some(old) => ops::add(&old, &g),
        };
        var.set_grad(Some(new));
    }
}

impl<T: Tensor> Grad<T> for T {
    #[inline]
    fn from_var(v: Variable<T>) -> Self {
        v.data()
    }
    #[inline]
    fn into_var(self) -> Variable<T> {
        Variable::from_data(self)
    }
    #[inline]
    fn sum(a: Self, b: &Self) -> Self {
        a.add(b)
    }
    #[inline]
    fn with_data<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(self)
    }
    #[inline]
    fn apply(
        node: &mut dyn Node<T>,
        grads: &mut OptList<T, 2>,
        out: &mut OptList<T, 2>,
        release: bool,
    ) -> Result<(), AutogradError> {
        node.run_raw(grads, out, release)
    }
    fn sum_to(&self, shape: &[usize]) -> Option<Self> {
        Tensor::sum_to(self, shape)
    }
    fn to_dtype(&self, dtype: &'static str) -> Option<Self> {
        Tensor::to_dtype(self, dtype)
    }
    fn accumulate(var: &Variable<T>, g: Self) {
        var.with_grad_slot(|slot| match slot.take() {
            None => *slot = Some(Variable::from_data(g)),
            Some(old) => {
                let sum = old.with_data(|a| a.add(&g));
                old.set_data(sum);
                old.bump_version();
                *slot = Some(old);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::testing::{Val, val};

    #[test]
    fn a_raw_gradient_accumulates_in_place_into_the_same_grad() {
        let x = Variable::new(val(1.0), true);
        <Val as Grad<Val>>::accumulate(&x, val(2.0));
        let first = x.grad().unwrap();
        assert_eq!((first.data(), first.version()), (val(2.0), 0));
        <Val as Grad<Val>>::accumulate(&x, val(3.0));
        let second = x.grad().unwrap();
        // PyTorch's AccumulateGrad without create_graph: `grad += new` in place.
        assert!(second.ptr_eq(&first));
        assert_eq!((second.data(), second.version()), (val(5.0), 1));
    }

    #[test]
    fn a_variable_gradient_accumulates_out_of_place_with_history() {
        let x = Variable::new(val(1.0), true);
        let g = Variable::new(val(2.0), true);
        Variable::accumulate(&x, g.clone());
        assert!(
            x.grad().unwrap().ptr_eq(&g),
            "the first gradient is kept as it is"
        );
        Variable::accumulate(&x, Variable::new(val(3.0), true));
        let sum = x.grad().unwrap();
        assert!(
            !sum.ptr_eq(&g) && g.data() == val(2.0),
            "the old grad is not written"
        );
        assert_eq!(sum.data(), val(5.0));
        assert_eq!(sum.grad_fn().unwrap().name(), "AddBackward0");
    }

    #[test]
    fn both_kinds_sum_reduce_and_convert_alike() {
        let t = Val {
            shape: vec![2],
            data: vec![1.0, 2.0],
            dtype: "f64",
        };
        let raw = <Val as Grad<Val>>::sum_to(&t, &[1]).unwrap();
        let var = Grad::sum_to(&Variable::from_data(t.clone()), &[1]).unwrap();
        assert_eq!(raw.data, vec![3.0]);
        assert_eq!(var.data(), raw);
        let f32 = <Val as Grad<Val>>::to_dtype(&t, "f32").unwrap();
        assert_eq!(f32.dtype, "f32");
        let sum = <Val as Grad<Val>>::sum(t.clone(), &t);
        assert_eq!(sum.data, vec![2.0, 4.0]);
    }
}
