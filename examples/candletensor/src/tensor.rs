//! The raw tensor: a `candle_core::Tensor` (CPU; `F64` for the tests, `F32` works too; `I64`
//! and `U8` for integer and boolean tensors).

use candle_core::{DType, Device, Tensor};
use std::fmt;

/// A raw tensor: candle's `Tensor` (cheaply cloneable, possibly strided), of one of four
/// dtypes: `F64` or `F32` (`"f64"`/`"f32"`, floating point, differentiable), `I64` (`"i64"`:
/// indices, class targets, `argmax` and `max.dim`'s indices) and `U8` holding 0/1 (`"bool"`:
/// comparisons, `where`'s condition, dropout's mask), as PyTorch's dtypes. The kernels pass
/// index values to candle as `U32` after checking them.
#[derive(Clone)]
pub struct CandleTensor {
    /// candle's tensor.
    pub t: Tensor,
    /// Whether this is a ZeroTensor ([`CandleTensor::zero_tensor`]).
    zero: bool,
}

impl CandleTensor {
    /// Wraps a candle tensor.
    pub fn new(t: Tensor) -> Self {
        CandleTensor { t, zero: false }
    }

    /// Zeros of `shape` and the float dtype `dtype` that stand for an absent tangent
    /// (PyTorch's `_efficientzerotensor`): `add`, `sub`, `mul` and `div` leave their terms
    /// out as PyTorch's ZeroTensor kernels do; the other kernels read them as zeros.
    pub fn zero_tensor(shape: &[usize], dtype: DType) -> Self {
        CandleTensor {
            t: Tensor::zeros(shape, dtype, &Device::Cpu).expect("zeros"),
            zero: true,
        }
    }

    /// Whether this is a ZeroTensor ([`zero_tensor`](Self::zero_tensor)).
    pub fn is_zero_tensor(&self) -> bool {
        self.zero
    }

    /// Row-major `f64` values with a shape, on the CPU.
    ///
    /// ```
    /// let t = candletensor::CandleTensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// assert_eq!(t.shape(), &[2, 2]);
    /// ```
    pub fn from_vec(v: Vec<f64>, shape: &[usize]) -> Self {
        CandleTensor::new(
            Tensor::from_vec(v, shape, &Device::Cpu).expect("values do not fit the shape"),
        )
    }

    /// Row-major `i64` values with a shape: an `"i64"` tensor (candle's `I64`; indices, class
    /// targets).
    ///
    /// ```
    /// let t = candletensor::CandleTensor::from_i64(vec![2, 0, 1], &[3]);
    /// assert_eq!(autograd::runtime::Tensor::dtype(&t), "i64");
    /// assert_eq!(t.to_vec(), vec![2.0, 0.0, 1.0]);
    /// ```
    pub fn from_i64(v: Vec<i64>, shape: &[usize]) -> Self {
        CandleTensor::new(
            Tensor::from_vec(v, shape, &Device::Cpu).expect("values do not fit the shape"),
        )
    }

    /// Row-major booleans with a shape: a `"bool"` tensor (candle's `U8` holding 0/1; masks,
    /// `where`'s condition).
    ///
    /// ```
    /// let m = candletensor::CandleTensor::from_bool(vec![true, false], &[2]);
    /// assert_eq!(autograd::runtime::Tensor::dtype(&m), "bool");
    /// assert_eq!(m.to_vec(), vec![1.0, 0.0]);
    /// ```
    pub fn from_bool(v: Vec<bool>, shape: &[usize]) -> Self {
        let v: Vec<u8> = v.into_iter().map(u8::from).collect();
        CandleTensor::new(
            Tensor::from_vec(v, shape, &Device::Cpu).expect("values do not fit the shape"),
        )
    }

    /// A 0-dimensional tensor.
    pub fn scalar(x: f64) -> Self {
        CandleTensor::from_vec(vec![x], &[])
    }

    /// Zeros (`F64`).
    pub fn zeros(shape: &[usize]) -> Self {
        CandleTensor::new(Tensor::zeros(shape, DType::F64, &Device::Cpu).expect("zeros"))
    }

    /// Ones (`F64`).
    pub fn ones(shape: &[usize]) -> Self {
        CandleTensor::new(Tensor::ones(shape, DType::F64, &Device::Cpu).expect("ones"))
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

    /// The elements of an `I64` tensor in row-major order (`None` for another dtype).
    ///
    /// ```
    /// let t = candletensor::CandleTensor::from_i64(vec![(1 << 60) + 1, -2], &[2]);
    /// assert_eq!(t.to_i64_vec(), Some(vec![(1 << 60) + 1, -2]));
    /// ```
    pub fn to_i64_vec(&self) -> Option<Vec<i64>> {
        if self.t.dtype() != DType::I64 {
            return None;
        }
        self.t.flatten_all().and_then(|f| f.to_vec1::<i64>()).ok()
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
        CandleTensor::new(t)
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
