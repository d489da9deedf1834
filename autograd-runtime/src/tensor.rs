//! The [`Tensor`] trait: what the engine needs from a raw tensor type.

use std::fmt;

/// The raw tensor type of a tensor library, as seen by the autograd runtime.
///
/// Only what the engine itself needs: summing gradients, seeds (`ones_like`),
/// materialised zero gradients (`zeros_like`), and shape/dtype for validation
/// and messages. Everything else (the actual math) lives in your library and
/// in the backward nodes.
///
/// `clone()` must be cheap (the runtime clones raw tensors when saving them and
/// when reading [`Variable::data`](crate::Variable::data)): make the type a
/// handle to shared storage (`Arc`-backed) or a small `Copy`-like value.
///
/// ```
/// use autograd_runtime::Tensor;
/// use std::sync::Arc;
///
/// #[derive(Clone, Debug)]
/// struct MyTensor { data: Arc<Vec<f32>>, shape: Vec<usize> }
///
/// impl Tensor for MyTensor {
///     fn shape(&self) -> &[usize] { &self.shape }
///     fn dtype(&self) -> &'static str { "f32" }
///     fn ones_like(&self) -> Self { MyTensor { data: Arc::new(vec![1.0; self.data.len()]), shape: self.shape.clone() } }
///     fn zeros_like(&self) -> Self { MyTensor { data: Arc::new(vec![0.0; self.data.len()]), shape: self.shape.clone() } }
///     fn add(&self, other: &Self) -> Self {
///         let data = self.data.iter().zip(other.data.iter()).map(|(a, b)| a + b).collect();
///         MyTensor { data: Arc::new(data), shape: self.shape.clone() }
///     }
///     fn has_nan(&self) -> bool { self.data.iter().any(|x| x.is_nan()) }
/// }
/// ```
pub trait Tensor: Clone + Send + Sync + 'static {
    /// The dimensions (`[]` for a 0-d scalar).
    fn shape(&self) -> &[usize];
    /// A short dtype name, e.g. `"f32"`; gradients must have the dtype of
    /// the tensor they are for.
    fn dtype(&self) -> &'static str;
    /// A tensor of ones with this shape and dtype (seed of `backward()` on a scalar).
    fn ones_like(&self) -> Self;
    /// A tensor of zeros with this shape and dtype (materialised undefined gradients).
    fn zeros_like(&self) -> Self;
    /// Zeros with this shape that stand for an absent tangent: what a forward formula reads
    /// as `x_t` for an input without a tangent (PyTorch's `_efficientzerotensor`, a
    /// ZeroTensor). A library with PyTorch's ZeroTensor arithmetic returns a tensor its
    /// `add`, `sub`, `mul` and `div` kernels recognise, and leaves its terms out as PyTorch's
    /// ZeroTensor kernels do (`zero * x` is a zero tensor even where `x` is infinite, `x /
    /// zero` is `inf`, `zero + x` is `x`), so that `0 * inf` never turns a tangent into NaN;
    /// its other kernels read it as zeros. The default is [`Tensor::zeros_like`] (`0 * inf`
    /// is then NaN).
    fn zero_tensor_like(&self) -> Self {
        self.zeros_like()
    }
    /// Elementwise sum of two tensors of the same shape (gradient accumulation).
    fn add(&self, other: &Self) -> Self;
    /// Whether any element is NaN (checked on backward outputs in anomaly mode).
    fn has_nan(&self) -> bool;
    /// Number of elements; the default is the product of the shape.
    fn numel(&self) -> usize {
        self.shape().iter().product()
    }
    /// Whether this tensor's dtype can carry gradients (PyTorch's `isDifferentiableType`:
    /// floating point and complex). An integer or boolean result never gets a history, even
    /// from an op whose inputs require grad. The default is `true` (a float-only library).
    fn is_differentiable(&self) -> bool {
        true
    }
    /// The sum of this tensor over the dimensions that broadcasting added or expanded, so
    /// that the result has `shape` (PyTorch's `at::sum_to`); `shape` broadcasts to
    /// `self.shape()`. The engine calls it when a node returns a gradient of a broadcast
    /// shape, as PyTorch's engine does (`validate_outputs`), so that formulas need not
    /// reduce their results themselves. `None` (the default) when the library does not
    /// provide it: such a gradient is then refused with PyTorch's shape error.
    fn sum_to(&self, shape: &[usize]) -> Option<Self> {
        let _ = shape;
        None
    }
    /// This tensor broadcast to `shape` (`expand`, copying or not): the backward of
    /// [`Tensor::sum_to`] under `create_graph`. `None` (the default) when not provided.
    fn expand_to(&self, shape: &[usize]) -> Option<Self> {
        let _ = shape;
        None
    }
    /// This tensor converted to the dtype named `dtype` (one of the names
    /// [`Tensor::dtype`] returns). The engine converts a gradient of another floating dtype
    /// to its input's dtype, as PyTorch's does. `None` (the default) when not provided: such
    /// a gradient is then refused with PyTorch's dtype error.
    fn to_dtype(&self, dtype: &'static str) -> Option<Self> {
        let _ = dtype;
        None
    }
    /// `other`'s elements where `mask` (ones and zeros, all three of this shape and dtype) is
    /// nonzero, this tensor's elsewhere (PyTorch's `where(mask, other, self)`). The runtime
    /// writes an in-place change of one of several views returned by one op (`unbind`,
    /// `split`, `chunk`, which have no inverse of their own) into their base with it, where
    /// nothing records (forward mode, no grad). `None` (the default) when not provided: such
    /// a write is then refused.
    fn select_where(&self, mask: &Self, other: &Self) -> Option<Self> {
        let _ = (mask, other);
        None
    }
    /// The strides of this tensor's elements in its storage, in elements (PyTorch's
    /// `strides()`): what a formula's `TensorGeometry(x)` saves, for `as_strided`'s backward.
    /// The default is a fresh row-major tensor's ([`contiguous_strides`]); a library whose
    /// views share strided storage reports its own.
    fn strides(&self) -> Vec<i64> {
        contiguous_strides(self.shape())
    }
    /// The position of this tensor's first element in its storage (PyTorch's
    /// `storage_offset()`). The default is 0.
    fn storage_offset(&self) -> i64 {
        0
    }
    /// Type name used in messages, like PyTorch's `torch.FloatTensor`.
    /// Defaults to `Tensor<dtype>`.
    fn type_name(&self) -> String {
        format!("Tensor<{}>", self.dtype())
    }
}

/// The strides of a fresh (contiguous, row-major) tensor of `shape`, in elements, as PyTorch
/// makes them: each is the product of the later sizes, a size of 0 counting as 1.
///
/// ```
/// assert_eq!(autograd_runtime::contiguous_strides(&[2, 0, 3]), [3, 3, 1]);
/// ```
pub fn contiguous_strides(shape: &[usize]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1].max(1) as i64;
    }
    strides
}

/// Shape and dtype of a tensor, stored inline for up to four dimensions.
///
/// A node keeps one per forward output (PyTorch's `InputMetadata`), to check
/// the gradients that flow into it.
#[derive(Clone, PartialEq, Eq)]
pub struct TensorMeta {
    shape: Shape,
    dtype: &'static str,
}

#[derive(Clone, PartialEq, Eq)]
enum Shape {
    Inline(u8, [usize; 4]),
    Heap(Box<[usize]>),
}

impl TensorMeta {
    /// The metadata of `t`.
    pub fn of<T: Tensor>(t: &T) -> Self {
        Self::new(t.shape(), t.dtype())
    }

    /// The metadata of a tensor of `shape` and `dtype`.
    pub(crate) fn new(shape: &[usize], dtype: &'static str) -> Self {
        let shape = if shape.len() <= 4 {
            let mut dims = [0; 4];
            dims[..shape.len()].copy_from_slice(shape);
            Shape::Inline(shape.len() as u8, dims)
        } else {
            Shape::Heap(shape.into())
        };
        TensorMeta { shape, dtype }
    }

    /// The dimensions.
    pub fn shape(&self) -> &[usize] {
        match &self.shape {
            Shape::Inline(n, d) => &d[..*n as usize],
            Shape::Heap(d) => d,
        }
    }

    /// The dtype name.
    pub fn dtype(&self) -> &'static str {
        self.dtype
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape().iter().product()
    }
}

impl fmt::Debug for TensorMeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{:?}", self.dtype, self.shape())
    }
}

/// Dtype names compared by address first: a backend returns the same
/// `&'static str` for a dtype every time, and a `memcmp` call per gradient
/// showed in profiles (W1).
#[inline]
pub(crate) fn same_dtype(a: &'static str, b: &'static str) -> bool {
    std::ptr::eq(a, b) || a == b
}

/// Tensor types for the runtime's unit tests: `Handle<X>`, whose size is its payload's (as
/// large as `X`: a two-word `Arc<[f32]>`, or a backend's five-word shape and buffer), for the
/// tests of what fits where; `Val`, values with a shape and a dtype, for the tests that
/// compute gradients.
#[cfg(test)]
pub(crate) mod testing {
    use super::Tensor;

    /// Values of one shape and dtype (elementwise `add`; `sum_to` and `to_dtype` provided).
    #[derive(Clone, Debug, PartialEq)]
    pub(crate) struct Val {
        pub(crate) shape: Vec<usize>,
        pub(crate) data: Vec<f64>,
        pub(crate) dtype: &'static str,
    }

    /// A one-element `f64` tensor of shape `[]`.
    pub(crate) fn val(x: f64) -> Val {
        Val {
            shape: Vec::new(),
            data: vec![x],
            dtype: "f64",
        }
    }

    impl Tensor for Val {
        fn shape(&self) -> &[usize] {
            &self.shape
        }
        fn dtype(&self) -> &'static str {
            self.dtype
        }
        fn ones_like(&self) -> Self {
            Val {
                data: vec![1.0; self.data.len()],
                ..self.clone()
            }
        }
        fn zeros_like(&self) -> Self {
            Val {
                data: vec![0.0; self.data.len()],
                ..self.clone()
            }
        }
        fn add(&self, o: &Self) -> Self {
            let data = self.data.iter().zip(&o.data).map(|(a, b)| a + b).collect();
            Val {
                data,
                ..self.clone()
            }
        }
        fn has_nan(&self) -> bool {
            self.data.iter().any(|x| x.is_nan())
        }
        /// Sums everything into a one-element tensor of `shape` (enough for the tests).
        fn sum_to(&self, shape: &[usize]) -> Option<Self> {
            (shape.iter().product::<usize>() == 1).then(|| Val {
                shape: shape.to_vec(),
                data: vec![self.data.iter().sum()],
                dtype: self.dtype,
            })
        }
        fn to_dtype(&self, dtype: &'static str) -> Option<Self> {
            Some(Val {
                dtype,
                ..self.clone()
            })
        }
    }

    /// A payload and nothing else: no shape (`[]`), dtype `f32`, no NaN.
    #[derive(Clone)]
    pub(crate) struct Handle<X>(#[allow(dead_code)] X);

    impl<X> Handle<X> {
        pub(crate) fn new(x: X) -> Self {
            Handle(x)
        }
    }

    impl<X: Clone + Send + Sync + 'static> Tensor for Handle<X> {
        fn shape(&self) -> &[usize] {
            &[]
        }
        fn dtype(&self) -> &'static str {
            "f32"
        }
        fn ones_like(&self) -> Self {
            self.clone()
        }
        fn zeros_like(&self) -> Self {
            self.clone()
        }
        fn add(&self, _: &Self) -> Self {
            self.clone()
        }
        fn has_nan(&self) -> bool {
            false
        }
    }
}
