//! The raw tensor: a `candle_core::Tensor` (CPU, `F64` for the tests; `F32` works too).

use candle_core::{DType, Device, Tensor};
use std::fmt;

/// A raw tensor: candle's `Tensor` (cheaply cloneable, possibly strided). Index tensors
/// (targets, `gather` indices, `max.dim` indices) hold integers as floating-point elements,
/// as in ndtensor; the kernels convert them to candle's `U32` indices.
#[derive(Clone)]
pub struct CandleTensor {
    /// candle's tensor.
    pub t: Tensor,
}

impl CandleTensor {
    /// Wraps a candle tensor.
    pub fn new(t: Tensor) -> Self {
        CandleTensor { t }
    }

    /// Row-major `f64` values with a shape, on the CPU.
    ///
    /// ```
    /// let t = candletensor::CandleTensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// assert_eq!(t.shape(), &[2, 2]);
    /// ```
    pub fn from_vec(v: Vec<f64>, shape: &[usize]) -> Self {
        CandleTensor {
            t: Tensor::from_vec(v, shape, &Device::Cpu).expect("values do not fit the shape"),
        }
    }

    /// A 0-dimensional tensor.
    pub fn scalar(x: f64) -> Self {
        CandleTensor::from_vec(vec![x], &[])
    }

    /// Zeros (`F64`).
    pub fn zeros(shape: &[usize]) -> Self {
        CandleTensor {
            t: Tensor::zeros(shape, DType::F64, &Device::Cpu).expect("zeros"),
        }
    }

    /// Ones (`F64`).
    pub fn ones(shape: &[usize]) -> Self {
        CandleTensor {
            t: Tensor::ones(shape, DType::F64, &Device::Cpu).expect("ones"),
        }
    }

    /// The dimensions.
    pub fn shape(&self) -> &[usize] {
        self.t.dims()
    }

    /// The elements in row-major (logical) order, as `f64`.
    pub fn to_vec(&self) -> Vec<f64> {
        self.t
            .flatten_all()
            .and_then(|f| f.to_dtype(DType::F64))
            .and_then(|f| f.to_vec1::<f64>())
            .expect("a CPU tensor of floats")
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.t.elem_count()
    }

    /// The same values with the dims stored in reverse order (column-major): a strided,
    /// non-contiguous tensor for more than one dim (the tensor itself otherwise).
    pub fn reversed_layout(&self) -> Self {
        let rev: Vec<usize> = (0..self.t.rank()).rev().collect();
        if rev.len() < 2 {
            return self.clone();
        }
        let t = self
            .t
            .permute(rev.clone())
            .and_then(|t| t.contiguous())
            .and_then(|t| t.permute(rev))
            .expect("a permutation");
        CandleTensor { t }
    }

    /// The only element of a one-element tensor.
    pub fn item(&self) -> f64 {
        let v = self.to_vec();
        assert_eq!(v.len(), 1, "item() of a tensor with {} elements", v.len());
        v[0]
    }
}

impl fmt::Debug for CandleTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CandleTensor{:?} {:?}", self.shape(), self.to_vec())
    }
}
