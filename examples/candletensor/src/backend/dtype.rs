//! `impl Backend for CandleTensor`: PyTorch's dtype rules around the floating-point kernels
//! of `backend.rs`, with candle's dtypes: `F32`/`F64` floating point, `I64` for PyTorch's
//! `torch.long` (indices, class targets, `argmax`, `max.dim`'s indices) and `U8` holding 0/1
//! for `torch.bool` (comparisons, `where`'s condition, dropout's mask).
//!
//! Floating-point tensors go to the kernels as they are, and so do integer and boolean ones
//! for the kernels that only move elements (views, `cat`, `index_select`, `gather`,
//! `embedding`): their elements stay exact. `add`, `sub`, `mul`, `maximum`, `sum` and the
//! Scalar ops compute on `I64` with candle's integer arithmetic; the other kernels that
//! compute on integers go through `F64` (exact for magnitudes below 2^53) and come back in
//! their dtype: candle has no unary kernels for `I64`/`U8`.
//! The rules (promotion, which refuses a dtype, and PyTorch's messages) are the op set's
//! (`autograd_opset::dtype`, shared with ndtensor); this file converts candle's tensors
//! between dtypes and calls the kernels.

use crate::tensor::CandleTensor;
use autograd::runtime::Tensor as _;
use autograd::types::{Device, Layout, MemoryFormat, Scalar, ScalarType};
use autograd_opset::Backend;
use autograd_opset::dtype::{self as rules, IndexUse, Kind, check_index, kernel};
use autograd_opset::error::Error;
use autograd_opset::factory::{self, Elements, Values};
use autograd_opset::meta::{self, PadMode};
use candle_core::DType;

type C = CandleTensor;
type R<T> = Result<T, Error>;

/// A candle error (a case the checks missed) as a `RuntimeError`.
pub(super) fn ce<T>(r: candle_core::Result<T>) -> R<T> {
    r.map_err(|e| {
        let m = e.to_string();
        Error::internal("candle", m.lines().next().unwrap_or_default())
    })
}

/// The arithmetic kernels that know ZeroTensors (`add` and `sub` are one).
#[derive(Clone, Copy, PartialEq)]
enum ZeroOp {
    Add,
    Mul,
    Div,
}

/// PyTorch's ZeroTensor arithmetic (`add_zerotensor`, `mul_zerotensor`, `div_zerotensor`)
/// on `r`, the result computed as if ZeroTensors were zeros (which gave its shape, dtype and
/// errors): `zero * x` and `zero / x` are ZeroTensors, `x / zero` is `inf` and `zero / zero`
/// NaN everywhere, `zero + zero` a ZeroTensor (`zero + x` is already `x`).
fn zero_aware(op: ZeroOp, a: &C, b: &C, r: C) -> R<C> {
    let (za, zb) = (a.is_zero_tensor(), b.is_zero_tensor());
    let fill = |x: f64| -> R<C> { Ok(C::new(ce(ce(r.t.ones_like())?.affine(0.0, x))?)) };
    match op {
        ZeroOp::Add if za && zb => Ok(C::zero_tensor(r.shape(), r.t.dtype())),
        ZeroOp::Mul if za || zb => Ok(C::zero_tensor(r.shape(), r.t.dtype())),
        ZeroOp::Div if za && zb => fill(f64::NAN),
        ZeroOp::Div if za => Ok(C::zero_tensor(r.shape(), r.t.dtype())),
        ZeroOp::Div if zb => fill(f64::INFINITY),
        _ => Ok(r),
    }
}

/// A ZeroTensor times or over a Scalar is a ZeroTensor (PyTorch wraps the Scalar in a tensor
/// and dispatches to `mul_zerotensor` / `div_zerotensor`).
fn zero_aware_scalar(a: &C, r: C) -> C {
    if a.is_zero_tensor() {
        C::zero_tensor(r.shape(), r.t.dtype())
    } else {
        r
    }
}

/// The strides of `t`'s view of its storage, as PyTorch reports them: candle's, but for a
/// fresh empty tensor, whose candle strides count a size of 0 as 0 (PyTorch's as 1).
pub(crate) fn strides(t: &C) -> Vec<i64> {
    let layout = t.t.layout();
    if t.t.elem_count() == 0 && layout.is_contiguous() {
        return autograd_opset::layout::contiguous_strides(t.t.dims());
    }
    layout.stride().iter().map(|s| *s as i64).collect()
}

fn kind(t: &C) -> Kind {
    Kind::of(t.dtype())
}

/// The float dtype of an op's result: its first floating-point operand's, else `F64`.
fn float_dtype(ts: &[&C]) -> DType {
    ts.iter()
        .map(|t| t.t.dtype())
        .find(|d| d.is_float())
        .unwrap_or(DType::F64)
}

/// `t` as the float dtype `d` (PyTorch's promotion of integers and booleans).
pub(super) fn promoted(t: &C, d: DType) -> R<C> {
    if t.t.dtype() == d {
        return Ok(t.clone());
    }
    Ok(C::new(ce(t.t.to_dtype(d))?))
}

/// The float dtype of `ts` and each of them promoted to it.
fn promoted_all<const N: usize>(ts: [&C; N]) -> R<[C; N]> {
    let d = float_dtype(&ts);
    let mut out = ts.map(|t| t.clone());
    for o in &mut out {
        *o = promoted(o, d)?;
    }
    Ok(out)
}

/// `t` as `F64` (integer kernels' arithmetic).
fn wide(t: &C) -> R<C> {
    promoted(t, DType::F64)
}

/// An `F64` result as a tensor of `kind` (`I64`, or `U8` 0/1 for booleans).
fn narrowed(t: C, k: Kind) -> R<C> {
    Ok(C::new(match k {
        Kind::Float => t.t,
        Kind::Int => ce(t.t.to_dtype(DType::I64))?,
        Kind::Bool => ce(ce(t.t.ne(0.0))?.to_dtype(DType::U8))?,
    }))
}

/// A 0/1 floating-point mask as `U8`.
fn mask_out(t: C) -> R<C> {
    Ok(C::new(ce(t.t.to_dtype(DType::U8))?))
}

/// Floating-point indices as `I64`.
fn indices_out(t: C) -> R<C> {
    Ok(C::new(ce(t.t.to_dtype(DType::I64))?))
}

/// An index argument: `I64` (PyTorch's error for `arg` otherwise), as the float `like` for
/// the kernels (which check the range on the host).
fn index_arg(t: &C, like: &C, arg: IndexUse) -> R<C> {
    check_index(arg, t.dtype())?;
    promoted(t, float_dtype(&[like]))
}

/// Max pooling over the geometry `p` of any dtype (integers pooled as `f64`, narrowed
/// back): the values and the `int64` indices.
fn max_pool_any(t: &C, p: &meta::Pool) -> R<(C, C)> {
    let k = kind(t);
    let x = if k == Kind::Float {
        t.clone()
    } else {
        wide(t)?
    };
    let (v, i) = C::max_pool(&x, p)?;
    Ok((narrowed(v, k)?, indices_out(i)?))
}

/// `t`'s values truncated toward zero (PyTorch's integer division).
fn truncated(t: &C) -> R<C> {
    let t = &t.t;
    let zero = ce(t.zeros_like())?;
    let r = ce(ce(t.ge(&zero))?.where_cond(&ce(t.floor())?, &ce(t.ceil())?))?;
    Ok(C::new(r))
}

/// Each plane of `t` (its last dims, `divisors.len()` elements) divided elementwise by
/// `divisors`.
fn divide_planes(t: &C, divisors: &[f64]) -> R<C> {
    let n = divisors.len();
    let d = ce(candle_core::Tensor::from_vec(
        divisors.to_vec(),
        n,
        &t.t.device().clone(),
    ))?;
    let d = ce(d.to_dtype(t.t.dtype()))?;
    let planes = t.t.elem_count() / n.max(1);
    if planes == 0 {
        return Ok(t.clone());
    }
    let r = ce(ce(t.t.reshape((planes, n)))?.broadcast_div(&d))?;
    Ok(C::new(ce(r.reshape(t.t.shape()))?))
}

/// Average pooling over the geometry `p` of any dtype: integers as PyTorch's integer
/// division of each window's sum (toward zero).
fn avg_pool_any(
    t: &C,
    p: &meta::Pool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> R<C> {
    let k = kind(t);
    if k == Kind::Float {
        return C::avg_pool(t, p, count_include_pad, divisor_override);
    }
    let r = C::avg_pool(&wide(t)?, p, count_include_pad, divisor_override)?;
    narrowed(truncated(&r)?, k)
}

/// A kernel that keeps integers (`bool_kind` for booleans) and takes floats as they are.
fn int_kernel(t: &C, k: impl Fn(&C) -> R<C>, bool_kind: Kind) -> R<C> {
    match kind(t) {
        Kind::Float => k(t),
        Kind::Int => narrowed(k(&wide(t)?)?, Kind::Int),
        Kind::Bool => narrowed(k(&wide(t)?)?, bool_kind),
    }
}

/// A kernel that only moves elements (candle's shape ops, `index_select`, `gather`, `cat`,
/// ...): it runs on the tensor as it is, so `I64` and `U8` elements stay exact.
fn moved<T>(t: &C, k: impl Fn(&C) -> R<T>) -> R<T> {
    k(t)
}

/// A kernel that computes (`amax`, `index_add`, ...): integers through `F64`, the dtype kept.
fn kept(t: &C, k: impl Fn(&C) -> R<C>) -> R<C> {
    let kd = kind(t);
    int_kernel(t, k, kd)
}

/// A binary op on two tensors promoted to their common dtype; `Int`/`Bool` results through
/// `F64`.
fn binary(a: &C, b: &C, k: impl Fn(&C, &C) -> R<C>) -> R<C> {
    match kind(a).max(kind(b)) {
        Kind::Float => {
            let [x, y] = promoted_all([a, b])?;
            k(&x, &y)
        }
        kd => narrowed(k(&wide(a)?, &wide(b)?)?, kd),
    }
}

/// `t` as `I64` (booleans 0/1).
pub(super) fn as_i64(t: &C) -> R<C> {
    Ok(C::new(ce(t.t.to_dtype(DType::I64))?))
}

/// [`binary`] for the ops candle computes on `I64` itself (`add`, `sub`, `mul`, `maximum`):
/// integer results are exact.
fn binary_exact(a: &C, b: &C, k: impl Fn(&C, &C) -> R<C>) -> R<C> {
    match kind(a).max(kind(b)) {
        Kind::Int => k(&as_i64(a)?, &as_i64(b)?),
        _ => binary(a, b, k),
    }
}

/// PyTorch's integer power (`dtype::int_pow`) through `F64`: `exp(y ln|x|)` rounded (exact
/// below 2^53), and 0 for a negative exponent but of a base of ±1.
fn int_pow(a: &C, b: &C) -> R<C> {
    let (x, y) = (wide(a)?, wide(b)?);
    let r = C::pow_tensor_tensor(&x, &y)?.t;
    let (x, y) = (
        ce(x.t.broadcast_as(r.dims()))?,
        ce(y.t.broadcast_as(r.dims()))?,
    );
    let keep = ce(ce(y.ge(0.0))?.maximum(&ce(ce(x.abs())?.eq(1.0))?))?;
    let r = ce(keep.where_cond(&ce(r.round())?, &ce(r.zeros_like())?))?;
    narrowed(C::new(r), Kind::Int)
}

fn scalar_kind(t: &C, s: Scalar) -> Kind {
    rules::scalar_kind(kind(t), s)
}

/// `tensor op scalar`: floats as they are, integers promoted to `F64` or kept.
fn with_scalar(t: &C, s: Scalar, k: impl Fn(&C) -> R<C>) -> R<C> {
    match scalar_kind(t, s) {
        Kind::Float => k(&promoted(t, float_dtype(&[t]))?),
        // Integral Scalars with integers: candle's `I64` arithmetic, exact.
        Kind::Int => k(&as_i64(t)?),
        // A boolean tensor and a boolean: `+` is `or`, `*` is `and` (0/1 in `I64`, then
        // `!= 0`).
        Kind::Bool => narrowed(k(&as_i64(t)?)?, Kind::Bool),
    }
}

/// A comparison (`U8` result) of two tensors promoted to their common dtype.
fn compare(a: &C, b: &C, k: fn(&C, &C) -> R<C>) -> R<C> {
    let r = match kind(a).max(kind(b)) {
        Kind::Float => {
            let [x, y] = promoted_all([a, b])?;
            k(&x, &y)?
        }
        _ => k(&wide(a)?, &wide(b)?)?,
    };
    mask_out(r)
}

fn compare_scalar(t: &C, s: Scalar, k: fn(&C, f64) -> R<C>) -> R<C> {
    let s = s.to_f64();
    let x = if kind(t) == Kind::Float {
        t.clone()
    } else {
        wide(t)?
    };
    mask_out(k(&x, s)?)
}

/// `t` cast to a reduction's `dtype=` argument (PyTorch casts the input first; floats to
/// integers truncate, anything to `bool` is `!= 0`).
pub(super) fn cast_to(t: &C, dtype: Option<ScalarType>) -> R<C> {
    Ok(match dtype {
        None => t.clone(),
        Some(ScalarType::F32) => promoted(t, DType::F32)?,
        Some(d) => match Kind::requested(d) {
            Kind::Bool => narrowed(wide(t)?, Kind::Bool)?,
            Kind::Float => promoted(t, DType::F64)?,
            Kind::Int => as_i64(t)?,
        },
    })
}

/// `mm`/`bmm`: both operands of one dtype.
fn matmul_like(a: &C, b: &C, kernel: &str, k: fn(&C, &C) -> R<C>) -> R<C> {
    match rules::check_matmul(a.dtype(), b.dtype(), kernel)? {
        Kind::Float => k(a, b),
        _ => narrowed(k(&wide(a)?, &wide(b)?)?, Kind::Int),
    }
}

/// A tensor of `t`'s shape and dtype (or `dtype`'s) from the float zeros `z`.
fn as_dtype_of(t: &C, dtype: Option<ScalarType>, z: C) -> R<C> {
    let d = match dtype {
        Some(ScalarType::Bool) => DType::U8,
        Some(ScalarType::I64) => DType::I64,
        Some(ScalarType::F32) => DType::F32,
        Some(ScalarType::F64) => DType::F64,
        _ => t.t.dtype(),
    };
    Ok(C::new(ce(z.t.to_dtype(d))?))
}

/// A kernel PyTorch computes in floating point (integers and booleans promoted to `F64`).
fn float_unary(t: &C, kernel: fn(&C) -> R<C>) -> R<C> {
    kernel(&promoted(t, float_dtype(&[t]))?)
}

/// The result of an in-place op written into `self_`'s dtype, or PyTorch's cast error.
fn write_back(self_: &mut C, r: C) -> R<()> {
    rules::check_cast(r.dtype(), self_.dtype())?;
    *self_ = C::new(ce(r.t.to_dtype(self_.t.dtype()))?);
    Ok(())
}

/// `nll_loss`'s weight: of the input's dtype.
fn nll_weight(input: &C, weight: Option<&C>) -> R<()> {
    weight.map_or(Ok(()), |w| rules::check_same(input.dtype(), w.dtype()))
}

impl Backend for CandleTensor {
    type Error = Error;

    autograd_opset::written_back_kernels!(write_back);
    autograd_opset::float_unary_kernels!(float_unary, C);

    fn add_tensor(self_: &Self, other: &Self, alpha: Scalar) -> R<Self> {
        rules::check_alpha(kind(self_).max(kind(other)), alpha)?;
        let alpha = alpha.to_f64();
        let r = binary_exact(self_, other, |a, b| C::add_tensor(a, b, alpha))?;
        zero_aware(ZeroOp::Add, self_, other, r)
    }
    fn add_scalar(self_: &Self, other: Scalar, alpha: Scalar) -> R<Self> {
        rules::check_alpha(scalar_kind(self_, other), alpha)?;
        let (s, a) = (other.to_f64(), alpha.to_f64());
        with_scalar(self_, other, |x| C::add_scalar(x, s, a))
    }
    fn sub_tensor(self_: &Self, other: &Self, alpha: Scalar) -> R<Self> {
        rules::check_sub(kind(self_), kind(other))?;
        rules::check_alpha(kind(self_).max(kind(other)), alpha)?;
        let alpha = alpha.to_f64();
        let r = binary_exact(self_, other, |a, b| C::sub_tensor(a, b, alpha))?;
        zero_aware(ZeroOp::Add, self_, other, r)
    }
    fn sub_scalar(self_: &Self, other: Scalar, alpha: Scalar) -> R<Self> {
        rules::check_sub_scalar(kind(self_), other)?;
        rules::check_alpha(scalar_kind(self_, other), alpha)?;
        let (s, a) = (other.to_f64(), alpha.to_f64());
        with_scalar(self_, other, |x| C::sub_scalar(x, s, a))
    }
    fn mul_tensor(self_: &Self, other: &Self) -> R<Self> {
        let r = binary_exact(self_, other, C::mul_tensor)?;
        zero_aware(ZeroOp::Mul, self_, other, r)
    }
    fn mul_scalar(self_: &Self, other: Scalar) -> R<Self> {
        let s = other.to_f64();
        let r = with_scalar(self_, other, |x| C::mul_scalar(x, s))?;
        Ok(zero_aware_scalar(self_, r))
    }
    fn div_tensor(self_: &Self, other: &Self) -> R<Self> {
        let [a, b] = promoted_all([self_, other])?;
        let r = C::div_tensor(&a, &b)?;
        zero_aware(ZeroOp::Div, self_, other, r)
    }
    fn div_scalar(self_: &Self, other: Scalar) -> R<Self> {
        let r = C::div_scalar(&promoted(self_, float_dtype(&[self_]))?, other.to_f64())?;
        Ok(zero_aware_scalar(self_, r))
    }
    fn neg(self_: &Self) -> R<Self> {
        rules::check_neg(kind(self_))?;
        int_kernel(self_, C::neg, Kind::Int)
    }
    fn pow_tensor_scalar(self_: &Self, exponent: Scalar) -> R<Self> {
        rules::check_int_pow(scalar_kind(self_, exponent), exponent)?;
        let kind = scalar_kind(self_, exponent);
        let exponent = exponent.to_f64();
        match kind {
            Kind::Float => C::pow_tensor_scalar(&promoted(self_, float_dtype(&[self_]))?, exponent),
            // candle's `powf` is for floats: integer powers go through `F64` (a boolean to a
            // boolean power stays boolean).
            k => narrowed(C::pow_tensor_scalar(&wide(self_)?, exponent)?, k),
        }
    }
    fn pow_tensor_tensor(self_: &Self, exponent: &Self) -> R<Self> {
        let k = kind(self_).max(kind(exponent));
        rules::check_not_bool(k, kernel::POW)?;
        match k {
            Kind::Float => binary(self_, exponent, C::pow_tensor_tensor),
            _ => int_pow(self_, exponent),
        }
    }
    fn abs(self_: &Self) -> R<Self> {
        rules::check_not_bool(kind(self_), kernel::ABS)?;
        int_kernel(self_, C::abs, Kind::Int)
    }
    fn sign(self_: &Self) -> R<Self> {
        int_kernel(self_, C::sign, Kind::Bool)
    }
    fn tanh_backward(grad_output: &Self, output: &Self) -> R<Self> {
        // PyTorch promotes the two, and has the kernel for floats only.
        rules::check_promoted_floats(kernel::TANH_BACKWARD, grad_output.dtype(), output.dtype())?;
        let [g, o] = promoted_all([grad_output, output])?;
        C::tanh_backward(&g, &o)
    }
    fn relu(self_: &Self) -> R<Self> {
        rules::check_relu(kind(self_))?;
        int_kernel(self_, C::relu, Kind::Int)
    }
    fn leaky_relu(self_: &Self, negative_slope: Scalar) -> R<Self> {
        rules::check_floats(self_.dtype(), kernel::LEAKY_RELU)?;
        C::leaky_relu(self_, negative_slope.to_f64())
    }
    fn threshold_backward(grad_output: &Self, self_: &Self, threshold: Scalar) -> R<Self> {
        let threshold = threshold.to_f64();
        rules::check_not_bool(kind(grad_output).max(kind(self_)), kernel::THRESHOLD)?;
        binary(grad_output, self_, |g, x| {
            C::threshold_backward(g, x, threshold)
        })
    }
    fn gelu(self_: &Self, approximate: &str) -> R<Self> {
        rules::check_floats(self_.dtype(), kernel::GELU)?;
        C::gelu(self_, approximate)
    }
    fn clamp(self_: &Self, min: Option<Scalar>, max: Option<Scalar>) -> R<Self> {
        let kind = rules::clamp_kind(kind(self_), min, max);
        rules::check_clamp(kind)?;
        let (min, max) = (min.map(Scalar::to_f64), max.map(Scalar::to_f64));
        if kind == Kind::Float {
            return C::clamp(&promoted(self_, float_dtype(&[self_]))?, min, max);
        }
        narrowed(C::clamp(&wide(self_)?, min, max)?, Kind::Int)
    }
    fn where_self(condition: &Self, self_: &Self, other: &Self) -> R<Self> {
        rules::check_where_condition(condition.dtype())?;
        match kind(self_).max(kind(other)) {
            // candle's `where_cond` picks `I64` and `U8` elements as they are: exact.
            Kind::Int => C::where_self(condition, &as_i64(self_)?, &as_i64(other)?),
            Kind::Bool => C::where_self(condition, self_, other),
            Kind::Float => binary(self_, other, |a, b| {
                C::where_self(&promoted(condition, a.t.dtype())?, a, b)
            }),
        }
    }
    fn maximum(self_: &Self, other: &Self) -> R<Self> {
        binary_exact(self_, other, C::maximum)
    }
    fn minimum(self_: &Self, other: &Self) -> R<Self> {
        binary_exact(self_, other, C::minimum)
    }
    fn eq_tensor(self_: &Self, other: &Self) -> R<Self> {
        compare(self_, other, C::eq_tensor)
    }
    fn eq_scalar(self_: &Self, other: Scalar) -> R<Self> {
        compare_scalar(self_, other, C::eq_scalar)
    }
    fn ne_scalar(self_: &Self, other: Scalar) -> R<Self> {
        compare_scalar(self_, other, C::ne_scalar)
    }
    fn gt_tensor(self_: &Self, other: &Self) -> R<Self> {
        compare(self_, other, C::gt_tensor)
    }
    fn ge_tensor(self_: &Self, other: &Self) -> R<Self> {
        compare(self_, other, C::ge_tensor)
    }
    fn le_tensor(self_: &Self, other: &Self) -> R<Self> {
        compare(self_, other, C::le_tensor)
    }
    fn ne_tensor(self_: &Self, other: &Self) -> R<Self> {
        compare(self_, other, C::ne_tensor)
    }
    fn gt_scalar(self_: &Self, other: Scalar) -> R<Self> {
        compare_scalar(self_, other, C::gt_scalar)
    }
    fn lt_tensor(self_: &Self, other: &Self) -> R<Self> {
        compare(self_, other, C::lt_tensor)
    }
    fn lt_scalar(self_: &Self, other: Scalar) -> R<Self> {
        compare_scalar(self_, other, C::lt_scalar)
    }
    fn ge_scalar(self_: &Self, other: Scalar) -> R<Self> {
        compare_scalar(self_, other, C::ge_scalar)
    }
    fn le_scalar(self_: &Self, other: Scalar) -> R<Self> {
        compare_scalar(self_, other, C::le_scalar)
    }
    fn argmax(self_: &Self, dim: Option<i64>, keepdim: bool) -> R<Self> {
        rules::check_argmax(kind(self_))?;
        let x = if kind(self_) == Kind::Float {
            self_.clone()
        } else {
            wide(self_)?
        };
        indices_out(C::argmax(&x, dim, keepdim)?)
    }
    fn new_zeros(
        self_: &Self,
        size: &[i64],
        dtype: Option<ScalarType>,
        layout: Option<Layout>,
        device: Option<Device>,
        pin_memory: Option<bool>,
    ) -> R<Self> {
        let z = C::new_zeros(&wide(self_)?, size, dtype, layout, device, pin_memory)?;
        as_dtype_of(self_, dtype, z)
    }
    fn zero_(self_: &mut Self) -> R<()> {
        C::zero_(self_)
    }
    fn fill_scalar_(self_: &mut Self, value: Scalar) -> R<()> {
        let mut w = wide(self_)?;
        // PyTorch converts the value to the tensor's dtype (truncating, or != 0 for bool).
        let v = rules::converted_scalar(kind(self_), value);
        C::fill_scalar_(&mut w, v)?;
        *self_ = C::new(ce(w.t.to_dtype(self_.t.dtype()))?);
        Ok(())
    }
    fn mm(self_: &Self, mat2: &Self) -> R<Self> {
        // PyTorch's meta function checks the ranks and sizes, its kernel the dtypes.
        autograd_opset::shape::check_mm(self_.shape(), mat2.shape())?;
        matmul_like(self_, mat2, kernel::MM, C::mm)
    }
    fn bmm(self_: &Self, mat2: &Self) -> R<Self> {
        autograd_opset::meta::bmm(self_.shape(), mat2.shape())?;
        rules::check_same(self_.dtype(), mat2.dtype())?;
        matmul_like(self_, mat2, kernel::BMM, C::bmm)
    }
    fn sum_dim_intlist(
        self_: &Self,
        dim: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<ScalarType>,
    ) -> R<Self> {
        let t = &cast_to(self_, dtype)?;
        match (kind(t), dtype) {
            (Kind::Float, _) => C::sum_dim_intlist(t, dim, keepdim, None),
            (_, Some(ScalarType::Bool)) => {
                let s = C::sum_dim_intlist(&as_i64(t)?, dim, keepdim, None)?;
                narrowed(wide(&s)?, Kind::Bool)
            }
            _ => C::sum_dim_intlist(&as_i64(t)?, dim, keepdim, None),
        }
    }
    fn mean_dim(
        self_: &Self,
        dim: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<ScalarType>,
    ) -> R<Self> {
        let t = &cast_to(self_, dtype)?;
        rules::check_mean(t.dtype(), dtype.is_some())?;
        C::mean_dim(t, dim, keepdim, None)
    }
    fn max_dim(self_: &Self, dim: i64, keepdim: bool) -> R<(Self, Self)> {
        if kind(self_) == Kind::Float {
            let (v, i) = C::max_dim(self_, dim, keepdim)?;
            return Ok((v, indices_out(i)?));
        }
        let (v, i) = C::max_dim(&wide(self_)?, dim, keepdim)?;
        Ok((narrowed(v, kind(self_))?, indices_out(i)?))
    }
    fn amax(self_: &Self, dim: &[i64], keepdim: bool) -> R<Self> {
        kept(self_, |x| C::amax(x, dim, keepdim))
    }
    fn _softmax(self_: &Self, dim: i64, half_to_float: bool) -> R<Self> {
        autograd_opset::meta::softmax(false, self_.dtype(), self_.shape(), dim, half_to_float)?;
        C::_softmax(self_, dim, half_to_float)
    }
    fn _log_softmax(self_: &Self, dim: i64, half_to_float: bool) -> R<Self> {
        autograd_opset::meta::softmax(true, self_.dtype(), self_.shape(), dim, half_to_float)?;
        C::_log_softmax(self_, dim, half_to_float)
    }
    // ---- softmax's backward functions (issue 30): candle compositions in backend/softmax.rs
    fn _softmax_backward_data(
        grad_output: &Self,
        output: &Self,
        dim: i64,
        _input_dtype: ScalarType,
    ) -> R<Self> {
        softmax_backward(grad_output, output, dim, false)
    }
    fn _log_softmax_backward_data(
        grad_output: &Self,
        output: &Self,
        dim: i64,
        _input_dtype: ScalarType,
    ) -> R<Self> {
        softmax_backward(grad_output, output, dim, true)
    }
    fn logsumexp(self_: &Self, dim: &[i64], keepdim: bool) -> R<Self> {
        C::logsumexp(&promoted(self_, float_dtype(&[self_]))?, dim, keepdim)
    }
    fn transpose_int(self_: &Self, dim0: i64, dim1: i64) -> R<Self> {
        moved(self_, |x| C::transpose_int(x, dim0, dim1))
    }
    fn permute(self_: &Self, dims: &[i64]) -> R<Self> {
        moved(self_, |x| C::permute(x, dims))
    }
    fn reshape(self_: &Self, shape: &[i64]) -> R<Self> {
        moved(self_, |x| C::reshape(x, shape))
    }
    fn view(self_: &Self, size: &[i64]) -> R<Self> {
        // The kernel is candle's `reshape` after a stride check: any dtype, and the check
        // must see the tensor's own layout (a conversion to `F64` would make it contiguous).
        C::view(self_, size)
    }
    fn expand(self_: &Self, size: &[i64], implicit: bool) -> R<Self> {
        moved(self_, |x| C::expand(x, size, implicit))
    }
    fn clone(self_: &Self, memory_format: Option<MemoryFormat>) -> R<Self> {
        moved(self_, |x| C::clone(x, memory_format))
    }
    /// candle's `unsqueeze`: a view with PyTorch's stride for the new dimension.
    fn unsqueeze(self_: &Self, dim: i64) -> R<Self> {
        let ax = meta::unsqueeze(self_.t.rank(), dim)?;
        Ok(C::new(ce(self_.t.unsqueeze(ax))?))
    }
    fn slice_tensor(
        self_: &Self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> R<Self> {
        moved(self_, |x| C::slice_tensor(x, dim, start, end, step))
    }
    fn slice_backward(
        grad_output: &Self,
        input_sizes: &[i64],
        dim: i64,
        start: i64,
        end: i64,
        step: i64,
    ) -> R<Self> {
        moved(grad_output, |x| {
            C::slice_backward(x, input_sizes, dim, start, end, step)
        })
    }
    fn cat(tensors: &[Self], dim: i64) -> R<Self> {
        joined(tensors, |ts| C::cat(ts, dim))
    }
    fn as_strided(
        self_: &Self,
        size: &[i64],
        stride: &[i64],
        storage_offset: Option<i64>,
    ) -> R<Self> {
        super::as_strided(self_, size, stride, storage_offset)
    }
    fn diagonal(self_: &Self, offset: i64, dim1: i64, dim2: i64) -> R<Self> {
        moved(self_, |x| C::diagonal(x, offset, dim1, dim2))
    }
    fn diagonal_backward(
        grad_output: &Self,
        input_sizes: &[i64],
        offset: i64,
        dim1: i64,
        dim2: i64,
    ) -> R<Self> {
        moved(grad_output, |x| {
            C::diagonal_backward(x, input_sizes, offset, dim1, dim2)
        })
    }
    fn select_int(self_: &Self, dim: i64, index: i64) -> R<Self> {
        moved(self_, |x| C::select_int(x, dim, index))
    }
    fn index_select(self_: &Self, dim: i64, index: &Self) -> R<Self> {
        moved(self_, |x| {
            let i = index_arg(index, x, IndexUse::IndexSelect)?;
            C::index_select(x, dim, &i)
        })
    }
    fn index_add(self_: &Self, dim: i64, index: &Self, source: &Self, alpha: Scalar) -> R<Self> {
        let i = index_arg(index, self_, IndexUse::IndexAdd)?;
        rules::check_index_add_source(self_.dtype(), source.dtype())?;
        let s = wide(source)?;
        // PyTorch converts alpha to the integer dtype (truncates; for bools, != 0).
        let alpha = rules::converted_scalar(kind(self_), alpha);
        kept(self_, |x| {
            C::index_add(
                x,
                dim,
                &promoted(&i, x.t.dtype())?,
                &promoted(&s, x.t.dtype())?,
                alpha,
            )
        })
    }
    fn gather(self_: &Self, dim: i64, index: &Self, sparse_grad: bool) -> R<Self> {
        moved(self_, |x| {
            let i = index_arg(index, x, IndexUse::Gather)?;
            C::gather(x, dim, &i, sparse_grad)
        })
    }
    fn scatter_add(self_: &Self, dim: i64, index: &Self, src: &Self) -> R<Self> {
        let i = index_arg(index, self_, IndexUse::Scatter)?;
        rules::check_scatter_src(self_.dtype(), src.dtype())?;
        let s = wide(src)?;
        kept(self_, |x| {
            C::scatter_add(
                x,
                dim,
                &promoted(&i, x.t.dtype())?,
                &promoted(&s, x.t.dtype())?,
            )
        })
    }
    fn mse_loss(self_: &Self, target: &Self, reduction: i64) -> R<Self> {
        rules::check_promoted_floats(kernel::MSE_LOSS, self_.dtype(), target.dtype())?;
        let [a, b] = promoted_all([self_, target])?;
        C::mse_loss(&a, &b, reduction)
    }
    fn nll_loss_forward(
        self_: &Self,
        target: &Self,
        weight: Option<&Self>,
        reduction: i64,
        ignore_index: i64,
    ) -> R<(Self, Self)> {
        let t = index_arg(target, self_, IndexUse::NllTarget)?;
        rules::check_floats(self_.dtype(), kernel::NLL_LOSS)?;
        nll_weight(self_, weight)?;
        C::nll_loss_forward(self_, &t, weight, reduction, ignore_index)
    }
    fn nll_loss_backward(
        grad_output: &Self,
        self_: &Self,
        target: &Self,
        weight: Option<&Self>,
        reduction: i64,
        ignore_index: i64,
        total_weight: &Self,
    ) -> R<Self> {
        let t = index_arg(target, self_, IndexUse::NllBackwardTarget)?;
        rules::check_floats(self_.dtype(), kernel::NLL_LOSS_BACKWARD)?;
        nll_weight(self_, weight)?;
        let d = self_.t.dtype();
        let (g, tw) = (promoted(grad_output, d)?, promoted(total_weight, d)?);
        C::nll_loss_backward(&g, self_, &t, weight, reduction, ignore_index, &tw)
    }
    fn native_dropout(input: &Self, p: f64, train: Option<bool>) -> R<(Self, Self)> {
        rules::check_dropout(input.dtype(), "f64")?;
        let (y, mask) = C::native_dropout(input, p, train)?;
        Ok((y, mask_out(mask)?))
    }
    fn native_dropout_backward(grad_output: &Self, mask: &Self, scale: f64) -> R<Self> {
        let [g, m] = promoted_all([grad_output, mask])?;
        C::native_dropout_backward(&g, &m, scale)
    }
    fn embedding(
        weight: &Self,
        indices: &Self,
        padding_idx: i64,
        scale_grad_by_freq: bool,
        sparse: bool,
    ) -> R<Self> {
        moved(weight, |x| {
            let i = index_arg(indices, x, IndexUse::Embedding)?;
            C::embedding(x, &i, padding_idx, scale_grad_by_freq, sparse)
        })
    }
    fn ceil(self_: &Self) -> R<Self> {
        rounded(self_, kernel::CEIL, f64::ceil, f32::ceil)
    }
    fn floor(self_: &Self) -> R<Self> {
        rounded(self_, kernel::FLOOR, f64::floor, f32::floor)
    }
    fn round(self_: &Self) -> R<Self> {
        rounded(
            self_,
            kernel::ROUND,
            f64::round_ties_even,
            f32::round_ties_even,
        )
    }
    fn trunc(self_: &Self) -> R<Self> {
        rounded(self_, kernel::TRUNC, f64::trunc, f32::trunc)
    }
    fn remainder_scalar(self_: &Self, other: Scalar) -> R<Self> {
        modulo(self_, other, kernel::REMAINDER, true)
    }
    fn fmod_scalar(self_: &Self, other: Scalar) -> R<Self> {
        modulo(self_, other, kernel::FMOD, false)
    }
    fn flip(self_: &Self, dims: &[i64]) -> R<Self> {
        let axes = autograd_opset::meta::flip(self_.shape(), dims)?;
        // candle's index_select reads contiguous tensors only.
        let mut t = ce(self_.t.contiguous())?;
        for ax in axes {
            let n = t.dims()[ax] as u32;
            let rev = candle_core::Tensor::from_vec(
                (0..n).rev().collect::<Vec<u32>>(),
                n as usize,
                t.device(),
            );
            t = ce(t.index_select(&ce(rev)?, ax))?;
        }
        Ok(C::new(t))
    }
    fn amin(self_: &Self, dim: &[i64], keepdim: bool) -> R<Self> {
        let axes = autograd_opset::shape::reduce_axes(Some(dim), self_.shape().len())?;
        autograd_opset::shape::check_amin(dim, &axes, self_.shape())?;
        // min(x) = -max(-x), exactly (negation is exact), NaN kept.
        let r = C::amax(&negated(self_)?, dim, keepdim)?;
        narrowed(C::neg(&r)?, kind(self_))
    }
    fn min_dim(self_: &Self, dim: i64, keepdim: bool) -> R<(Self, Self)> {
        autograd_opset::meta::min_dim(self_.shape(), dim)?;
        let (v, i) = C::max_dim(&negated(self_)?, dim, keepdim)?;
        Ok((narrowed(C::neg(&v)?, kind(self_))?, indices_out(i)?))
    }
    fn argmin(self_: &Self, dim: Option<i64>, keepdim: bool) -> R<Self> {
        rules::check_argmin(kind(self_))?;
        match dim {
            None => autograd_opset::meta::argmin(self_.shape())?,
            Some(d) => drop(autograd_opset::meta::argmin_dim(self_.shape(), d)?),
        }
        // The first smallest element is the first largest of `-x` (a NaN wins in both).
        indices_out(C::argmax(&negated(self_)?, dim, keepdim)?)
    }
    fn isnan(self_: &Self) -> R<Self> {
        let t = &self_.t;
        match kind(self_) {
            Kind::Float => mask_out(C::new(ce(t.ne(t))?)),
            _ => mask_out(C::new(ce(t.zeros_like())?)),
        }
    }
    fn isinf(self_: &Self) -> R<Self> {
        let t = &self_.t;
        match kind(self_) {
            Kind::Float => mask_out(C::new(ce(ce(t.abs())?.eq(f64::INFINITY))?)),
            _ => mask_out(C::new(ce(t.zeros_like())?)),
        }
    }
    fn logical_not(self_: &Self) -> R<Self> {
        let x = wide(self_)?;
        mask_out(C::new(ce(x.t.eq(0.0))?))
    }
    fn logical_and(self_: &Self, other: &Self) -> R<Self> {
        mask_out(C::new(ce(truth(self_)?.broadcast_mul(&truth(other)?))?))
    }
    fn logical_or(self_: &Self, other: &Self) -> R<Self> {
        mask_out(C::new(ce(truth(self_)?.broadcast_maximum(&truth(other)?))?))
    }
    fn logical_xor(self_: &Self, other: &Self) -> R<Self> {
        mask_out(C::new(ce(truth(self_)?.broadcast_ne(&truth(other)?))?))
    }
    fn bitwise_not(self_: &Self) -> R<Self> {
        match kind(self_) {
            Kind::Float => Err(rules::not_implemented(kernel::BITWISE_NOT, self_.dtype())),
            Kind::Int => on_i64s(&[self_], |v| !v[0], DType::I64),
            Kind::Bool => mask_out(C::new(ce(self_.t.eq(0.0))?)),
        }
    }
    fn bitwise_and_tensor(self_: &Self, other: &Self) -> R<Self> {
        bitwise(self_, other, kernel::BITWISE_AND, |x, y| x & y)
    }
    fn bitwise_and_scalar(self_: &Self, other: Scalar) -> R<Self> {
        bitwise(self_, &wrapped(other)?, kernel::BITWISE_AND, |x, y| x & y)
    }
    fn bitwise_or_tensor(self_: &Self, other: &Self) -> R<Self> {
        bitwise(self_, other, kernel::BITWISE_OR, |x, y| x | y)
    }
    fn bitwise_or_scalar(self_: &Self, other: Scalar) -> R<Self> {
        bitwise(self_, &wrapped(other)?, kernel::BITWISE_OR, |x, y| x | y)
    }
    fn bitwise_xor_tensor(self_: &Self, other: &Self) -> R<Self> {
        bitwise(self_, other, kernel::BITWISE_XOR, |x, y| x ^ y)
    }
    fn bitwise_xor_scalar(self_: &Self, other: Scalar) -> R<Self> {
        bitwise(self_, &wrapped(other)?, kernel::BITWISE_XOR, |x, y| x ^ y)
    }
    fn any(self_: &Self) -> R<Self> {
        let all: Vec<usize> = (0..self_.shape().len()).collect();
        any_over(self_, &all, false)
    }
    fn any_dim(self_: &Self, dim: i64, keepdim: bool) -> R<Self> {
        let ax = autograd_opset::shape::norm_dim(dim, self_.shape().len())?;
        let axes: Vec<usize> = if self_.shape().is_empty() {
            vec![]
        } else {
            vec![ax]
        };
        any_over(self_, &axes, keepdim)
    }
    fn any_dims(self_: &Self, dim: Option<&[i64]>, keepdim: bool) -> R<Self> {
        // `None` reduces every dim; `[]` none (unlike `sum`'s).
        let axes = match dim {
            Some([]) => vec![],
            _ => autograd_opset::shape::reduce_axes(dim, self_.shape().len())?,
        };
        any_over(self_, &axes, keepdim)
    }
    fn div_tensor_mode(self_: &Self, other: &Self, rounding_mode: Option<&str>) -> R<Self> {
        match autograd_opset::meta::rounding_mode(rounding_mode)? {
            None => <Self as Backend>::div_tensor(self_, other),
            Some(floor) => divided(self_, other, floor),
        }
    }
    fn div_scalar_mode(self_: &Self, other: Scalar, rounding_mode: Option<&str>) -> R<Self> {
        match autograd_opset::meta::rounding_mode(rounding_mode)? {
            None => <Self as Backend>::div_scalar(self_, other),
            Some(floor) => divided(self_, &wrapped(other)?, floor),
        }
    }
    fn remainder_tensor(self_: &Self, other: &Self) -> R<Self> {
        modulo_tensor(self_, other, kernel::REMAINDER, true)
    }
    fn fmod_tensor(self_: &Self, other: &Self) -> R<Self> {
        modulo_tensor(self_, other, kernel::FMOD, false)
    }
    fn atan2(self_: &Self, other: &Self) -> R<Self> {
        on_floats(&[self_, other], |v| v[0].atan2(v[1]))
    }
    fn elu(self_: &Self, alpha: Scalar, scale: Scalar, input_scale: Scalar) -> R<Self> {
        rules::check_floats(self_.dtype(), kernel::ELU)?;
        let (neg, pos, inp) = (
            alpha.to_f64() * scale.to_f64(),
            scale.to_f64(),
            input_scale.to_f64(),
        );
        on_floats(&[self_], |v| {
            if v[0] <= 0.0 {
                (v[0] * inp).exp_m1() * neg
            } else {
                v[0] * pos
            }
        })
    }
    fn elu_backward(
        grad_output: &Self,
        alpha: Scalar,
        scale: Scalar,
        input_scale: Scalar,
        is_result: bool,
        self_or_result: &Self,
    ) -> R<Self> {
        autograd_opset::meta::elu_backward(alpha.to_f64(), is_result)?;
        rules::check_promoted_floats(
            kernel::ELU_BACKWARD,
            grad_output.dtype(),
            self_or_result.dtype(),
        )?;
        let (neg, pos, inp) = (
            alpha.to_f64() * scale.to_f64(),
            scale.to_f64(),
            input_scale.to_f64(),
        );
        on_floats(&[grad_output, self_or_result], |v| {
            let (a, b) = (v[0], v[1]);
            match (b <= 0.0, is_result) {
                (false, _) => a * pos,
                (true, true) => a * inp * (b + neg),
                (true, false) => a * inp * neg * (b * inp).exp(),
            }
        })
    }
    fn hardtanh(self_: &Self, min_val: Scalar, max_val: Scalar) -> R<Self> {
        rules::check_hardtanh(kind(self_))?;
        let (lo, hi) = (min_val.to_f64(), max_val.to_f64());
        match kind(self_) {
            Kind::Float => on_floats(&[self_], |v| {
                if v[0] < lo {
                    lo
                } else if v[0] > hi {
                    hi
                } else {
                    v[0]
                }
            }),
            // Integers keep their dtype: the bounds clamp, then the cast truncates.
            _ => on_i64s(
                &[self_],
                |v| (v[0] as f64).max(lo).min(hi) as i64,
                DType::I64,
            ),
        }
    }
    fn hardtanh_backward(
        grad_output: &Self,
        self_: &Self,
        min_val: Scalar,
        max_val: Scalar,
    ) -> R<Self> {
        rules::check_promoted_floats(
            kernel::HARDTANH_BACKWARD,
            grad_output.dtype(),
            self_.dtype(),
        )?;
        let (lo, hi) = (min_val.to_f64(), max_val.to_f64());
        on_floats(&[grad_output, self_], |v| {
            if v[1] <= lo || v[1] >= hi { 0.0 } else { v[0] }
        })
    }
    fn alias(self_: &Self) -> R<Self> {
        // The same values (tensors are values; the autograd layer keeps the view).
        Ok(self_.clone())
    }

    // ---- normalization and variance (issue 30): candle compositions in backend/norm.rs,
    // every tensor in the input's float dtype (integers and booleans promoted).
    fn _native_batch_norm_legit(
        input: &Self,
        weight: Option<&Self>,
        bias: Option<&Self>,
        running_mean: &mut Self,
        running_var: &mut Self,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> R<(Self, Self, Self)> {
        let d = float_dtype(&[input]);
        let (w, b) = (opt_promoted(weight, d)?, opt_promoted(bias, d)?);
        *running_mean = promoted(running_mean, d)?;
        *running_var = promoted(running_var, d)?;
        let running = Some((running_mean, running_var));
        let x = promoted(input, d)?;
        C::batch_norm_legit(&x, w.as_ref(), b.as_ref(), running, training, momentum, eps)
    }
    fn _native_batch_norm_legit_no_training(
        input: &Self,
        weight: Option<&Self>,
        bias: Option<&Self>,
        running_mean: &Self,
        running_var: &Self,
        _momentum: f64,
        eps: f64,
    ) -> R<(Self, Self, Self)> {
        let d = float_dtype(&[input]);
        let (w, b) = (opt_promoted(weight, d)?, opt_promoted(bias, d)?);
        let (mut rm, mut rv) = (promoted(running_mean, d)?, promoted(running_var, d)?);
        let running = Some((&mut rm, &mut rv));
        let x = promoted(input, d)?;
        C::batch_norm_legit(&x, w.as_ref(), b.as_ref(), running, false, 0.0, eps)
    }
    fn _native_batch_norm_legit_no_stats(
        input: &Self,
        weight: Option<&Self>,
        bias: Option<&Self>,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> R<(Self, Self, Self)> {
        autograd_opset::meta::batch_norm_no_stats(training)?;
        let d = float_dtype(&[input]);
        let (w, b) = (opt_promoted(weight, d)?, opt_promoted(bias, d)?);
        let x = promoted(input, d)?;
        C::batch_norm_legit(&x, w.as_ref(), b.as_ref(), None, true, momentum, eps)
    }
    fn native_batch_norm_backward(
        grad_out: &Self,
        input: &Self,
        weight: Option<&Self>,
        running_mean: Option<&Self>,
        running_var: Option<&Self>,
        save_mean: Option<&Self>,
        save_invstd: Option<&Self>,
        train: bool,
        eps: f64,
        output_mask: [bool; 3],
    ) -> R<(Self, Self, Self)> {
        let d = float_dtype(&[input]);
        let (g, x) = (promoted(grad_out, d)?, promoted(input, d)?);
        let (w, rm, rv) = (
            opt_promoted(weight, d)?,
            opt_promoted(running_mean, d)?,
            opt_promoted(running_var, d)?,
        );
        let (sm, si) = (opt_promoted(save_mean, d)?, opt_promoted(save_invstd, d)?);
        C::native_batch_norm_backward(
            &g,
            &x,
            w.as_ref(),
            rm.as_ref(),
            rv.as_ref(),
            sm.as_ref(),
            si.as_ref(),
            train,
            eps,
            output_mask,
        )
    }
    fn native_layer_norm(
        input: &Self,
        normalized_shape: &[i64],
        weight: Option<&Self>,
        bias: Option<&Self>,
        eps: f64,
    ) -> R<(Self, Self, Self)> {
        let dtype = |t: &Self| t.dtype();
        rules::check_layer_norm(input.dtype(), weight.map(dtype), bias.map(dtype))?;
        let d = float_dtype(&[input]);
        let (w, b) = (opt_promoted(weight, d)?, opt_promoted(bias, d)?);
        let x = promoted(input, d)?;
        C::native_layer_norm(&x, normalized_shape, w.as_ref(), b.as_ref(), eps)
    }
    fn native_layer_norm_backward(
        grad_out: &Self,
        input: &Self,
        normalized_shape: &[i64],
        mean: &Self,
        rstd: &Self,
        weight: Option<&Self>,
        bias: Option<&Self>,
        output_mask: [bool; 3],
    ) -> R<(Self, Self, Self)> {
        let dtype = |t: &Self| t.dtype();
        rules::check_layer_norm(input.dtype(), weight.map(dtype), bias.map(dtype))?;
        let d = float_dtype(&[input]);
        let (g, x) = (promoted(grad_out, d)?, promoted(input, d)?);
        let (m, s) = (promoted(mean, d)?, promoted(rstd, d)?);
        let (w, b) = (opt_promoted(weight, d)?, opt_promoted(bias, d)?);
        C::native_layer_norm_backward(
            &g,
            &x,
            normalized_shape,
            [&m, &s],
            w.as_ref(),
            b.as_ref(),
            output_mask,
        )
    }
    fn var_correction(
        self_: &Self,
        dim: Option<&[i64]>,
        correction: Option<Scalar>,
        keepdim: bool,
    ) -> R<Self> {
        let correction = correction.map(Scalar::to_f64);
        autograd_opset::meta::var_dtype(self_.dtype())?;
        C::var_correction(self_, dim, correction, keepdim)
    }

    // ---- convolution and pooling (backend/conv.rs): floats as they are (the first float
    // operand's dtype); integers through `F64`, the result in their dtype.
    fn convolution(
        input: &Self,
        weight: &Self,
        bias: Option<&Self>,
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        transposed: bool,
        output_padding: &[i64],
        groups: i64,
    ) -> R<Self> {
        let k = kind(input).max(kind(weight));
        let d = if k == Kind::Float {
            float_dtype(&[input, weight])
        } else {
            DType::F64
        };
        let (x, w) = (promoted(input, d)?, promoted(weight, d)?);
        let b = bias.map(|b| promoted(b, d)).transpose()?;
        let r = C::convolution(
            &x,
            &w,
            b.as_ref(),
            stride,
            padding,
            dilation,
            transposed,
            output_padding,
            groups,
        )?;
        narrowed(r, k)
    }
    fn convolution_backward(
        grad_output: &Self,
        input: &Self,
        weight: &Self,
        _bias_sizes: Option<&[i64]>,
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        transposed: bool,
        output_padding: &[i64],
        groups: i64,
        output_mask: [bool; 3],
    ) -> R<(Self, Self, Self)> {
        let [g, x, w] = promoted_all([grad_output, input, weight])?;
        C::convolution_backward(
            &g,
            &x,
            &w,
            stride,
            padding,
            dilation,
            transposed,
            output_padding,
            groups,
            output_mask,
        )
    }
    fn max_pool2d_with_indices(
        self_: &Self,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        ceil_mode: bool,
    ) -> R<(Self, Self)> {
        let p = meta::max_pool2d(
            self_.shape(),
            kernel_size,
            stride,
            padding,
            dilation,
            ceil_mode,
        )?;
        max_pool_any(self_, &p)
    }
    fn max_pool2d_with_indices_backward(
        grad_output: &Self,
        self_: &Self,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        ceil_mode: bool,
        indices: &Self,
    ) -> R<Self> {
        let [g, x] = promoted_all([grad_output, self_])?;
        let i = index_arg(indices, &g, IndexUse::Gather)?;
        let (gs, xs, is) = (g.shape(), x.shape(), i.shape());
        let geo = (kernel_size, stride, padding, dilation);
        let p = meta::max_pool2d_backward(gs, xs, geo.0, geo.1, geo.2, geo.3, ceil_mode, is)?;
        C::max_pool_backward(&g, &x, &p, &i)
    }
    fn avg_pool2d(
        self_: &Self,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> R<Self> {
        let (k, s) = (kernel_size, stride);
        let p = meta::avg_pool2d(self_.shape(), k, s, padding, ceil_mode, divisor_override)?;
        avg_pool_any(self_, &p, count_include_pad, divisor_override)
    }
    fn avg_pool2d_backward(
        grad_output: &Self,
        self_: &Self,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> R<Self> {
        let [g, x] = promoted_all([grad_output, self_])?;
        let (gs, xs, k, s) = (g.shape(), x.shape(), kernel_size, stride);
        let p = meta::avg_pool2d_backward(gs, xs, k, s, padding, ceil_mode, divisor_override)?;
        C::avg_pool_backward(&g, &x, &p, count_include_pad, divisor_override)
    }
    fn max_pool3d_with_indices(
        self_: &Self,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        ceil_mode: bool,
    ) -> R<(Self, Self)> {
        let p = meta::max_pool3d(
            self_.shape(),
            kernel_size,
            stride,
            padding,
            dilation,
            ceil_mode,
        )?;
        rules::check_not_bool(kind(self_), kernel::MAX_POOL3D)?;
        max_pool_any(self_, &p)
    }
    fn max_pool3d_with_indices_backward(
        grad_output: &Self,
        self_: &Self,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        ceil_mode: bool,
        indices: &Self,
    ) -> R<Self> {
        let (gs, xs, is) = (grad_output.shape(), self_.shape(), indices.shape());
        let geo = (kernel_size, stride, padding, dilation);
        let p = meta::max_pool3d_backward(gs, xs, geo.0, geo.1, geo.2, geo.3, ceil_mode, is)?;
        rules::check_pool3d_backward(self_.dtype(), grad_output.dtype(), indices.dtype())?;
        let i = index_arg(indices, grad_output, IndexUse::Gather)?;
        C::max_pool_backward(grad_output, self_, &p, &i)
    }
    fn avg_pool3d(
        self_: &Self,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> R<Self> {
        let (k, s) = (kernel_size, stride);
        let p = meta::avg_pool3d(self_.shape(), k, s, padding, ceil_mode, divisor_override)?;
        rules::check_not_bool(kind(self_), kernel::AVG_POOL3D)?;
        avg_pool_any(self_, &p, count_include_pad, divisor_override)
    }
    fn avg_pool3d_backward(
        grad_output: &Self,
        self_: &Self,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> R<Self> {
        let (gs, xs, k, s) = (grad_output.shape(), self_.shape(), kernel_size, stride);
        let p = meta::avg_pool3d_backward(gs, xs, k, s, padding, ceil_mode, divisor_override)?;
        rules::check_same(self_.dtype(), grad_output.dtype())?;
        rules::check_not_bool(kind(self_), kernel::AVG_POOL3D_BACKWARD)?;
        let avg = (count_include_pad, divisor_override);
        if kind(self_) == Kind::Float {
            return C::avg_pool_backward(grad_output, self_, &p, avg.0, avg.1);
        }
        // Integers: PyTorch's integer division of each gradient by its divisor, one
        // gradient at a time (a window's quotient truncated before the adjoint sums them).
        let g = wide(grad_output)?;
        let (windows, ones) = (p.avg_windows(avg.0, avg.1), (true, Some(1)));
        let divisors: Vec<f64> = windows.iter().map(|(_, d)| *d).collect();
        let quotients = truncated(&divide_planes(&g, &divisors)?)?;
        let r = C::avg_pool_backward(&quotients, &wide(self_)?, &p, ones.0, ones.1)?;
        narrowed(r, kind(self_))
    }
    fn _adaptive_avg_pool2d(self_: &Self, output_size: &[i64]) -> R<Self> {
        rules::check_floats(self_.dtype(), kernel::ADAPTIVE_AVG_POOL2D)?;
        C::adaptive_avg_pool2d(self_, output_size)
    }
    fn _adaptive_avg_pool2d_backward(grad_output: &Self, self_: &Self) -> R<Self> {
        rules::check_floats(self_.dtype(), kernel::ADAPTIVE_AVG_POOL2D_BACKWARD)?;
        let [g, x] = promoted_all([grad_output, self_])?;
        C::adaptive_avg_pool2d_backward(&g, &x)
    }
    fn constant_pad_nd(self_: &Self, pad: &[i64], value: Scalar) -> R<Self> {
        let value = value.to_f64();
        let k = kind(self_);
        if k == Kind::Float {
            return C::constant_pad_nd(self_, pad, value);
        }
        // Integers and booleans: padded in `F64`, the value converted as `fill_` converts it.
        let r = C::constant_pad_nd(&wide(self_)?, pad, value)?;
        let t = &r.t;
        let zero = ce(t.zeros_like())?;
        let truncated = ce(ce(t.ge(&zero))?.where_cond(&ce(t.floor())?, &ce(t.ceil())?))?;
        narrowed(C::new(truncated), k)
    }
    fn index_tensor(self_: &Self, indices: &[Option<Self>]) -> R<Self> {
        super::advanced::index_tensor(self_, indices)
    }
    fn index_put(
        self_: &Self,
        indices: &[Option<Self>],
        values: &Self,
        accumulate: bool,
    ) -> R<Self> {
        super::advanced::index_put(self_, indices, values, accumulate)
    }
    fn scatter_src(self_: &Self, dim: i64, index: &Self, src: &Self) -> R<Self> {
        super::advanced::scatter_src(self_, dim, index, src)
    }
    fn nonzero(self_: &Self) -> R<Self> {
        super::geom::nonzero(self_)
    }
    fn masked_scatter(self_: &Self, mask: &Self, source: &Self) -> R<Self> {
        super::geom::masked_scatter(self_, mask, source)
    }
    fn masked_scatter_backward(grad_output: &Self, mask: &Self, sizes: &[i64]) -> R<Self> {
        super::geom::masked_scatter_backward(grad_output, mask, sizes)
    }
    fn scatter_value(self_: &Self, dim: i64, index: &Self, value: Scalar) -> R<Self> {
        super::advanced::scatter_value(self_, dim, index, value)
    }
    fn repeat(self_: &Self, repeats: &[i64]) -> R<Self> {
        let out = autograd_opset::meta::repeat(self_.shape(), repeats)?;
        // The shape padded with leading 1s, then each dim gathered at `i % size` (exact for
        // every dtype: elements are only moved).
        let mut padded = vec![1; out.len() - self_.shape().len()];
        padded.extend_from_slice(self_.shape());
        let mut t = ce(ce(self_.t.reshape(padded.as_slice()))?.contiguous())?;
        for (ax, (&n, &size)) in out.iter().zip(&padded).enumerate() {
            if n == size {
                continue;
            }
            let at: Vec<u32> = (0..n).map(|i| (i % size.max(1)) as u32).collect();
            let at = ce(candle_core::Tensor::from_vec(at, n, t.device()))?;
            t = ce(ce(t.index_select(&at, ax))?.contiguous())?;
        }
        Ok(C::new(t))
    }
    fn full(
        size: &[i64],
        fill_value: Scalar,
        dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
    ) -> R<Self> {
        from_values(factory::full(size, fill_value, dtype)?, dtype)
    }
    fn arange_start_step(
        start: Scalar,
        end: Scalar,
        step: Scalar,
        dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
    ) -> R<Self> {
        from_values(factory::arange(start, end, step, dtype)?, dtype)
    }
    fn rand(
        size: &[i64],
        dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
    ) -> R<Self> {
        from_values(factory::rand(size, dtype)?, dtype)
    }
    fn randn(
        size: &[i64],
        dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
    ) -> R<Self> {
        from_values(factory::randn(size, dtype)?, dtype)
    }
    fn randperm(
        n: i64,
        dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
    ) -> R<Self> {
        from_values(factory::randperm(n, dtype)?, dtype)
    }
    fn _to_copy(
        self_: &Self,
        dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
        _non_blocking: bool,
        _memory_format: Option<MemoryFormat>,
    ) -> R<Self> {
        match (kind(self_), dtype.map(Kind::requested)) {
            // On the host: candle's cast saturates where PyTorch's gives `i64::MIN`.
            (Kind::Float, Some(Kind::Int)) => {
                let v = ce(ce(self_.t.flatten_all())?.to_dtype(DType::F64))?;
                let v: Vec<i64> = ce(v.to_vec1::<f64>())?
                    .into_iter()
                    .map(factory::cast_i64)
                    .collect();
                Ok(C::from_i64(v, self_.t.dims()))
            }
            _ => cast_to(self_, dtype),
        }
    }
    fn _local_scalar_dense(self_: &Self) -> R<Scalar> {
        factory::check_local_scalar(self_.t.elem_count())?;
        // PyTorch reads the first element, whatever the count.
        let first = ce(ce(self_.t.flatten_all())?.get(0))?;
        Ok(match kind(self_) {
            Kind::Float => Scalar::Float(ce(ce(first.to_dtype(DType::F64))?.to_scalar::<f64>())?),
            Kind::Int => Scalar::Int(ce(first.to_scalar::<i64>())?),
            Kind::Bool => Scalar::Bool(ce(first.to_scalar::<u8>())? != 0),
        })
    }
    fn sym_stride_int(self_: &Self, dim: i64) -> R<i64> {
        let d = autograd_opset::layout::stride_dim(self_.t.rank(), dim)?;
        Ok(strides(self_)[d])
    }
    fn sym_storage_offset(self_: &Self) -> R<i64> {
        Ok(self_.t.layout().start_offset() as i64)
    }
    // ---- Reflection and replication padding, upsampling (backend/resample.rs)
    fn reflection_pad1d(self_: &Self, padding: &[i64]) -> R<Self> {
        padded(self_, padding, 1, PadMode::Reflect)
    }
    fn reflection_pad1d_backward(grad_output: &Self, self_: &Self, padding: &[i64]) -> R<Self> {
        padded_backward(grad_output, self_, padding, 1, PadMode::Reflect)
    }
    fn reflection_pad2d(self_: &Self, padding: &[i64]) -> R<Self> {
        padded(self_, padding, 2, PadMode::Reflect)
    }
    fn reflection_pad2d_backward(grad_output: &Self, self_: &Self, padding: &[i64]) -> R<Self> {
        padded_backward(grad_output, self_, padding, 2, PadMode::Reflect)
    }
    fn reflection_pad3d(self_: &Self, padding: &[i64]) -> R<Self> {
        padded(self_, padding, 3, PadMode::Reflect)
    }
    fn reflection_pad3d_backward(grad_output: &Self, self_: &Self, padding: &[i64]) -> R<Self> {
        padded_backward(grad_output, self_, padding, 3, PadMode::Reflect)
    }
    fn replication_pad1d(self_: &Self, padding: &[i64]) -> R<Self> {
        padded(self_, padding, 1, PadMode::Replicate)
    }
    fn replication_pad1d_backward(grad_output: &Self, self_: &Self, padding: &[i64]) -> R<Self> {
        padded_backward(grad_output, self_, padding, 1, PadMode::Replicate)
    }
    fn replication_pad2d(self_: &Self, padding: &[i64]) -> R<Self> {
        padded(self_, padding, 2, PadMode::Replicate)
    }
    fn replication_pad2d_backward(grad_output: &Self, self_: &Self, padding: &[i64]) -> R<Self> {
        padded_backward(grad_output, self_, padding, 2, PadMode::Replicate)
    }
    fn replication_pad3d(self_: &Self, padding: &[i64]) -> R<Self> {
        padded(self_, padding, 3, PadMode::Replicate)
    }
    fn replication_pad3d_backward(grad_output: &Self, self_: &Self, padding: &[i64]) -> R<Self> {
        padded_backward(grad_output, self_, padding, 3, PadMode::Replicate)
    }
    fn _adaptive_avg_pool3d(self_: &Self, output_size: &[i64]) -> R<Self> {
        let r = meta::adaptive_avg_pool3d(self_.shape(), output_size)?;
        upsampled(self_, &r, kernel::ADAPTIVE_AVG_POOL3D)
    }
    fn _adaptive_avg_pool3d_backward(grad_output: &Self, self_: &Self) -> R<Self> {
        let r = meta::adaptive_avg_pool3d_backward(grad_output.shape(), self_.shape())?;
        rules::check_floats(self_.dtype(), kernel::ADAPTIVE_AVG_POOL3D_BACKWARD)?;
        upsampled_backward(grad_output, &r, kernel::ADAPTIVE_AVG_POOL3D_BACKWARD)
    }
    fn upsample_nearest2d(
        self_: &Self,
        output_size: &[i64],
        scales_h: Option<f64>,
        scales_w: Option<f64>,
    ) -> R<Self> {
        let r = meta::upsample_nearest2d(self_.shape(), output_size, scales_h, scales_w)?;
        upsampled(self_, &r, kernel::UPSAMPLE_NEAREST2D)
    }
    fn upsample_nearest2d_backward(
        grad_output: &Self,
        output_size: &[i64],
        input_size: &[i64],
        scales_h: Option<f64>,
        scales_w: Option<f64>,
    ) -> R<Self> {
        let g = grad_output.shape();
        let r = meta::upsample_nearest2d_backward(g, output_size, input_size, scales_h, scales_w)?;
        let name = meta::upsample_backward_kernel(true, grad_output.shape());
        upsampled_backward(grad_output, &r, name)
    }
    fn upsample_bilinear2d(
        self_: &Self,
        output_size: &[i64],
        align_corners: bool,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
    ) -> R<Self> {
        let x = self_.shape();
        let r = meta::upsample_bilinear2d(x, output_size, align_corners, scales_h, scales_w)?;
        upsampled(self_, &r, kernel::UPSAMPLE_BILINEAR2D)
    }
    fn upsample_bilinear2d_backward(
        grad_output: &Self,
        output_size: &[i64],
        input_size: &[i64],
        align_corners: bool,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
    ) -> R<Self> {
        let r = meta::upsample_bilinear2d_backward(
            grad_output.shape(),
            output_size,
            input_size,
            align_corners,
            scales_h,
            scales_w,
        )?;
        let name = meta::upsample_backward_kernel(false, grad_output.shape());
        upsampled_backward(grad_output, &r, name)
    }
    fn addmm(self_: &Self, mat1: &Self, mat2: &Self, beta: Scalar, alpha: Scalar) -> R<Self> {
        super::products::addmm(self_, mat1, mat2, beta, alpha)
    }
    fn pow_scalar(self_: Scalar, exponent: &Self) -> R<Self> {
        super::products::pow_scalar(self_, exponent)
    }
    fn cumsum(self_: &Self, dim: i64, dtype: Option<ScalarType>) -> R<Self> {
        super::products::cumsum(self_, dim, dtype)
    }

    fn cumprod(self_: &Self, dim: i64, dtype: Option<ScalarType>) -> R<Self> {
        super::products::cumprod(self_, dim, dtype)
    }
    fn prod(self_: &Self, dtype: Option<ScalarType>) -> R<Self> {
        super::products::prod(self_, dtype)
    }
    fn prod_dim_int(self_: &Self, dim: i64, keepdim: bool, dtype: Option<ScalarType>) -> R<Self> {
        super::products::prod_dim_int(self_, dim, keepdim, dtype)
    }
    fn sort(self_: &Self, dim: i64, descending: bool) -> R<(Self, Self)> {
        super::products::sort(self_, dim, descending)
    }
    fn sort_stable(
        self_: &Self,
        _stable: Option<bool>,
        dim: i64,
        descending: bool,
    ) -> R<(Self, Self)> {
        // Always stable: PyTorch's unstable sort agrees on lanes of up to 16 elements.
        super::products::sort(self_, dim, descending)
    }
    // ---- group normalization (backend/norm.rs): the checks (meta::native_group_norm), then
    // the kernel in the input's float dtype; PyTorch's results without a kernel (`N` = 0)
    // in the input's dtype.
    fn native_group_norm(
        input: &Self,
        weight: Option<&Self>,
        bias: Option<&Self>,
        n: i64,
        c: i64,
        hxw: i64,
        group: i64,
        eps: f64,
    ) -> R<(Self, Self, Self)> {
        let sizes = [n, c, hxw, group];
        let Some(l) =
            meta::native_group_norm(gn_arg(input), weight.map(gn_arg), bias.map(gn_arg), sizes)?
        else {
            // The statistics have no elements; PyTorch's output is uninitialized: zeros.
            let stat = [0, group.max(0) as usize];
            return Ok((
                zeros_like_dtype(input, input.shape())?,
                zeros_like_dtype(input, &stat)?,
                zeros_like_dtype(input, &stat)?,
            ));
        };
        // Mixed dtypes (a half input, `F32` parameters): PyTorch computes in `F32`, the
        // statistics stay `F32` and the output takes the input's dtype.
        let dtype = |t: &Self| t.dtype();
        let mixed = rules::check_mixed_norm(input.dtype(), &[weight.map(dtype), bias.map(dtype)])?;
        let d = if mixed {
            DType::F32
        } else {
            float_dtype(&[input])
        };
        let (w, b) = (opt_promoted(weight, d)?, opt_promoted(bias, d)?);
        let (y, m, s) = C::native_group_norm(&promoted(input, d)?, w.as_ref(), b.as_ref(), l, eps)?;
        Ok((promoted(&y, input.t.dtype())?, m, s))
    }
    fn native_group_norm_backward(
        grad_out: &Self,
        input: &Self,
        mean: &Self,
        rstd: &Self,
        weight: Option<&Self>,
        n: i64,
        c: i64,
        hxw: i64,
        group: i64,
        output_mask: [bool; 3],
    ) -> R<(Self, Self, Self)> {
        let args = meta::GroupNormBackwardArgs {
            grad_out: gn_arg(grad_out),
            input: gn_arg(input),
            mean: gn_arg(mean),
            rstd: gn_arg(rstd),
            weight: weight.map(gn_arg),
        };
        let Some(l) = meta::native_group_norm_backward(&args, [n, c, hxw, group])? else {
            let cs = [c.max(0) as usize];
            let p = weight.unwrap_or(input);
            let gi = zeros_like_dtype(input, input.shape())?;
            return Ok((gi, zeros_like_dtype(p, &cs)?, zeros_like_dtype(p, &cs)?));
        };
        // Mixed dtypes (a half input, `F32` statistics): computed in `F32`, the input's
        // gradient in its dtype, the parameters' in the weight's (PyTorch's).
        let mixed = rules::check_mixed_norm(input.dtype(), &[Some(mean.dtype())])?;
        let d = if mixed {
            DType::F32
        } else {
            float_dtype(&[input])
        };
        let (g, x) = (promoted(grad_out, d)?, promoted(input, d)?);
        let (m, s) = (promoted(mean, d)?, promoted(rstd, d)?);
        let w = opt_promoted(weight, d)?;
        let (gi, gw, gb) =
            C::native_group_norm_backward(&g, &x, [&m, &s], w.as_ref(), l, output_mask)?;
        let pd = weight.map_or(input.t.dtype(), |w| w.t.dtype());
        Ok((
            promoted(&gi, input.t.dtype())?,
            promoted(&gw, pd)?,
            promoted(&gb, pd)?,
        ))
    }
    // ---- grid sampling (issue 30): compositions of candle's ops in backend/grid.rs
    fn grid_sampler_2d(
        input: &Self,
        grid: &Self,
        interpolation_mode: i64,
        padding_mode: i64,
        align_corners: bool,
    ) -> R<Self> {
        let modes = (interpolation_mode, padding_mode, align_corners);
        super::grid::grid_sampler_2d(input, grid, modes)
    }
    fn grid_sampler_2d_backward(
        grad_output: &Self,
        input: &Self,
        grid: &Self,
        interpolation_mode: i64,
        padding_mode: i64,
        align_corners: bool,
        output_mask: [bool; 2],
    ) -> R<(Self, Self)> {
        let modes = (interpolation_mode, padding_mode, align_corners);
        super::grid::grid_sampler_2d_backward(grad_output, input, grid, modes, output_mask)
    }
    // ---- scatter_reduce (backend/scatter.rs)
    fn scatter_reduce_two(
        self_: &Self,
        dim: i64,
        index: &Self,
        src: &Self,
        reduce: &str,
        include_self: bool,
    ) -> R<Self> {
        super::scatter::scatter_reduce(self_, dim, index, src, reduce, include_self)
    }
}

/// A group norm argument's shape and dtype.
fn gn_arg(t: &C) -> meta::GnArg<'_> {
    (t.shape(), t.dtype())
}

/// Zeros of `shape` in `like`'s dtype and device.
fn zeros_like_dtype(like: &C, shape: &[usize]) -> R<C> {
    Ok(C::new(ce(candle_core::Tensor::zeros(
        shape,
        like.t.dtype(),
        like.t.device(),
    ))?))
}

/// `cat`/`stack` of tensors of any dtypes: promoted to their common dtype.
fn joined(tensors: &[C], k: impl Fn(&[C]) -> R<C>) -> R<C> {
    let kd = tensors.iter().map(kind).max().unwrap_or(Kind::Float);
    if kd == Kind::Float {
        let d = float_dtype(&tensors.iter().collect::<Vec<_>>());
        let ts = tensors
            .iter()
            .map(|t| promoted(t, d))
            .collect::<R<Vec<_>>>()?;
        return k(&ts);
    }
    // Integers and booleans are moved as they are (booleans joined with integers as `I64`).
    let d = if kd == Kind::Int {
        DType::I64
    } else {
        DType::U8
    };
    let ts = tensors
        .iter()
        .map(|t| Ok(C::new(ce(t.t.to_dtype(d))?)))
        .collect::<R<Vec<_>>>()?;
    k(&ts)
}

// ---------------------------------------------------------------- rounding, modulo, selection

/// `ceil`, `floor`, `round`, `trunc`: floats rounded (candle's custom op over Rust's
/// functions: `round` is half to even, as PyTorch's), integers as they are, booleans refused.
fn rounded(t: &C, kernel: &'static str, f64: fn(f64) -> f64, f32: fn(f32) -> f32) -> R<C> {
    match kind(t) {
        Kind::Float => super::elementwise(
            t,
            super::Map {
                name: kernel,
                f64,
                f32,
            },
        ),
        Kind::Int => Ok(t.clone()),
        Kind::Bool => Err(rules::not_implemented(kernel, "bool")),
    }
}

/// `remainder` (`floor`: the sign of the divisor) or `fmod` (the sign of the dividend) by a
/// Scalar, in the kind PyTorch's promotion gives: a candle custom op ([`Modulo`]) for
/// floats, `I64` values through it too (exact below 2^53).
fn modulo(t: &C, s: Scalar, kernel: &str, floor: bool) -> R<C> {
    let k = scalar_kind(t, s);
    rules::check_modulo(k, kernel)?;
    rules::check_int_divisor(k, s)?;
    let x = match k {
        Kind::Float => promoted(t, float_dtype(&[t]))?,
        _ => wide(t)?,
    };
    let op = Modulo {
        b: s.to_f64(),
        floor,
    };
    narrowed(C::new(ce(x.t.apply_op1_no_bwd(&op))?), k)
}

/// `x mod b` on each element, C's `fmod` (`floor`: plus `b` where the signs differ).
struct Modulo {
    b: f64,
    floor: bool,
}

impl Modulo {
    fn at(&self, a: f64) -> f64 {
        let m = a % self.b;
        if self.floor && m != 0.0 && (m < 0.0) != (self.b < 0.0) {
            m + self.b
        } else {
            m
        }
    }
}

impl candle_core::CustomOp1 for Modulo {
    fn name(&self) -> &'static str {
        "modulo"
    }
    fn cpu_fwd(
        &self,
        s: &candle_core::CpuStorage,
        l: &candle_core::Layout,
    ) -> candle_core::Result<(candle_core::CpuStorage, candle_core::Shape)> {
        use candle_core::CpuStorage as S;
        let out = match s {
            S::F64(v) => S::F64(super::positions(l).map(|i| self.at(v[i])).collect()),
            // fmod is exact, and one rounding of the f64 sum is the f32 sum's.
            S::F32(v) => S::F32(
                super::positions(l)
                    .map(|i| self.at(f64::from(v[i])) as f32)
                    .collect(),
            ),
            _ => candle_core::bail!("modulo takes a floating-point tensor"),
        };
        Ok((out, l.shape().clone()))
    }
}

/// `-t` (integers and booleans as `F64`): `amin`, `min.dim` and `argmin` select on it.
fn negated(t: &C) -> R<C> {
    match kind(t) {
        Kind::Float => C::neg(t),
        _ => C::neg(&wide(t)?),
    }
}

// ---------------------------------------------------------------- logical, bitwise, any

/// `t != 0` as `U8`.
fn truth(t: &C) -> R<candle_core::Tensor> {
    ce(wide(t)?.t.ne(0.0))
}

/// A Scalar as a 0-d tensor of its own kind (PyTorch's wrapped number).
pub(super) fn wrapped(s: Scalar) -> R<C> {
    let dev = candle_core::Device::Cpu;
    Ok(C::new(match s {
        Scalar::Bool(b) => ce(candle_core::Tensor::new(u8::from(b), &dev))?,
        Scalar::Int(i) => ce(candle_core::Tensor::new(i, &dev))?,
        Scalar::Float(x) => ce(candle_core::Tensor::new(x, &dev))?,
    }))
}

/// A bitwise op on integers or booleans (booleans with integers as `I64`), PyTorch's error
/// for a float operand.
fn bitwise(a: &C, b: &C, kernel: &str, f: fn(i64, i64) -> i64) -> R<C> {
    match kind(a).max(kind(b)) {
        Kind::Float => {
            let float = if kind(a) == Kind::Float { a } else { b };
            Err(rules::not_implemented(kernel, float.dtype()))
        }
        Kind::Int => on_i64s(&[a, b], |v| f(v[0], v[1]), DType::I64),
        Kind::Bool => on_i64s(&[a, b], |v| f(v[0], v[1]), DType::U8),
    }
}

/// `f` on the `i64` values of `ts` broadcast together, the result as `dtype` (exact: the
/// values are read as `I64`).
fn on_i64s(ts: &[&C], f: impl Fn(&[i64]) -> i64, dtype: DType) -> R<C> {
    on_host(ts, DType::I64, f, dtype)
}

/// `f` on the values of `ts` broadcast together, read as `read` (`T` on the host), the
/// result as `out`.
fn on_host<T: candle_core::WithDType>(
    ts: &[&C],
    read: DType,
    f: impl Fn(&[T]) -> T,
    out: DType,
) -> R<C> {
    let mut shape: Vec<usize> = vec![];
    for t in ts {
        shape = autograd_opset::shape::broadcast_shape(&shape, t.t.dims())?;
    }
    let cols = ts
        .iter()
        .map(|t| {
            let b = ce(ce(t.t.to_dtype(read))?.broadcast_as(shape.as_slice()))?;
            ce(ce(b.flatten_all())?.to_vec1::<T>())
        })
        .collect::<R<Vec<_>>>()?;
    let n: usize = shape.iter().product();
    let mut row = vec![T::zero(); ts.len()];
    let v: Vec<T> = (0..n)
        .map(|i| {
            for (r, c) in row.iter_mut().zip(&cols) {
                *r = c[i];
            }
            f(&row)
        })
        .collect();
    let t = ce(candle_core::Tensor::from_vec(
        v,
        shape.as_slice(),
        &candle_core::Device::Cpu,
    ))?;
    Ok(C::new(ce(t.to_dtype(out))?))
}

/// `any` over `axes` (ascending, distinct): `true` where some element is non-zero.
fn any_over(t: &C, axes: &[usize], keepdim: bool) -> R<C> {
    let mut x = ce(truth(t)?.to_dtype(DType::F64))?;
    for &ax in axes {
        x = ce(x.sum_keepdim(ax))?;
    }
    if !keepdim {
        for &ax in axes.iter().rev() {
            x = ce(x.squeeze(ax))?;
        }
    }
    mask_out(C::new(ce(x.gt(0.0))?))
}

// ---------------------------------------------------------------- divisions with rounding

/// `f` on the values of `ts` broadcast together, in `F64`, the result in their promoted
/// float dtype (integers and booleans promote as PyTorch's do).
fn on_floats(ts: &[&C], f: impl Fn(&[f64]) -> f64) -> R<C> {
    on_host(ts, DType::F64, f, float_dtype(ts))
}

/// PyTorch's `div_floor_floating` (`c10/util/generic_math.h`).
fn div_floor_float(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && (b < 0.0) != (m < 0.0) {
        div -= 1.0;
    }
    if div == 0.0 {
        return 0.0f64.copysign(a / b);
    }
    let f = div.floor();
    if div - f > 0.5 { f + 1.0 } else { f }
}

/// An integer division by zero: PyTorch's `ZeroDivisionError`.
fn check_divisors(b: &C) -> R<()> {
    let zero = ce(ce(ce(wide(b)?.t.eq(0.0))?.to_dtype(DType::F64))?.sum_all())?;
    rules::check_int_divisors(Kind::Int, ce(zero.to_scalar::<f64>())? > 0.0)
}

/// `div` with a rounding mode (`floor`, else `trunc`): integers stay integers (a zero
/// divisor is PyTorch's error), booleans are refused.
fn divided(a: &C, b: &C, floor: bool) -> R<C> {
    let kernel = if floor {
        kernel::DIV_FLOOR
    } else {
        kernel::DIV_TRUNC
    };
    match kind(a).max(kind(b)) {
        Kind::Bool => Err(rules::not_implemented(kernel, "bool")),
        Kind::Float if floor => on_floats(&[a, b], |v| div_floor_float(v[0], v[1])),
        Kind::Float => on_floats(&[a, b], |v| (v[0] / v[1]).trunc()),
        Kind::Int => {
            check_divisors(b)?;
            on_i64s(
                &[a, b],
                |v| {
                    let (x, y) = (v[0], v[1]);
                    let q = x.wrapping_div(y);
                    if floor && x.wrapping_rem(y) != 0 && (x < 0) != (y < 0) {
                        q - 1
                    } else {
                        q
                    }
                },
                DType::I64,
            )
        }
    }
}

/// `remainder` / `fmod` of two tensors (see [`modulo`]).
fn modulo_tensor(a: &C, b: &C, kernel: &str, floor: bool) -> R<C> {
    let k = kind(a).max(kind(b));
    rules::check_modulo(k, kernel)?;
    if k == Kind::Float {
        return on_floats(&[a, b], |v| Modulo { b: v[1], floor }.at(v[0]));
    }
    check_divisors(b)?;
    on_i64s(
        &[a, b],
        |v| {
            let m = v[0].wrapping_rem(v[1]);
            if floor && m != 0 && (m < 0) != (v[1] < 0) {
                m + v[1]
            } else {
                m
            }
        },
        DType::I64,
    )
}

/// An optional tensor in the float dtype `d`.
fn opt_promoted(t: Option<&C>, d: DType) -> R<Option<C>> {
    t.map(|t| promoted(t, d)).transpose()
}

// ------------------------------------------------------------------------- factories

/// A factory's result (`autograd_opset::factory`) as a tensor: floats as `F64`, or `F32`
/// when that is the dtype asked for.
fn from_values(v: Values, dtype: Option<ScalarType>) -> R<C> {
    let shape = v.shape;
    Ok(match v.elements {
        Elements::Float(x) if dtype == Some(ScalarType::F32) => {
            let x: Vec<f32> = x.iter().map(|&y| y as f32).collect();
            C::new(ce(candle_core::Tensor::from_vec(
                x,
                shape,
                &candle_core::Device::Cpu,
            ))?)
        }
        Elements::Float(x) => C::from_vec(x, &shape),
        Elements::Int(x) => C::from_i64(x, &shape),
        Elements::Bool(x) => C::from_bool(x, &shape),
    })
}

// ------------------------------------------- padding and upsampling (backend/resample.rs)

/// `reflection_pad{1,2,3}d`, `replication_pad{1,2,3}d`: the op set's checks and maps, then
/// PyTorch's refusal of booleans; every other dtype padded as it is (elements only copied).
fn padded(x: &C, padding: &[i64], dim: usize, mode: PadMode) -> R<C> {
    let r = meta::pad(x.shape(), padding, dim, mode)?;
    rules::check_not_bool(kind(x), &mode.name(dim))?;
    C::resample(x, &r)
}

/// The padding ops' backward: the op set's checks, PyTorch's dtype rules (floating-point
/// only, the gradient's dtype the input's), the transposed maps.
fn padded_backward(g: &C, x: &C, padding: &[i64], dim: usize, mode: PadMode) -> R<C> {
    let r = meta::pad_backward(g.shape(), x.shape(), padding, dim, mode)?;
    rules::check_same(g.dtype(), x.dtype())?;
    rules::check_floats(g.dtype(), &mode.backward_name(dim))?;
    C::resample_backward(g, &r)
}

/// The upsampling ops: PyTorch's refusal of integers and booleans, then the maps.
fn upsampled(x: &C, r: &meta::Resample, name: &str) -> R<C> {
    rules::check_floats(x.dtype(), name)?;
    C::resample(x, r)
}

/// The upsampling ops' backward: floating-point gradients only, the transposed maps.
fn upsampled_backward(g: &C, r: &meta::Resample, name: &str) -> R<C> {
    rules::check_floats(g.dtype(), name)?;
    C::resample_backward(g, r)
}

/// `_softmax_backward_data` (`log` false) and `_log_softmax_backward_data`: the op set's
/// checks, then the one kernel of both.
fn softmax_backward(grad_output: &C, output: &C, dim: i64, log: bool) -> R<C> {
    let g = (grad_output.shape(), grad_output.dtype());
    let o = (output.shape(), output.dtype());
    let ax = autograd_opset::meta::softmax_backward_data(log, g, o, dim)?;
    C::softmax_backward_data(grad_output, output, ax, log)
}
