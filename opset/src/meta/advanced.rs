//! Advanced indexing (`index.Tensor`, `index_put`): PyTorch's checks and the positions of
//! the indexed elements, in the order of PyTorch's `index` meta function, `make_info`
//! (`checkIndexTensorTypes`, `expandTensors`, `expand_outplace`), `AdvancedIndex` and the CPU
//! kernels' bound checks.
//!
//! A backend reads its index tensors on the host ([`Index`]) and gets an [`Advanced`]: the
//! shape of the result and, for each element of the result (row-major), the row-major
//! position in `self` it reads (`index.Tensor`) or writes (`index_put`). The kernels then
//! only move (or add) elements.

use super::R;
use crate::error::{Error, check};
use crate::shape::broadcast_shape;

/// One entry of the `Tensor?[] indices` argument, read on the host.
#[derive(Clone, Copy, Debug)]
pub enum Index<'a> {
    /// An integer (`int64`) index tensor: its shape and row-major elements.
    Long(&'a [usize], &'a [i64]),
    /// A boolean mask: its shape and row-major elements.
    Mask(&'a [usize], &'a [bool]),
    /// A tensor of another dtype (a float): PyTorch refuses it.
    Invalid,
}

/// The result of advanced indexing: its shape and, for each of its elements (row-major),
/// the row-major position of the element of `self` it reads or writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Advanced {
    /// The result's shape (`index.Tensor`), the indexing result's (`index_put`).
    pub shape: Vec<usize>,
    /// The row-major positions in `self`, one per element of the result.
    pub offsets: Vec<usize>,
}

/// An integer index of one dim of `self` after the masks are expanded.
struct Long {
    shape: Vec<usize>,
    data: Vec<i64>,
}

fn list(s: &[usize]) -> String {
    let v: Vec<String> = s.iter().map(usize::to_string).collect();
    format!("[{}]", v.join(", "))
}

/// PyTorch's `invalid_mask` message.
fn invalid_mask(self_: &[usize], src: usize, mask: &[usize], j: usize) -> Error {
    Error::index(format!(
        "The shape of the mask {} at index {j} does not match the shape of the indexed tensor {} at index {src}",
        list(mask),
        list(self_)
    ))
}

/// PyTorch's `expandTensors`: each mask becomes the integer indices of its `true` elements
/// (one per dim it covers), checked against `self`'s sizes. One entry per dim of `self`.
fn expanded(self_: &[usize], indices: &[Option<Index>]) -> R<Vec<Option<Long>>> {
    let nd = self_.len();
    if indices.len() > nd {
        return Err(Error::index(format!(
            "too many indices for tensor of dimension {nd} (got {})",
            indices.len()
        )));
    }
    if indices.iter().any(|i| matches!(i, Some(Index::Invalid))) {
        return Err(Error::index(
            "tensors used as indices must be long, int, byte or bool tensors",
        ));
    }
    let mut out: Vec<Option<Long>> = Vec::with_capacity(nd);
    for entry in indices {
        match entry {
            None => out.push(None),
            Some(Index::Long(shape, data)) => out.push(Some(Long {
                shape: shape.to_vec(),
                data: data.to_vec(),
            })),
            Some(Index::Mask(shape, data)) => {
                out.extend(mask_indices(self_, out.len(), shape, data)?)
            }
            Some(Index::Invalid) => unreachable!("refused above"),
        }
    }
    out.resize_with(nd, || None);
    Ok(out)
}

/// A mask covering `self`'s dims from `start`: the coordinates of its `true` elements.
fn mask_indices(
    self_: &[usize],
    start: usize,
    shape: &[usize],
    data: &[bool],
) -> R<Vec<Option<Long>>> {
    let nd = self_.len();
    check(!shape.is_empty(), || {
        "index.Tensor / index_put: a 0-d boolean mask is not supported (PyTorch fails an internal assert)".into()
    })?;
    for (j, &m) in shape.iter().enumerate() {
        let src = start + j;
        if src >= nd {
            return Err(Error::index(format!(
                "Dimension out of range (expected to be in range of [-{nd}, {}], but got {src})",
                nd as i64 - 1
            )));
        }
        if m != self_[src] {
            return Err(invalid_mask(self_, src, shape, j));
        }
    }
    let mut coords: Vec<Vec<i64>> = vec![Vec::new(); shape.len()];
    for (k, _) in data.iter().enumerate().filter(|(_, b)| **b) {
        let mut rest = k;
        for j in (0..shape.len()).rev() {
            coords[j].push((rest % shape[j]) as i64);
            rest /= shape[j];
        }
    }
    Ok(coords
        .into_iter()
        .map(|data| {
            Some(Long {
                shape: vec![data.len()],
                data,
            })
        })
        .collect())
}

/// Row-major strides of `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// The element of a broadcast index at the broadcast coordinates `at` (its trailing dims).
fn broadcast_at(ix: &Long, at: &[usize]) -> i64 {
    let lead = at.len() - ix.shape.len();
    let mut k = 0;
    for (d, &n) in ix.shape.iter().enumerate() {
        k = k * n + if n == 1 { 0 } else { at[lead + d] };
    }
    ix.data[k]
}

/// `index.Tensor`'s result: PyTorch's errors (too many indices, an index of another dtype,
/// a mask of the wrong shape, indices that do not broadcast, an index out of range) and the
/// positions read. With no index (`[]`, or only `None`s) PyTorch's message is "at least one
/// index must be provided" (for only `None`s PyTorch fails an internal assert instead).
///
/// ```
/// use autograd_opset::meta::{self, Index};
/// let i = [Some(Index::Long(&[2], &[1, -1]))];
/// let a = meta::index_tensor(&[3, 2], &i).unwrap();
/// assert_eq!((a.shape, a.offsets), (vec![2, 2], vec![2, 3, 4, 5]));
/// let bad = [Some(Index::Long(&[1], &[3]))];
/// assert_eq!(meta::index_tensor(&[3, 2], &bad).unwrap_err().to_string(),
///            "index 3 is out of bounds for dimension 0 with size 3");
/// ```
pub fn index_tensor(self_: &[usize], indices: &[Option<Index>]) -> R<Advanced> {
    let longs = expanded(self_, indices)?;
    if longs.iter().all(Option::is_none) {
        return Err(Error::index("at least one index must be provided"));
    }
    advanced(self_, &longs)
}

/// `index_put`'s indexing result (as [`index_tensor`]) and PyTorch's check that `values`
/// broadcasts to it, then that its dtype is `self`'s. With no index (`[]`, or only `None`s)
/// the indexing result is `self`'s shape for these checks; then PyTorch fails an internal
/// assert, and this says "at least one index must be provided".
///
/// ```
/// use autograd_opset::meta::{self, Index};
/// let i = [Some(Index::Mask(&[2], &[false, true]))];
/// let a = meta::index_put(&[2, 2], &i, &[2], "f64", "f64").unwrap();
/// assert_eq!((a.shape, a.offsets), (vec![1, 2], vec![2, 3]));
/// let e = meta::index_put(&[2, 2], &i, &[3], "f64", "f64").unwrap_err();
/// assert_eq!(e.to_string(),
///            "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [1, 2]");
/// ```
pub fn index_put(
    self_: &[usize],
    indices: &[Option<Index>],
    values: &[usize],
    self_dtype: &str,
    values_dtype: &str,
) -> R<Advanced> {
    let longs = expanded(self_, indices)?;
    let a = if longs.iter().all(Option::is_none) {
        Advanced {
            shape: self_.to_vec(),
            offsets: (0..self_.iter().product()).collect(),
        }
    } else {
        advanced(self_, &longs)?
    };
    let fits = values.len() <= a.shape.len()
        && broadcast_shape(values, &a.shape).is_ok_and(|s| s == a.shape);
    check(fits, || {
        format!(
            "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            list(values),
            list(&a.shape)
        )
    })?;
    check(self_dtype == values_dtype, || {
        format!(
            "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
            crate::dtype::torch_name(self_dtype),
            crate::dtype::torch_name(values_dtype)
        )
    })?;
    if longs.iter().all(Option::is_none) {
        return Err(Error::index("at least one index must be provided"));
    }
    Ok(a)
}

/// The indices broadcast together, the result's shape (the indexed dims replaced in place
/// when they are adjacent, else first: PyTorch's `hasContiguousSubspace`) and the positions.
fn advanced(self_: &[usize], longs: &[Option<Long>]) -> R<Advanced> {
    let defined: Vec<(usize, &Long)> = longs
        .iter()
        .enumerate()
        .filter_map(|(d, l)| l.as_ref().map(|l| (d, l)))
        .collect();
    let mut bshape: Vec<usize> = Vec::new();
    for (_, l) in &defined {
        bshape = broadcast_shape(&bshape, &l.shape).map_err(|_| {
            let shapes: Vec<String> = defined.iter().map(|(_, l)| list(&l.shape)).collect();
            Error::index(format!(
                "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                shapes.join(", ")
            ))
        })?;
    }
    let bnum: usize = bshape.iter().product();
    for (d, _) in &defined {
        if self_[*d] == 0 && bnum > 0 {
            return Err(Error::index(
                "index is out of bounds for dimension with size 0",
            ));
        }
    }
    let (first, last) = (defined[0].0, defined[defined.len() - 1].0);
    let contiguous = defined.len() == last - first + 1;
    let rest: Vec<usize> = (0..self_.len()).filter(|d| longs[*d].is_none()).collect();
    // The result's dims: `None` stands for the broadcast index dims.
    let mut layout: Vec<Option<usize>> = Vec::new();
    if contiguous {
        layout.extend(rest.iter().filter(|d| **d < first).map(|d| Some(*d)));
        layout.push(None);
        layout.extend(rest.iter().filter(|d| **d > last).map(|d| Some(*d)));
    } else {
        layout.push(None);
        layout.extend(rest.iter().map(|d| Some(*d)));
    }
    let mut shape = Vec::new();
    for l in &layout {
        match l {
            Some(d) => shape.push(self_[*d]),
            None => shape.extend_from_slice(&bshape),
        }
    }
    let offsets = positions(self_, &shape, &layout, &bshape, &defined)?;
    Ok(Advanced { shape, offsets })
}

/// Each result element's row-major position in `self`, the indices checked in PyTorch's
/// order (element by element, dims in order).
fn positions(
    self_: &[usize],
    shape: &[usize],
    layout: &[Option<usize>],
    bshape: &[usize],
    defined: &[(usize, &Long)],
) -> R<Vec<usize>> {
    let st = strides(self_);
    let rst = strides(shape);
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut coord = vec![0; shape.len()];
    for k in 0..n {
        let mut rest = k;
        for (c, s) in coord.iter_mut().zip(&rst) {
            *c = rest / s;
            rest %= s;
        }
        let mut off = 0;
        let mut r = 0;
        for l in layout {
            match l {
                Some(d) => {
                    off += coord[r] * st[*d];
                    r += 1;
                }
                None => {
                    let at = &coord[r..r + bshape.len()];
                    // PyTorch's message counts the indexed dims (its `AdvancedIndex`'s).
                    for (k, (d, ix)) in defined.iter().enumerate() {
                        off += wrapped(broadcast_at(ix, at), k, self_[*d])? * st[*d];
                    }
                    r += bshape.len();
                }
            }
        }
        out.push(off);
    }
    Ok(out)
}

/// An index element into the `d`-th indexed dim, of size `n` (negative counts from the end), or PyTorch's
/// "index ... is out of bounds for dimension ... with size ...".
fn wrapped(v: i64, d: usize, n: usize) -> R<usize> {
    let n_i = n as i64;
    if v < -n_i || v >= n_i {
        return Err(Error::index(format!(
            "index {v} is out of bounds for dimension {d} with size {n}"
        )));
    }
    Ok(if v < 0 {
        (v + n_i) as usize
    } else {
        v as usize
    })
}

/// `scatter.src` / `scatter.value`: PyTorch's checks (`scatter_shape_check`, then each index
/// in range, element by element) and, for each element of `index` (row-major), the row-major
/// position in `self` it writes and the one in `src` it reads (`src`'s shape; `0` for
/// `scatter.value`). The index's dtype is the backend's check (`dtype::check_index`).
///
/// ```
/// use autograd_opset::meta;
/// let p = meta::scatter(&[2, 3], 1, &[2, 1], &[2, 0], Some(&[2, 2])).unwrap();
/// assert_eq!(p, vec![(2, 0), (3, 2)]);
/// assert_eq!(meta::scatter(&[2, 3], 1, &[1, 1], &[3], None).unwrap_err().to_string(),
///            "index 3 is out of bounds for dimension 1 with size 3");
/// ```
pub fn scatter(
    self_: &[usize],
    dim: i64,
    index: &[usize],
    index_data: &[i64],
    src: Option<&[usize]>,
) -> R<Vec<(usize, usize)>> {
    let ax = crate::shape::norm_dim(dim, self_.len())?;
    match src {
        Some(_) => crate::shape::check_gather_shapes(self_, ax, index, src)?,
        None => scatter_value_shapes(self_, ax, index)?,
    }
    let pad = |s: &[usize]| if s.is_empty() { vec![1] } else { s.to_vec() };
    let (sp, ip) = (pad(self_), pad(index));
    let spp = src.map(pad);
    let (sst, ist) = (strides(&sp), strides(&ip));
    let srst = spp.as_deref().map(strides);
    let n = sp[ax];
    let mut out = Vec::with_capacity(index_data.len());
    for (k, &v) in index_data.iter().enumerate() {
        if v < 0 || v >= n as i64 {
            return Err(Error::index(format!(
                "index {v} is out of bounds for dimension {ax} with size {n}"
            )));
        }
        let (mut to, mut from, mut rest) = (0, 0, k);
        for d in 0..ip.len() {
            let c = rest / ist[d];
            rest %= ist[d];
            to += if d == ax { v as usize } else { c } * sst[d];
            from += srst.as_ref().map_or(0, |st| c * st[d]);
        }
        out.push((to, from));
    }
    Ok(out)
}

/// PyTorch's `scatter_shape_check` without `src` (`scatter.value`).
fn scatter_value_shapes(self_: &[usize], ax: usize, index: &[usize]) -> R<()> {
    if index.contains(&0) {
        return Ok(());
    }
    check(index.len().max(1) == self_.len().max(1), || {
        "Index tensor must have the same number of dimensions as self tensor".into()
    })?;
    let size = |t: &[usize], d: usize| t.get(d).copied().unwrap_or(1);
    let fits = (0..self_.len().max(1)).all(|d| d == ax || size(index, d) <= size(self_, d));
    check(fits, || {
        format!(
            "Expected index {index:?} to be no larger than self {self_:?} apart from dimension {ax}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn longs(shape: &[usize], data: &[i64]) -> Vec<usize> {
        let i = [None, Some(Index::Long(shape, data))];
        index_tensor(&[2, 3], &i).unwrap().offsets
    }

    #[test]
    fn slices_and_indices() {
        assert_eq!(longs(&[2], &[2, 0]), vec![2, 0, 5, 3]);
        let i = [
            Some(Index::Long(&[2], &[0, 1])),
            None,
            Some(Index::Long(&[1], &[1])),
        ];
        let a = index_tensor(&[2, 3, 2], &i).unwrap();
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(a.offsets, vec![1, 3, 5, 7, 9, 11]);
    }

    #[test]
    fn masks_and_errors() {
        let i = [Some(Index::Mask(
            &[2, 3],
            &[true, false, true, false, true, true],
        ))];
        let a = index_tensor(&[2, 3], &i).unwrap();
        assert_eq!((a.shape, a.offsets), (vec![4], vec![0, 2, 4, 5]));
        let e = index_tensor(&[2, 3], &[Some(Index::Mask(&[3], &[true; 3]))]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3] at index 0"
        );
        let i = [
            Some(Index::Long(&[2], &[0, 1])),
            Some(Index::Long(&[3], &[0, 1, 2])),
        ];
        assert_eq!(
            index_tensor(&[2, 3], &i).unwrap_err().to_string(),
            "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"
        );
        let e = index_tensor(&[2], &[None, None]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "too many indices for tensor of dimension 1 (got 2)"
        );
        let e = index_put(&[2], &[Some(Index::Long(&[1], &[0]))], &[1], "f64", "f32").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Index put requires the source and destination dtypes match, got Double for the destination and Float for the source."
        );
    }
}
