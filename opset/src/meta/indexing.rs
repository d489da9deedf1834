//! The index ops' checks: `index_select`, `index_add`, `embedding`, and the range check of
//! one index element, which every kernel that reads indices makes.

use super::R;
use crate::error::{Error, check};
use crate::shape::{
    check_index_add, check_index_select_0d, check_nonempty_reduction, norm_dim, out_of_bounds,
};

/// An element of an index tensor (held as a float or an integer) as a position below `n`,
/// or `Err(())`; the callers word PyTorch's error.
pub(super) fn index_below(v: f64, n: usize) -> Result<usize, ()> {
    match v >= 0.0 && v < n as f64 && v.fract() == 0.0 {
        true => Ok(v as usize),
        false => Err(()),
    }
}

/// One element of an index into a dim of size `n` (`index_select`, `index_add`,
/// `embedding`): the position, or PyTorch's "index out of range in self".
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::index_in_self(1.0, 2), Ok(1));
/// assert_eq!(meta::index_in_self(2.0, 2).unwrap_err().to_string(), "index out of range in self");
/// ```
pub fn index_in_self(v: f64, n: usize) -> R<usize> {
    index_below(v, n).map_err(|()| Error::index("index out of range in self"))
}

/// `index_select`: the axis; the index is a vector (of one element for a 0-d `self`).
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::index_select(&[2, 3], -1, &[4]), Ok(1));
/// let e = meta::index_select(&[2, 3], 0, &[2, 2]).unwrap_err();
/// assert_eq!(e.to_string(), "index_select(): Index is supposed to be a vector");
/// ```
pub fn index_select(self_: &[usize], dim: i64, index: &[usize]) -> R<usize> {
    let ax = norm_dim(dim, self_.len())?;
    if index.len() > 1 {
        return Err(Error::index(
            "index_select(): Index is supposed to be a vector",
        ));
    }
    check_index_select_0d(self_, index.iter().product())?;
    Ok(ax)
}

/// `index_add`: the axis; see [`check_index_add`].
pub fn index_add(self_: &[usize], dim: i64, index: &[usize], source: &[usize]) -> R<usize> {
    let ax = norm_dim(dim, self_.len())?;
    check_index_add(self_, ax, index, source)?;
    Ok(ax)
}

/// `embedding`: a 2-D weight (its rows are what the indices select).
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::embedding(&[10, 3]), Ok(10));
/// assert_eq!(meta::embedding(&[10]).unwrap_err().to_string(), "'weight' must be 2-D");
/// ```
pub fn embedding(weight: &[usize]) -> R<usize> {
    check(weight.len() == 2, || "'weight' must be 2-D".into())?;
    Ok(weight[0])
}

/// One element of `gather`'s or `scatter_add`'s index into axis `ax` of size `n`: the
/// position, or PyTorch's "index ... is out of bounds for dimension ... with size ...".
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::index_in_dim(-1.0, 0, 2).unwrap_err().to_string(),
///            "index -1 is out of bounds for dimension 0 with size 2");
/// ```
pub fn index_in_dim(v: f64, ax: usize, n: usize) -> R<usize> {
    index_below(v, n).map_err(|()| out_of_bounds(v as i64, ax, n))
}

/// `argmax` over all elements, of which there must be one.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::argmax(&[0, 3]).unwrap_err().to_string(),
///            "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
/// ```
pub fn argmax(shape: &[usize]) -> R<()> {
    check_nonempty_reduction("argmax", None, shape)
}

/// `argmax` along `dim`: the axis, which must have an element to select.
pub fn argmax_dim(shape: &[usize], dim: i64) -> R<usize> {
    let ax = norm_dim(dim, shape.len())?;
    check_nonempty_reduction("argmax", Some(ax), shape)?;
    Ok(ax)
}

/// `argmin` over all elements: the input must have one.
pub fn argmin(shape: &[usize]) -> R<()> {
    check_nonempty_reduction("argmin", None, shape)
}

/// `argmin` along `dim`: the axis, which must have an element to select.
pub fn argmin_dim(shape: &[usize], dim: i64) -> R<usize> {
    let ax = norm_dim(dim, shape.len())?;
    check_nonempty_reduction("argmin", Some(ax), shape)?;
    Ok(ax)
}

/// `min.dim`: the axis, which must have an element to select.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::min_dim(&[0, 3], 0).unwrap_err().to_string(),
///            "min(): Expected reduction dim 0 to have non-zero size.");
/// ```
pub fn min_dim(shape: &[usize], dim: i64) -> R<usize> {
    let ax = norm_dim(dim, shape.len())?;
    check_nonempty_reduction("min", Some(ax), shape)?;
    Ok(ax)
}

/// `flip`'s dims: each wrapped into the tensor's range, none twice; the axes to reverse.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::flip(&[3], &[0, 0]).unwrap_err().to_string(),
///            "dim 0 appears multiple times in the list of dims");
/// ```
pub fn flip(shape: &[usize], dims: &[i64]) -> R<Vec<usize>> {
    let mut axes = Vec::with_capacity(dims.len());
    for &d in dims {
        let ax = norm_dim(d, shape.len())?;
        if axes.contains(&ax) {
            return Err(Error::runtime(format!(
                "dim {ax} appears multiple times in the list of dims"
            )));
        }
        axes.push(ax);
    }
    // A 0-d tensor takes dim 0 (or -1) as a 1-d one would, and flipping it changes nothing.
    axes.retain(|&ax| ax < shape.len());
    Ok(axes)
}

/// `div`'s `rounding_mode`: `None` (true division), `"trunc"` (`Some(false)`) or `"floor"`
/// (`Some(true)`); another string is PyTorch's error.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::rounding_mode(Some("floor")).unwrap(), Some(true));
/// assert!(meta::rounding_mode(Some("x")).unwrap_err().to_string().starts_with("div expected"));
/// ```
pub fn rounding_mode(mode: Option<&str>) -> R<Option<bool>> {
    match mode {
        None => Ok(None),
        Some("trunc") => Ok(Some(false)),
        Some("floor") => Ok(Some(true)),
        Some(m) => Err(Error::runtime(format!(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{m}'"
        ))),
    }
}

/// `elu_backward` on its result (an in-place `elu`'s) with a negative `alpha`.
pub fn elu_backward(alpha: f64, is_result: bool) -> R<()> {
    check(!(is_result && alpha < 0.0), || {
        "In-place elu backward calculation is triggered with a negative slope which is not supported. This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead.".into()
    })
}

/// `repeat`: the result's sizes (the shape padded with leading 1s, times `repeats`).
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::repeat(&[2], &[3, 2]).unwrap(), vec![3, 4]);
/// assert!(meta::repeat(&[2, 2], &[2]).is_err());
/// ```
pub fn repeat(shape: &[usize], repeats: &[i64]) -> R<Vec<usize>> {
    check(repeats.len() >= shape.len(), || {
        "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
            .into()
    })?;
    let pad = repeats.len() - shape.len();
    let sizes: Vec<i64> = repeats
        .iter()
        .enumerate()
        .map(|(i, r)| r * if i < pad { 1 } else { shape[i - pad] as i64 })
        .collect();
    if let Some(d) = sizes.iter().find(|s| **s < 0) {
        let list: Vec<String> = sizes.iter().map(i64::to_string).collect();
        return Err(Error::runtime(format!(
            "Trying to create tensor with negative dimension {d}: [{}]",
            list.join(", ")
        )));
    }
    Ok(sizes.iter().map(|&s| s as usize).collect())
}

/// `max.dim`: the axis, which must have an element to select.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::max_dim(&[2, 0], 1).unwrap_err().to_string(),
///            "max(): Expected reduction dim 1 to have non-zero size.");
/// ```
pub fn max_dim(shape: &[usize], dim: i64) -> R<usize> {
    let ax = norm_dim(dim, shape.len())?;
    check_nonempty_reduction("max", Some(ax), shape)?;
    Ok(ax)
}
