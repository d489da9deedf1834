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

// Embedding bags (issue 30).
mod bag;
mod bag_composite;
mod bn_guard;
mod composites;
mod conv;
mod conv_formulas;
mod decompositions;
mod dist;
mod dist_formulas;
mod embedding;
mod embedding_formulas;
mod fold;
mod formulas;
mod grid_formulas;
mod group_norm_formulas;
mod masked;
mod masked_formulas;
mod norm_composites;
mod norm_formulas;
mod normalization;
mod product_formulas;
pub mod raw;
mod resample;
mod resize;
mod scatter_formulas;
mod select_formulas;
mod softmax;
mod softmax_formulas;
mod strided_formulas;

// Embedding bags (issue 30).
pub use crate::shape::slice_bounds;
pub use bag::{
    decomposed_embedding_bag, decomposed_embedding_bag_backward,
    decomposed_embedding_bag_dense_backward, decomposed_embedding_bag_per_sample_weights_backward,
};
pub use bag_composite::{embedding_bag, embedding_bag_padding_idx};
pub use bn_guard::{BatchNormStat, DelayedError};
pub use composites::{chunk, cross_entropy_loss, matmul, nll_loss, nll_loss_nd};
pub use conv::{
    adaptive_avg_pool1d, adaptive_avg_pool2d, avg_pool1d, conv_transpose1d, conv_transpose2d_input,
    conv1d, conv2d, max_pool2d,
};
pub use conv_formulas::*;
pub use decompositions::*;
pub use dist::{
    cdist, decomposed_cdist_backward, decomposed_cdist_forward, decomposed_euclidean_dist,
    decomposed_pdist_backward, decomposed_pdist_forward, pdist, upper_pairs,
};
pub use dist_formulas::*;
pub use embedding::*;
pub use embedding_formulas::*;
pub use fold::{decomposed_col2im, decomposed_im2col};
pub use formulas::*;
pub use grid_formulas::*;
// The masked family (issue 30).
pub use group_norm_formulas::*;
pub use masked::*;
pub use masked_formulas::*;
pub use norm_composites::{batch_norm, group_norm, layer_norm, var_dim};
pub use norm_formulas::*;
pub use normalization::*;
pub use product_formulas::*;
pub use resample::{pad, upsample_bilinear2d_vec, upsample_nearest2d_vec};
pub use resize::resize_;
pub use scatter_formulas::*;
pub use select_formulas::*;

/// `x.scalar_type()` where a formula runs (of `grad`, or of `result` in a forward formula;
/// an input's is a saved property): the dtype's name, as `ScalarType` values are in the
/// generated code, for both value types (`Variable<T>`, a raw `T`).
pub trait ScalarTypeOf {
    /// The dtype's name (`"f64"`, `"i64"`, ...).
    fn scalar_type(&self) -> &'static str;
}

impl<T: Backend> ScalarTypeOf for Variable<T> {
    fn scalar_type(&self) -> &'static str {
        self.with_data(|t| t.dtype())
    }
}

impl<T: Backend> ScalarTypeOf for T {
    fn scalar_type(&self) -> &'static str {
        autograd::runtime::Tensor::dtype(self)
    }
}

pub use softmax::{log_softmax_int, softmax_int};
pub use softmax_formulas::*;
pub use strided_formulas::*;

/// The tangents of `tensors` at the level whose forward formula runs (zeros for an input
/// without one), for the JVP helpers that read them from the primals as PyTorch's do.
fn formula_tangents<T: Backend>(tensors: &[V<T>]) -> Res<Vec<V<T>>> {
    let level = autograd::runtime::forward::formula_level()
        .ok_or_else(|| AutogradError::msg("a JVP helper ran outside a forward formula"))?;
    autograd::runtime::forward::tangents_or_zeros(tensors, level)
}

/// PyTorch's `cat_jvp`: the inputs' tangents concatenated along `dim`.
pub fn cat_jvp<T: Backend>(tensors: &[V<T>], dim: i64) -> Res<V<T>> {
    cat(&formula_tangents(tensors)?, dim)
}

/// PyTorch's `stack_jvp`: the inputs' tangents stacked along `dim`.
pub fn stack_jvp<T: Backend>(tensors: &[V<T>], dim: i64) -> Res<V<T>> {
    stack(&formula_tangents(tensors)?, dim)
}
