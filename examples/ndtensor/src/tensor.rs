//! The raw tensor: an array of `f32` or `f64` (or `i64`, `bool`) with a dynamic number of
//! dimensions.

pub use crate::element::Element;
use crate::storage::FloatTensor;
use autograd::gradcheck::ElementAccess;
use ndarray::{ArcArray, Array, ArrayView, IxDyn, ShapeBuilder};
use std::fmt;
use std::sync::Arc;

/// The constructors and accessors the kernels use.
impl<E: Element> FloatTensor<E> {
    /// Row-major `f64` values with a shape, converted to `E`.
    pub(crate) fn from_f64(v: &[f64], shape: &[usize]) -> Self {
        FloatTensor::from_row_major(v.iter().map(|x| E::of(*x)).collect(), shape)
    }

    /// A 0-dimensional tensor.
    pub(crate) fn scalar(x: E) -> Self {
        FloatTensor::from_row_major(vec![x], &[])
    }

    /// Zeros.
    pub(crate) fn zeros(shape: &[usize]) -> Self {
        FloatTensor::from_array(Array::<E, _>::zeros(IxDyn(shape)))
    }

    /// Ones.
    pub(crate) fn ones(shape: &[usize]) -> Self {
        FloatTensor::from_array(Array::<E, _>::ones(IxDyn(shape)))
    }

    /// The elements in row-major (logical) order (one slice copy when contiguous).
    pub(crate) fn to_vec(&self) -> Vec<E> {
        self.map_to_vec(|x| x)
    }

    /// The only element of a one-element tensor (the kernels check the count first).
    pub(crate) fn item(&self) -> E {
        assert_eq!(
            self.len(),
            1,
            "item() of a tensor with {} elements",
            self.len()
        );
        *self.iter().next().expect("len == 1")
    }
}

/// The elements of an [`NdTensor`], by dtype: PyTorch's floating-point `E` (`"f32"` or
/// `"f64"`), `torch.long` (`"i64"`) and `torch.bool` (`"bool"`). Each variant is one pointer
/// (an `Arc`) to a possibly strided array of any rank: cloning is one atomic increment.
#[derive(Clone, PartialEq)]
pub enum Data<E: Element> {
    /// Floating point: values, gradients, parameters.
    Float(FloatTensor<E>),
    /// 64-bit integers: indices (`gather`, `index_select`, `embedding`), class targets,
    /// `max.dim`'s indices and `argmax`.
    Int(Arc<ArcArray<i64, IxDyn>>),
    /// Booleans: the masks of comparisons (`eq`, `gt`, ...), `where`'s condition, dropout's mask.
    Bool(Arc<ArcArray<bool, IxDyn>>),
    // (Integer and boolean tensors are rare: their `Arc` around an `ArcArray` costs one more
    // allocation than `FloatTensor`'s storage, for no new code.)
}

impl<E: Element> Data<E> {
    /// `i64` elements.
    pub(crate) fn int(a: ArcArray<i64, IxDyn>) -> Self {
        Data::Int(Arc::new(a))
    }

    /// Boolean elements.
    pub(crate) fn bool(a: ArcArray<bool, IxDyn>) -> Self {
        Data::Bool(Arc::new(a))
    }
}

/// A raw tensor: `f32` or `f64` (the element type `E`, the library's floating-point dtype),
/// `i64` or `bool` elements ([`Data`]), any rank, possibly strided (non-contiguous), cheap to
/// clone: its [`Data`], a dtype tag and a pointer-sized handle (an `Arc`) to the array.
///
/// Floating-point tensors carry gradients; `i64` and `bool` ones never do (PyTorch's rule:
/// an op's integer or boolean result gets no history). Ops follow PyTorch's dtypes:
/// comparisons give `bool`, `argmax` and `max.dim`'s indices `i64`, index arguments must be
/// `i64`, and arithmetic promotes (`bool` < `i64` < `E`).
///
/// ```
/// use ndtensor::{NdTensor, Var};
/// # fn main() -> Result<(), autograd::runtime::AutogradError> {
/// let x = Var::new(NdTensor::<f64>::from_vec(vec![0.5, -1.0, 2.0], &[3]), true);
/// let mask = ndtensor::ops::gt_scalar(&x, 0.0)?;          // bool, no history
/// assert_eq!(mask.data().dtype(), "bool");
/// let y = ndtensor::ops::mul_tensor(&x, &mask)?;           // bool promotes to f64
/// assert_eq!(y.data().to_vec(), vec![0.5, 0.0, 2.0]);
/// let i = Var::from_data(NdTensor::<f64>::from_i64(vec![2, 0], &[2]));
/// let g = ndtensor::ops::index_select(&x, 0, &i)?;
/// assert_eq!(g.data().to_vec(), vec![2.0, 0.5]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, PartialEq)]
pub struct NdTensor<E: Element = f64> {
    /// The dtype's tag and one `Arc` (16 bytes): the runtime moves and clones the tensor
    /// constantly (the variable's data, saved outputs, gradients in the engine's buffers), so
    /// it holds no ~100-byte array header with inline dimensions and strides. A fresh
    /// floating-point tensor is two heap allocations: the `Arc` and the element buffer.
    data: Data<E>,
}

impl<E: Element> NdTensor<E> {
    /// Wraps a floating-point array, taking over its buffer if the array is its only owner
    /// (a shared buffer is copied).
    pub fn new(data: ArcArray<E, IxDyn>) -> Self {
        NdTensor::from_array(data.into_owned())
    }

    /// Wraps elements of any dtype.
    pub fn from_data(data: Data<E>) -> Self {
        NdTensor { data }
    }

    /// From an owned floating-point array of any dimensionality (its buffer taken over).
    pub fn from_array<D: ndarray::Dimension>(a: Array<E, D>) -> Self {
        NdTensor::from_data(Data::Float(FloatTensor::from_array(a)))
    }

    /// Row-major floating-point values with a shape.
    ///
    /// ```
    /// let t = ndtensor::NdTensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// assert_eq!(t.shape(), &[2, 2]);
    /// ```
    ///
    /// # Panics
    ///
    /// If the number of values is not the product of the shape.
    pub fn from_vec(v: Vec<E>, shape: &[usize]) -> Self {
        NdTensor::from_data(Data::Float(FloatTensor::from_row_major(v, shape)))
    }

    /// Row-major `i64` values with a shape: an `"i64"` tensor (indices, class targets).
    ///
    /// ```
    /// let t = ndtensor::NdTensor::<f32>::from_i64(vec![2, 0, 1], &[3]);
    /// assert_eq!(autograd::runtime::Tensor::dtype(&t), "i64");
    /// assert_eq!(t.to_i64_vec(), Some(vec![2, 0, 1]));
    /// ```
    ///
    /// # Panics
    ///
    /// If the number of values is not the product of the shape.
    pub fn from_i64(v: Vec<i64>, shape: &[usize]) -> Self {
        let a = Array::from_shape_vec(IxDyn(shape), v).expect("values do not fit the shape");
        NdTensor::from_data(Data::int(a.into_shared()))
    }

    /// Row-major booleans with a shape: a `"bool"` tensor (a mask, `where`'s condition).
    ///
    /// ```
    /// let m = ndtensor::NdTensor::<f64>::from_bool(vec![true, false], &[2]);
    /// assert_eq!(autograd::runtime::Tensor::dtype(&m), "bool");
    /// assert_eq!(m.to_vec(), vec![1.0, 0.0]);
    /// ```
    ///
    /// # Panics
    ///
    /// If the number of values is not the product of the shape.
    pub fn from_bool(v: Vec<bool>, shape: &[usize]) -> Self {
        let a = Array::from_shape_vec(IxDyn(shape), v).expect("values do not fit the shape");
        NdTensor::from_data(Data::bool(a.into_shared()))
    }

    /// Row-major `f64` values with a shape, converted to `E`.
    pub fn from_f64(v: &[f64], shape: &[usize]) -> Self {
        NdTensor::from_vec(v.iter().map(|x| E::of(*x)).collect(), shape)
    }

    /// A 0-dimensional floating-point tensor.
    pub fn scalar(x: E) -> Self {
        NdTensor::from_vec(vec![x], &[])
    }

    /// Floating-point zeros.
    pub fn zeros(shape: &[usize]) -> Self {
        NdTensor::from_array(Array::<E, _>::zeros(IxDyn(shape)))
    }

    /// Floating-point ones.
    pub fn ones(shape: &[usize]) -> Self {
        NdTensor::from_array(Array::<E, _>::ones(IxDyn(shape)))
    }

    /// Uniform in `[lo, hi)` from `autograd::types::Generator` `g`.
    pub fn uniform(shape: &[usize], lo: f64, hi: f64, g: &autograd::types::Generator) -> Self {
        let n = shape.iter().product();
        let v = (0..n)
            .map(|_| E::of(lo + (hi - lo) * g.next_f64()))
            .collect();
        NdTensor::from_vec(v, shape)
    }

    /// Standard normal samples (Box-Muller) from `g`.
    pub fn randn(shape: &[usize], g: &autograd::types::Generator) -> Self {
        let n: usize = shape.iter().product();
        let v = (0..n)
            .map(|_| {
                let u1 = g.next_f64().max(1e-300);
                let u2 = g.next_f64();
                E::of((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos())
            })
            .collect();
        NdTensor::from_vec(v, shape)
    }

    /// The elements and their dtype.
    pub fn data(&self) -> &Data<E> {
        &self.data
    }

    /// The floating-point array, if the tensor is floating point.
    pub fn as_float(&self) -> Option<&ArrayView<'_, E, IxDyn>> {
        match &self.data {
            Data::Float(a) => Some(a.arr()),
            _ => None,
        }
    }

    /// The elements as `E` (the tensor itself, shared, for a floating-point tensor; integers
    /// and booleans converted, `true` = 1), like PyTorch's `.to(dtype)`.
    pub fn to_float(&self) -> FloatTensor<E> {
        match &self.data {
            Data::Float(a) => a.clone(),
            Data::Int(a) => FloatTensor::from_array(a.mapv(|x| E::of(x as f64))),
            Data::Bool(a) => {
                FloatTensor::from_array(a.mapv(|x| if x { E::one() } else { E::zero() }))
            }
        }
    }

    /// `"f32"`/`"f64"` (`E`), `"i64"` or `"bool"`.
    pub fn dtype(&self) -> &'static str {
        match &self.data {
            Data::Float(_) => E::NAME,
            Data::Int(_) => "i64",
            Data::Bool(_) => "bool",
        }
    }

    /// The dimensions.
    pub fn shape(&self) -> &[usize] {
        match &self.data {
            Data::Float(a) => a.shape(),
            Data::Int(a) => a.shape(),
            Data::Bool(a) => a.shape(),
        }
    }

    /// The elements in row-major (logical) order, as `E` (integers converted, `true` = 1).
    pub fn to_vec(&self) -> Vec<E> {
        self.to_float().iter().copied().collect()
    }

    /// The elements of an `"i64"` tensor in row-major order (`None` for another dtype).
    pub fn to_i64_vec(&self) -> Option<Vec<i64>> {
        match &self.data {
            Data::Int(a) => Some(a.iter().copied().collect()),
            _ => None,
        }
    }

    /// The elements of a `"bool"` tensor in row-major order (`None` for another dtype).
    pub fn to_bool_vec(&self) -> Option<Vec<bool>> {
        match &self.data {
            Data::Bool(a) => Some(a.iter().copied().collect()),
            _ => None,
        }
    }

    /// The only element of a one-element tensor, as `E`.
    ///
    /// # Panics
    ///
    /// If the tensor does not have exactly one element.
    pub fn item(&self) -> E {
        let v = self.to_vec();
        assert_eq!(v.len(), 1, "item() of a tensor with {} elements", v.len());
        v[0]
    }

    /// Whether this is a ZeroTensor: the zeros a forward formula reads as the tangent of an
    /// input without one (`autograd::runtime::Tensor::zero_tensor_like`, PyTorch's
    /// `_efficientzerotensor`), or a view of them. `add`, `sub`, `mul` and `div` leave its
    /// terms out as PyTorch's ZeroTensor kernels do; the other kernels read it as zeros.
    pub fn is_zero_tensor(&self) -> bool {
        matches!(&self.data, Data::Float(a) if a.is_zero_tensor())
    }

    /// Floating-point ZeroTensor zeros of `shape` ([`is_zero_tensor`](Self::is_zero_tensor)).
    pub fn zero_tensor(shape: &[usize]) -> Self {
        NdTensor::from_data(Data::Float(FloatTensor::zero_tensor(shape)))
    }

    /// Whether the elements are laid out contiguously in row-major order.
    pub fn is_contiguous(&self) -> bool {
        match &self.data {
            Data::Float(a) => a.is_standard_layout(),
            Data::Int(a) => a.is_standard_layout(),
            Data::Bool(a) => a.is_standard_layout(),
        }
    }

    /// A floating-point tensor's elements as another floating-point type (integer and
    /// boolean tensors are returned unchanged: their dtype does not depend on `E`).
    pub fn cast<F: Element>(&self) -> NdTensor<F> {
        NdTensor::from_data(match &self.data {
            Data::Float(a) => {
                Data::Float(FloatTensor::from_array(a.arr().mapv(|x| F::of(x.as_f64()))))
            }
            Data::Int(a) => Data::Int(a.clone()),
            Data::Bool(a) => Data::Bool(a.clone()),
        })
    }
}

impl<E: Element> fmt::Debug for NdTensor<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NdTensor<{}>{:?} {}", self.dtype(), self.shape(), self)
    }
}

impl<E: Element> fmt::Display for NdTensor<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.data {
            Data::Float(a) => write!(f, "{}", a.arr()),
            Data::Int(a) => write!(f, "{a}"),
            Data::Bool(a) => write!(f, "{a}"),
        }
    }
}

impl<E: Element> autograd::runtime::Tensor for NdTensor<E> {
    fn shape(&self) -> &[usize] {
        NdTensor::shape(self)
    }
    fn strides(&self) -> Vec<i64> {
        layout(self).0
    }
    fn storage_offset(&self) -> i64 {
        layout(self).1
    }
    fn dtype(&self) -> &'static str {
        NdTensor::dtype(self)
    }
    fn ones_like(&self) -> Self {
        let s = IxDyn(self.shape());
        NdTensor::from_data(match &self.data {
            Data::Float(_) => Data::Float(FloatTensor::from_array(Array::ones(s))),
            Data::Int(_) => Data::int(Array::ones(s).into_shared()),
            Data::Bool(_) => Data::bool(Array::from_elem(s, true).into_shared()),
        })
    }
    fn zeros_like(&self) -> Self {
        let s = IxDyn(self.shape());
        NdTensor::from_data(match &self.data {
            Data::Float(_) => Data::Float(FloatTensor::from_array(Array::zeros(s))),
            Data::Int(_) => Data::int(Array::zeros(s).into_shared()),
            Data::Bool(_) => Data::bool(Array::from_elem(s, false).into_shared()),
        })
    }
    /// Floating point whatever this tensor's dtype: PyTorch's ZeroTensor arithmetic gives
    /// the result of `add`, `sub`, `mul` and `div` the other operand's dtype and values, or a
    /// ZeroTensor, so a float one changes nothing but leaves no integer or boolean arithmetic
    /// (`sub` of a boolean) to refuse.
    fn zero_tensor_like(&self) -> Self {
        NdTensor::zero_tensor(self.shape())
    }
    /// Gradients are floating point; the runtime adds only tensors of one dtype and shape.
    fn add(&self, other: &Self) -> Self {
        match (&self.data, &other.data) {
            (Data::Int(a), Data::Int(b)) => {
                NdTensor::from_data(Data::int((&**a + &**b).into_shared()))
            }
            (Data::Bool(a), Data::Bool(b)) => {
                NdTensor::from_data(Data::bool((&**a | &**b).into_shared()))
            }
            _ => NdTensor::from_array(self.to_float().arr() + other.to_float().arr()),
        }
    }
    fn has_nan(&self) -> bool {
        self.as_float()
            .is_some_and(|a| a.iter().any(|x| x.is_nan()))
    }
    /// The op set's `sum_to` over this backend's kernels.
    fn sum_to(&self, shape: &[usize]) -> Option<Self> {
        autograd_opset::helpers::raw::sum_to(self, shape).ok()
    }
    fn expand_to(&self, shape: &[usize]) -> Option<Self> {
        let size: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        autograd_opset::ops::raw::expand(self, &size, false).ok()
    }
    /// To the float dtype of the element type (the only one a gradient can have here).
    fn to_dtype(&self, dtype: &'static str) -> Option<Self> {
        (dtype == E::NAME).then(|| NdTensor::from_array(self.to_float().arr().to_owned()))
    }
    fn is_differentiable(&self) -> bool {
        matches!(self.data, Data::Float(_))
    }
    /// The op set's `where` over this backend's kernels.
    fn select_where(&self, mask: &Self, other: &Self) -> Option<Self> {
        let m = autograd_opset::ops::raw::ne_scalar(mask, 0.0).ok()?;
        autograd_opset::ops::raw::where_self(&m, other, self).ok()
    }
    fn type_name(&self) -> String {
        format!("NdTensor<{}>", self.dtype())
    }
}

impl<E: Element> ElementAccess for NdTensor<E> {
    fn to_f64_vec(&self) -> Vec<f64> {
        self.to_vec().iter().map(|x| x.as_f64()).collect()
    }
    /// Keeps the dtype, and a column-major (Fortran) layout, so perturbed copies of a
    /// non-contiguous input stay non-contiguous.
    fn with_f64_vec(&self, values: &[f64]) -> Self {
        let shape = self.shape();
        match &self.data {
            Data::Int(_) => NdTensor::from_i64(values.iter().map(|x| *x as i64).collect(), shape),
            Data::Bool(_) => NdTensor::from_bool(values.iter().map(|x| *x != 0.0).collect(), shape),
            Data::Float(a) => {
                let (a, c) = (a.arr(), FloatTensor::<E>::from_f64(values, shape));
                let fortran = a.ndim() > 1 && !a.is_standard_layout() && a.t().is_standard_layout();
                if fortran {
                    let mut f = Array::<E, _>::zeros(IxDyn(shape).f());
                    f.assign(c.arr());
                    NdTensor::from_array(f)
                } else {
                    NdTensor::from_data(Data::Float(c))
                }
            }
        }
    }
}

/// The strides and storage offset of `t`: a float tensor's view of its buffer; an integer or
/// boolean tensor's views are copies (see `moved!` in `backend/dtype.rs`), so its strides are its array's, from
/// offset 0.
pub(crate) fn layout<E: Element>(t: &NdTensor<E>) -> (Vec<i64>, i64) {
    let of = crate::storage::pytorch_strides;
    match t.data() {
        Data::Float(a) => a.layout(),
        Data::Int(a) => (of(a.strides(), a.shape()), 0),
        Data::Bool(a) => (of(a.strides(), a.shape()), 0),
    }
}
