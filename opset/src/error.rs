//! What kernels and composites report: PyTorch's exception kind and PyTorch's message.

use std::fmt;

/// The Python exception PyTorch raises for the same mistake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `RuntimeError`: shapes that do not fit, invalid arguments.
    Runtime,
    /// `IndexError`: a dimension or an index out of range.
    Index,
}

/// An error of a kernel or a composite, worded as PyTorch words it.
///
/// A backend returns it from its kernels (its `Backend::Error`, or converted); the generated
/// differentiable ops return it inside
/// [`AutogradError::Backend`](autograd::runtime::AutogradError::Backend), and its `Display` is
/// PyTorch's message alone, so `err.to_string()` reads as PyTorch's `str(e)`.
///
/// ```
/// use autograd_opset::{Error, ErrorKind};
/// let e = Error::index("Dimension out of range (expected to be in range of [-1, 0], but got 1)");
/// assert_eq!(e.kind(), ErrorKind::Index);
/// assert!(e.to_string().starts_with("Dimension out of range"));
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

    /// A failure inside a backend's own library (ndarray, candle, ...), which the op set's
    /// checks should have prevented: a bug of the backend or of the op set, reported as a
    /// `RuntimeError` whose message starts with the library's name. A backend's kernels make
    /// no other errors themselves; PyTorch's come from the op set ([`crate::meta`],
    /// [`crate::shape`], [`crate::dtype`]).
    ///
    /// ```
    /// use autograd_opset::Error;
    /// assert_eq!(Error::internal("ndarray", "ShapeError/IncompatibleShape").to_string(),
    ///            "ndarray: ShapeError/IncompatibleShape");
    /// ```
    pub fn internal(library: &str, message: impl fmt::Display) -> Self {
        Error::runtime(format!("{library}: {message}"))
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

/// A kernel the backend has not written: PyTorch's `NotImplementedError` text ("Could not run
/// 'aten::exp' with arguments from the 'X' backend. ..."), as a `RuntimeError`.
impl From<autograd::support::KernelNotImplemented> for Error {
    fn from(e: autograd::support::KernelNotImplemented) -> Self {
        Error::runtime(e.to_string())
    }
}

/// `Err(Error::runtime(..))` unless `cond`.
pub fn check(cond: bool, message: impl FnOnce() -> String) -> Result<(), Error> {
    if cond {
        Ok(())
    } else {
        Err(Error::runtime(message()))
    }
}
