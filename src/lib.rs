//! Autograd code generation for Rust tensor libraries.
//!
//! This facade re-exports the runtime ([`runtime`]) and the `autograd_ops!` macro.
pub use autograd_macros::*;
pub use autograd_runtime as runtime;
