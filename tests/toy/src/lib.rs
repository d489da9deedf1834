//! A toy tensor library: `Vec<f64>` tensors of rank 0 or 1 whose whole autograd layer comes
//! from `derivatives.yaml` through `autograd_ops!`. It exists to test the generator end to end
//! (gradient checks, second derivatives, in-place and out= variants, errors).

use autograd::runtime::Tensor;
use std::sync::Arc;

/// A rank-0 or rank-1 tensor of `f64`.
#[derive(Clone, Debug, PartialEq)]
pub struct Toy {
    /// The values.
    pub data: Arc<Vec<f64>>,
    /// `[]` or `[n]`.
    pub shape: Vec<usize>,
}

impl Toy {
    /// A vector.
    pub fn vec(v: Vec<f64>) -> Self {
        let n = v.len();
        Toy {
            data: Arc::new(v),
            shape: vec![n],
        }
    }

    /// A scalar.
    pub fn scalar(x: f64) -> Self {
        Toy {
            data: Arc::new(vec![x]),
            shape: vec![],
        }
    }

    fn map(&self, f: impl Fn(f64) -> f64) -> Self {
        Toy {
            data: Arc::new(self.data.iter().map(|x| f(*x)).collect()),
            shape: self.shape.clone(),
        }
    }

    /// Elementwise with broadcasting of scalars.
    fn zip(&self, o: &Self, f: impl Fn(f64, f64) -> f64) -> Self {
        let (shape, n) = if self.shape.is_empty() {
            (o.shape.clone(), o.data.len())
        } else {
            (self.shape.clone(), self.data.len())
        };
        assert!(
            self.shape.is_empty() || o.shape.is_empty() || self.shape == o.shape,
            "shape mismatch {:?} vs {:?}",
            self.shape,
            o.shape
        );
        let at = |t: &Toy, i: usize| {
            if t.shape.is_empty() {
                t.data[0]
            } else {
                t.data[i]
            }
        };
        Toy {
            data: Arc::new((0..n).map(|i| f(at(self, i), at(o, i))).collect()),
            shape,
        }
    }
}

impl Tensor for Toy {
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn dtype(&self) -> &'static str {
        "f64"
    }
    fn ones_like(&self) -> Self {
        self.map(|_| 1.0)
    }
    fn zeros_like(&self) -> Self {
        self.map(|_| 0.0)
    }
    fn add(&self, other: &Self) -> Self {
        self.zip(other, |a, b| a + b)
    }
    fn has_nan(&self) -> bool {
        self.data.iter().any(|x| x.is_nan())
    }
    /// A vector summed to a scalar (the one broadcast the toy has).
    fn sum_to(&self, shape: &[usize]) -> Option<Self> {
        match (self.shape.len(), shape) {
            (1, []) => Some(Toy::scalar(self.data.iter().sum())),
            (_, s) if s == self.shape.as_slice() => Some(self.clone()),
            _ => None,
        }
    }
    /// A scalar repeated to a vector.
    fn expand_to(&self, shape: &[usize]) -> Option<Self> {
        match (self.shape.len(), shape) {
            (0, [n]) => Some(Toy::vec(vec![self.data[0]; *n])),
            (_, s) if s == self.shape.as_slice() => Some(self.clone()),
            _ => None,
        }
    }
}

pub mod cpp;

/// Helpers the formulas call (PyTorch's `FunctionsManual`, in miniature). They are built
/// from differentiable ops, so second derivatives work through them.
pub mod helpers {
    pub use crate::ops::*;
    use autograd::runtime::Variable;

    /// The gradients of `unbind` stacked back; undefined ones are zeros.
    pub fn stack_grads<T: Backend>(grads: &[Option<Variable<T>>], n: usize) -> Variable<T> {
        let proto = grads
            .iter()
            .flatten()
            .next()
            .expect("some gradient is defined")
            .clone();
        let parts: Vec<Variable<T>> = (0..n)
            .map(|i| {
                grads
                    .get(i)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| mul_scalar(&proto, 0.0))
            })
            .collect();
        stack(&parts, 0)
    }

    /// Split `grad` into pieces shaped like `like` (rank-1 pieces, in order).
    pub fn split_like<T: Backend>(grad: &Variable<T>, like: &[Variable<T>]) -> Vec<Variable<T>> {
        let elems = unbind_int(grad, 0);
        let mut at = 0;
        like.iter()
            .map(|t| {
                let n = t.shape().first().copied().unwrap_or(1);
                let piece = stack(&elems[at..at + n], 0);
                at += n;
                piece
            })
            .collect()
    }

    /// Gradients of `where(condition, self, other)`.
    pub fn where_backward<T: Backend>(
        grad: &Variable<T>,
        condition: &Variable<T>,
    ) -> (Variable<T>, Variable<T>) {
        let zeros = mul_scalar(grad, 0.0);
        (
            where_self(condition, grad, &zeros),
            where_self(condition, &zeros, grad),
        )
    }
}

/// The generated autograd layer.
pub mod ops {
    autograd::autograd_ops!(
        "derivatives.yaml",
        native = "native_functions.yaml",
        helpers = crate::helpers,
        // The Rust formulas compute with Scalars as `f64`.
        types = { Scalar = f64 }
    );
}

pub use ops::{Backend, VariableOps};

impl Backend for Toy {
    fn add_tensor(self_: &Self, other: &Self, alpha: f64) -> Self {
        self_.zip(other, |a, b| a + alpha * b)
    }
    fn floor_divide_scalar(self_: &Self, other: f64) -> Self {
        self_.map(|a| (a / other).floor())
    }
    fn add_scalar(self_: &Self, other: f64, alpha: f64) -> Self {
        self_.map(|a| a + alpha * other)
    }
    fn mul_tensor(self_: &Self, other: &Self) -> Self {
        self_.zip(other, |a, b| a * b)
    }
    fn mul_scalar(self_: &Self, other: f64) -> Self {
        self_.map(|a| a * other)
    }
    fn neg(self_: &Self) -> Self {
        self_.map(|a| -a)
    }
    fn exp(self_: &Self) -> Self {
        self_.map(f64::exp)
    }
    fn tanh(self_: &Self) -> Self {
        self_.map(f64::tanh)
    }
    fn clone(self_: &Self, _memory_format: Option<autograd::types::MemoryFormat>) -> Self {
        Clone::clone(self_)
    }
    fn sin(self_: &Self) -> Self {
        self_.map(f64::sin)
    }
    fn pow_tensor_scalar(self_: &Self, exponent: f64) -> Self {
        self_.map(|a| a.powf(exponent))
    }
    fn sum(self_: &Self) -> Self {
        Toy::scalar(self_.data.iter().sum())
    }
    fn expand(self_: &Self, size: &[i64]) -> Self {
        if self_.shape.is_empty() && !size.is_empty() {
            Toy::vec(vec![self_.data[0]; size[0] as usize])
        } else {
            self_.clone()
        }
    }
    fn sum_to_size(self_: &Self, size: &[i64]) -> Self {
        if size.is_empty() && !self_.shape.is_empty() {
            Toy::scalar(self_.data.iter().sum())
        } else {
            self_.clone()
        }
    }
    fn max_dim(self_: &Self, _dim: i64, _keepdim: bool) -> (Self, Self) {
        let (i, v) = self_.data.iter().copied().enumerate().fold(
            (0, f64::NEG_INFINITY),
            |(bi, bv), (i, v)| {
                if v > bv { (i, v) } else { (bi, bv) }
            },
        );
        (Toy::scalar(v), Toy::scalar(i as f64))
    }
    fn index_scatter(src: &Self, index: &Self, n: i64) -> Self {
        let mut v = vec![0.0; n as usize];
        v[index.data[0] as usize] = src.data[0];
        Toy::vec(v)
    }
    fn gather(self_: &Self, index: &Self) -> Self {
        Toy::scalar(self_.data[index.data[0] as usize])
    }
    fn cat(tensors: &[Self], _dim: i64) -> Self {
        Toy::vec(
            tensors
                .iter()
                .flat_map(|t| t.data.iter().copied())
                .collect(),
        )
    }
    fn unbind_int(self_: &Self, _dim: i64) -> Vec<Self> {
        self_.data.iter().map(|x| Toy::scalar(*x)).collect()
    }
    fn stack(tensors: &[Self], _dim: i64) -> Self {
        Toy::vec(tensors.iter().map(|t| t.data[0]).collect())
    }
    fn where_self(condition: &Self, self_: &Self, other: &Self) -> Self {
        let c = condition.zip(self_, |c, _| c);
        let picked = c.zip(self_, |c, s| if c != 0.0 { s } else { f64::NAN });
        picked.zip(other, |p, o| if p.is_nan() { o } else { p })
    }
}

impl autograd::gradcheck::ElementAccess for Toy {
    fn to_f64_vec(&self) -> Vec<f64> {
        self.data.to_vec()
    }
    fn with_f64_vec(&self, values: &[f64]) -> Self {
        Toy {
            data: Arc::new(values.to_vec()),
            shape: self.shape.clone(),
        }
    }
}
