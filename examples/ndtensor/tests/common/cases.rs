//! The op set's gradcheck cases (`autograd_opset::conformance::cases`) on ndtensor.
#![allow(unused_imports)]

pub use autograd_opset::conformance::cases::{Case, F, avoid, c, case};

/// Every case, on `NdTensor<f64>`.
pub fn cases() -> Vec<Case<super::T>> {
    autograd_opset::conformance::cases::cases()
}
