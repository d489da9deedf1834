//! The raw tensor: an `ArcArray` of `f32` or `f64` with a dynamic number of dimensions.

use autograd::gradcheck::ElementAccess;
use ndarray::{ArcArray, Array, IxDyn, NdFloat, ShapeBuilder};
use std::fmt;

/// An element type: `f32` or `f64`.
pub trait Element: NdFloat + num_traits::Float + Default + 'static {
    /// `"f32"` or `"f64"`.
    const NAME: &'static str;
    /// From `f64` (rounding for `f32`).
    fn of(x: f64) -> Self;
    /// To `f64`.
    fn as_f64(self) -> f64;
    /// The error function.
    fn erf(self) -> Self;
}

impl Element for f32 {
    const NAME: &'static str = "f32";
    fn of(x: f64) -> Self {
        x as f32
    }
    fn as_f64(self) -> f64 {
        self as f64
    }
    fn erf(self) -> Self {
        libm::erff(self)
    }
}

impl Element for f64 {
    const NAME: &'static str = "f64";
    fn of(x: f64) -> Self {
        x
    }
    fn as_f64(self) -> f64 {
        self
    }
    fn erf(self) -> Self {
        libm::erf(self)
    }
}

/// A raw tensor of `E` (`f32` or `f64`): a cheaply cloneable, possibly strided (non-contiguous)
/// `ArcArray` of any rank. Index tensors (targets, `gather` indices, `max.dim` indices) hold
/// integers as elements of the same type.
#[derive(Clone, PartialEq)]
pub struct NdTensor<E: Element = f64> {
    /// The array. Views (`transpose`, `permute`, `slice`) share storage and have strides.
    pub data: ArcArray<E, IxDyn>,
}

impl<E: Element> NdTensor<E> {
    /// Wraps an array.
    pub fn new(data: ArcArray<E, IxDyn>) -> Self {
        NdTensor { data }
    }

    /// From an owned array of any dimensionality.
    pub fn from_array<D: ndarray::Dimension>(a: Array<E, D>) -> Self {
        NdTensor {
            data: a.into_dyn().into_shared(),
        }
    }

    /// Row-major values with a shape.
    ///
    /// ```
    /// let t = ndtensor::NdTensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// assert_eq!(t.shape(), &[2, 2]);
    /// ```
    pub fn from_vec(v: Vec<E>, shape: &[usize]) -> Self {
        NdTensor::from_array(
            Array::from_shape_vec(IxDyn(shape), v).expect("values do not fit the shape"),
        )
    }

    /// Row-major `f64` values with a shape, converted to `E`.
    pub fn from_f64(v: &[f64], shape: &[usize]) -> Self {
        NdTensor::from_vec(v.iter().map(|x| E::of(*x)).collect(), shape)
    }

    /// A 0-dimensional tensor.
    pub fn scalar(x: E) -> Self {
        NdTensor::from_vec(vec![x], &[])
    }

    /// Zeros.
    pub fn zeros(shape: &[usize]) -> Self {
        NdTensor::from_array(Array::<E, _>::zeros(IxDyn(shape)))
    }

    /// Ones.
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

    /// The dimensions.
    pub fn shape(&self) -> &[usize] {
        self.data.shape()
    }

    /// The elements in row-major (logical) order.
    pub fn to_vec(&self) -> Vec<E> {
        self.data.iter().copied().collect()
    }

    /// The only element of a one-element tensor.
    pub fn item(&self) -> E {
        assert_eq!(
            self.data.len(),
            1,
            "item() of a tensor with {} elements",
            self.data.len()
        );
        *self.data.iter().next().expect("one element")
    }

    /// Whether the elements are laid out contiguously in row-major order.
    pub fn is_contiguous(&self) -> bool {
        self.data.is_standard_layout()
    }

    /// Converts the elements to another element type.
    pub fn cast<F: Element>(&self) -> NdTensor<F> {
        NdTensor::from_array(self.data.mapv(|x| F::of(x.as_f64())))
    }
}

impl<E: Element> fmt::Debug for NdTensor<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NdTensor<{}>{:?} {}", E::NAME, self.shape(), self.data)
    }
}

impl<E: Element> fmt::Display for NdTensor<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.data)
    }
}

impl<E: Element> autograd::runtime::Tensor for NdTensor<E> {
    fn shape(&self) -> &[usize] {
        self.data.shape()
    }
    fn dtype(&self) -> &'static str {
        E::NAME
    }
    fn ones_like(&self) -> Self {
        NdTensor::ones(self.data.shape())
    }
    fn zeros_like(&self) -> Self {
        NdTensor::zeros(self.data.shape())
    }
    fn add(&self, other: &Self) -> Self {
        NdTensor::from_array(&self.data + &other.data)
    }
    fn has_nan(&self) -> bool {
        self.data.iter().any(|x| x.is_nan())
    }
    fn type_name(&self) -> String {
        format!("NdTensor<{}>", E::NAME)
    }
}

impl<E: Element> ElementAccess for NdTensor<E> {
    fn to_f64_vec(&self) -> Vec<f64> {
        self.data.iter().map(|x| x.as_f64()).collect()
    }
    /// Keeps a column-major (Fortran) layout, so perturbed copies of a non-contiguous input
    /// stay non-contiguous.
    fn with_f64_vec(&self, values: &[f64]) -> Self {
        let c = NdTensor::<E>::from_f64(values, self.shape());
        let fortran = self.data.ndim() > 1
            && !self.data.is_standard_layout()
            && self.data.t().is_standard_layout();
        if fortran {
            let mut f = Array::<E, _>::zeros(IxDyn(self.shape()).f());
            f.assign(&c.data);
            NdTensor::from_array(f)
        } else {
            c
        }
    }
}
