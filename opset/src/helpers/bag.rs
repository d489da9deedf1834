//! Embedding bags (Core ATen; issue 30): the default kernels of `_embedding_bag`,
//! `_embedding_bag_backward`, `_embedding_bag_dense_backward` and
//! `_embedding_bag_per_sample_weights_backward`, written over other kernels (`index_select`,
//! `index_add`, `cumsum`, `scatter_reduce`) with the results of PyTorch's CPU kernels
//! (`EmbeddingBag.cpp`): the same four outputs (`offset2bag` empty where PyTorch's fast
//! path skips it, `bag_size` zero in mode sum, `max_indices` a copy of `bag_size` outside
//! mode max), the fast path's reading of the last offset with `include_last_offset`, the
//! max loop's first maximum (a NaN kept only when first), and the checks of [`meta`].

use super::Backend;
use crate::dtype::{bag_index_dtype, check_bag_float, check_bag_index, check_same_dtype};
use crate::error::Error;
use crate::meta::{self, BagArgs};
use autograd::types::{Scalar, ScalarType};

/// A kernel's result (`X`: the tensor itself by default).
type Res<T, X = T> = Result<X, <T as Backend>::Error>;

const SUM: i64 = 0;
const MEAN: i64 = 1;
const MAX: i64 = 2;

fn int(v: i64) -> Scalar {
    Scalar::Int(v)
}

/// The first element of `t`, read on the host as an integer.
fn host<T: Backend>(t: &T) -> Res<T, i64> {
    Ok(match T::_local_scalar_dense(t)? {
        Scalar::Int(i) => i,
        Scalar::Float(f) => f as i64,
        Scalar::Bool(b) => b as i64,
    })
}

/// `t` flattened, as `dtype`: the backward kernels' reading of an index tensor.
fn flat<T: Backend>(t: &T, dtype: &str) -> Res<T> {
    cast(&T::reshape(t, &[-1])?, dtype)
}

/// `t` as `dtype` (itself when it has it).
fn cast<T: Backend>(t: &T, dtype: &str) -> Res<T> {
    if t.dtype() == dtype {
        return Ok(t.clone());
    }
    T::_to_copy(
        t,
        ScalarType::from_name(dtype),
        None,
        None,
        None,
        false,
        None,
    )
}

/// Zeros of `size`, of `like`'s dtype or of `dtype`.
fn zeros<T: Backend>(like: &T, size: &[i64], dtype: Option<&str>) -> Res<T> {
    let dtype = dtype.and_then(ScalarType::from_name);
    T::new_zeros(like, size, dtype, None, None, None)
}

/// `[value; size]` of `i64`.
fn full_i64<T: Backend>(size: &[i64], value: i64) -> Res<T> {
    T::full(size, int(value), Some(ScalarType::I64), None, None, None)
}

use super::decompositions::arange_i64 as arange;

/// PyTorch's `make_offset2bag`: the bag of each of the `n` indices, `cumsum` of the number
/// of `offsets` at each position, less one (an empty bag's offset skips its number).
fn offset2bag<T: Backend>(offsets: &T, n: i64) -> Res<T> {
    let dtype = offsets.dtype();
    let ones = T::add_scalar(
        &zeros(offsets, &[offsets.shape()[0] as i64], None)?,
        int(1),
        int(1),
    )?;
    let counts = T::index_add(&zeros(offsets, &[n + 1], None)?, 0, offsets, &ones, int(1))?;
    let bags = T::cumsum(&counts, 0, ScalarType::from_name(dtype))?;
    T::narrow(&T::sub_scalar(&bags, int(1), int(1))?, 0, 0, n)
}

/// Each bag's size from its offset to the next one (the last one to `n`): PyTorch's
/// `make_bag_size_out`.
fn bag_sizes<T: Backend>(bag_offsets: &T, n: i64) -> Res<T> {
    let nb = bag_offsets.shape()[0] as i64;
    if nb == 0 {
        return Ok(bag_offsets.clone());
    }
    let next = T::cat(
        &[
            T::narrow(bag_offsets, 0, 1, nb - 1)?,
            full_i64::<T>(&[1], n)?,
        ],
        0,
    )?;
    T::sub_tensor(&next, bag_offsets, int(1))
}

/// The first index outside `[0, num_weights)` among the first `end` ones: PyTorch's error.
fn check_indices<T: Backend>(indices: &T, end: i64, fast: bool, num_weights: usize) -> Res<T, ()> {
    let n = indices.shape()[0] as i64;
    let seen = T::narrow(indices, 0, 0, end.clamp(0, n))?;
    let bad = T::logical_or(
        &T::lt_scalar(&seen, int(0))?,
        &T::ge_scalar(&seen, int(num_weights as i64))?,
    )?;
    let at = T::nonzero(&bad)?;
    if at.shape()[0] == 0 {
        return Ok(());
    }
    let position = host(&at)?;
    let value = host(&T::select_int(indices, 0, position)?)?;
    Err(meta::embedding_bag_index_error(fast, position, value, num_weights).into())
}

/// `_embedding_bag`'s checks ([`meta`]), on `indices` and `offsets` of their promoted dtype.
fn checked_args<T: Backend>(
    weight: &T,
    indices: &T,
    offsets: &T,
    mode: i64,
    per_sample_weights: Option<&T>,
    include_last_offset: bool,
) -> Res<T, Option<(i64, i64)>> {
    let n_off = offsets.shape().first().copied().unwrap_or(0);
    let first_last = if n_off > 0 && offsets.shape().len() == 1 {
        let last = T::select_int(offsets, 0, -1)?;
        Some((host(offsets)?, host(&last)?))
    } else {
        None
    };
    meta::embedding_bag_args(&BagArgs {
        weight_dtype: weight.dtype(),
        index_dtype: indices.dtype(),
        num_indices: indices.shape()[0],
        first_last,
        mode,
        per_sample_weights: per_sample_weights.map(|p| (p.shape(), p.dtype())),
        include_last_offset,
        num_offsets: n_off,
    })?;
    if indices.shape().len() == 2 {
        return Err(meta::embedding_bag_2d_indices().into());
    }
    Ok(first_last)
}

/// `_embedding_bag` (PyTorch's `_embedding_bag_cpu`): each bag's sum, mean or maximum of
/// the weight rows its indices pick; the bag of each index (`offset2bag`), the bags' sizes
/// and the positions of the maxima.
#[allow(clippy::too_many_arguments)]
pub fn decomposed_embedding_bag<T: Backend>(
    weight: &T,
    indices: &T,
    offsets: &T,
    _scale_grad_by_freq: bool,
    mode: i64,
    _sparse: bool,
    per_sample_weights: Option<&T>,
    include_last_offset: bool,
    padding_idx: i64,
) -> Res<T, (T, T, T, T)> {
    meta::embedding_bag_dims(weight.shape(), indices.shape(), offsets.shape())?;
    let it = bag_index_dtype(indices.dtype(), offsets.dtype());
    let (indices, offsets) = (cast(indices, it)?, cast(offsets, it)?);
    let psw = per_sample_weights;
    let first_last = checked_args(weight, &indices, &offsets, mode, psw, include_last_offset)?;
    // PyTorch's fast path (FBGEMM) reads the bags from the offsets, the last one included.
    let fast = mode != MAX && matches!(weight.dtype(), "f32" | "f16" | "bf16") && padding_idx < 0;
    let n = indices.shape()[0] as i64;
    let end = match first_last {
        Some((_, last)) if fast && include_last_offset => last,
        _ => n,
    };
    let idx = cast(&indices, "i64")?;
    check_indices(&idx, end, fast, weight.shape()[0])?;
    let nb = offsets.shape()[0] as i64 - include_last_offset as i64;
    let bag_offsets = T::narrow(&cast(&offsets, "i64")?, 0, 0, nb)?;
    let o2b = offset2bag(&bag_offsets, n)?;
    let in_end = T::lt_scalar(&arange::<T>(n)?, int(end))?;
    let padded = T::eq_scalar(&idx, int(padding_idx))?;
    let keep = T::logical_and(&in_end, &T::logical_not(&padded)?)?;
    let idx = T::where_self(&keep, &idx, &full_i64::<T>(&[], 0)?)?;
    let mut bag_size = bag_sizes(&bag_offsets, n)?;
    if nb > 0 && n > 0 {
        let pads = cast(&padded, "i64")?;
        let per_bag = T::index_add(&zeros(&bag_size, &[nb], None)?, 0, &o2b, &pads, int(1))?;
        bag_size = T::sub_tensor(&bag_size, &per_bag, int(1))?;
    }
    let bags = Bags {
        idx: &idx,
        keep: &keep,
        o2b: &o2b,
        nb,
    };
    let (values, max_indices) = match mode {
        MAX => bag_max(weight, &bags)?,
        _ => {
            let values = bag_sum(weight, &bags, psw, (mode == MEAN).then_some(&bag_size))?;
            if mode == SUM {
                bag_size = zeros(&bag_size, &[nb], None)?;
            }
            (values, bag_size.clone())
        }
    };
    let o2b = match mode == SUM && fast {
        true => zeros(&o2b, &[0], None)?,
        false => o2b,
    };
    Ok((
        values,
        cast(&o2b, it)?,
        cast(&bag_size, it)?,
        cast(&max_indices, it)?,
    ))
}

/// The bags of the kept indices: `idx` (a dropped one is 0), `keep`, the bag of each, the
/// number of bags.
struct Bags<'a, T> {
    idx: &'a T,
    keep: &'a T,
    o2b: &'a T,
    nb: i64,
}

/// Modes sum and mean: the kept rows (times `per_sample_weights`) added into their bags,
/// divided by the bag's size (at least 1) in mode mean.
fn bag_sum<T: Backend>(weight: &T, b: &Bags<T>, psw: Option<&T>, mean_size: Option<&T>) -> Res<T> {
    let d = weight.shape()[1] as i64;
    let mut rows = T::index_select(weight, 0, b.idx)?;
    if let Some(p) = psw {
        rows = T::mul_tensor(&rows, &T::unsqueeze(p, 1)?)?;
    }
    let zero = zeros(weight, &[], None)?;
    let rows = T::where_self(&T::unsqueeze(b.keep, 1)?, &rows, &zero)?;
    let out = zeros(weight, &[b.nb, d], None)?;
    let out = match b.o2b.shape()[0] {
        0 => out,
        _ => T::index_add(&out, 0, b.o2b, &rows, int(1))?,
    };
    let Some(size) = mean_size else {
        return Ok(out);
    };
    let size = T::maximum(size, &full_i64::<T>(&[], 1)?)?;
    let size = cast(&size, weight.dtype())?;
    T::div_tensor(&out, &T::unsqueeze(&size, 1)?)
}

/// Mode max, as PyTorch's loop: each bag's first kept row, then a value strictly greater
/// replaces it (so a NaN stays only when first) and its index is recorded; an empty bag
/// gives zeros.
fn bag_max<T: Backend>(weight: &T, b: &Bags<T>) -> Res<T, (T, T)> {
    let d = weight.shape()[1] as i64;
    let values = zeros(weight, &[b.nb, d], None)?;
    let kept = T::reshape(&T::nonzero(b.keep)?, &[-1])?;
    let k = kept.shape()[0] as i64;
    if k == 0 || d == 0 || b.nb == 0 {
        return Ok((values, full_i64::<T>(&[b.nb, d], 0)?));
    }
    let idx = T::index_select(b.idx, 0, &kept)?;
    let bag = T::index_select(b.o2b, 0, &kept)?;
    let rows = T::index_select(weight, 0, &idx)?;
    let nan = T::isnan(&rows)?;
    let ninf = T::scalar_tensor(
        Scalar::Float(f64::NEG_INFINITY),
        ScalarType::from_name(weight.dtype()),
        None,
        None,
        None,
    )?;
    let clean = T::where_self(&nan, &ninf, &rows)?;
    let bag_kd = T::expand(&T::unsqueeze(&bag, 1)?, &[k, d], false)?;
    let max = T::scatter_reduce_two(&values, 0, &bag_kd, &clean, "amax", false)?;
    // The first position of each maximum; `k` (a zero row past the end) for an empty bag.
    let at_max = T::eq_tensor(&clean, &T::index_select(&max, 0, &bag)?)?;
    let pos = T::expand(&T::unsqueeze(&arange::<T>(k)?, 1)?, &[k, d], false)?;
    let cand = T::where_self(&at_max, &pos, &full_i64::<T>(&[], k)?)?;
    let arg = T::scatter_reduce_two(
        &full_i64::<T>(&[b.nb, d], k)?,
        0,
        &bag_kd,
        &cand,
        "amin",
        true,
    )?;
    let first = T::scatter_reduce_two(
        &full_i64::<T>(&[b.nb], k)?,
        0,
        &bag,
        &arange::<T>(k)?,
        "amin",
        true,
    )?;
    let idx = T::cat(&[idx, full_i64::<T>(&[1], 0)?], 0)?;
    let nan = T::cat(
        &[nan, T::eq_scalar(&zeros(&rows, &[1, d], None)?, int(1))?],
        0,
    )?;
    let first_nan = T::index_select(&nan, 0, &first)?;
    let first_idx = T::expand(
        &T::unsqueeze(&T::index_select(&idx, 0, &first)?, 1)?,
        &[b.nb, d],
        false,
    )?;
    let arg_idx = T::reshape(
        &T::index_select(&idx, 0, &T::reshape(&arg, &[-1])?)?,
        &[b.nb, d],
    )?;
    let nan_value = T::scalar_tensor(
        Scalar::Float(f64::NAN),
        ScalarType::from_name(weight.dtype()),
        None,
        None,
        None,
    )?;
    Ok((
        T::where_self(&first_nan, &nan_value, &max)?,
        T::where_self(&first_nan, &first_idx, &arg_idx)?,
    ))
}

/// `offset2bag` for the backward kernels: recomputed from all the offsets when empty (the
/// forward's fast path), else checked.
fn resolved_offset2bag<T: Backend>(indices: &T, offsets: &T, offset2bag: &T) -> Res<T> {
    let n = indices.shape().iter().product::<usize>() as i64;
    if n != 0 && offset2bag.shape().iter().product::<usize>() == 0 {
        return cast(&offset2bag_of(offsets, n)?, indices.dtype());
    }
    check_bag_index("offset2bag", offset2bag.dtype())?;
    Ok(offset2bag.clone())
}

/// [`offset2bag`] of `i64` offsets of any index dtype.
fn offset2bag_of<T: Backend>(offsets: &T, n: i64) -> Res<T> {
    offset2bag(&cast(offsets, "i64")?, n)
}

/// `_embedding_bag_backward` (PyTorch's `_embedding_bag_backward_symint`): the index checks,
/// `offset2bag` recomputed when empty, then `_embedding_bag_dense_backward`. `sparse=True`
/// asks for a sparse gradient, and the op set has no sparse tensors: an error.
#[allow(clippy::too_many_arguments)]
pub fn decomposed_embedding_bag_backward<T: Backend>(
    grad: &T,
    indices: &T,
    offsets: &T,
    offset2bag: &T,
    bag_size: &T,
    maximum_indices: &T,
    num_weights: i64,
    scale_grad_by_freq: bool,
    mode: i64,
    sparse: bool,
    per_sample_weights: Option<&T>,
    padding_idx: i64,
) -> Res<T> {
    let it = bag_index_dtype(indices.dtype(), offsets.dtype());
    let (indices, offsets) = (flat(indices, it)?, flat(offsets, it)?);
    check_bag_index("indices", it)?;
    let offset2bag = resolved_offset2bag(&indices, &offsets, &T::reshape(offset2bag, &[-1])?)?;
    if sparse {
        return Err(Error::runtime(
            "_embedding_bag_backward: sparse=True asks for a sparse gradient (_embedding_bag_sparse_backward); the op set has no sparse tensors",
        )
        .into());
    }
    T::_embedding_bag_dense_backward(
        grad,
        &indices,
        &offset2bag,
        bag_size,
        maximum_indices,
        num_weights,
        scale_grad_by_freq,
        mode,
        per_sample_weights,
        padding_idx,
    )
}

/// `_embedding_bag_dense_backward` (PyTorch's `_embedding_bag_dense_backward_cpu`).
#[allow(clippy::too_many_arguments)]
pub fn decomposed_embedding_bag_dense_backward<T: Backend>(
    grad: &T,
    indices: &T,
    offset2bag: &T,
    bag_size: &T,
    maximum_indices: &T,
    num_weights: i64,
    scale_grad_by_freq: bool,
    mode: i64,
    per_sample_weights: Option<&T>,
    padding_idx: i64,
) -> Res<T> {
    check_bag_float("grad_", grad.dtype())?;
    meta::embedding_bag_grad(grad.shape(), mode)?;
    let bag_size = &T::reshape(bag_size, &[-1])?;
    if mode == MAX {
        return max_backward(grad, bag_size, maximum_indices, num_weights);
    }
    let idx = flat(indices, "i64")?;
    let o2b = flat(offset2bag, "i64")?;
    let mut scale = T::full(
        &[idx.shape()[0] as i64],
        Scalar::Float(1.0),
        Some(ScalarType::F64),
        None,
        None,
        None,
    )?;
    if let Some(p) = per_sample_weights {
        scale = flat(p, "f64")?;
    }
    let keep = T::ne_scalar(&idx, int(padding_idx))?;
    if scale_grad_by_freq {
        let ones = full_i64::<T>(&[idx.shape()[0] as i64], 1)?;
        let counts = T::index_add(&full_i64::<T>(&[num_weights], 0)?, 0, &idx, &ones, int(1))?;
        let count = cast(&T::index_select(&counts, 0, &idx)?, "f64")?;
        scale = T::div_tensor(&scale, &count)?;
    }
    if mode == MEAN {
        let size = cast(&T::index_select(bag_size, 0, &o2b)?, "f64")?;
        let nonzero = T::ne_scalar(&size, int(0))?;
        scale = T::where_self(&nonzero, &T::div_tensor(&scale, &size)?, &scale)?;
    }
    let d = grad.shape()[1] as i64;
    let rows = T::index_select(grad, 0, &o2b)?;
    let rows = T::mul_tensor(&rows, &T::unsqueeze(&cast(&scale, grad.dtype())?, 1)?)?;
    let rows = T::where_self(&T::unsqueeze(&keep, 1)?, &rows, &zeros(grad, &[], None)?)?;
    let idx = T::where_self(&keep, &idx, &full_i64::<T>(&[], 0)?)?;
    T::index_add(
        &zeros(grad, &[num_weights, d], None)?,
        0,
        &idx,
        &rows,
        int(1),
    )
}

/// Mode max's weight gradient: each non-empty bag's gradient added, dim by dim, into the
/// row of its maximum.
fn max_backward<T: Backend>(grad: &T, bag_size: &T, max_indices: &T, num_weights: i64) -> Res<T> {
    let d = grad.shape()[1] as i64;
    let nonempty = T::reshape(&T::nonzero(bag_size)?, &[-1])?;
    meta::embedding_bag_max_indices(max_indices.shape(), d as usize)?;
    let at = T::index_select(&cast(max_indices, "i64")?, 0, &nonempty)?;
    let g = T::index_select(grad, 0, &nonempty)?;
    let flat = T::add_tensor(&T::mul_scalar(&at, int(d))?, &arange::<T>(d)?, int(1))?;
    let out = zeros(grad, &[num_weights * d], None)?;
    let out = T::index_add(
        &out,
        0,
        &T::reshape(&flat, &[-1])?,
        &T::reshape(&g, &[-1])?,
        int(1),
    )?;
    T::reshape(&out, &[num_weights, d])
}

/// `_embedding_bag_per_sample_weights_backward` (PyTorch's `..._cpu`): the dot product of
/// each kept index's weight row with its bag's gradient, zero for `padding_idx`.
pub fn decomposed_embedding_bag_per_sample_weights_backward<T: Backend>(
    grad: &T,
    weight: &T,
    indices: &T,
    offsets: &T,
    offset2bag: &T,
    mode: i64,
    padding_idx: i64,
) -> Res<T> {
    meta::embedding_bag_per_sample_weights_backward(grad.dtype(), mode)?;
    meta::embedding_bag_psw_grad(grad.shape())?;
    check_same_dtype(grad.dtype(), &[Some(weight.dtype())])?;
    let it = bag_index_dtype(indices.dtype(), offsets.dtype());
    let (indices, offsets) = (flat(indices, it)?, flat(offsets, it)?);
    check_bag_index("indices", it)?;
    let o2b = T::reshape(offset2bag, &[-1])?;
    let o2b = cast(&resolved_offset2bag(&indices, &offsets, &o2b)?, "i64")?;
    let idx = cast(&indices, "i64")?;
    let keep = T::ne_scalar(&idx, int(padding_idx))?;
    let idx = T::where_self(&keep, &idx, &full_i64::<T>(&[], 0)?)?;
    let prod = T::mul_tensor(
        &T::index_select(grad, 0, &o2b)?,
        &T::index_select(weight, 0, &idx)?,
    )?;
    let dots = T::sum_dim_intlist(&prod, Some(&[1]), false, None)?;
    T::where_self(&keep, &dots, &zeros(grad, &[], None)?)
}
