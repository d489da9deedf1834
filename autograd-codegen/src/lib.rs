//! The analysis and code emission behind `autograd_ops!`.
//!
//! Data flows `model` (schemas, `native_functions.yaml`, `derivatives.yaml`, parsed and
//! located) -> `analysis` (torchgen's: matching entries to functions, saved attributes,
//! differentiable outputs) -> `emit` (Rust tokens), with `translate` (C++ formulas as Rust)
//! between them and `names` (the Rust names of schema items) under both. The proc-macro,
//! the `autograd-gen` CLI and build scripts all call this crate.

pub mod analysis;
pub mod api;
pub mod diagnostics;
pub mod emit;
pub mod formula;
pub mod model;
pub mod names;
pub mod translate;
pub mod yaml;
