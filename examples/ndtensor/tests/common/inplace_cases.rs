//! The op set's in-place cases (`autograd_opset::conformance::inplace_cases`) on ndtensor.
#![allow(unused_imports)]

pub use autograd_opset::conformance::inplace_cases::{InplaceCase, Op, ic};

/// Every in-place case, on `NdTensor<f64>`.
pub fn inplace_cases() -> Vec<InplaceCase<super::T>> {
    autograd_opset::conformance::inplace_cases::inplace_cases()
}
