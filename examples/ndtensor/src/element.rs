//! The element types of float tensors ([`Element`]: `f32`, `f64`), which the storage, the
//! raw tensor and the kernels share.

use ndarray::NdFloat;

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
