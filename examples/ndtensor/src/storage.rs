//! The storage of a floating-point tensor: [`FloatTensor`], one `Arc` around an array view
//! and the element buffer it points into. A fresh tensor costs two heap allocations (that
//! `Arc` and the buffer), a view (`transpose`, `slice`, ...) one, sharing the buffer.
//!
//! A tensor made from row-major values ([`FloatTensor::from_row_major`]: the elementwise
//! kernels' results) keeps its dimensions inline and builds the view when first asked for;
//! its shape and slice, all an elementwise kernel reads, need none. Up to four such values
//! ([`FloatTensor::from_row_major_iter`]) are kept in the `Arc`'s own allocation: a scalar
//! result is one heap allocation.
//!
//! This module holds the crate's only `unsafe` code: the view's lifetime is extended to
//! `'static` while the `Arc` it lives in keeps its buffer alive, and it is handed out only
//! re-borrowed for as long as the tensor is borrowed.

use crate::element::Element;
use ndarray::{Array, ArrayView, Dimension, IxDyn, ShapeBuilder};
use std::convert::Infallible;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// An immutable n-d array of `E` (any rank, possibly strided): a view into a buffer that this
/// value, or the tensor it is a view of, owns. Cloning is one atomic increment; views made by
/// [`derive`](FloatTensor::derive) share the buffer. The kernels of `backend.rs` are written
/// over it, and [`Data::Float`](crate::Data::Float) holds one.
///
/// ```
/// use ndtensor::FloatTensor;
/// let a = FloatTensor::from_array(ndarray::arr2(&[[1.0, 2.0], [3.0, 4.0]]).into_dyn());
/// let t = a.derive(|v| v.reversed_axes());
/// assert_eq!(t.arr().strides(), &[1, 2]);
/// assert_eq!(t.arr().as_ptr(), a.arr().as_ptr()); // no copy
/// ```
pub struct FloatTensor<E: Element = f64> {
    inner: Arc<Inner<E>>,
}

struct Inner<E: 'static> {
    /// Points into the buffer of `owner` (or of the tensor `owner` holds). Never handed out
    /// with its `'static` lifetime: only re-borrowed for as long as the tensor is. Built
    /// when first asked for on a tensor with `dims` (see there), at once on the others.
    view: OnceLock<ArrayView<'static, E, IxDyn>>,
    /// The dimensions of a tensor made by [`FloatTensor::from_row_major`] (rank at most
    /// [`INLINE_DIMS`]): its owner is a `Buffer` with the elements in row-major order. The
    /// elementwise kernels read a tensor's shape and slice and make their result this way,
    /// without ndarray's dynamic dimensions (building one from a slice, twice per view, was
    /// about 170 instructions per result and a store-forwarding stall on the W1 benchmark).
    dims: Option<Dims>,
    owner: Owner<E>,
    /// Whether the tensor is a ZeroTensor: zeros standing for an absent tangent
    /// ([`FloatTensor::zero_tensor`]); views of one are ZeroTensors too, as in PyTorch.
    zero: bool,
}

/// Up to this many dimensions are kept inline ([`Inner::dims`]).
const INLINE_DIMS: usize = 4;

/// Up to this many elements of a row-major result are kept inline ([`Owner::Small`]):
/// scalars (losses, reductions, one-element chains) and tiny vectors.
const SMALL: usize = 4;

#[derive(Clone, Copy)]
struct Dims {
    len: u8,
    d: [usize; INLINE_DIMS],
    /// The number of elements (the product of the dimensions).
    n: usize,
}

impl Dims {
    /// `shape` (at most [`INLINE_DIMS`] dimensions) of `count` elements.
    ///
    /// # Panics
    ///
    /// If `count` is not the product of the shape.
    fn of(shape: &[usize], count: usize) -> Dims {
        let n = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        assert_eq!(n, Some(count), "values do not fit the shape {shape:?}");
        let mut d = [0; INLINE_DIMS];
        // A loop, not `copy_from_slice` (a `memcpy` call for a length known only here).
        for (x, s) in d.iter_mut().zip(shape) {
            *x = *s;
        }
        Dims {
            len: shape.len() as u8,
            d,
            n: count,
        }
    }

    #[inline]
    fn shape(&self) -> &[usize] {
        &self.d[..usize::from(self.len)]
    }

    #[inline]
    fn count(&self) -> usize {
        self.n
    }
}

enum Owner<E: 'static> {
    /// The elements, never mutated nor reallocated, dropped with `view` (read directly only
    /// when `dims` is set: then they are the row-major elements).
    Buffer(Vec<E>),
    /// Up to [`SMALL`] row-major elements (with `dims` set), in the `Arc`'s own allocation:
    /// a one-element result is one heap allocation, not two. The `Arc` never moves them, so
    /// the view (built on first use, after the `Arc` exists) may point here.
    Small([E; SMALL]),
    /// The root tensor, whose owner is a `Buffer`: a view of a view holds the root, not the
    /// middle view.
    Base(Arc<Inner<E>>),
}

/// `v` with its lifetime extended to `'static`.
///
/// # Safety
///
/// The elements `v` points to must stay alive and unmutated for as long as the result (or
/// anything derived from it) is used.
unsafe fn forever<'a, E>(v: ArrayView<'a, E, IxDyn>) -> ArrayView<'static, E, IxDyn> {
    // SAFETY: the types differ only in the lifetime (same layout); the caller keeps the
    // elements alive and unmutated as long as the result is used.
    unsafe { std::mem::transmute::<ArrayView<'a, E, IxDyn>, ArrayView<'static, E, IxDyn>>(v) }
}

impl<E: Element> FloatTensor<E> {
    /// Takes over `a`'s buffer, without copying: the tensor has `a`'s shape, strides and
    /// first element (an array sliced in place keeps its offset into the buffer).
    pub fn from_array<D: Dimension>(a: Array<E, D>) -> Self {
        let a = a.into_dyn();
        // SAFETY: the view points into `a`'s heap buffer. `into_raw_vec_and_offset` hands
        // that buffer over as a `Vec` without moving or reallocating it (checked below in
        // debug builds); `Inner` keeps the `Vec`, never mutates it, and drops it only with
        // the view. A zero-element array's pointer is dangling but aligned, and never read.
        let view = unsafe { forever(a.view()) };
        let (buffer, offset) = a.into_raw_vec_and_offset();
        debug_assert_eq!(
            offset.map(|o| buffer.as_ptr().wrapping_add(o)),
            (!view.is_empty()).then(|| view.as_ptr()),
            "the buffer moved"
        );
        FloatTensor {
            inner: Arc::new(Inner {
                view: OnceLock::from(view),
                dims: None,
                owner: Owner::Buffer(buffer),
                zero: false,
            }),
        }
    }

    /// Row-major values `v` (one per element) with dimensions `shape`, taking over `v`
    /// without copying (the elementwise kernels' results are made here).
    ///
    /// # Panics
    ///
    /// If the number of values is not the product of the shape.
    pub fn from_row_major(v: Vec<E>, shape: &[usize]) -> Self {
        if shape.len() > INLINE_DIMS {
            let a = Array::from_shape_vec(IxDyn(shape), v);
            return FloatTensor::from_array(a.expect("values do not fit the shape"));
        }
        FloatTensor {
            inner: Arc::new(Inner {
                view: OnceLock::new(),
                dims: Some(Dims::of(shape, v.len())),
                owner: Owner::Buffer(v),
                zero: false,
            }),
        }
    }

    /// The values of `values` (one per element, row-major) with dimensions `shape`: up to
    /// four of them inline, in the tensor's one allocation; more in a `Vec`
    /// ([`from_row_major`](Self::from_row_major)).
    ///
    /// # Panics
    ///
    /// If the number of values is not the product of the shape.
    pub fn from_row_major_iter(values: impl ExactSizeIterator<Item = E>, shape: &[usize]) -> Self {
        if values.len() > SMALL || shape.len() > INLINE_DIMS {
            return FloatTensor::from_row_major(values.collect(), shape);
        }
        let dims = Dims::of(shape, values.len());
        FloatTensor::small(values, dims)
    }

    /// A tensor of `self`'s shape holding `values` (one per element, row-major): an
    /// elementwise kernel's result. The dimensions are copied from `self` when it keeps them
    /// inline (no shape checks then).
    ///
    /// # Panics
    ///
    /// If the number of values is not `self`'s number of elements.
    pub fn with_values(&self, values: impl ExactSizeIterator<Item = E>) -> Self {
        match self.inner.dims {
            Some(dims) if values.len() == dims.n && dims.n <= SMALL => {
                FloatTensor::small(values, dims)
            }
            _ => FloatTensor::from_row_major_iter(values, self.shape()),
        }
    }

    /// Up to [`SMALL`] values with `dims` (whose count they match), inline.
    fn small(values: impl Iterator<Item = E>, dims: Dims) -> Self {
        let mut small = [E::zero(); SMALL];
        for (x, v) in small.iter_mut().zip(values) {
            *x = v;
        }
        FloatTensor {
            inner: Arc::new(Inner {
                view: OnceLock::new(),
                dims: Some(dims),
                owner: Owner::Small(small),
                zero: false,
            }),
        }
    }

    /// The row-major elements of a tensor with inline dimensions.
    fn row_major(&self) -> Option<&[E]> {
        match (&self.inner.dims, &self.inner.owner) {
            (Some(_), Owner::Buffer(v)) => Some(v),
            (Some(dims), Owner::Small(s)) => Some(&s[..dims.count()]),
            _ => None,
        }
    }

    /// The strides (in elements) and the storage offset (the first element's position in
    /// the buffer) that PyTorch's `stride()` and `storage_offset()` report for this tensor.
    /// A fresh empty array's strides are ndarray's zeros: PyTorch's contiguous ones then.
    ///
    /// ```
    /// use ndtensor::FloatTensor;
    /// let a = FloatTensor::from_array(ndarray::Array::from_shape_vec((3, 4), (0..12).map(f64::from).collect()).unwrap());
    /// let v = a.derive(|v| v.slice_move(ndarray::s![1.., 2..]).into_dyn());
    /// assert_eq!(v.layout(), (vec![4, 1], 6));
    /// ```
    pub fn layout(&self) -> (Vec<i64>, i64) {
        let a = self.arr();
        if a.strides().iter().any(|s| *s < 0) {
            // A reversed view (ndarray's `flip`): PyTorch's `flip` makes a fresh tensor.
            return (autograd_opset::layout::contiguous_strides(a.shape()), 0);
        }
        (
            pytorch_strides(a.strides(), a.shape()),
            self.storage_offset() as i64,
        )
    }

    /// The position of the first element in the buffer (PyTorch's `storage_offset()`).
    pub fn storage_offset(&self) -> usize {
        let (start, len) = self.buffer();
        let offset = (self.arr().as_ptr() as usize).wrapping_sub(start as usize) / size_of::<E>();
        if offset <= len { offset } else { 0 }
    }

    /// The number of elements in the buffer `self` lives in (its root's): the storage
    /// [`as_strided`](Self::as_strided) reads.
    ///
    /// ```
    /// use ndtensor::FloatTensor;
    /// let a = FloatTensor::from_row_major((0..6).map(f64::from).collect(), &[2, 3]);
    /// assert_eq!(a.as_strided(&[2], &[1], 3).unwrap().storage_numel(), 6);
    /// ```
    pub fn storage_numel(&self) -> usize {
        let root = match &self.inner.owner {
            Owner::Base(root) => &**root,
            Owner::Buffer(_) | Owner::Small(_) => &*self.inner,
        };
        match (&root.owner, &root.dims) {
            (Owner::Buffer(v), _) => v.len(),
            (Owner::Small(_), Some(dims)) => dims.count(),
            (Owner::Small(_), None) | (Owner::Base(_), _) => 0,
        }
    }

    /// The start and length of the buffer the tensor's elements live in (its root's).
    fn buffer(&self) -> (*const E, usize) {
        let mut inner = &*self.inner;
        loop {
            match &inner.owner {
                Owner::Buffer(v) => return (v.as_ptr(), v.len()),
                Owner::Small(s) => return (s.as_ptr(), s.len()),
                Owner::Base(root) => inner = root,
            }
        }
    }

    /// The array, borrowed from `self`.
    pub fn arr(&self) -> &ArrayView<'_, E, IxDyn> {
        let view: *const ArrayView<'static, E, IxDyn> = self.inner.view.get_or_init(|| {
            let (Some(dims), Some(v)) = (&self.inner.dims, self.row_major()) else {
                unreachable!("only a tensor with inline dimensions has no view yet");
            };
            // SAFETY: `v` holds one element per position of `dims` in row-major order (checked
            // where the tensor was made, where the product of the dimensions did not
            // overflow), its pointer is aligned and non-null (dangling for no elements, never
            // read then). The elements are the `Vec`'s or the inline ones of this `Inner`,
            // which lives in the `Arc`'s allocation and does not move; neither is mutated, and
            // both are dropped only with the view.
            unsafe { forever(ArrayView::from_shape_ptr(IxDyn(dims.shape()), v.as_ptr())) }
        });
        // SAFETY: only the view's lifetime shrinks, to the borrow of `self` (which keeps the
        // elements alive): the same cast as ndarray's safe `ArrayView::reborrow`, behind a
        // shared reference (no coercion does it: `ArrayBase` is invariant over its storage
        // type, for want of variance through its associated types, not for soundness).
        unsafe { &*view.cast::<ArrayView<'_, E, IxDyn>>() }
    }

    /// A view of `self` without copying: `f` gets the array (as [`arr`](Self::arr) gives
    /// it) and returns a view of it (`reversed_axes`, `index_axis_move`, `insert_axis`,
    /// ...), whose strides the result keeps.
    pub fn derive(
        &self,
        f: impl for<'a> FnOnce(ArrayView<'a, E, IxDyn>) -> ArrayView<'a, E, IxDyn>,
    ) -> Self {
        match self.try_derive(|v| Ok::<_, Infallible>(f(v))) {
            Ok(t) => t,
            Err(never) => match never {},
        }
    }

    /// [`derive`](Self::derive) with a fallible `f` (`into_shape_with_order`, ...).
    pub fn try_derive<Err>(
        &self,
        f: impl for<'a> FnOnce(ArrayView<'a, E, IxDyn>) -> Result<ArrayView<'a, E, IxDyn>, Err>,
    ) -> Result<Self, Err> {
        let view = f(self.arr().view())?;
        let root = match &self.inner.owner {
            Owner::Base(root) => Arc::clone(root),
            Owner::Buffer(_) | Owner::Small(_) => Arc::clone(&self.inner),
        };
        // SAFETY: `f` returns an `ArrayView<'a>` for every `'a` (and `E: 'static` bounds no
        // `'a` from above), so the view borrows only from its input, the elements of `root`'s
        // buffer, or from `'static` data. The new `Inner` holds `root`, whose buffer is never
        // mutated, so the view stays valid for as long as it is used.
        let view = unsafe { forever(view) };
        Ok(FloatTensor {
            inner: Arc::new(Inner {
                view: OnceLock::from(view),
                dims: None,
                owner: Owner::Base(root),
                zero: self.inner.zero,
            }),
        })
    }

    /// A view of the buffer `self` lives in (its root's) with PyTorch's `size`, `stride` and
    /// `storage_offset` (`as_strided`): `None` when the elements it would read are not all in
    /// the buffer. The view ops whose strides ndarray does not keep as PyTorch does (a
    /// slice's stride over a length of 0 or 1, `unsqueeze`'s new stride, `diagonal`) are
    /// made here.
    ///
    /// ```
    /// use ndtensor::FloatTensor;
    /// let a = FloatTensor::from_row_major((0..6).map(f64::from).collect(), &[2, 3]);
    /// let d = a.as_strided(&[2], &[4], 0).unwrap(); // the diagonal
    /// assert_eq!(d.arr().iter().copied().collect::<Vec<_>>(), [0.0, 4.0]);
    /// assert_eq!(d.layout(), (vec![4], 0));
    /// assert!(a.as_strided(&[2], &[4], 3).is_none());
    /// ```
    pub fn as_strided(&self, size: &[usize], stride: &[usize], offset: usize) -> Option<Self> {
        let root = match &self.inner.owner {
            Owner::Base(root) => Arc::clone(root),
            Owner::Buffer(_) | Owner::Small(_) => Arc::clone(&self.inner),
        };
        let elements: &[E] = match (&root.owner, &root.dims) {
            (Owner::Buffer(v), _) => v,
            (Owner::Small(s), Some(dims)) => &s[..dims.count()],
            (Owner::Small(_), None) | (Owner::Base(_), _) => return None,
        };
        // The last element's position, checked: every element read is in `elements`.
        let last = size.iter().zip(stride).try_fold(offset, |acc, (n, s)| {
            acc.checked_add(n.checked_sub(1)?.checked_mul(*s)?)
        });
        let count = size.iter().try_fold(1usize, |a, n| a.checked_mul(*n));
        if count.is_none_or(|n| n > isize::MAX as usize) {
            return None;
        }
        let (shape, offset) = if size.contains(&0) {
            // An empty view reads nothing: ndarray's strides for an empty array (zeros, which
            // `layout` reports as PyTorch's contiguous ones), its offset kept where the buffer
            // has it (an empty slice of an empty tensor points at the buffer's end).
            let zeros = vec![0; size.len()];
            (
                IxDyn(size).strides(IxDyn(&zeros)),
                offset.min(elements.len()),
            )
        } else if last.is_some_and(|last| last < elements.len()) {
            (IxDyn(size).strides(IxDyn(stride)), offset)
        } else {
            return None;
        };
        // SAFETY: the element count fits `isize` (checked above); `offset <= elements.len()` (clamped for an empty view; otherwise
        // `offset <= last < elements.len()`, `last` the largest position the view reads,
        // computed above without overflow), so the pointer is in bounds or one past the end,
        // aligned and non-null, and a non-empty view reads only elements of `elements`. The
        // view is read-only, so overlapping positions (a stride of 0) are allowed. `elements`
        // belong to `root`, which the new `Inner` holds and whose elements are never mutated,
        // so the view stays valid for as long as it is used.
        let view = unsafe { ArrayView::from_shape_ptr(shape, elements.as_ptr().add(offset)) };
        Some(FloatTensor {
            inner: Arc::new(Inner {
                view: OnceLock::from(view),
                dims: None,
                owner: Owner::Base(root),
                zero: self.inner.zero,
            }),
        })
    }

    /// Zeros of `shape` that stand for an absent tangent (PyTorch's `_efficientzerotensor`):
    /// the arithmetic kernels leave their terms out (see `backend/dtype.rs`); every other
    /// kernel reads them as zeros.
    pub fn zero_tensor(shape: &[usize]) -> Self {
        let z = Array::<E, _>::zeros(IxDyn(shape));
        let mut t = FloatTensor::from_array(z);
        if let Some(inner) = Arc::get_mut(&mut t.inner) {
            inner.zero = true;
        }
        t
    }

    /// Whether this is a ZeroTensor ([`zero_tensor`](Self::zero_tensor)) or a view of one.
    pub fn is_zero_tensor(&self) -> bool {
        self.inner.zero
    }

    /// The dimensions.
    pub fn shape(&self) -> &[usize] {
        match &self.inner.dims {
            Some(dims) => dims.shape(),
            None => self.arr().shape(),
        }
    }

    /// The number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape().len()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match &self.inner.dims {
            Some(dims) => dims.count(),
            None => self.arr().len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.arr().is_empty()
    }

    /// The elements as a slice, if they are contiguous in row-major order.
    pub fn as_slice(&self) -> Option<&[E]> {
        self.row_major().or_else(|| self.arr().to_slice())
    }

    /// Whether the elements are laid out contiguously in row-major order.
    pub fn is_standard_layout(&self) -> bool {
        self.inner.dims.is_some() || self.arr().is_standard_layout()
    }

    /// `f` of each element, in row-major order (over a slice when they are contiguous).
    pub fn map_to_vec<U>(&self, mut f: impl FnMut(E) -> U) -> Vec<U> {
        match self.as_slice() {
            Some(s) => s.iter().map(|x| f(*x)).collect(),
            None => self.iter().map(|x| f(*x)).collect(),
        }
    }

    /// The elements in logical (row-major) order.
    pub fn iter(&self) -> ndarray::iter::Iter<'_, E, IxDyn> {
        self.arr().iter()
    }

    /// A copy as an owned array (keeping a layout that is contiguous in memory).
    pub fn to_owned(&self) -> Array<E, IxDyn> {
        self.arr().to_owned()
    }
}

impl<E: Element> Clone for FloatTensor<E> {
    fn clone(&self) -> Self {
        FloatTensor {
            inner: Arc::clone(&self.inner),
        }
    }
}

/// Same shape and equal elements (as ndarray's arrays compare).
impl<E: Element> PartialEq for FloatTensor<E> {
    fn eq(&self, other: &Self) -> bool {
        self.arr() == other.arr()
    }
}

impl<E: Element> fmt::Debug for FloatTensor<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.arr(), f)
    }
}

impl<E: Element> fmt::Display for FloatTensor<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.arr(), f)
    }
}

/// The strides PyTorch reports for an array of `shape` with ndarray's `strides`: ndarray's,
/// except for a fresh empty array, whose strides ndarray makes zeros and PyTorch contiguous.
pub(crate) fn pytorch_strides(strides: &[isize], shape: &[usize]) -> Vec<i64> {
    if shape.contains(&0) && strides.iter().all(|s| *s == 0) {
        autograd_opset::layout::contiguous_strides(shape)
    } else {
        strides.iter().map(|s| *s as i64).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Axis, Slice, array};

    fn matrix() -> FloatTensor<f64> {
        FloatTensor::from_array(array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    }

    #[test]
    fn a_view_of_a_view_keeps_the_root_alive() {
        let root = matrix();
        let ptr = root.arr().as_ptr();
        let middle = root.derive(|v| v.reversed_axes());
        let leaf = middle.derive(|v| v.index_axis_move(Axis(1), 1));
        assert!(matches!(&leaf.inner.owner, Owner::Base(r) if Arc::ptr_eq(r, &root.inner)));
        drop((root, middle));
        assert_eq!(leaf.iter().copied().collect::<Vec<_>>(), [4.0, 5.0, 6.0]);
        assert_eq!(leaf.arr().as_ptr(), ptr.wrapping_add(3));
        assert_eq!(leaf.arr().strides(), &[1]);
    }

    #[test]
    fn derive_shares_the_buffer_and_keeps_the_strides() {
        let a = matrix();
        let t = a.derive(|v| v.reversed_axes());
        assert_eq!(t.arr().as_ptr(), a.arr().as_ptr());
        assert_eq!(t.shape(), &[3, 2]);
        assert_eq!(t.arr().strides(), &[1, 3]);
        assert!(!t.is_standard_layout());
        assert_eq!(
            t.to_owned(),
            array![[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]].into_dyn()
        );
        let r: Result<_, ndarray::ShapeError> =
            t.try_derive(|v| v.into_shape_with_order(IxDyn(&[6])));
        assert!(r.is_err());
        let s = a
            .try_derive(|v| v.into_shape_with_order(IxDyn(&[6])))
            .unwrap();
        assert_eq!(
            (s.arr().as_ptr(), s.as_slice().map(<[_]>::len)),
            (a.arr().as_ptr(), Some(6))
        );
    }

    #[test]
    fn from_array_keeps_the_offset_of_an_array_sliced_in_place() {
        let mut a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]].into_dyn();
        a.slice_axis_inplace(Axis(1), Slice::new(1, None, -1));
        a.slice_axis_inplace(Axis(0), Slice::from(1..));
        let t = FloatTensor::from_array(a.clone());
        assert_eq!(t.arr(), &a.view());
        assert_eq!(t.iter().copied().collect::<Vec<_>>(), [6.0, 5.0, 9.0, 8.0]);
        assert_eq!(t.arr().strides(), &[3, -1]);
        let column = t.derive(|v| v.index_axis_move(Axis(1), 1));
        assert_eq!(column.iter().copied().collect::<Vec<_>>(), [5.0, 8.0]);
    }

    #[test]
    fn zero_elements() {
        let t = FloatTensor::<f32>::from_array(Array::zeros(IxDyn(&[2, 0, 3])));
        assert!(t.is_empty());
        assert_eq!(t.shape(), &[2, 0, 3]);
        let u = t.derive(|v| v.permuted_axes(IxDyn(&[2, 0, 1])));
        assert_eq!((u.shape(), u.iter().count()), (&[3, 2, 0][..], 0));
        assert_eq!(u, FloatTensor::from_array(Array::zeros(IxDyn(&[3, 2, 0]))));
        let e = FloatTensor::<f64>::from_array(Array::zeros(IxDyn(&[0])));
        assert_eq!(e.derive(|v| v.insert_axis(Axis(0))).shape(), &[1, 0]);
    }

    #[test]
    fn a_row_major_tensor_builds_its_view_only_when_asked() {
        let t = FloatTensor::from_row_major(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        assert_eq!((t.shape(), t.ndim(), t.len()), (&[2, 3][..], 2, 6));
        assert_eq!(t.as_slice(), Some(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0][..]));
        assert!(t.is_standard_layout());
        assert!(t.inner.view.get().is_none(), "shape and slice need no view");
        assert_eq!(t, matrix());
        assert_eq!(t.arr().strides(), &[3, 1]);
        assert_eq!(
            t.arr().as_ptr(),
            t.as_slice().unwrap().as_ptr(),
            "a view, not a copy"
        );
        let c = t.derive(|v| v.index_axis_move(Axis(1), 2));
        drop(t);
        assert_eq!(c.iter().copied().collect::<Vec<_>>(), [3.0, 6.0]);
        let s = FloatTensor::from_row_major(vec![7.0f32], &[]);
        assert_eq!((s.shape(), s.arr().ndim(), s.len()), (&[][..], 0, 1));
        let e = FloatTensor::<f64>::from_row_major(vec![], &[3, 0]);
        assert_eq!((e.is_empty(), e.arr().shape()), (true, &[3, 0][..]));
        let big = FloatTensor::from_row_major((0..32).map(f64::from).collect(), &[2; 5]);
        assert!(
            big.inner.view.get().is_some(),
            "more than four dimensions: built at once"
        );
        assert_eq!(big.arr()[[1, 1, 1, 1, 1].as_slice()], 31.0);
    }

    #[test]
    #[should_panic(expected = "values do not fit the shape")]
    fn a_row_major_tensor_needs_one_value_per_element() {
        FloatTensor::from_row_major(vec![1.0f32; 5], &[2, 3]);
    }

    #[test]
    fn with_values_takes_the_shape_of_self() {
        let a = FloatTensor::from_row_major_iter([1.0, 2.0].into_iter(), &[2, 1]);
        let b = a.with_values([3.0, 4.0].into_iter());
        assert_eq!(
            (b.shape(), b.as_slice()),
            (&[2, 1][..], Some(&[3.0, 4.0][..]))
        );
        let t = matrix().derive(|v| v.reversed_axes());
        let c = t.with_values((0..6).map(f64::from));
        assert_eq!((c.shape(), c.arr().strides()), (&[3, 2][..], &[2, 1][..]));
        let d = matrix().derive(|v| v.index_axis_move(Axis(0), 0));
        assert!(matches!(
            d.with_values([7.0; 3].into_iter()).inner.owner,
            Owner::Small(_)
        ));
    }

    #[test]
    #[should_panic(expected = "values do not fit the shape")]
    fn with_values_needs_one_value_per_element() {
        let a = FloatTensor::from_row_major_iter([1.0f32, 2.0].into_iter(), &[2]);
        a.with_values([1.0].into_iter());
    }

    /// Counts this thread's allocations (the tests run on several threads).
    struct Counting;

    thread_local! {
        static ALLOCATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    // SAFETY: forwards to the system allocator; the counter is a `const`-initialized
    // thread-local without a destructor, so counting allocates nothing.
    unsafe impl std::alloc::GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
            ALLOCATIONS.with(|n| n.set(n.get() + 1));
            // SAFETY: the caller's contract is `System.alloc`'s.
            unsafe { std::alloc::System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
            // SAFETY: `ptr` was allocated by `System` with `layout`.
            unsafe { std::alloc::System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    fn allocations<T>(f: impl FnOnce() -> T) -> (T, usize) {
        let before = ALLOCATIONS.with(|n| n.get());
        let r = f();
        (r, ALLOCATIONS.with(|n| n.get()) - before)
    }

    #[test]
    fn a_fresh_tensor_is_two_allocations_a_small_one_one_and_a_view_one() {
        use crate::{Backend, NdTensor};
        let x = NdTensor::<f32>::from_vec(vec![2.0; 5], &[5]);
        let (y, n) = allocations(|| NdTensor::mul_tensor(&x, &x).unwrap());
        assert_eq!((y.to_vec(), n), (vec![4.0; 5], 2));
        let (t, n) = allocations(|| NdTensor::unsqueeze(&y, 0).unwrap());
        assert_eq!((t.shape(), n), (&[1, 5][..], 1));
        let s = NdTensor::<f32>::from_vec(vec![3.0], &[1]);
        let (z, n) = allocations(|| NdTensor::mul_tensor(&s, &s).unwrap());
        assert_eq!((z.to_vec(), n), (vec![9.0], 1), "inline elements");
        let (_, n) = allocations(|| drop((x, y, t, s, z)));
        assert_eq!(n, 0);
    }

    #[test]
    fn a_small_tensor_keeps_its_elements_in_its_allocation() {
        let t = FloatTensor::from_row_major_iter([1.0, 2.0, 3.0, 4.0].into_iter(), &[2, 2]);
        assert!(matches!(t.inner.owner, Owner::Small(_)));
        assert_eq!(t.as_slice(), Some(&[1.0, 2.0, 3.0, 4.0][..]));
        assert_eq!(
            t.arr().as_ptr(),
            t.as_slice().unwrap().as_ptr(),
            "the view points inline"
        );
        let col = t.derive(|v| v.index_axis_move(Axis(1), 1));
        let moved = vec![t.clone()];
        drop((t, moved));
        assert_eq!(col.iter().copied().collect::<Vec<_>>(), [2.0, 4.0]);
        let s = FloatTensor::from_row_major_iter(std::iter::once(5.0f32), &[]);
        assert_eq!((s.shape(), s.len(), s.arr().sum()), (&[][..], 1, 5.0));
        let e = FloatTensor::<f64>::from_row_major_iter(std::iter::empty(), &[0, 3]);
        assert_eq!((e.len(), e.arr().shape()), (0, &[0, 3][..]));
        let big = FloatTensor::from_row_major_iter((0..5).map(f64::from), &[5]);
        assert!(
            matches!(big.inner.owner, Owner::Buffer(_)),
            "more than SMALL: a Vec"
        );
    }

    #[test]
    fn a_tensor_is_at_most_three_words() {
        // The autograd runtime keeps tensors inline (in variables, saved values, gradient
        // lists) and moves and clones them constantly.
        assert!(size_of::<crate::NdTensor<f32>>() <= 24);
        assert_eq!(size_of::<crate::NdTensor<f64>>(), 16);
        assert_eq!(size_of::<FloatTensor<f32>>(), size_of::<usize>());
    }
}
