//! The helpers over raw tensors: the same code as [`super`] (`formulas.rs`) with raw
//! kernels for the ops (`ops::raw`), for the raw form of the backward formulas that a
//! backward pass without `create_graph` runs (`autograd_ops!`'s `raw_helpers`).

#[allow(unused_imports)]
use crate::ops::Backend;
pub use crate::ops::raw::*;
use autograd::runtime::AutogradError;
#[allow(unused_imports)]
use autograd::runtime::raw_grad::GradValue;

type V<T> = T;

// The same file as `super`'s `formulas` (on purpose: one source, two value types); a borrow
// that `Variable::shape()`'s `Vec` needs is needless for a raw tensor's `&[usize]`.
#[allow(clippy::duplicate_mod, clippy::needless_borrow)]
#[path = "formulas.rs"]
mod formulas;

pub use formulas::*;

// The same file as `super`'s `normalization`, for the same reason.
#[allow(clippy::duplicate_mod, clippy::needless_borrow)]
#[path = "normalization.rs"]
mod normalization;

pub use normalization::*;
// The layer and group normalization helpers, likewise.
#[allow(clippy::duplicate_mod, clippy::needless_borrow)]
#[path = "norm_formulas.rs"]
mod norm_formulas;

pub use norm_formulas::*;
// The convolution and pooling helpers, likewise.
#[allow(clippy::duplicate_mod, clippy::needless_borrow)]
#[path = "conv_formulas.rs"]
mod conv_formulas;

pub use conv_formulas::*;

// The cumulative and product helpers, likewise.
#[allow(clippy::duplicate_mod, clippy::needless_borrow)]
#[path = "product_formulas.rs"]
mod product_formulas;

pub use product_formulas::*;

// The grid-sampling helpers, likewise.
#[allow(clippy::duplicate_mod, clippy::needless_borrow)]
#[path = "grid_formulas.rs"]
mod grid_formulas;

pub use grid_formulas::*;

// `x.scalar_type()` of a raw tensor where a formula runs.
pub use super::ScalarTypeOf;
// The softmax entries' helpers, likewise.
#[allow(clippy::duplicate_mod, clippy::needless_borrow)]
#[path = "softmax_formulas.rs"]
mod softmax_formulas;

pub use softmax_formulas::*;

// The selection family's helpers, likewise.
#[allow(clippy::duplicate_mod, clippy::needless_borrow)]
#[path = "select_formulas.rs"]
mod select_formulas;

pub use select_formulas::*;

// The masked family's helpers, likewise.
#[allow(clippy::duplicate_mod, clippy::needless_borrow)]
#[path = "masked_formulas.rs"]
mod masked_formulas;

pub use masked_formulas::*;

// `as_strided`'s helpers, likewise.
#[allow(clippy::duplicate_mod, clippy::needless_borrow)]
#[path = "strided_formulas.rs"]
mod strided_formulas;

pub use strided_formulas::*;
// The group normalization helpers, likewise.
#[allow(clippy::duplicate_mod, clippy::needless_borrow)]
#[path = "group_norm_formulas.rs"]
mod group_norm_formulas;

pub use group_norm_formulas::*;
// The distance helpers (issue 30), likewise.
#[allow(clippy::duplicate_mod, clippy::needless_borrow)]
#[path = "dist_formulas.rs"]
mod dist_formulas;

pub use dist_formulas::*;
// The scatter_reduce entry's helpers, likewise.
#[allow(clippy::duplicate_mod, clippy::needless_borrow)]
#[path = "scatter_formulas.rs"]
mod scatter_formulas;

pub use scatter_formulas::*;
// The embedding family's helpers, likewise.
#[allow(clippy::duplicate_mod, clippy::needless_borrow)]
#[path = "embedding_formulas.rs"]
mod embedding_formulas;

pub use embedding_formulas::*;
