//! What ndtensor's kernels report: PyTorch's exception kind and PyTorch's message.

use std::fmt;

/// The Python exception PyTorch raises for the same mistake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `RuntimeError`: shapes that do not fit, invalid arguments.
    Runtime,
    /// `IndexError`: a dimension or an index out of range.
    Index,
}

/// An error of an ndtensor kernel, worded as PyTorch words it.
///
/// The generated differentiable ops return it inside
/// [`AutogradError::Backend`](autograd::runtime::AutogradError::Backend); its `Display` is
/// PyTorch's message alone, so `err.to_string()` reads as PyTorch's `str(e)`.
///
/// ```
/// use ndtensor::{NdTensor, Var, VariableOps};
/// let a = Var::from_data(NdTensor::<f64>::zeros(&[2, 3]));
/// let b = Var::from_data(NdTensor::<f64>::zeros(&[2]));
/// let err = a.add_tensor(&b, 1.0).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1"
/// );
/// let autograd::runtime::AutogradError::Backend(e) = err else { unreachable!() };
/// assert_eq!(e.downcast_ref::<ndtensor::Error>().unwrap().kind(), ndtensor::ErrorKind::Runtime);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// A `RuntimeError` with PyTorch's message.
    pub fn runtime(message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Runtime,
            message: message.into(),
        }
    }

    /// An `IndexError` with PyTorch's message.
    pub fn index(message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Index,
            message: message.into(),
        }
    }

    /// Which exception PyTorch raises.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// PyTorch's message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// `Err(Error::runtime(..))` unless `cond`.
pub(crate) fn check(cond: bool, message: impl FnOnce() -> String) -> Result<(), Error> {
    if cond {
        Ok(())
    } else {
        Err(Error::runtime(message()))
    }
}
