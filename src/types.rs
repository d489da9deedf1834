//! Rust types for the schema types that are not tensors or plain numbers.
//!
//! The generated backend trait maps schema types as documented in the crate root; these are
//! the values for `ScalarType`, `Layout`, `Device`, `MemoryFormat` and `Generator`.

use std::sync::Mutex;

/// An element type (`ScalarType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ScalarType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

impl ScalarType {
    /// The type of a dtype name as [`Tensor::dtype`](crate::runtime::Tensor::dtype) returns
    /// it (`"f32"`, `"i64"`, `"bool"`, ...); `None` for another name.
    ///
    /// ```
    /// use autograd::types::ScalarType;
    /// assert_eq!(ScalarType::from_name("f64"), Some(ScalarType::F64));
    /// assert_eq!(ScalarType::from_name("complex64"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<ScalarType> {
        Some(match name {
            "bool" => ScalarType::Bool,
            "u8" => ScalarType::U8,
            "i8" => ScalarType::I8,
            "i16" => ScalarType::I16,
            "i32" => ScalarType::I32,
            "i64" => ScalarType::I64,
            "f16" => ScalarType::F16,
            "bf16" => ScalarType::BF16,
            "f32" => ScalarType::F32,
            "f64" => ScalarType::F64,
            _ => return None,
        })
    }

    /// The dtype name of the type, as [`Tensor::dtype`](crate::runtime::Tensor::dtype)
    /// returns it (the inverse of [`from_name`](Self::from_name)).
    ///
    /// ```
    /// use autograd::types::ScalarType;
    /// assert_eq!(ScalarType::I64.name(), "i64");
    /// assert_eq!(ScalarType::from_name(ScalarType::BF16.name()), Some(ScalarType::BF16));
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Bool => "bool",
            ScalarType::U8 => "u8",
            ScalarType::I8 => "i8",
            ScalarType::I16 => "i16",
            ScalarType::I32 => "i32",
            ScalarType::I64 => "i64",
            ScalarType::F16 => "f16",
            ScalarType::BF16 => "bf16",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
        }
    }
}

/// A number argument (`Scalar`), as PyTorch's `c10::Scalar`: a boolean, an integer or a
/// floating-point number. Which of the three it is decides the dtype of `tensor op scalar`
/// (PyTorch's type promotion with a "wrapped number"): an `i64` tensor plus `2` stays `i64`,
/// plus `2.0` becomes the default float dtype.
///
/// Functions that take a `Scalar` take `impl Into<Scalar>`, so Rust numbers pass as they are:
///
/// ```
/// use autograd::types::Scalar;
/// assert_eq!(Scalar::from(2), Scalar::Int(2));
/// assert_eq!(Scalar::from(2.0), Scalar::Float(2.0));
/// assert!(Scalar::from(true).is_boolean());
/// assert_eq!(Scalar::from(3).to_f64(), 3.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// A Python `bool`.
    Bool(bool),
    /// A Python `int`.
    Int(i64),
    /// A Python `float`.
    Float(f64),
}

impl Scalar {
    /// The value as an `f64` (PyTorch's `toDouble`).
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }

    /// The value as an `i64` (PyTorch's `toLong`: a float is truncated, saturating).
    pub fn to_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => i64::from(b),
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }

    /// The value as a `bool` (PyTorch's `toBool`: non-zero is `true`).
    pub fn to_bool(self) -> bool {
        match self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
        }
    }

    /// A floating-point number (PyTorch's `isFloatingPoint`).
    pub fn is_floating_point(self) -> bool {
        matches!(self, Scalar::Float(_))
    }

    /// An integer, or also a boolean with `include_bool` (PyTorch's `isIntegral`).
    pub fn is_integral(self, include_bool: bool) -> bool {
        match self {
            Scalar::Int(_) => true,
            Scalar::Bool(_) => include_bool,
            Scalar::Float(_) => false,
        }
    }

    /// A boolean (PyTorch's `isBoolean`).
    pub fn is_boolean(self) -> bool {
        matches!(self, Scalar::Bool(_))
    }

    /// The conjugate: the value itself (the scalars are real).
    pub fn conj(self) -> Scalar {
        self
    }
}

impl std::ops::Neg for Scalar {
    type Output = Scalar;
    /// `-s`, as Python negates: a boolean becomes an integer.
    fn neg(self) -> Scalar {
        match self {
            Scalar::Bool(b) => Scalar::Int(-i64::from(b)),
            Scalar::Int(i) => Scalar::Int(i.wrapping_neg()),
            Scalar::Float(f) => Scalar::Float(-f),
        }
    }
}

impl std::fmt::Display for Scalar {
    /// As PyTorch prints a Scalar: `true`, `2`, `2.5`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
        }
    }
}

macro_rules! scalar_from {
    ($($t:ty => $v:ident),* $(,)?) => {$(
        impl From<$t> for Scalar {
            fn from(x: $t) -> Scalar {
                Scalar::$v(x.into())
            }
        }
    )*};
}
scalar_from!(bool => Bool, i8 => Int, i16 => Int, i32 => Int, i64 => Int, u8 => Int,
    u16 => Int, u32 => Int, f32 => Float, f64 => Float);

/// What formulas read with `x.options()` (PyTorch's `TensorOptions`): the dtype, layout and
/// device of a tensor, to make others like it. Tensors here are strided and the device is
/// the backend's, so only the dtype is kept.
///
/// ```
/// use autograd::types::{ScalarType, TensorOptions};
/// let o = TensorOptions::of("f32");
/// assert_eq!(o.dtype(), Some(ScalarType::F32));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TensorOptions {
    /// The dtype name ([`Tensor::dtype`](crate::runtime::Tensor::dtype)).
    pub dtype_name: &'static str,
}

impl TensorOptions {
    /// The options of a tensor whose dtype is named `dtype_name`.
    pub fn of(dtype_name: &'static str) -> Self {
        TensorOptions { dtype_name }
    }

    /// The dtype (`None` for a name [`ScalarType`] does not have).
    pub fn dtype(&self) -> Option<ScalarType> {
        ScalarType::from_name(self.dtype_name)
    }

    /// The layout: strided.
    pub fn layout(&self) -> Layout {
        Layout::Strided
    }

    /// The device: the backend's ([`Device::Cpu`] stands for it).
    pub fn device(&self) -> Device {
        Device::Cpu
    }
}

/// What a formula's `TensorGeometry(x)` saves of a tensor instead of the tensor (PyTorch's
/// `TensorGeometry`): its sizes, strides and storage offset, as its library reports them
/// ([`Tensor::strides`](crate::runtime::Tensor::strides),
/// [`Tensor::storage_offset`](crate::runtime::Tensor::storage_offset)).
///
/// ```
/// use autograd::types::TensorGeometry;
/// let g = TensorGeometry::new(&[2, 3], vec![3, 1], 0);
/// assert_eq!((g.sym_sizes(), g.sym_strides(), g.sym_storage_offset()), (&[2, 3][..], &[3, 1][..], 0));
/// assert_eq!(g.dim(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TensorGeometry {
    sizes: Vec<i64>,
    strides: Vec<i64>,
    storage_offset: i64,
}

impl TensorGeometry {
    /// The geometry of a tensor of `shape`, `strides` and `storage_offset`.
    pub fn new(shape: &[usize], strides: Vec<i64>, storage_offset: i64) -> Self {
        let sizes = shape.iter().map(|&d| d as i64).collect();
        TensorGeometry {
            sizes,
            strides,
            storage_offset,
        }
    }

    /// The geometry of `t`.
    pub fn of<T: crate::runtime::Tensor>(t: &T) -> Self {
        Self::new(t.shape(), t.strides(), t.storage_offset())
    }

    /// The sizes.
    pub fn sym_sizes(&self) -> &[i64] {
        &self.sizes
    }

    /// The strides, in elements.
    pub fn sym_strides(&self) -> &[i64] {
        &self.strides
    }

    /// The position of the first element in the storage.
    pub fn sym_storage_offset(&self) -> i64 {
        self.storage_offset
    }

    /// The number of dimensions.
    pub fn dim(&self) -> i64 {
        self.sizes.len() as i64
    }
}

/// A memory layout (`Layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[allow(missing_docs)]
pub enum Layout {
    #[default]
    Strided,
    Sparse,
}

/// A device (`Device`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[allow(missing_docs)]
pub enum Device {
    #[default]
    Cpu,
    Cuda(u16),
}

/// A memory format (`MemoryFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[allow(missing_docs)]
pub enum MemoryFormat {
    #[default]
    Contiguous,
    Preserve,
    ChannelsLast,
    ChannelsLast3d,
}

/// A seeded random number generator (`Generator`): SplitMix64, shareable between threads.
///
/// ```
/// let g = autograd::types::Generator::new(42);
/// let a = g.next_f64();
/// assert!((0.0..1.0).contains(&a));
/// assert_ne!(a, g.next_f64());
/// ```
#[derive(Debug)]
pub struct Generator {
    state: Mutex<u64>,
}

impl Generator {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Generator {
            state: Mutex::new(seed),
        }
    }

    /// The state (PyTorch's `get_state`): a generator set to it draws the same numbers.
    pub fn state(&self) -> u64 {
        *self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the state (PyTorch's `set_state`).
    ///
    /// ```
    /// let g = autograd::types::Generator::new(7);
    /// let s = g.state();
    /// let a = g.next_u64();
    /// g.set_state(s);
    /// assert_eq!(g.next_u64(), a);
    /// ```
    pub fn set_state(&self, state: u64) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
    }

    /// The next 64 random bits.
    pub fn next_u64(&self) -> u64 {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in `[0, 1)`.
    pub fn next_f64(&self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}
