//! Default kernels: PyTorch's `CompositeExplicitAutograd` decompositions of functions that
//! have a derivatives entry of their own, written over other kernels. `native_functions.yaml`
//! names them (`dispatch: {CompositeExplicitAutograd: decomposed_stack}`), and the generated
//! `Backend` trait gives the kernel this body by default: a backend implements the kernel
//! only to do better (a native `stack`). Gradients are unaffected (the function keeps its own
//! node); values and errors are PyTorch's (the checks are `crate::meta`'s).

use super::Backend;
// A shape as `i64` sizes: the helpers' `dims`.
use super::dims as sizes;
use crate::meta;

/// `0..n` as an `i64` tensor (the positions the default kernels index with).
pub(crate) fn arange_i64<T: Backend>(n: i64) -> Result<T, T::Error> {
    let int = autograd::types::Scalar::Int;
    T::arange_start_step(
        int(0),
        int(n),
        int(1),
        Some(autograd::types::ScalarType::I64),
        None,
        None,
        None,
    )
}

/// `zeros_like`: `new_zeros` with the input's sizes (PyTorch's `zeros_like` for a strided
/// tensor; the memory format does not change a value).
pub fn decomposed_zeros_like<T: Backend>(
    self_: &T,
    dtype: Option<autograd::types::ScalarType>,
    layout: Option<autograd::types::Layout>,
    device: Option<autograd::types::Device>,
    pin_memory: Option<bool>,
    _memory_format: Option<autograd::types::MemoryFormat>,
) -> Result<T, T::Error> {
    let sizes: Vec<i64> = self_.shape().iter().map(|&d| d as i64).collect();
    T::new_zeros(self_, &sizes, dtype, layout, device, pin_memory)
}

/// `full_like`: `zeros_like`, then `fill_` (PyTorch's `full_like`: `empty_like`, then
/// `fill_`; the value converted to the result's dtype, `2.5` in an `i64` tensor is `2`).
pub fn decomposed_full_like<T: Backend>(
    self_: &T,
    fill_value: autograd::types::Scalar,
    dtype: Option<autograd::types::ScalarType>,
    layout: Option<autograd::types::Layout>,
    device: Option<autograd::types::Device>,
    pin_memory: Option<bool>,
    memory_format: Option<autograd::types::MemoryFormat>,
) -> Result<T, T::Error> {
    let mut z =
        <T as Backend>::zeros_like(self_, dtype, layout, device, pin_memory, memory_format)?;
    T::fill_scalar_(&mut z, fill_value)?;
    Ok(z)
}

/// `zero`: the functional form of `zero_` (PyTorch's autogen'd `zero`), zeros like `self`.
pub fn decomposed_zero<T: Backend>(self_: &T) -> Result<T, T::Error> {
    <T as Backend>::zeros_like(self_, None, None, None, None, None)
}

/// `sum`: `sum.dim_IntList` over every dimension.
pub fn decomposed_sum<T: Backend>(
    self_: &T,
    dtype: Option<autograd::types::ScalarType>,
) -> Result<T, T::Error> {
    T::sum_dim_intlist(self_, None, false, dtype)
}

/// `mean`: `mean.dim` over every dimension.
pub fn decomposed_mean<T: Backend>(
    self_: &T,
    dtype: Option<autograd::types::ScalarType>,
) -> Result<T, T::Error> {
    T::mean_dim(self_, None, false, dtype)
}

/// `t`: `transpose(0, 1)`, the input itself below two dimensions.
pub fn decomposed_t<T: Backend>(self_: &T) -> Result<T, T::Error> {
    let nd = self_.shape().len();
    meta::t(nd)?;
    match nd {
        2 => T::transpose_int(self_, 0, 1),
        _ => Ok(self_.clone()),
    }
}

/// `squeeze`: a reshape to the sizes other than 1.
pub fn decomposed_squeeze<T: Backend>(self_: &T) -> Result<T, T::Error> {
    T::reshape(self_, &sizes(&meta::squeeze(self_.shape())))
}

/// `squeeze.dim`: a reshape without that dimension when its size is 1.
pub fn decomposed_squeeze_dim<T: Backend>(self_: &T, dim: i64) -> Result<T, T::Error> {
    match meta::squeeze_dim(self_.shape(), dim)? {
        Some(ax) => {
            let mut s = self_.shape().to_vec();
            s.remove(ax);
            T::reshape(self_, &sizes(&s))
        }
        None => Ok(self_.clone()),
    }
}

/// `squeeze.dims`: a reshape without those dimensions of size 1.
pub fn decomposed_squeeze_dims<T: Backend>(self_: &T, dim: &[i64]) -> Result<T, T::Error> {
    let s = meta::squeeze_dims(self_.shape(), dim)?;
    T::reshape(self_, &sizes(&s))
}

/// `unsqueeze`: a reshape with a dimension of size 1 inserted.
pub fn decomposed_unsqueeze<T: Backend>(self_: &T, dim: i64) -> Result<T, T::Error> {
    let ax = meta::unsqueeze(self_.shape().len(), dim)?;
    let mut s = self_.shape().to_vec();
    s.insert(ax, 1);
    T::reshape(self_, &sizes(&s))
}

/// `narrow`: `slice` after `narrow`'s own checks (PyTorch's `narrow_symint`).
pub fn decomposed_narrow<T: Backend>(
    self_: &T,
    dim: i64,
    start: i64,
    length: i64,
) -> Result<T, T::Error> {
    let (ax, s) = meta::narrow(self_.shape(), dim, start, length)?;
    let s = s as i64;
    T::slice_tensor(self_, ax as i64, Some(s), Some(s + length), 1)
}

/// `split.Tensor`: one `slice` per piece.
pub fn decomposed_split<T: Backend>(
    self_: &T,
    split_size: i64,
    dim: i64,
) -> Result<Vec<T>, T::Error> {
    let (ax, pieces) = meta::split(self_.shape(), split_size, dim)?;
    pieces
        .into_iter()
        .map(|r| T::slice_tensor(self_, ax as i64, Some(r.start), Some(r.end), 1))
        .collect()
}

/// `unbind.int`: one `select` per index.
pub fn decomposed_unbind<T: Backend>(self_: &T, dim: i64) -> Result<Vec<T>, T::Error> {
    let ax = meta::unbind(self_.shape(), dim)?;
    (0..self_.shape()[ax] as i64)
        .map(|i| T::select_int(self_, ax as i64, i))
        .collect()
}

/// `stack`: every tensor unsqueezed at `dim`, then `cat`.
pub fn decomposed_stack<T: Backend>(tensors: &[T], dim: i64) -> Result<T, T::Error> {
    let shapes: Vec<&[usize]> = tensors.iter().map(|t| t.shape()).collect();
    let ax = meta::stack(&shapes, dim)? as i64;
    let parts = tensors
        .iter()
        .map(|t| T::unsqueeze(t, ax))
        .collect::<Result<Vec<T>, T::Error>>()?;
    T::cat(&parts, ax)
}

/// `sym_size.int`: the size of dimension `dim` (PyTorch's `IndexError` for one out of range).
pub fn decomposed_sym_size_int<T: Backend>(self_: &T, dim: i64) -> Result<i64, T::Error> {
    let shape = self_.shape();
    crate::factory::check_has_dims(shape.len(), dim)?;
    let d = crate::shape::norm_dim(dim, shape.len())?;
    Ok(shape[d] as i64)
}

/// `sym_numel`: the number of elements.
pub fn decomposed_sym_numel<T: Backend>(self_: &T) -> Result<i64, T::Error> {
    Ok(self_.shape().iter().product::<usize>() as i64)
}

/// `sym_is_contiguous`: c10's contiguity rule over the backend's strides
/// ([`crate::layout::is_contiguous`]).
pub fn decomposed_sym_is_contiguous<T: Backend>(
    self_: &T,
    memory_format: autograd::types::MemoryFormat,
) -> Result<bool, T::Error> {
    let sizes = self_.shape();
    let strides = (0..sizes.len() as i64)
        .map(|d| T::sym_stride_int(self_, d))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(crate::layout::is_contiguous(sizes, &strides, memory_format))
}

/// `scalar_tensor`: `full` with no sizes, of `dtype` or the default float (whatever the
/// number's kind: PyTorch's `scalar_tensor(3)` is `3.`).
pub fn decomposed_scalar_tensor<T: Backend>(
    s: autograd::types::Scalar,
    dtype: Option<autograd::types::ScalarType>,
    layout: Option<autograd::types::Layout>,
    device: Option<autograd::types::Device>,
    pin_memory: Option<bool>,
) -> Result<T, T::Error> {
    // Without a dtype, `full` takes the value's kind: as a float it is the default float
    // (`full` checks that the value fits the dtype).
    let s = match dtype {
        None => autograd::types::Scalar::Float(s.to_f64()),
        Some(_) => s,
    };
    T::full(&[], s, dtype, layout, device, pin_memory)
}

/// `empty.memory_format`: `full` of zeros (PyTorch leaves the elements uninitialised; the
/// memory format changes no value).
pub fn decomposed_empty<T: Backend>(
    size: &[i64],
    dtype: Option<autograd::types::ScalarType>,
    layout: Option<autograd::types::Layout>,
    device: Option<autograd::types::Device>,
    pin_memory: Option<bool>,
    _memory_format: Option<autograd::types::MemoryFormat>,
) -> Result<T, T::Error> {
    // A float zero: without a dtype, the default float.
    let zero = autograd::types::Scalar::Float(0.0);
    T::full(size, zero, dtype, layout, device, pin_memory)
}

/// `empty_strided`: [`decomposed_empty`] after PyTorch's check of the strides' count; the
/// result is contiguous whatever strides are asked for.
pub fn decomposed_empty_strided<T: Backend>(
    size: &[i64],
    stride: &[i64],
    dtype: Option<autograd::types::ScalarType>,
    layout: Option<autograd::types::Layout>,
    device: Option<autograd::types::Device>,
    pin_memory: Option<bool>,
) -> Result<T, T::Error> {
    crate::factory::check_strides(size, stride)?;
    decomposed_empty(size, dtype, layout, device, pin_memory, None)
}

/// The dtype of a tensor as a [`ScalarType`](autograd::types::ScalarType).
fn scalar_type<T: Backend>(t: &T) -> Option<autograd::types::ScalarType> {
    autograd::types::ScalarType::from_name(t.dtype())
}

/// `fill.Scalar`: `full` with `self`'s sizes and dtype (PyTorch's `fill`: `empty_like`, then
/// `fill_`).
pub fn decomposed_fill<T: Backend>(
    self_: &T,
    value: autograd::types::Scalar,
) -> Result<T, T::Error> {
    T::full(
        &sizes(self_.shape()),
        value,
        scalar_type(self_),
        None,
        None,
        None,
    )
}

/// `copy`: `src` expanded to `self`'s sizes and converted to its dtype (PyTorch's `copy`:
/// `self.clone().copy_(src)`).
pub fn decomposed_copy<T: Backend>(self_: &T, src: &T, non_blocking: bool) -> Result<T, T::Error> {
    crate::factory::check_copy(self_.shape(), src.shape())?;
    let e = T::expand(src, &sizes(self_.shape()), false)?;
    T::_to_copy(&e, scalar_type(self_), None, None, None, non_blocking, None)
}

/// `clamp.Tensor`: `maximum` with `min`, then `minimum` with `max` (PyTorch's kernel:
/// `min(max(self, min), max)` over the broadcast and promoted operands, NaN from any of the
/// three; `max` wins where `min > max`). With both bounds, booleans are refused as PyTorch's
/// `clamp_cpu` does (one bound is its `clamp_min`/`clamp_max` kernel, which takes them).
pub fn decomposed_clamp_tensor<T: Backend>(
    self_: &T,
    min: Option<&T>,
    max: Option<&T>,
) -> Result<T, T::Error> {
    meta::clamp_tensor(min.is_some(), max.is_some())?;
    if let (Some(lo), Some(hi)) = (min, max) {
        let kind = crate::dtype::promoted_kind(&[self_.dtype(), lo.dtype(), hi.dtype()]);
        crate::dtype::check_not_bool(kind, crate::dtype::kernel::CLAMP_TENSOR)?;
    }
    let low = match min {
        Some(lo) => T::maximum(self_, lo)?,
        None => self_.clone(),
    };
    match max {
        Some(hi) => T::minimum(&low, hi),
        None => Ok(low),
    }
}

/// `slice_scatter`: `self` with `src` (converted to `self`'s dtype) written into the slice
/// `start:end:step` of `dim` (PyTorch's checks: `slice`'s, then `src`'s sizes against the
/// slice's), as `index_put` at the slice's positions.
pub fn decomposed_slice_scatter<T: Backend>(
    self_: &T,
    src: &T,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<T, T::Error> {
    let (ax, range) = meta::slice(self_.shape(), dim, start, end, step)?;
    let mut slice = self_.shape().to_vec();
    slice[ax] = range.len().div_ceil(step as usize);
    meta::scattered_slice(src.shape(), &slice)?;
    put_along(self_, src, ax, (range.start, range.end, step))
}

/// `select_scatter`: `self` with `src` (converted to `self`'s dtype) written at `index` of
/// `dim` (PyTorch's checks: `select`'s, then `src`'s sizes against the selection's).
pub fn decomposed_select_scatter<T: Backend>(
    self_: &T,
    src: &T,
    dim: i64,
    index: i64,
) -> Result<T, T::Error> {
    let (ax, i) = meta::select(self_.shape(), dim, index)?;
    let mut selected = self_.shape().to_vec();
    selected.remove(ax);
    meta::scattered_slice(src.shape(), &selected)?;
    let one = T::unsqueeze(src, ax as i64)?;
    put_along(self_, &one, ax, (i, i + 1, 1))
}

/// `self` with `src` written at the positions `start..end` by `step` of axis `ax` (`src` has
/// the slice's sizes): `index_put` with an `arange` index after `ax` full dims.
fn put_along<T: Backend>(
    self_: &T,
    src: &T,
    ax: usize,
    (start, end, step): (usize, usize, i64),
) -> Result<T, T::Error> {
    use autograd::types::{Scalar, ScalarType};
    let at = T::arange_start_step(
        Scalar::Int(start as i64),
        Scalar::Int(end as i64),
        Scalar::Int(step),
        Some(ScalarType::I64),
        None,
        None,
        None,
    )?;
    let mut indices: Vec<Option<T>> = vec![None; ax];
    indices.push(Some(at));
    let values = T::_to_copy(src, scalar_type(self_), None, None, None, false, None)?;
    T::index_put(self_, &indices, &values, false)
}

/// `split_with_sizes`: one `slice` per piece (PyTorch's checks first).
pub fn decomposed_split_with_sizes<T: Backend>(
    self_: &T,
    split_sizes: &[i64],
    dim: i64,
) -> Result<Vec<T>, T::Error> {
    let (ax, pieces) = meta::split_with_sizes(self_.shape(), split_sizes, dim)?;
    pieces
        .into_iter()
        .map(|r| T::slice_tensor(self_, ax as i64, Some(r.start), Some(r.end), 1))
        .collect()
}

/// `topk`: the first `k` of a stable `sort` along `dim` (descending for `largest`; NaN
/// above every number, as PyTorch's). `sorted=False` gives the same order. Among equal
/// values PyTorch's CPU kernel (a partial sort) may pick other indices than the stable
/// order (the `select` fixtures' ties, `OP_SET_DIFFERENCES`). A 0-d input is its own top
/// value, at index 0, for `k` 0 or 1.
pub fn decomposed_topk<T: Backend>(
    self_: &T,
    k: i64,
    dim: i64,
    largest: bool,
    _sorted: bool,
) -> Result<(T, T), T::Error> {
    use autograd::types::{Scalar, ScalarType};
    let ax = meta::topk(self_.shape(), self_.dtype(), k, dim)? as i64;
    if self_.shape().is_empty() {
        let i = T::scalar_tensor(Scalar::Int(0), Some(ScalarType::I64), None, None, None)?;
        return Ok((self_.clone(), i));
    }
    let (v, i) = T::sort_stable(self_, Some(true), ax, largest)?;
    Ok((
        T::slice_tensor(&v, ax, Some(0), Some(k), 1)?,
        T::slice_tensor(&i, ax, Some(0), Some(k), 1)?,
    ))
}
