//! The op set's fixture dispatcher (`autograd_opset::conformance::dispatch`), used by the
//! no-panic property test.
#![allow(unused_imports)]

pub use autograd_opset::conformance::dispatch::*;
