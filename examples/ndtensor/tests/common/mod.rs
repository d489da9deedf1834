//! Shared test support: deterministic random tensors, the op table, analysis enumeration.
#![allow(dead_code, unused_imports)]

pub mod cases;
pub mod dispatch;
pub mod inplace_cases;

pub use autograd_opset::conformance::{
    ConformanceTensor, Rng, all_functions, analysis, differentiable_functions,
};
use ndtensor::NdTensor;

/// The tensor the tests run on.
pub type T = NdTensor<f64>;

/// The same values in column-major layout (a strided, non-contiguous array).
pub fn noncontiguous(t: &T) -> T {
    t.noncontiguous()
}

/// A tensor of these values.
pub fn v(x: &[f64], shape: &[usize]) -> T {
    NdTensor::from_vec(x.to_vec(), shape)
}
