//! The longer backward functions the formulas of `derivatives.yaml` call (PyTorch's
//! `FunctionsManual.cpp`). They are generic over any `Backend` and built from the generated
//! differentiable ops, so gradients of gradients flow through them. Masks (comparisons) and
//! index tensors are constants: their ops have no derivative entry.
//!
//! The code is written once (`formulas.rs`) over a value type `V<T>` and compiled
//! twice: here over `Variable<T>`, and in [`raw`] over raw tensors, for the backward
//! formulas' raw form (backward without `create_graph`, no `Variable` per gradient).

pub use crate::ops::*;
#[allow(unused_imports)]
use autograd::runtime::raw_grad::GradValue;
use autograd::runtime::{AutogradError, Variable};

type V<T> = Variable<T>;

mod composites;
mod decompositions;
mod formulas;
pub mod raw;

pub use composites::{chunk, cross_entropy_loss, matmul, nll_loss, nll_loss_nd};
pub use decompositions::*;
pub use formulas::*;
