//! All that candletensor writes for the op set besides its kernels (`backend.rs`): the
//! runtime's `Tensor` (gradient seeds and sums), element access and a constructor from
//! values (gradcheck's, `nn`'s), and the conformance kit's strided layout and seed.

use crate::CandleTensor;
use candle_core::DType;

impl autograd::runtime::Tensor for CandleTensor {
    fn shape(&self) -> &[usize] {
        self.t.dims()
    }
    fn dtype(&self) -> &'static str {
        match self.t.dtype() {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I64 => "i64",
            DType::U8 => "bool",
            DType::U32 => "u32",
            _ => "other",
        }
    }
    fn is_differentiable(&self) -> bool {
        self.t.dtype().is_float()
    }
    fn strides(&self) -> Vec<i64> {
        crate::backend::strides(self)
    }
    fn storage_offset(&self) -> i64 {
        self.t.layout().start_offset() as i64
    }
    /// The op set's `where` over this backend's kernels.
    fn select_where(&self, mask: &Self, other: &Self) -> Option<Self> {
        let m = autograd_opset::ops::raw::ne_scalar(mask, 0.0).ok()?;
        autograd_opset::ops::raw::where_self(&m, other, self).ok()
    }
    fn ones_like(&self) -> Self {
        CandleTensor::new(self.t.ones_like().expect("ones_like"))
    }
    fn zeros_like(&self) -> Self {
        CandleTensor::new(self.t.zeros_like().expect("zeros_like"))
    }
    /// Of this tensor's float dtype, `F64` for an integer or boolean one: PyTorch's ZeroTensor
    /// arithmetic gives a result the other operand's values (or a ZeroTensor), so a float
    /// one leaves no integer or boolean arithmetic (`sub` of a boolean) to refuse.
    fn zero_tensor_like(&self) -> Self {
        let d = self.t.dtype();
        CandleTensor::zero_tensor(self.shape(), if d.is_float() { d } else { DType::F64 })
    }
    fn add(&self, other: &Self) -> Self {
        CandleTensor::new(
            self.t
                .broadcast_add(&other.t)
                .expect("gradients of one shape"),
        )
    }
    fn has_nan(&self) -> bool {
        self.to_vec().iter().any(|x| x.is_nan())
    }
    /// The op set's `sum_to` over this backend's kernels.
    fn sum_to(&self, shape: &[usize]) -> Option<Self> {
        autograd_opset::helpers::raw::sum_to(self, shape).ok()
    }
    fn expand_to(&self, shape: &[usize]) -> Option<Self> {
        self.t.broadcast_as(shape).ok().map(CandleTensor::new)
    }
    fn to_dtype(&self, dtype: &'static str) -> Option<Self> {
        let d = match dtype {
            "f32" => DType::F32,
            "f64" => DType::F64,
            "f16" => DType::F16,
            "bf16" => DType::BF16,
            _ => return None,
        };
        self.t.to_dtype(d).ok().map(CandleTensor::new)
    }
}

impl autograd::gradcheck::ElementAccess for CandleTensor {
    fn to_f64_vec(&self) -> Vec<f64> {
        self.to_vec()
    }
    /// In `self`'s dtype and layout (gradcheck's perturbed inputs stay strided).
    fn with_f64_vec(&self, values: &[f64]) -> Self {
        let c = CandleTensor::from_vec(values.to_vec(), self.shape());
        let c = CandleTensor::new(c.t.to_dtype(self.t.dtype()).expect("a float dtype"));
        if self.t.is_contiguous() {
            c
        } else {
            c.reversed_layout()
        }
    }
}

impl autograd_opset::nn::FromValues for CandleTensor {
    fn from_f64(values: &[f64], shape: &[usize]) -> Self {
        CandleTensor::from_vec(values.to_vec(), shape)
    }
    fn from_i64(values: &[i64], shape: &[usize]) -> Self {
        CandleTensor::from_i64(values.to_vec(), shape)
    }
    fn from_bool(values: &[bool], shape: &[usize]) -> Self {
        CandleTensor::from_bool(values.to_vec(), shape)
    }
}

#[cfg(feature = "conformance")]
impl autograd_opset::conformance::ConformanceTensor for CandleTensor {
    fn noncontiguous(&self) -> Self {
        self.reversed_layout()
    }
    fn seed(seed: u64) {
        autograd_opset::random::manual_seed(seed)
    }
}
