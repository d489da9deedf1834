//! # autograd-opset
//!
//! PyTorch's operators as a reusable differentiable op set: the schemas
//! (`native_functions.yaml`), the backward and forward formulas (`derivatives.yaml`, PyTorch's
//! format with Rust formulas), the longer formula helpers and PyTorch's composites
//! ([`helpers`]), the shape rules both kernels and composites check ([`shape`]) and each
//! operator's argument checks, PyTorch's meta functions ([`meta`]), with errors in
//! PyTorch's words ([`Error`]). `autograd::autograd_ops!` turns them into
//!
//! * the [`Backend`] trait: one kernel per function, which a tensor library implements for
//!   its raw tensor type (ndtensor does, on ndarray);
//! * a backward node per differentiable function, forward-mode formulas, view tracking and
//!   in-place/out= variants;
//! * the differentiable functions ([`ops`]) and methods ([`VariableOps`]) over
//!   `Variable<T>` for any `T: Backend`.
//!
//! Kernels return `Result<_, Self::Error>` (`fallible = true`): a kernel reports a shape or
//! argument mistake with PyTorch's message, which the differentiable op returns inside
//! `AutogradError::Backend`.

#[cfg(feature = "conformance")]
pub mod conformance;
pub mod dtype;
pub mod error;
pub mod factory;
pub mod helpers;
pub mod layout;
pub mod meta;
pub mod nn;
pub mod random;
pub mod shape;
mod written_back;

pub use error::{Error, ErrorKind};

/// The README's examples, run as doc tests: its first is a whole backend of five kernels,
/// trained and put through the conformance kit.
#[cfg(all(doctest, feature = "conformance"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The generated autograd layer (`autograd_ops!` over `derivatives.yaml` and
/// `native_functions.yaml`).
pub mod ops {
    autograd::autograd_ops!(
        "derivatives.yaml",
        native = "native_functions.yaml",
        helpers = crate::helpers,
        raw_helpers = crate::helpers::raw,
        error_from = crate::Error,
        fallible = true,
        formulas = "cpp",
        header = "functions.h"
    );
}

pub use ops::{Backend, VariableOps};
