//! The same toy tensor with an autograd layer from PyTorch's own C++ formulas
//! (`cpp/derivatives.yaml`, copied verbatim from PyTorch's derivatives.yaml), lowered to
//! Rust by `autograd_ops!(.., formulas = "cpp", header = "cpp/functions.h")`. The helpers the
//! formulas call are declared in the header (PyTorch's `FunctionsManual.h` declarations) and
//! implemented below with PyTorch's names and argument order.

use crate::Toy;
use autograd::types::Scalar;

/// The generated layer (`Backend` trait, nodes, wrappers).
pub mod ops {
    autograd::autograd_ops!(
        "cpp/derivatives.yaml",
        native = "cpp/native_functions.yaml",
        helpers = crate::cpp::helpers,
        formulas = "cpp",
        header = "cpp/functions.h"
    );
}

/// PyTorch's `FunctionsManual` helpers that the formulas call, over the generated ops.
pub mod helpers {
    pub use super::ops::*;
    use autograd::runtime::Variable;
    use autograd::types::Scalar;

    /// What `mul_tensor_backward`'s and `div_tensor_self_backward`'s template parameter
    /// `T` binds to: a tensor or a scalar.
    pub trait Operand<T: Backend> {
        /// `grad * self`.
        fn times(self, grad: &Variable<T>) -> Variable<T>;
        /// `grad / self`.
        fn divides(self, grad: &Variable<T>) -> Variable<T>;
    }

    impl<T: Backend> Operand<T> for &Variable<T> {
        fn times(self, grad: &Variable<T>) -> Variable<T> {
            mul_tensor(grad, self)
        }
        fn divides(self, grad: &Variable<T>) -> Variable<T> {
            div_tensor(grad, self)
        }
    }

    impl<T: Backend> Operand<T> for f64 {
        fn times(self, grad: &Variable<T>) -> Variable<T> {
            mul_scalar(grad, self)
        }
        fn divides(self, grad: &Variable<T>) -> Variable<T> {
            mul_scalar(grad, 1.0 / self)
        }
    }

    /// `t * s`, or `t` itself when `s` is 1.
    pub fn maybe_multiply<T: Backend>(t: &Variable<T>, s: Scalar) -> Variable<T> {
        if s.to_f64() == 1.0 {
            t.clone()
        } else {
            mul_scalar(t, s)
        }
    }

    /// `grad * other` (conjugation and `handle_r_to_c` are the identity on real tensors).
    pub fn mul_tensor_backward<T: Backend>(
        grad: &Variable<T>,
        other: impl Operand<T>,
        _self_st: &str,
    ) -> Variable<T> {
        other.times(grad)
    }

    /// `grad / other`; zeros for a rounding division.
    pub fn div_tensor_self_backward<T: Backend>(
        grad: &Variable<T>,
        other: impl Operand<T>,
        _self_st: &str,
        rounding_mode: Option<&str>,
    ) -> Variable<T> {
        match rounding_mode {
            Some(_) => mul_scalar(grad, 0.0),
            None => other.divides(grad),
        }
    }

    /// `-grad * self / other / other`; zeros for a rounding division.
    pub fn div_tensor_other_backward<T: Backend>(
        grad: &Variable<T>,
        self_: &Variable<T>,
        other: &Variable<T>,
        rounding_mode: Option<&str>,
    ) -> Variable<T> {
        match rounding_mode {
            Some(_) => mul_scalar(grad, 0.0),
            None => mul_tensor(&neg(grad), &div_tensor(&div_tensor(self_, other), other)),
        }
    }

    /// PyTorch's `at::sum_to`: the runtime's reduction to a shape.
    pub fn sum_to_sizes<T: Backend>(g: &Variable<T>, sizes: &[i64]) -> Variable<T> {
        let shape: Vec<usize> = sizes.iter().map(|&d| d as usize).collect();
        autograd::runtime::ops::sum_to(g, &shape).expect("the toy sums to any shape")
    }
}

impl ops::Backend for Toy {
    fn add_tensor(self_: &Self, other: &Self, alpha: Scalar) -> Self {
        self_.zip(other, |a, b| a + alpha.to_f64() * b)
    }
    fn sub_tensor(self_: &Self, other: &Self, alpha: Scalar) -> Self {
        self_.zip(other, |a, b| a - alpha.to_f64() * b)
    }
    fn mul_tensor(self_: &Self, other: &Self) -> Self {
        self_.zip(other, |a, b| a * b)
    }
    fn mul_scalar(self_: &Self, other: Scalar) -> Self {
        self_.map(|a| a * other.to_f64())
    }
    fn div_tensor(self_: &Self, other: &Self) -> Self {
        self_.zip(other, |a, b| a / b)
    }
    fn neg(self_: &Self) -> Self {
        self_.map(|a| -a)
    }
    fn exp(self_: &Self) -> Self {
        self_.map(f64::exp)
    }
    fn log(self_: &Self) -> Self {
        self_.map(f64::ln)
    }
    fn sin(self_: &Self) -> Self {
        self_.map(f64::sin)
    }
    fn cos(self_: &Self) -> Self {
        self_.map(f64::cos)
    }
    fn sum(self_: &Self, _dtype: Option<autograd::types::ScalarType>) -> Self {
        Toy::scalar(self_.data.iter().sum())
    }
    fn expand(self_: &Self, size: &[i64], _implicit: bool) -> Self {
        crate::Backend::expand(self_, size)
    }
}
