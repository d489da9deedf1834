//! A backend whose kernels can fail, as candle's do (every candle op returns
//! `Result<Tensor>`): `autograd_ops!(..., fallible = true)` makes each kernel return
//! `Result<_, Self::Error>` and each differentiable op return `Result<_, AutogradError>`, with
//! the kernel's error inside [`AutogradError::Backend`](autograd::runtime::AutogradError).
//!
//! The tensor is a `Vec<f64>` of rank 0 or 1; kernels fail on mismatched shapes and on the
//! logarithm of a negative number, with messages in PyTorch's words.

use autograd::gradcheck::ElementAccess;
use autograd::runtime::Tensor;
use std::fmt;
use std::sync::Arc;

/// A rank-0 or rank-1 tensor of `f64`.
#[derive(Clone, Debug, PartialEq)]
pub struct Vector {
    /// The values.
    pub data: Arc<Vec<f64>>,
    /// `[]` or `[n]`.
    pub shape: Vec<usize>,
}

/// What a kernel of this backend reports.
#[derive(Debug, Clone, PartialEq)]
pub enum KernelError {
    /// Two shapes that do not broadcast.
    Shape(Vec<usize>, Vec<usize>),
    /// A value outside the function's domain.
    Domain(&'static str),
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::Shape(a, b) => write!(
                f,
                "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension 0",
                a.first().copied().unwrap_or(1),
                b.first().copied().unwrap_or(1)
            ),
            KernelError::Domain(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for KernelError {}

impl From<autograd::support::KernelNotImplemented> for KernelError {
    fn from(e: autograd::support::KernelNotImplemented) -> Self {
        KernelError::Domain(Box::leak(e.to_string().into_boxed_str()))
    }
}

impl Vector {
    /// A vector.
    pub fn vec(v: Vec<f64>) -> Self {
        let n = v.len();
        Vector {
            data: Arc::new(v),
            shape: vec![n],
        }
    }

    /// A scalar.
    pub fn scalar(x: f64) -> Self {
        Vector {
            data: Arc::new(vec![x]),
            shape: vec![],
        }
    }

    fn map(&self, f: impl Fn(f64) -> f64) -> Self {
        Vector {
            data: Arc::new(self.data.iter().map(|x| f(*x)).collect()),
            shape: self.shape.clone(),
        }
    }

    /// Elementwise, a scalar broadcasting against a vector; other shapes must be equal.
    fn zip(&self, o: &Self, f: impl Fn(f64, f64) -> f64) -> Result<Self, KernelError> {
        if !(self.shape.is_empty() || o.shape.is_empty() || self.shape == o.shape) {
            return Err(KernelError::Shape(self.shape.clone(), o.shape.clone()));
        }
        let (shape, n) = if self.shape.is_empty() {
            (o.shape.clone(), o.data.len())
        } else {
            (self.shape.clone(), self.data.len())
        };
        let at = |t: &Vector, i: usize| {
            if t.shape.is_empty() {
                t.data[0]
            } else {
                t.data[i]
            }
        };
        Ok(Vector {
            data: Arc::new((0..n).map(|i| f(at(self, i), at(o, i))).collect()),
            shape,
        })
    }
}

impl Tensor for Vector {
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
        // The runtime adds gradients of one input, whose shapes are equal.
        self.zip(other, |a, b| a + b)
            .unwrap_or_else(|_| self.clone())
    }
    fn has_nan(&self) -> bool {
        self.data.iter().any(|x| x.is_nan())
    }
}

impl ElementAccess for Vector {
    fn to_f64_vec(&self) -> Vec<f64> {
        self.data.to_vec()
    }
    fn with_f64_vec(&self, values: &[f64]) -> Self {
        Vector {
            data: Arc::new(values.to_vec()),
            shape: self.shape.clone(),
        }
    }
}

/// The generated layer: `Backend` with fallible kernels, nodes, wrappers returning `Result`.
pub mod ops {
    autograd::autograd_ops!(
        "derivatives.yaml",
        native = "native_functions.yaml",
        fallible = true
    );
}

impl ops::Backend for Vector {
    type Error = KernelError;

    fn add_tensor(self_: &Self, other: &Self) -> Result<Self, KernelError> {
        self_.zip(other, |a, b| a + b)
    }
    fn mul_tensor(self_: &Self, other: &Self) -> Result<Self, KernelError> {
        self_.zip(other, |a, b| a * b)
    }
    fn div_tensor(self_: &Self, other: &Self) -> Result<Self, KernelError> {
        self_.zip(other, |a, b| a / b)
    }
    fn exp(self_: &Self) -> Result<Self, KernelError> {
        Ok(self_.map(f64::exp))
    }
    fn log(self_: &Self) -> Result<Self, KernelError> {
        if self_.data.iter().any(|x| *x < 0.0) {
            return Err(KernelError::Domain("log: negative input"));
        }
        Ok(self_.map(f64::ln))
    }
    fn neg(self_: &Self) -> Result<Self, KernelError> {
        Ok(self_.map(|x| -x))
    }
    fn sum(self_: &Self) -> Result<Self, KernelError> {
        Ok(Vector::scalar(self_.data.iter().sum()))
    }
    fn expand(self_: &Self, size: &[i64]) -> Result<Self, KernelError> {
        match (&self_.shape[..], size) {
            ([], []) => Ok(self_.clone()),
            ([], [n]) => Ok(Vector::vec(vec![self_.data[0]; *n as usize])),
            (s, size) if s.iter().map(|d| *d as i64).eq(size.iter().copied()) => Ok(self_.clone()),
            (s, size) => Err(KernelError::Shape(
                s.to_vec(),
                size.iter().map(|d| *d as usize).collect(),
            )),
        }
    }
}
