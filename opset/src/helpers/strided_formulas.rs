//! `as_strided`'s helpers: PyTorch's `as_strided_backward` (FunctionsManual.cpp), over a
//! saved [`TensorGeometry`], and the view's inverse. Compiled twice, as `formulas.rs`: over
//! `Variable<T>` and over raw tensors.
//!
//! PyTorch writes the gradient into a zero "storage" through the output's geometry (adding
//! where the output's elements overlap) and reads the input's elements from it (dividing by
//! how many input elements share a position). Here the writes and reads are `index_add` and
//! `index_select` with the positions as indices (an `arange` read through each geometry):
//! the same values, and made of differentiable ops, so double backward works.

use super::*;
use autograd::types::{Scalar, ScalarType, TensorGeometry};

/// The sizes and strides of the dimensions that address more than one element, and whether
/// any was of size 0.
fn addressing(sizes: &[i64], strides: &[i64]) -> (Vec<i64>, Vec<i64>, bool) {
    let (mut n, mut s) = (Vec::new(), Vec::new());
    for (&d, &st) in sizes.iter().zip(strides) {
        if d == 0 {
            return (n, s, true);
        }
        if d != 1 {
            n.push(d);
            s.push(st);
        }
    }
    (n, s, false)
}

/// PyTorch's `_maybe_overlapping_memory`: whether two elements may share a position (a
/// stride, in increasing order, not past the span of the smaller ones).
fn maybe_overlapping(sizes: &[i64], strides: &[i64]) -> bool {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| strides[i]);
    let mut max_index = 0i64;
    for i in order {
        if strides[i] <= max_index {
            return true;
        }
        max_index += strides[i] * (sizes[i] - 1);
    }
    false
}

/// PyTorch's `_min_storage_size`: one past the last position a geometry reads.
fn min_storage_size(sizes: &[i64], strides: &[i64], offset: i64) -> i64 {
    if sizes.contains(&0) {
        return offset;
    }
    offset
        + 1
        + sizes
            .iter()
            .zip(strides)
            .map(|(d, s)| (d - 1) * s)
            .sum::<i64>()
}

/// The positions a geometry reads, as a flat `i64` tensor: an `arange` over the storage,
/// read through the geometry.
fn positions<T: Backend>(storage: i64, sizes: &[i64], strides: &[i64], offset: i64) -> Res<V<T>> {
    let int = |n: i64| Scalar::Int(n);
    let all = T::arange_start_step(
        int(0),
        int(storage),
        int(1),
        Some(ScalarType::I64),
        None,
        None,
        None,
    )
    .map_err(AutogradError::backend)?;
    let read = as_strided(&V::<T>::from_data(all), sizes, strides, Some(offset))?;
    reshape(&read, &[-1])
}

/// PyTorch's `as_strided_backward`: the gradient of `as_strided(input, sizes, strides,
/// storage_offset)` for an input of `input_geometry`. Positions the output reads outside the
/// input's elements get no gradient (as PyTorch's).
pub fn as_strided_backward<T: Backend>(
    grad: &V<T>,
    input_geometry: &TensorGeometry,
    sizes: &[i64],
    strides: &[i64],
    storage_offset: Option<i64>,
) -> Res<V<T>> {
    let inp_sizes = input_geometry.sym_sizes();
    let zeros = || new_zeros(grad, inp_sizes, None, None, None, None);
    let offset = storage_offset.unwrap_or(input_geometry.sym_storage_offset());
    // The output's geometry: size-1 dimensions squeezed, stride-0 ones summed.
    let mut g = grad.clone();
    for i in (0..sizes.len()).rev() {
        if sizes[i] == 1 {
            g = squeeze_dim(&g, i as i64)?;
        } else if sizes[i] != 0 && strides[i] == 0 {
            g = sum_dim_intlist(&g, Some(&[i as i64]), false, None)?;
        }
    }
    let kept: Vec<usize> = (0..sizes.len())
        .filter(|&i| sizes[i] != 1 && strides[i] != 0)
        .collect();
    let out_sizes: Vec<i64> = kept.iter().map(|&i| sizes[i]).collect();
    let out_strides: Vec<i64> = kept.iter().map(|&i| strides[i]).collect();
    let (inp_s, inp_st, inp_empty) = addressing(inp_sizes, input_geometry.sym_strides());
    if sizes.contains(&0) || inp_empty {
        return zeros();
    }
    let shared = input_geometry.sym_storage_offset().min(offset);
    let (inp_off, out_off) = (
        input_geometry.sym_storage_offset() - shared,
        offset - shared,
    );
    let base = min_storage_size(&inp_s, &inp_st, inp_off).max(min_storage_size(
        &out_sizes,
        &out_strides,
        out_off,
    ));
    let storage = new_zeros(&g, &[base], None, None, None, None)?;
    let out_at = positions::<T>(base, &out_sizes, &out_strides, out_off)?;
    let mut storage = index_add(&storage, 0, &out_at, &reshape(&g, &[-1])?, 1.0)?;
    if maybe_overlapping(&inp_s, &inp_st) {
        let at = positions::<T>(base, &inp_s, &inp_st, inp_off)?;
        let ones = V::<T>::from_data(storage.with_data(|t| t.ones_like()));
        let count = index_add(
            &zeros_of(&storage),
            0,
            &at,
            &index_select(&ones, 0, &at)?,
            1.0,
        )?;
        storage = div_tensor(&storage, &count)?;
    }
    let inp_at = positions::<T>(base, inp_sizes, input_geometry.sym_strides(), inp_off)?;
    reshape(&index_select(&storage, 0, &inp_at)?, inp_sizes)
}

/// `as_strided`'s view inverse: `base` with the elements the view reads replaced by
/// `mutated_view`'s. A view whose elements overlap is refused (PyTorch refuses in-place
/// writes to such a view).
pub fn as_strided_inverse<T: Backend>(
    base: &V<T>,
    mutated_view: &V<T>,
    sizes: &[i64],
    strides: &[i64],
    storage_offset: Option<i64>,
) -> Res<V<T>> {
    let (s, st, _) = addressing(sizes, strides);
    if maybe_overlapping(&s, &st) || strides.iter().zip(sizes).any(|(x, n)| *x == 0 && *n > 1) {
        return Err(AutogradError::msg(autograd::runtime::view::ERR_OVERLAP));
    }
    let geometry = base.with_data(TensorGeometry::of);
    view_scatter(base, mutated_view, |v| {
        as_strided_backward(v, &geometry, sizes, strides, storage_offset)
    })
}
