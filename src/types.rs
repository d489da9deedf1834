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
}

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
