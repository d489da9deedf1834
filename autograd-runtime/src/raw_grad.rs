//! What a formula's value may be on the raw path ([`Node::apply_raw`](crate::Node::apply_raw)
//! of generated nodes): a tensor, a reference to one, an optional tensor, or a `Result` of
//! those; lists and tuples for `Tensor[]` inputs and formulas of several inputs. The
//! `Variable` path's traits (`IntoGrad` and kin) live in the facade.

use crate::error::AutogradError;
use crate::tensor::Tensor;

/// A formula result for one input, on raw tensors.
pub trait IntoRawGrad<T: Tensor> {
    /// The gradient, `None` when undefined.
    fn into_raw_grad(self) -> Result<Option<T>, AutogradError>;
}

impl<T: Tensor> IntoRawGrad<T> for T {
    #[inline]
    fn into_raw_grad(self) -> Result<Option<T>, AutogradError> {
        Ok(Some(self))
    }
}

impl<T: Tensor> IntoRawGrad<T> for &T {
    #[inline]
    fn into_raw_grad(self) -> Result<Option<T>, AutogradError> {
        Ok(Some(self.clone()))
    }
}

impl<T: Tensor> IntoRawGrad<T> for Option<T> {
    #[inline]
    fn into_raw_grad(self) -> Result<Option<T>, AutogradError> {
        Ok(self)
    }
}

impl<T: Tensor, G: IntoRawGrad<T>> IntoRawGrad<T> for Result<G, AutogradError> {
    #[inline]
    fn into_raw_grad(self) -> Result<Option<T>, AutogradError> {
        self?.into_raw_grad()
    }
}

/// A formula result for a `Tensor[]` input: one raw gradient per element.
pub trait IntoRawGradList<T: Tensor> {
    /// The gradients, one per list element.
    fn into_raw_grad_list(self) -> Result<Vec<Option<T>>, AutogradError>;
}

impl<T: Tensor> IntoRawGradList<T> for Vec<T> {
    fn into_raw_grad_list(self) -> Result<Vec<Option<T>>, AutogradError> {
        Ok(self.into_iter().map(Some).collect())
    }
}

impl<T: Tensor> IntoRawGradList<T> for Vec<Option<T>> {
    fn into_raw_grad_list(self) -> Result<Vec<Option<T>>, AutogradError> {
        Ok(self)
    }
}

impl<T: Tensor, G: IntoRawGradList<T>> IntoRawGradList<T> for Result<G, AutogradError> {
    fn into_raw_grad_list(self) -> Result<Vec<Option<T>>, AutogradError> {
        self?.into_raw_grad_list()
    }
}

/// A formula result for several inputs at once (`input, weight, bias: ...`), on raw tensors.
pub trait IntoRawGrads<T: Tensor, const N: usize> {
    /// The gradients, in the order of the names.
    fn into_raw_grads(self) -> Result<[Option<T>; N], AutogradError>;
}

macro_rules! tuple_into_raw_grads {
    ($n:literal; $($g:ident $i:tt),+) => {
        impl<T: Tensor, $($g: IntoRawGrad<T>),+> IntoRawGrads<T, $n> for ($($g,)+) {
            fn into_raw_grads(self) -> Result<[Option<T>; $n], AutogradError> {
                Ok([$(self.$i.into_raw_grad()?),+])
            }
        }
    };
}
tuple_into_raw_grads!(1; A 0);
tuple_into_raw_grads!(2; A 0, B 1);
tuple_into_raw_grads!(3; A 0, B 1, C 2);
tuple_into_raw_grads!(4; A 0, B 1, C 2, D 3);
tuple_into_raw_grads!(5; A 0, B 1, C 2, D 3, E 4);

impl<T: Tensor, const N: usize, G: IntoRawGrads<T, N>> IntoRawGrads<T, N>
    for Result<G, AutogradError>
{
    fn into_raw_grads(self) -> Result<[Option<T>; N], AutogradError> {
        self?.into_raw_grads()
    }
}

/// What code written once for both forms (the op set's formula helpers, compiled over
/// `Variable<T>` and over raw `T`) needs beyond the ops. `Variable<T>` has these as inherent
/// methods (which take precedence); a raw tensor gets them here: its data is itself, it never
/// requires grad, and detaching it is a clone.
pub trait GradValue<T: Tensor>: Clone {
    /// A value holding `t`.
    fn from_data(t: T) -> Self;
    /// Runs `f` on the raw tensor.
    fn with_data<R>(&self, f: impl FnOnce(&T) -> R) -> R;
    /// The raw tensor (a clone).
    fn data(&self) -> T;
    /// Whether it requires grad.
    fn requires_grad(&self) -> bool;
    /// The value without history.
    fn detach(&self) -> Self;
}

impl<T: Tensor> GradValue<T> for T {
    #[inline]
    fn from_data(t: T) -> Self {
        t
    }
    #[inline]
    fn with_data<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(self)
    }
    #[inline]
    fn data(&self) -> T {
        self.clone()
    }
    #[inline]
    fn requires_grad(&self) -> bool {
        false
    }
    #[inline]
    fn detach(&self) -> Self {
        self.clone()
    }
}

impl<T: Tensor> GradValue<T> for crate::Variable<T> {
    fn from_data(t: T) -> Self {
        crate::Variable::from_data(t)
    }
    fn with_data<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        crate::Variable::with_data(self, f)
    }
    fn data(&self) -> T {
        crate::Variable::data(self)
    }
    fn requires_grad(&self) -> bool {
        crate::Variable::requires_grad(self)
    }
    fn detach(&self) -> Self {
        crate::Variable::detach(self)
    }
}
