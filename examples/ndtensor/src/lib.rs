//! # ndtensor
//!
//! A small tensor library on [`ndarray`] whose whole autograd layer comes from the op set
//! [`autograd_opset`]: its `derivatives.yaml` (PyTorch's format, Rust formulas) and
//! `native_functions.yaml` (PyTorch's schemas) go through `autograd::autograd_ops!`, which
//! generates
//!
//! * the `Backend` trait, implemented for the raw tensor [`NdTensor<E>`] in `src/backend.rs`
//!   (`E` = `f32` or `f64`, plus `i64` and `bool` tensors for indices, targets and masks,
//!   see [`Data`]; any rank; broadcasting; strided views) — ndtensor's only
//!   autograd-related code is these kernels and their dtype rules (`src/backend/dtype.rs`);
//! * one backward node per differentiable operator;
//! * differentiable functions over [`Var<E>`] with PyTorch's names (`mul_tensor`, `sum_dim_intlist`,
//!   `log_softmax_int`, in-place `add_tensor_`, out= `mul_out`, ...), and the same as methods
//!   through [`VariableOps`].
//!
//! A tensor is a dtype tag and one `Arc` (16 bytes; a clone is one atomic increment). A fresh
//! floating-point tensor ([`FloatTensor`]) is two heap allocations, that `Arc` and the element
//! buffer; views (`transpose`, `permute`, `select`, `slice`, `unsqueeze`, the reshape of a
//! contiguous tensor, ...) share the buffer of the tensor they view. An elementwise result
//! keeps its shape inline and builds ndarray's view of itself only when a kernel asks for it,
//! and one of up to four elements is a single allocation (its elements inside the `Arc`).
//!
//! Every op returns a `Result`: a shape or argument error comes back as an `Err` with
//! PyTorch's message (see [`Error`]), never as a panic.
//!
//! ```
//! use ndtensor::{NdTensor, Var, VariableOps};
//! # fn main() -> Result<(), autograd::runtime::AutogradError> {
//! let x = Var::new(NdTensor::<f64>::from_vec(vec![1.0, 2.0, 3.0], &[3]), true);
//! let y = x.mul_tensor(&x)?.sum(None)?; // y = Σ x²
//! y.backward()?;
//! assert_eq!(x.grad().unwrap().data().to_vec(), vec![2.0, 4.0, 6.0]);
//!
//! let err = x.mm(&x).unwrap_err();
//! assert_eq!(err.to_string(), "mm: self must be a matrix, got 1-D tensor");
//! # Ok(())
//! # }
//! ```

pub mod backend;
mod element;
mod storage;
mod tensor;

pub use autograd_opset::random::manual_seed;
pub use autograd_opset::{Error, ErrorKind, helpers, nn, ops};
pub use storage::FloatTensor;
pub use tensor::{Data, Element, NdTensor};

pub use ops::{Backend, VariableOps};

/// A differentiable tensor: the runtime's `Variable` over [`NdTensor<E>`].
pub type Var<E = f64> = autograd::runtime::Variable<NdTensor<E>>;

/// A leaf variable that requires grad (a parameter or a gradchecked input).
pub fn param<E: Element>(t: NdTensor<E>) -> Var<E> {
    Var::new(t, true)
}

/// A constant (no gradient).
pub fn constant<E: Element>(t: NdTensor<E>) -> Var<E> {
    Var::from_data(t)
}

/// The op set's conformance kit runs on ndtensor (`cargo test -p ndtensor`).
#[cfg(feature = "conformance")]
impl<E: Element> autograd_opset::conformance::ConformanceTensor for NdTensor<E> {
    /// The same values in column-major layout (a strided, non-contiguous array).
    fn noncontiguous(&self) -> Self {
        use ndarray::{Array, ArrayView, IxDyn};
        use std::sync::Arc;
        fn reversed<T: Clone>(a: ArrayView<'_, T, IxDyn>) -> Array<T, IxDyn> {
            let tr = a.t().as_standard_layout().into_owned();
            tr.reversed_axes()
        }
        NdTensor::from_data(match self.data() {
            Data::Float(a) => Data::Float(FloatTensor::from_array(reversed(a.arr().view()))),
            Data::Int(a) => Data::Int(Arc::new(reversed(a.view()).into_shared())),
            Data::Bool(a) => Data::Bool(Arc::new(reversed(a.view()).into_shared())),
        })
    }
    fn seed(seed: u64) {
        manual_seed(seed)
    }
    /// f32 tensors are `NdTensor<f32>`: the kit's f32 cases run there, against this type.
    fn f32_checks(kit: &mut autograd_opset::conformance::Kit) {
        autograd_opset::conformance::precision::compare_dtype::<NdTensor<f32>, Self>(kit, "f32")
    }
}

/// Parameters and optimizer state of `autograd_opset::nn` on ndtensor.
impl<E: Element> autograd_opset::nn::FromValues for NdTensor<E> {
    fn from_f64(values: &[f64], shape: &[usize]) -> Self {
        NdTensor::from_f64(values, shape)
    }
    fn from_i64(values: &[i64], shape: &[usize]) -> Self {
        NdTensor::from_i64(values.to_vec(), shape)
    }
    fn from_bool(values: &[bool], shape: &[usize]) -> Self {
        NdTensor::from_bool(values.to_vec(), shape)
    }
}
