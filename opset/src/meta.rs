//! PyTorch's meta functions: each operator's argument checks on shapes alone, in PyTorch's
//! words, with what the kernel needs to go on (the axes, the bounds, the output shape).
//!
//! A kernel calls its op's function first and computes only after it: every backend then
//! refuses the same calls with the same [`Error`], byte for byte (the conformance kit's
//! fixture replay compares the texts with PyTorch's).
//!
//! ```
//! use autograd_opset::meta;
//! // narrow(dim=-1, start=-2, length=2) of a [3, 4] tensor: axis 1 from 2.
//! assert_eq!(meta::narrow(&[3, 4], -1, -2, 2), Ok((1, 2)));
//! let e = meta::narrow(&[3, 4], 1, 3, 2).unwrap_err();
//! assert_eq!(e.to_string(), "start (3) + length (2) exceeds dimension size (4).");
//! ```

use crate::error::{Error, check};
use crate::shape::slice_bounds;
use crate::shape::view_compatible;
use crate::shape::{broadcast_shape, check_cat, distinct_dims, infer_shape, new_shape, norm_dim};
use std::ops::Range;

type R<T> = Result<T, Error>;

/// The axis of `dim` and its size, for an op that refuses a 0-d tensor with `zero_dim`.
fn axis_of(shape: &[usize], dim: i64, zero_dim: &str) -> R<(usize, i64)> {
    check(!shape.is_empty(), || zero_dim.into())?;
    let ax = norm_dim(dim, shape.len())?;
    Ok((ax, shape[ax] as i64))
}

/// `select.int`: the axis and the index (counted from the start).
pub fn select(shape: &[usize], dim: i64, index: i64) -> R<(usize, usize)> {
    if shape.is_empty() {
        return Err(Error::index(
            "select() cannot be applied to a 0-dim tensor.",
        ));
    }
    let ax = norm_dim(dim, shape.len())?;
    let n = shape[ax] as i64;
    let i = if index < 0 { index + n } else { index };
    if !(0..n).contains(&i) {
        return Err(Error::index(format!(
            "select(): index {index} out of range for tensor of size {shape:?} at dimension {dim}"
        )));
    }
    Ok((ax, i as usize))
}

/// `split.Tensor`: the axis and each piece's range along it (one empty piece for an empty
/// dim).
pub fn split(shape: &[usize], split_size: i64, dim: i64) -> R<(usize, Vec<Range<i64>>)> {
    let (ax, n) = axis_of(shape, dim, "split expects at least a 1-dimensional tensor")?;
    check(split_size >= 0, || {
        format!("split expects split_size be non-negative, but got split_size={split_size}")
    })?;
    check(split_size > 0 || n == 0, || {
        format!("split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    })?;
    let step = split_size.max(1);
    let pieces = if n == 0 { 1 } else { (n + step - 1) / step };
    let ranges = (0..pieces)
        .map(|i| i * step..((i + 1) * step).min(n))
        .collect();
    Ok((ax, ranges))
}

/// `unbind.int`: the axis.
pub fn unbind(shape: &[usize], dim: i64) -> R<usize> {
    if shape.is_empty() {
        return Err(Error::index(
            "Dimension specified as 0 but tensor has no dimensions",
        ));
    }
    norm_dim(dim, shape.len())
}

/// `narrow`: the axis and the start (counted from the start); the length is `length`.
pub fn narrow(shape: &[usize], dim: i64, start: i64, length: i64) -> R<(usize, usize)> {
    let (ax, n) = axis_of(shape, dim, "narrow() cannot be applied to a 0-dim tensor.")?;
    check(length >= 0, || {
        "narrow(): length must be non-negative.".into()
    })?;
    if !(-n..=n).contains(&start) {
        return Err(Error::index(format!(
            "start out of range (expected to be in range of [{}, {n}], but got {start})",
            -n
        )));
    }
    let s = if start < 0 { start + n } else { start };
    check(s + length <= n, || {
        format!("start ({s}) + length ({length}) exceeds dimension size ({n}).")
    })?;
    Ok((ax, s as usize))
}

/// `slice.Tensor`: the axis and the range of the slice along it (clamped to the dim, as
/// PyTorch's; every `step`-th element of it is taken).
pub fn slice(
    shape: &[usize],
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> R<(usize, Range<usize>)> {
    check(step > 0, || "slice step must be positive".into())?;
    check(!shape.is_empty(), || {
        "slice() cannot be applied to a 0-dim tensor.".into()
    })?;
    let ax = norm_dim(dim, shape.len())?;
    let (s, e) = slice_bounds(shape[ax] as i64, start, end);
    Ok((ax, s as usize..e as usize))
}

/// `slice_backward`: the input's shape, the axis and the slice's range (as [`slice()`]).
pub fn slice_backward(
    input_sizes: &[i64],
    dim: i64,
    start: i64,
    end: i64,
    step: i64,
) -> R<(Vec<usize>, usize, Range<usize>)> {
    let s = new_shape(input_sizes)?;
    check(!s.is_empty(), || {
        "slice() cannot be applied to a 0-dim tensor.".into()
    })?;
    let (ax, range) = slice(&s, dim, Some(start), Some(end), step)?;
    Ok((s, ax, range))
}

/// `cat`: the axis (the checks are [`check_cat`]'s). The kernel concatenates the inputs
/// that [`cat_skips`](crate::shape::cat_skips) does not skip (PyTorch's legacy empty 1-d
/// tensors); when it skips them all the result is one of them (shape `[0]`).
pub fn cat(shapes: &[&[usize]], dim: i64) -> R<usize> {
    check_cat(shapes, dim)
}

/// `stack`: the new axis; every tensor must have the first one's shape.
pub fn stack(shapes: &[&[usize]], dim: i64) -> R<usize> {
    let first = shapes
        .first()
        .ok_or_else(|| Error::runtime("stack expects a non-empty TensorList"))?;
    let ax = norm_dim(dim, first.len() + 1)?;
    for (i, s) in shapes.iter().enumerate() {
        check(s == first, || {
            format!(
                "stack expects each tensor to be equal size, but got {first:?} at entry 0 and {s:?} at entry {i}"
            )
        })?;
    }
    Ok(ax)
}

/// `permute`: the permutation as axes of a rank-`nd` tensor.
pub fn permute(nd: usize, dims: &[i64]) -> R<Vec<usize>> {
    check(dims.len() == nd, || {
        format!(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to len(dims) = {}",
            dims.len()
        )
    })?;
    let p = dims
        .iter()
        .map(|d| norm_dim(*d, nd))
        .collect::<R<Vec<usize>>>()?;
    let mut seen = p.clone();
    seen.sort_unstable();
    seen.dedup();
    check(seen.len() == p.len(), || {
        "permute(): duplicate dims are not allowed.".into()
    })?;
    Ok(p)
}

/// `transpose.int`: the two axes of a rank-`nd` tensor (a 0-d tensor accepts 0 and -1).
pub fn transpose(nd: usize, dim0: i64, dim1: i64) -> R<(usize, usize)> {
    Ok((norm_dim(dim0, nd)?, norm_dim(dim1, nd)?))
}

/// `t`: a tensor of at most 2 dims.
pub fn t(nd: usize) -> R<()> {
    check(nd <= 2, || {
        format!("t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    })
}

/// `view`: the new shape, which must fit the input's strides (PyTorch's `computeStride`;
/// `reshape` copies where `view` refuses).
pub fn view(shape: &[usize], strides: &[isize], size: &[i64]) -> R<Vec<usize>> {
    let numel = shape.iter().product();
    let s = infer_shape(size, numel)?;
    check(view_compatible(shape, strides, &s), || {
        "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.".into()
    })?;
    Ok(s)
}

/// `squeeze`: the shape without its size-1 dims.
pub fn squeeze(shape: &[usize]) -> Vec<usize> {
    shape.iter().copied().filter(|d| *d != 1).collect()
}

/// `squeeze.dims`: the shape without those of the listed dims that have size 1 (an empty
/// list squeezes nothing).
pub fn squeeze_dims(shape: &[usize], dim: &[i64]) -> R<Vec<usize>> {
    let drop = distinct_dims(dim, shape.len())?;
    Ok((0..shape.len())
        .filter(|a| !(drop.contains(a) && shape[*a] == 1))
        .map(|a| shape[a])
        .collect())
}

/// `squeeze.dim`: the axis to drop, or `None` when the dim's size is not 1 (or the tensor
/// is 0-d): the output is the input.
pub fn squeeze_dim(shape: &[usize], dim: i64) -> R<Option<usize>> {
    let ax = norm_dim(dim, shape.len())?;
    Ok((!shape.is_empty() && shape[ax] == 1).then_some(ax))
}

/// `unsqueeze`: the new axis of a rank-`nd` tensor.
pub fn unsqueeze(nd: usize, dim: i64) -> R<usize> {
    norm_dim(dim, nd + 1)
}

/// `bmm`: the output shape `[b, n, p]` of `[b, n, m] @ [b, m, p]`.
pub fn bmm(a: &[usize], b: &[usize]) -> R<Vec<usize>> {
    check(a.len() == 3, || "batch1 must be a 3D tensor".into())?;
    check(b.len() == 3, || "batch2 must be a 3D tensor".into())?;
    check(b[0] == a[0] && b[1] == a[2], || {
        format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
            a[0], a[2], b[0], b[1]
        )
    })?;
    Ok(vec![a[0], a[1], b[2]])
}

/// `diagonal`'s geometry: the two axes, the diagonal's length and the other dims' sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagonal {
    /// The axis of `dim1`.
    pub d1: usize,
    /// The axis of `dim2`.
    pub d2: usize,
    /// The diagonal's length (0 when the offset leaves the matrix).
    pub len: usize,
    /// The sizes of the other dims, in order; the output's shape is these then `len`.
    pub rest: Vec<usize>,
}

impl Diagonal {
    /// The output's shape: the other dims, then the diagonal.
    pub fn out_shape(&self) -> Vec<usize> {
        let mut s = self.rest.clone();
        s.push(self.len);
        s
    }
}

/// `diagonal`: its geometry (two distinct dims).
pub fn diagonal(shape: &[usize], offset: i64, dim1: i64, dim2: i64) -> R<Diagonal> {
    let (d1, d2) = (norm_dim(dim1, shape.len())?, norm_dim(dim2, shape.len())?);
    check(d1 != d2, || {
        format!("diagonal dimensions cannot be identical {dim1}, {dim2}")
    })?;
    let (n1, n2) = (shape[d1] as i64, shape[d2] as i64);
    let len = if offset >= 0 {
        n1.min(n2 - offset)
    } else {
        (n1 + offset).min(n2)
    }
    .max(0) as usize;
    let rest = (0..shape.len())
        .filter(|a| *a != d1 && *a != d2)
        .map(|a| shape[a])
        .collect();
    Ok(Diagonal { d1, d2, len, rest })
}

/// `clamp`: at least one bound.
pub fn clamp(min: Option<f64>, max: Option<f64>) -> R<()> {
    check(min.is_some() || max.is_some(), || {
        "torch.clamp: At least one of 'min' or 'max' must not be None".into()
    })
}

/// `slice_scatter` / `select_scatter`: `src` must have the sizes of the slice (selection)
/// of `self` it replaces.
pub fn scattered_slice(src: &[usize], slice: &[usize]) -> R<()> {
    check(src == slice, || {
        format!(
            "expected src to have a size equal to the slice of self. src size = {src:?}, slice size = {slice:?}"
        )
    })
}

/// `clamp.Tensor`: at least one bound (`min`, `max`: whether each is given).
pub fn clamp_tensor(min: bool, max: bool) -> R<()> {
    clamp(min.then_some(0.0), max.then_some(0.0))
}

/// `gelu`: whether the approximation is `"tanh"` (else `"none"`; any other is an error).
pub fn gelu(approximate: &str) -> R<bool> {
    match approximate {
        "none" => Ok(false),
        "tanh" => Ok(true),
        _ => Err(Error::runtime(
            "approximate argument must be either none or tanh.",
        )),
    }
}

/// `native_dropout` in training: `p` is a probability (PyTorch's `bernoulli_` words it as
/// the probability `1 - p` of keeping an element).
pub fn native_dropout(p: f64) -> R<()> {
    check((0.0..=1.0).contains(&p), || {
        format!(
            "bernoulli_ expects p to be in [0, 1], but got p={}",
            1.0 - p
        )
    })
}

/// `where.self`: the broadcast shape of the condition and both values.
pub fn where_self(condition: &[usize], self_: &[usize], other: &[usize]) -> R<Vec<usize>> {
    broadcast_shape(&broadcast_shape(condition, self_)?, other)
}

/// A value of shape `from` written into (or broadcast to) a tensor of shape `to`: `from`
/// must broadcast to `to` exactly.
pub fn broadcast_to(from: &[usize], to: &[usize]) -> R<()> {
    let full = broadcast_shape(to, from)?;
    check(full == to, || {
        format!("output with shape {to:?} doesn't match the broadcast shape {full:?}")
    })
}

mod advanced;
// Embedding bags (issue 30).
mod bag;
mod conv;
mod dist;
mod embedding;
mod fold;
mod geom;
mod indexing;
mod losses;
// The masked family (issue 30).
mod masked;
mod normalization;
mod norms;
mod pool3d;
mod products;
mod resample;
mod scatter;
mod select;
mod softmax;
#[cfg(test)]
mod tests;

pub use advanced::{Advanced, Index, index_put, index_tensor, scatter};
pub use conv::{
    Conv, Pool, Tap, adaptive_avg_pool2d, adaptive_avg_pool2d_backward, adaptive_range, avg_pool2d,
    avg_pool2d_backward, constant_pad_nd, convolution, convolution_backward, max_pool2d,
    max_pool2d_backward, pooling_output_shape,
};
pub use dist::{
    Cdist, CdistPath, DistArg, cdist_backward, cdist_forward, euclidean_dist, pdist,
    pdist_backward, pdist_forward,
};
pub use embedding::embedding_dense_backward;
// Embedding bags (issue 30).
pub use bag::{
    BagArgs, embedding_bag_2d_indices, embedding_bag_args, embedding_bag_dims, embedding_bag_grad,
    embedding_bag_index_error, embedding_bag_max_indices, embedding_bag_padding_idx,
    embedding_bag_per_sample_weights_backward, embedding_bag_psw_grad,
};
pub use fold::{Fold, col2im, im2col};
pub use geom::{
    broadcast_positions, masked_scatter, masked_scatter_backward, masked_scatter_sources, nonzero,
};
use indexing::index_below;
pub use indexing::{
    argmax, argmax_dim, argmin, argmin_dim, elu_backward, embedding, flip, index_add, index_in_dim,
    index_in_self, index_select, max_dim, min_dim, repeat, rounding_mode,
};
pub use losses::{NllBackward, nll_loss_backward, nll_loss_forward, nll_target};
pub use masked::{addcdiv, lerp_dtype, masked_fill_inplace, masked_fill_mask, masked_fill_value};
pub use normalization::{
    ChannelSizes, Stat, batch_norm, batch_norm_backward_channels, batch_norm_channels,
    batch_norm_legit, batch_norm_no_stats, batch_norm_stat, var, var_dtype,
};
pub use norms::{
    GnArg, GroupNormBackwardArgs, GroupNormLayout, check_group_norm_inputs, native_group_norm,
    native_group_norm_backward,
};
pub use norms::{LayerNormRows, layer_norm, layer_norm_backward, layer_norm_stat_shape};
pub use pool3d::{avg_pool3d, avg_pool3d_backward, max_pool3d, max_pool3d_backward};
pub use products::{addmm, sort_indices};
pub use resample::{
    Axis, AxisTap, PadMode, Resample, adaptive_avg_pool3d, adaptive_avg_pool3d_backward, pad,
    pad_backward, upsample_backward_kernel, upsample_bilinear2d, upsample_bilinear2d_backward,
    upsample_nearest2d, upsample_nearest2d_backward, upsample_output_size,
};
pub use scatter::{
    Reduce, ReduceElement, scatter_reduce, scatter_reduce_arg, scatter_reduce_checked,
    scatter_reduce_values,
};
pub use select::{split_with_sizes, topk};
pub use softmax::{softmax, softmax_backward_data};

// ---- grid sampling (grid_sampler_2d and its backward; issue 30)
mod grid;
pub use grid::{
    BICUBIC, BILINEAR, BORDER, GridPlan, GridTap, NEAREST, REFLECTION, ZEROS, cubic_coefficients,
    grid_plan, grid_sampler_2d, grid_sampler_2d_backward,
};
