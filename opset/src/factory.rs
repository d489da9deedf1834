//! PyTorch's factories (`full`, `scalar_tensor`, `arange.start_step`, `empty.memory_format`,
//! `empty_strided`, `rand`, `randn`, `randperm`): each result's sizes, dtype and elements,
//! with PyTorch's inference of the dtype and PyTorch's errors, computed once for every
//! backend. A backend's kernel turns the [`Values`] into its tensor (ndtensor and
//! candletensor have one function for it).
//!
//! The dtype a factory infers is PyTorch's: `full` takes its value's kind (`bool`, `long`,
//! or the default float), `arange` gives `long` unless a bound or the step is a float, the
//! others the default float. The default float is the backend's own floating-point type
//! (`f64` for `NdTensor<f64>`), as everywhere in the op set.
//!
//! ```
//! use autograd::types::Scalar;
//! use autograd_opset::factory::{self, Elements};
//! let v = factory::arange(Scalar::Int(1), Scalar::Int(10), Scalar::Int(3), None).unwrap();
//! assert_eq!((v.shape, v.elements), (vec![3], Elements::Int(vec![1, 4, 7])));
//! let e = factory::full(&[2, -1], Scalar::Float(1.5), None).unwrap_err();
//! assert_eq!(e.to_string(), "Trying to create tensor with negative dimension -1: [2, -1]");
//! ```

use crate::dtype::Kind;
use crate::error::Error;
use crate::random;
use crate::shape::new_shape;
use autograd::types::{Scalar, ScalarType};

type R<T> = Result<T, Error>;

/// 2^63, the first double past `i64::MAX` (`i64::MAX as f64` rounds to it).
const I64_END: f64 = i64::MAX as f64;

/// The elements of a factory's result, in row-major order.
#[derive(Debug, Clone, PartialEq)]
pub enum Elements {
    /// Floating-point elements (the backend's float type; computed in `f64`).
    Float(Vec<f64>),
    /// `i64` elements.
    Int(Vec<i64>),
    /// Boolean elements.
    Bool(Vec<bool>),
}

/// A factory's result: its sizes and its elements.
#[derive(Debug, Clone, PartialEq)]
pub struct Values {
    /// The sizes.
    pub shape: Vec<usize>,
    /// The elements, as many as the sizes' product.
    pub elements: Elements,
}

impl Values {
    /// The kind of the elements.
    pub fn kind(&self) -> Kind {
        match self.elements {
            Elements::Float(_) => Kind::Float,
            Elements::Int(_) => Kind::Int,
            Elements::Bool(_) => Kind::Bool,
        }
    }

    /// `shape` filled with `value` converted to `kind` (PyTorch's `fill_`).
    fn filled(shape: Vec<usize>, kind: Kind, value: Scalar) -> Values {
        let n = shape.iter().product();
        let elements = match kind {
            Kind::Float => Elements::Float(vec![value.to_f64(); n]),
            Kind::Int => Elements::Int(vec![value.to_i64(); n]),
            Kind::Bool => Elements::Bool(vec![value.to_bool(); n]),
        };
        Values { shape, elements }
    }
}

/// PyTorch's name of a dtype in messages (`Long`, `Bool`, `Float`, ...).
pub fn type_name(dtype: ScalarType) -> &'static str {
    match dtype {
        ScalarType::Bool => "Bool",
        ScalarType::U8 => "Byte",
        ScalarType::I8 => "Char",
        ScalarType::I16 => "Short",
        ScalarType::I32 => "Int",
        ScalarType::I64 => "Long",
        ScalarType::F16 => "Half",
        ScalarType::BF16 => "BFloat16",
        ScalarType::F32 => "Float",
        ScalarType::F64 => "Double",
    }
}

/// The kind of a Python number (`True` is `bool`, `2` is `long`, `2.0` the default float).
fn kind_of(s: Scalar) -> Kind {
    match s {
        Scalar::Bool(_) => Kind::Bool,
        Scalar::Int(_) => Kind::Int,
        Scalar::Float(_) => Kind::Float,
    }
}

/// PyTorch's check that a number fits an integer dtype (`fill_` of an `int64` tensor).
fn check_fits(kind: Kind, s: Scalar) -> R<()> {
    if let (Kind::Int, Scalar::Float(f)) = (kind, s)
        && !(-I64_END..I64_END).contains(&f)
    {
        return Err(Error::runtime(
            "value cannot be converted to type int64_t without overflow",
        ));
    }
    Ok(())
}

/// `full`: `size` filled with `fill_value`, of `dtype` or the value's kind.
pub fn full(size: &[i64], fill_value: Scalar, dtype: Option<ScalarType>) -> R<Values> {
    let shape = new_shape(size)?;
    let kind = dtype.map_or(kind_of(fill_value), Kind::requested);
    check_fits(kind, fill_value)?;
    Ok(Values::filled(shape, kind, fill_value))
}

/// `empty_strided`'s check of the strides' count. (The op set's `empty_strided` is
/// `full` of zeros, laid out contiguously whatever strides are asked for.)
pub fn check_strides(size: &[i64], stride: &[i64]) -> R<()> {
    crate::error::check(size.len() == stride.len(), || {
        format!(
            "dimensionality of sizes ({}) must match dimensionality of strides ({})",
            size.len(),
            stride.len()
        )
    })
}

/// `copy`'s check: `src` broadcasts to `self`'s shape (PyTorch's `copy_`).
pub fn check_copy(self_: &[usize], src: &[usize]) -> R<()> {
    let full = crate::shape::broadcast_shape(self_, src)?;
    crate::shape::check_inplace_shape(self_, &full)
}

/// `_local_scalar_dense`'s check: the tensor has an element (PyTorch reads the first).
pub fn check_local_scalar(numel: usize) -> R<()> {
    crate::error::check(numel > 0, || {
        "_local_scalar_dense: Empty tensor not supported".into()
    })
}

/// `sym_size.int` of a 0-d tensor: PyTorch's `IndexError`, whatever the dimension.
pub fn check_has_dims(ndim: usize, dim: i64) -> R<()> {
    if ndim == 0 {
        return Err(Error::index(format!(
            "Dimension specified as {dim} but tensor has no dimensions"
        )));
    }
    Ok(())
}

/// A double converted to `int64` as PyTorch's CPU cast does: truncation, and the x86
/// result for what does not fit (NaN, infinities, beyond 2^63): `i64::MIN`.
pub fn cast_i64(x: f64) -> i64 {
    if !(-I64_END..I64_END).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// A double as C++'s `operator<<` prints it (`%g`: `0.5`, `5`, `inf`, `nan`, `1e+30`).
fn cpp_double(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let exp = if x == 0.0 {
        0
    } else {
        x.abs().log10().floor() as i32
    };
    if (-5..6).contains(&exp) {
        let s = format!("{:.*}", (5 - exp).max(0) as usize, x);
        let s = if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.')
        } else {
            &s
        };
        return s.to_string();
    }
    let m = format!("{:.5e}", x);
    let (mant, e) = m.split_once('e').unwrap_or((&m, "0"));
    let mant = mant.trim_end_matches('0').trim_end_matches('.');
    let e: i32 = e.parse().unwrap_or(0);
    format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// `arange.start_step`'s checks (PyTorch's `arange_out`, on the numbers as doubles) and its
/// length: `ceil((end - start) / step)`, in integers when all three are integers.
fn arange_len(start: Scalar, end: Scalar, step: Scalar) -> R<usize> {
    let (s, e, st) = (start.to_f64(), end.to_f64(), step.to_f64());
    crate::error::check(st.is_finite(), || {
        format!("step must be finite but got {}", cpp_double(st))
    })?;
    crate::error::check(st != 0.0, || "step must be nonzero".into())?;
    crate::error::check(s.is_finite() && e.is_finite(), || {
        format!("unsupported range: {} -> {}", cpp_double(s), cpp_double(e))
    })?;
    crate::error::check((st > 0.0 && e >= s) || (st < 0.0 && e <= s), || {
        "upper bound and lower bound inconsistent with step sign".into()
    })?;
    if let (Scalar::Int(a), Scalar::Int(b), Scalar::Int(c)) = (start, end, step) {
        let sgn = c.signum();
        return Ok(
            ((i128::from(b) - i128::from(a) + i128::from(c) - i128::from(sgn)) / i128::from(c))
                as usize,
        );
    }
    let len = ((e - s) / st).ceil();
    crate::error::check(len >= 0.0 && len <= i64::MAX as f64 && len < 1e15, || {
        "invalid size, possible overflow?".into()
    })?;
    Ok(len as usize)
}

/// `arange.start_step`: `start + i * step` for `i` in `0..ceil((end - start) / step)`; `long`
/// unless a number is a float (or `dtype` says otherwise). The length comes from the numbers
/// as doubles, the elements from the numbers converted to the result's type (PyTorch's
/// `arange(0, 5, 1.5, dtype=long)` is `[0, 1, 2, 3]`).
pub fn arange(start: Scalar, end: Scalar, step: Scalar, dtype: Option<ScalarType>) -> R<Values> {
    let inferred = if [start, end, step]
        .iter()
        .any(|s| kind_of(*s) == Kind::Float)
    {
        Kind::Float
    } else {
        Kind::Int
    };
    let kind = dtype.map_or(inferred, Kind::requested);
    if kind == Kind::Bool {
        return Err(not_implemented("arange_cpu", ScalarType::Bool));
    }
    let n = arange_len(start, end, step)?;
    let elements = match kind {
        Kind::Int => {
            let (a, c) = (start.to_i64(), step.to_i64());
            Elements::Int(
                (0..n as i64)
                    .map(|i| a.wrapping_add(c.wrapping_mul(i)))
                    .collect(),
            )
        }
        _ => {
            let (a, c) = (start.to_f64(), step.to_f64());
            Elements::Float((0..n).map(|i| a + c * i as f64).collect())
        }
    };
    Ok(Values {
        shape: vec![n],
        elements,
    })
}

/// PyTorch's error for a kernel without a form for `dtype`.
fn not_implemented(kernel: &str, dtype: ScalarType) -> Error {
    Error::runtime(format!(
        "\"{kernel}\" not implemented for '{}'",
        type_name(dtype)
    ))
}

/// A floating-point factory's shape; another dtype is `kernel`'s refusal.
fn float_shape(size: &[i64], dtype: Option<ScalarType>, kernel: &str) -> R<Vec<usize>> {
    let shape = new_shape(size)?;
    match dtype {
        Some(d) if Kind::requested(d) != Kind::Float => Err(not_implemented(kernel, d)),
        _ => Ok(shape),
    }
}

/// `rand`: uniform numbers in `[0, 1)` from the op set's generator ([`crate::random`]).
/// Integer and boolean dtypes are PyTorch's refusal.
pub fn rand(size: &[i64], dtype: Option<ScalarType>) -> R<Values> {
    let shape = float_shape(size, dtype, "check_uniform_bounds")?;
    let n: usize = shape.iter().product();
    let elements = Elements::Float((0..n).map(|_| random::next_uniform()).collect());
    Ok(Values { shape, elements })
}

/// `randn`: standard normal numbers (Box-Muller over the op set's generator).
pub fn randn(size: &[i64], dtype: Option<ScalarType>) -> R<Values> {
    let shape = float_shape(size, dtype, "normal_kernel_cpu")?;
    let n: usize = shape.iter().product();
    let normal = || {
        let (u1, u2) = (random::next_uniform(), random::next_uniform());
        (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    };
    let elements = Elements::Float((0..n).map(|_| normal()).collect());
    Ok(Values { shape, elements })
}

/// `randperm`: a random permutation of `0..n` (Fisher-Yates, as PyTorch's CPU kernel), `long`
/// unless `dtype` says otherwise (`bool` is PyTorch's refusal).
pub fn randperm(n: i64, dtype: Option<ScalarType>) -> R<Values> {
    let shape = new_shape(&[n])?;
    let dtype = dtype.unwrap_or(ScalarType::I64);
    if dtype == ScalarType::Bool {
        return Err(not_implemented("randperm", dtype));
    }
    let mut p: Vec<i64> = (0..n).collect();
    let len = p.len();
    for i in 0..len.saturating_sub(1) {
        let z = (random::next_uniform() * (len - i) as f64) as usize;
        p.swap(i, i + z.min(len - i - 1));
    }
    let elements = match Kind::requested(dtype) {
        Kind::Float => Elements::Float(p.iter().map(|&x| x as f64).collect()),
        _ => Elements::Int(p),
    };
    Ok(Values { shape, elements })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_cpp_does() {
        let cases = [
            (0.0, "0"),
            (5.0, "5"),
            (0.5, "0.5"),
            (1e30, "1e+30"),
            (-2.5e-7, "-2.5e-07"),
        ];
        for (x, s) in cases {
            assert_eq!(cpp_double(x), s);
        }
        assert_eq!(cpp_double(f64::NAN), "nan");
        assert_eq!(cpp_double(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn randperm_is_a_permutation_and_rand_is_in_range() {
        let Elements::Int(mut p) = randperm(50, None).unwrap().elements else {
            panic!("randperm is long by default")
        };
        p.sort_unstable();
        assert_eq!(p, (0..50).collect::<Vec<_>>());
        let Elements::Float(u) = rand(&[1000], None).unwrap().elements else {
            panic!("rand is float")
        };
        assert!(u.iter().all(|x| (0.0..1.0).contains(x)));
        let mean = u.iter().sum::<f64>() / 1000.0;
        assert!((mean - 0.5).abs() < 0.05, "{mean}");
    }

    #[test]
    fn randn_has_mean_zero_and_variance_one() {
        let Elements::Float(z) = randn(&[4000], None).unwrap().elements else {
            panic!("randn is float")
        };
        let mean = z.iter().sum::<f64>() / 4000.0;
        let var = z.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 4000.0;
        assert!(
            mean.abs() < 0.06 && (var - 1.0).abs() < 0.08,
            "{mean} {var}"
        );
    }
}
