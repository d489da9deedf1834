//! Autograd code generation for Rust tensor libraries.
//!
//! Write each operator's backward formula once, in PyTorch's `derivatives.yaml` format (with
//! PyTorch's C++ formulas as written, or Rust formulas), and `autograd_ops!("derivatives.yaml")` generates the autograd layer: a
//! `Backend` trait for the raw tensor operations, one backward node per differentiable
//! operator, and differentiable wrappers on [`runtime::Variable`].
//!
//! This facade re-exports the runtime ([`runtime`]), the macro, the schema value types
//! ([`types`]) and what generated code calls ([`support`]); [`functional`] has `torch.func`'s
//! transforms (`jvp`, `vjp`, `hvp`, `jacobian`, `hessian`) on the generated forward and
//! backward formulas; [`checkpoint`] is PyTorch's activation checkpointing.

pub use autograd_macros::autograd_ops;
pub use autograd_runtime as runtime;

pub mod checkpoint;
pub mod functional;
pub mod gradcheck;
pub mod support;
pub mod types;
