//! # candletensor
//!
//! The op set's second backend: [`CandleTensor`] wraps `candle_core::Tensor` (CPU by default;
//! the `cuda` and `metal` features forward to candle's), and implements the op set's
//! `Backend` trait with candle's own ops (`src/backend.rs`; only the dropout mask and the
//! index tensors' bounds checks use host values). Everything autograd — backward
//! nodes, forward mode, views, in-place variants, PyTorch's composites — comes from
//! [`autograd_opset`], generated once for any backend.
//!
//! Dtypes are PyTorch's, in candle's types: `F64`/`F32` floating point, `I64` for indices and
//! class targets (`CandleTensor::from_i64`), `U8` 0/1 for booleans (`CandleTensor::from_bool`;
//! `Tensor::dtype` says `"bool"`). Comparisons give booleans, `argmax` and `max.dim`'s indices
//! `I64`; index arguments must be `I64`; arithmetic promotes (`bool` < `i64` < float) and
//! integer/boolean results carry no gradient (`src/backend/dtype.rs`).
//!
//! ```
//! use candletensor::{CandleTensor, Var, VariableOps};
//! # fn main() -> Result<(), autograd::runtime::AutogradError> {
//! let x = Var::new(CandleTensor::from_vec(vec![1.0, 2.0, 3.0], &[3]), true);
//! let y = x.mul_tensor(&x)?.sum(None)?; // y = Σ x²
//! y.backward()?;
//! assert_eq!(x.grad().unwrap().data().to_vec(), vec![2.0, 4.0, 6.0]);
//! let err = x.mm(&x).unwrap_err();
//! assert_eq!(err.to_string(), "mm: self must be a matrix, got 1-D tensor");
//! # Ok(())
//! # }
//! ```

pub mod backend;
mod runtime;
mod tensor;

pub use autograd_opset::random::manual_seed;
pub use autograd_opset::{Error, ErrorKind, helpers, ops};
pub use ops::{Backend, VariableOps};
pub use tensor::CandleTensor;

/// A differentiable tensor: the runtime's `Variable` over [`CandleTensor`].
pub type Var = autograd::runtime::Variable<CandleTensor>;
