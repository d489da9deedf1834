//! `impl Backend for NdTensor<E>`: PyTorch's dtype rules around the floating-point kernels
//! of `backend.rs`.
//!
//! * Floating-point tensors go to the kernels as they are, borrowed (`Data::Float` holds the
//!   kernels' `FloatTensor`).
//! * Ops that only move elements (views, `cat`, `index_select`, `gather`, `embedding`'s rows,
//!   ...) work on every dtype: for `i64`/`bool` tensors the kernel runs on the elements'
//!   positions (exact in `f64`) and the elements are looked up, so integers stay exact.
//! * Comparisons give `bool`; `argmax` and `max.dim`'s indices `i64`.
//! * Arithmetic promotes as PyTorch does (`bool` < `i64` < `E`; true division and `exp`,
//!   `log`, ... of integers give `E`, PyTorch's default float type); `add`/`sub`/`mul`/`neg`/
//!   `abs`/`sign`/`relu`/`maximum`/`sum` of integers are computed in `i64`; the rarer integer
//!   kernels (`mm`, `pow`, `clamp`, `amax`, `max.dim`, `index_add`, `scatter_add`, ...) in
//!   `f64`, exact for magnitudes below 2^53.
//! * Index arguments must be `i64`, `where`'s condition `bool`, and float-only kernels
//!   refuse other dtypes: each with PyTorch's message. These checks and the promotion are
//!   the op set's (`autograd_opset::dtype`, shared with candletensor); this file converts
//!   ndarray's arrays between dtypes and calls the kernels.

use crate::storage::FloatTensor;
use crate::tensor::{Data, Element, NdTensor, layout};
use autograd::types::{Device, Layout, MemoryFormat, Scalar, ScalarType};
use autograd_opset::Backend;
use autograd_opset::dtype::{self as rules, IndexUse, Kind, check_index, kernel};
use autograd_opset::error::Error;
use autograd_opset::factory::{self, Elements, Values};
use autograd_opset::meta::{self, PadMode};
use autograd_opset::shape::{broadcast_shape, check_amin, norm_dim, reduce_axes};
use ndarray::{ArcArray, Array, ArrayView, Axis, IxDyn, Zip};
use std::borrow::Cow;

type F<E> = FloatTensor<E>;
type R<T> = Result<T, Error>;
type A<T> = ArcArray<T, IxDyn>;

// ------------------------------------------------------------------------------- dtypes

fn kind<E: Element>(t: &NdTensor<E>) -> Kind {
    // The variant, not `Kind::of(t.dtype())`: no string comparison per op.
    match t.data() {
        Data::Float(_) => Kind::Float,
        Data::Int(_) => Kind::Int,
        Data::Bool(_) => Kind::Bool,
    }
}

fn fl<E: Element>(a: Array<E, IxDyn>) -> F<E> {
    F::from_array(a)
}

fn float_out<E: Element>(t: F<E>) -> NdTensor<E> {
    NdTensor::from_data(Data::Float(t))
}

/// The tensor as `E`: PyTorch's promotion of integers and booleans to the default float type.
/// A floating-point tensor is borrowed, not copied.
fn promoted<E: Element>(t: &NdTensor<E>) -> Cow<'_, F<E>> {
    match t.data() {
        Data::Float(a) => Cow::Borrowed(a),
        _ => Cow::Owned(t.to_float()),
    }
}

/// The tensor as `f64` (the integer kernels' arithmetic).
pub(super) fn wide<E: Element>(t: &NdTensor<E>) -> F<f64> {
    fl(match t.data() {
        Data::Float(a) => a.arr().mapv(|x| x.as_f64()),
        Data::Int(a) => a.mapv(|x| x as f64),
        Data::Bool(a) => a.mapv(|x| f64::from(u8::from(x))),
    })
}

/// An `f64` result as a tensor of `kind` (integers cast as [`converted`] casts them).
fn narrowed<E: Element>(t: F<f64>, kind: Kind) -> NdTensor<E> {
    NdTensor::from_data(match kind {
        Kind::Float => Data::Float(fl(t.arr().mapv(E::of))),
        Kind::Int => Data::int(t.arr().mapv(factory::cast_i64).into_shared()),
        Kind::Bool => Data::bool(t.arr().mapv(|x| x != 0.0).into_shared()),
    })
}

/// `t` converted to `kind` (upwards in the promotion order).
fn to_kind<E: Element>(t: &NdTensor<E>, k: Kind) -> NdTensor<E> {
    match (t.data(), k) {
        (_, Kind::Float) => float_out(t.to_float()),
        (Data::Bool(a), Kind::Int) => int_out(a.mapv(i64::from)),
        _ => t.clone(),
    }
}

/// The elements as `i64` (booleans 0/1) for integer arithmetic.
pub(super) fn ints<E: Element>(t: &NdTensor<E>) -> A<i64> {
    match t.data() {
        Data::Int(a) => A::clone(a),
        Data::Bool(a) => a.mapv(i64::from).into_shared(),
        Data::Float(a) => a.arr().mapv(|x| x.as_f64() as i64).into_shared(),
    }
}

/// A kernel PyTorch implements for floating-point types only.
fn floats<'a, E: Element>(t: &'a NdTensor<E>, kernel: &str) -> R<Cow<'a, F<E>>> {
    rules::check_floats(t.dtype(), kernel).map(|()| promoted(t))
}

/// An `i64` tensor of `a` (for the kernels of `products.rs`).
pub(super) fn int_tensor<E: Element>(a: Array<i64, IxDyn>) -> NdTensor<E> {
    int_out(a)
}

fn int_out<E: Element>(a: Array<i64, IxDyn>) -> NdTensor<E> {
    NdTensor::from_data(Data::int(a.into_shared()))
}

fn bool_out<E: Element>(a: Array<bool, IxDyn>) -> NdTensor<E> {
    NdTensor::from_data(Data::bool(a.into_shared()))
}

/// A 0/1 floating-point mask as `bool`.
fn mask_out<E: Element>(t: F<E>) -> NdTensor<E> {
    bool_out(t.arr().mapv(|x| x != E::zero()))
}

/// Indices as floating-point values for the kernels (which check their range).
fn idx<G: Element>(a: &A<i64>) -> F<G> {
    fl(a.mapv(|x| G::of(x as f64)))
}

/// Whether every index is exactly an `F` (an `f32` holds integers up to 2^24 exactly).
fn exact<F: Element>(i: &A<i64>) -> bool {
    i.iter().all(|v| F::of(*v as f64).as_f64() == *v as f64)
}

/// Whether indices must go through `f64` kernels to stay exact (an `f32` library with an
/// index above 2^24); the call then runs on `NdTensor<f64>` and comes back as `E`.
fn needs_f64<E: Element>(i: &A<i64>) -> bool {
    !exact::<E>(i) && exact::<f64>(i)
}

/// The `i64` elements of an index argument, or PyTorch's dtype error for `arg`.
fn index_arg<E: Element>(t: &NdTensor<E>, arg: IndexUse) -> R<A<i64>> {
    check_index(arg, t.dtype()).map(|()| ints(t))
}

// ------------------------------------------------------------------------------- broadcasting

fn bview<'a, T>(a: &'a A<T>, shape: &[usize]) -> R<ArrayView<'a, T, IxDyn>> {
    a.broadcast(IxDyn(shape)).ok_or_else(|| {
        Error::internal(
            "ndarray",
            format!("cannot broadcast {:?} to {shape:?}", a.shape()),
        )
    })
}

/// Elementwise `f` of two broadcast arrays.
fn bzip<T: Clone, U: Clone, V>(a: &A<T>, b: &A<U>, f: impl Fn(T, U) -> V) -> R<Array<V, IxDyn>> {
    let shape = broadcast_shape(a.shape(), b.shape())?;
    let (av, bv) = (bview(a, &shape)?, bview(b, &shape)?);
    Ok(Zip::from(&av)
        .and(&bv)
        .map_collect(|x, y| f(x.clone(), y.clone())))
}

// ------------------------------------------------------------------------------- moved elements

/// The positions `0..n` (in logical order) of `a`'s elements, laid out as `a` is.
fn positions<T>(a: &A<T>) -> F<f64> {
    let mut p = a.map(|_| 0.0f64);
    for (k, x) in p.iter_mut().enumerate() {
        *x = k as f64;
    }
    fl(p)
}

/// The elements of `src` (flat, logical order) at positions `p`.
fn lookup<T: Clone>(p: &F<f64>, src: &[T]) -> A<T> {
    p.arr().mapv(|k| src[k as usize].clone()).into_shared()
}

/// Runs a kernel that places elements among zeros (`slice_backward`, `diagonal_backward`)
/// on `i64`/`bool` elements, exactly: it places the positions plus one, and 0 stays 0.
fn placed<T: Clone + Default>(a: &A<T>, k: impl Fn(&F<f64>) -> R<F<f64>>) -> R<A<T>> {
    let p = positions(a);
    let r = k(&fl(p.arr().mapv(|x| x + 1.0)))?;
    let v: Vec<T> = a.iter().cloned().collect();
    let at = |x: f64| match x as usize {
        0 => T::default(),
        i => v[i - 1].clone(),
    };
    Ok(r.arr().mapv(at).into_shared())
}

/// [`placed`] on a tensor of any dtype (floats go to the kernel as they are).
fn placed_any<E: Element>(
    t: &NdTensor<E>,
    float: impl Fn(&F<E>) -> R<F<E>>,
    k: impl Fn(&F<f64>) -> R<F<f64>>,
) -> R<NdTensor<E>> {
    Ok(match t.data() {
        Data::Float(a) => float_out(float(a)?),
        Data::Int(a) => NdTensor::from_data(Data::int(placed(a, k)?)),
        Data::Bool(a) => NdTensor::from_data(Data::bool(placed(a, k)?)),
    })
}

/// Runs a kernel that only moves elements on a tensor of any dtype (see the module's docs):
/// `$x` is the kernel's input, of the float type of the arm.
macro_rules! moved {
    ($t:expr, $x:ident => $call:expr) => {
        match $t.data() {
            Data::Float(a) => {
                let $x = a;
                Ok(float_out($call?))
            }
            Data::Int(a) => {
                let $x = &positions(a);
                let v: Vec<i64> = a.iter().copied().collect();
                Ok(NdTensor::from_data(Data::int(lookup(&$call?, &v))))
            }
            Data::Bool(a) => {
                let $x = &positions(a);
                let v: Vec<bool> = a.iter().copied().collect();
                Ok(NdTensor::from_data(Data::bool(lookup(&$call?, &v))))
            }
        }
    };
}

/// [`moved!`] for kernels with several outputs (`split`, `unbind`).
macro_rules! moved_all {
    ($t:expr, $x:ident => $call:expr) => {
        match $t.data() {
            Data::Float(a) => {
                let $x = a;
                Ok($call?.into_iter().map(float_out).collect())
            }
            Data::Int(a) => {
                let $x = &positions(a);
                let v: Vec<i64> = a.iter().copied().collect();
                Ok($call?
                    .iter()
                    .map(|p| NdTensor::from_data(Data::int(lookup(p, &v))))
                    .collect())
            }
            Data::Bool(a) => {
                let $x = &positions(a);
                let v: Vec<bool> = a.iter().copied().collect();
                Ok($call?
                    .iter()
                    .map(|p| NdTensor::from_data(Data::bool(lookup(p, &v))))
                    .collect())
            }
        }
    };
}

/// `cat`/`stack` of tensors of any dtypes: promoted to their common dtype, elements moved.
fn joined<E: Element>(
    tensors: &[NdTensor<E>],
    float: impl Fn(&[F<E>]) -> R<F<E>>,
    moving: impl Fn(&[F<f64>]) -> R<F<f64>>,
) -> R<NdTensor<E>> {
    let k = tensors.iter().map(kind).max().unwrap_or(Kind::Float);
    if k == Kind::Float {
        let fs: Vec<F<E>> = tensors.iter().map(|t| promoted(t).into_owned()).collect();
        return Ok(float_out(float(&fs)?));
    }
    // Positions numbered across the tensors, elements concatenated.
    let (mut ps, mut vals, mut offset) = (Vec::new(), Vec::new(), 0.0);
    for t in tensors {
        let a = ints(&to_kind(t, k));
        let p = positions(&a);
        ps.push(fl(p.arr().mapv(|x| x + offset)));
        offset += a.len() as f64;
        vals.extend(a.iter().copied());
    }
    let r = lookup(&moving(&ps)?, &vals);
    Ok(match k {
        Kind::Bool => bool_out(r.mapv(|x| x != 0)),
        _ => NdTensor::from_data(Data::int(r)),
    })
}

// ------------------------------------------------------------------------------- arithmetic

/// `a + alpha * b` (`sign` -1 for `sub`) with promotion.
fn add_sub<E: Element>(
    a: &NdTensor<E>,
    b: &NdTensor<E>,
    alpha: Scalar,
    sign: i64,
) -> R<NdTensor<E>> {
    let k = kind(a).max(kind(b));
    if sign < 0 {
        rules::check_sub(kind(a), kind(b))?;
    }
    rules::check_alpha(k, alpha)?;
    let alpha = alpha.to_f64();
    match k {
        Kind::Float => {
            let (x, y) = (promoted(a), promoted(b));
            Ok(float_out(if sign < 0 {
                F::sub_tensor(&x, &y, alpha)?
            } else {
                F::add_tensor(&x, &y, alpha)?
            }))
        }
        Kind::Int => {
            let al = sign.wrapping_mul(alpha as i64);
            Ok(int_out(bzip(&ints(a), &ints(b), |x, y| {
                x.wrapping_add(al.wrapping_mul(y))
            })?))
        }
        Kind::Bool => {
            let on = alpha != 0.0;
            Ok(bool_out(bzip(&ints(a), &ints(b), |x, y| {
                x != 0 || (on && y != 0)
            })?))
        }
    }
}

fn scalar_kind<E: Element>(t: &NdTensor<E>, s: Scalar) -> Kind {
    rules::scalar_kind(kind(t), s)
}

fn add_sub_scalar<E: Element>(
    t: &NdTensor<E>,
    s: Scalar,
    alpha: Scalar,
    sign: i64,
) -> R<NdTensor<E>> {
    if sign < 0 {
        rules::check_sub_scalar(kind(t), s)?;
    }
    let k = scalar_kind(t, s);
    rules::check_alpha(k, alpha)?;
    if k == Kind::Bool {
        // A boolean tensor plus a boolean: `x || (s && alpha)`, as PyTorch's bool kernel.
        let on = s.to_bool() && alpha.to_bool();
        return Ok(bool_out(ints(t).mapv(|x| x != 0 || on)));
    }
    let (s, alpha) = (s.to_f64(), alpha.to_f64());
    if k == Kind::Float {
        let x = promoted(t);
        return Ok(float_out(if sign < 0 {
            F::sub_scalar(&x, s, alpha)?
        } else {
            F::add_scalar(&x, s, alpha)?
        }));
    }
    let d = (s as i64).wrapping_mul(alpha as i64).wrapping_mul(sign);
    Ok(int_out(ints(t).mapv(|x| x.wrapping_add(d))))
}

// ------------------------------------------------------------------------------- ZeroTensors

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
fn zero_aware<E: Element>(
    op: ZeroOp,
    a: &NdTensor<E>,
    b: &NdTensor<E>,
    r: NdTensor<E>,
) -> NdTensor<E> {
    let (za, zb) = (a.is_zero_tensor(), b.is_zero_tensor());
    let fill = |x: f64| float_out(F::from_f64(&vec![x; r.shape().iter().product()], r.shape()));
    match op {
        ZeroOp::Add if za && zb => NdTensor::zero_tensor(r.shape()),
        ZeroOp::Mul if za || zb => NdTensor::zero_tensor(r.shape()),
        ZeroOp::Div if za && zb => fill(f64::NAN),
        ZeroOp::Div if za => NdTensor::zero_tensor(r.shape()),
        ZeroOp::Div if zb => fill(f64::INFINITY),
        _ => r,
    }
}

/// A ZeroTensor times or over a Scalar is a ZeroTensor (PyTorch wraps the Scalar in a tensor
/// and dispatches to `mul_zerotensor` / `div_zerotensor`).
fn zero_aware_scalar<E: Element>(a: &NdTensor<E>, r: NdTensor<E>) -> NdTensor<E> {
    if a.is_zero_tensor() {
        NdTensor::zero_tensor(r.shape())
    } else {
        r
    }
}

fn mul<E: Element>(a: &NdTensor<E>, b: &NdTensor<E>) -> R<NdTensor<E>> {
    let r = mul_values(a, b)?;
    Ok(zero_aware(ZeroOp::Mul, a, b, r))
}

fn mul_values<E: Element>(a: &NdTensor<E>, b: &NdTensor<E>) -> R<NdTensor<E>> {
    match kind(a).max(kind(b)) {
        Kind::Float => Ok(float_out(F::mul_tensor(&promoted(a), &promoted(b))?)),
        Kind::Int => Ok(int_out(bzip(&ints(a), &ints(b), i64::wrapping_mul)?)),
        Kind::Bool => Ok(bool_out(bzip(&ints(a), &ints(b), |x, y| x != 0 && y != 0)?)),
    }
}

/// A comparison: `bool` elements, the operands promoted to their common dtype.
fn compare<E: Element>(
    a: &NdTensor<E>,
    b: &NdTensor<E>,
    float: fn(&F<E>, &F<E>) -> R<F<E>>,
    int: fn(&i64, &i64) -> bool,
) -> R<NdTensor<E>> {
    if kind(a).max(kind(b)) == Kind::Float {
        return Ok(mask_out(float(&promoted(a), &promoted(b))?));
    }
    Ok(bool_out(bzip(&ints(a), &ints(b), |x, y| int(&x, &y))?))
}

/// A comparison with a Scalar.
fn compare_scalar<E: Element>(
    t: &NdTensor<E>,
    s: Scalar,
    float: fn(&F<E>, f64) -> R<F<E>>,
    cmp: fn(&f64, &f64) -> bool,
) -> R<NdTensor<E>> {
    let s = s.to_f64();
    match t.data() {
        Data::Float(a) => Ok(mask_out(float(a, s)?)),
        _ => Ok(bool_out(wide(t).arr().mapv(|x| cmp(&x, &s)))),
    }
}

/// An elementwise op PyTorch computes in the integer dtype for integers (`i64`, booleans
/// as `i64` unless `bool_ok`), here through `f64`.
fn int_kernel<E: Element>(
    t: &NdTensor<E>,
    float: impl Fn(&F<E>) -> R<F<E>>,
    wide_kernel: impl Fn(&F<f64>) -> R<F<f64>>,
    bool_kind: Kind,
) -> R<NdTensor<E>> {
    match kind(t) {
        Kind::Float => Ok(float_out(float(&promoted(t))?)),
        Kind::Int => Ok(narrowed(wide_kernel(&wide(t))?, Kind::Int)),
        Kind::Bool => Ok(narrowed(wide_kernel(&wide(t))?, bool_kind)),
    }
}

/// `mm`/`bmm`: both operands of one dtype.
fn matmul_like<E: Element>(
    a: &NdTensor<E>,
    b: &NdTensor<E>,
    kernel: &str,
    float: fn(&F<E>, &F<E>) -> R<F<E>>,
    wide_kernel: fn(&F<f64>, &F<f64>) -> R<F<f64>>,
) -> R<NdTensor<E>> {
    match rules::check_matmul(a.dtype(), b.dtype(), kernel)? {
        Kind::Float => Ok(float_out(float(&promoted(a), &promoted(b))?)),
        _ => Ok(narrowed(wide_kernel(&wide(a), &wide(b))?, Kind::Int)),
    }
}

/// `sum` over `axes` of integers (booleans count as 1).
fn sum_ints<E: Element>(t: &NdTensor<E>, axes: &[usize], keepdim: bool) -> NdTensor<E> {
    let mut r = ints(t).into_owned();
    for ax in axes.iter().rev() {
        r = r.sum_axis(Axis(*ax));
    }
    if keepdim {
        for ax in axes {
            r = r.insert_axis(Axis(*ax));
        }
    }
    int_out(r)
}

/// `t` cast to a reduction's `dtype=` argument (PyTorch casts the input first; floats to
/// integers truncate, anything to `bool` is `!= 0`).
pub(super) fn cast_to<E: Element>(
    t: &NdTensor<E>,
    dtype: Option<ScalarType>,
) -> Cow<'_, NdTensor<E>> {
    Cow::Owned(match dtype.map(Kind::requested) {
        None => return Cow::Borrowed(t),
        Some(Kind::Bool) => to_bool(t),
        Some(Kind::Float) => float_out(t.to_float()),
        Some(Kind::Int) => int_out(ints(t).into_owned()),
    })
}

/// `t != 0` as `bool`.
fn to_bool<E: Element>(t: &NdTensor<E>) -> NdTensor<E> {
    match t.data() {
        Data::Bool(_) => t.clone(),
        _ => NdTensor::from_data(Data::bool(bools(t))),
    }
}

/// The elements `!= 0` (a boolean tensor's array itself, shared).
fn bools<E: Element>(t: &NdTensor<E>) -> A<bool> {
    match t.data() {
        Data::Bool(a) => A::clone(a),
        _ => wide(t).arr().mapv(|x| x != 0.0).into_shared(),
    }
}

/// Zeros of `shape` with `t`'s dtype, or `dtype`'s when given.
fn zeros_as<E: Element>(
    t: &NdTensor<E>,
    dtype: Option<ScalarType>,
    shape: &[usize],
) -> NdTensor<E> {
    let k = dtype.map_or(kind(t), Kind::requested);
    let s = IxDyn(shape);
    NdTensor::from_data(match k {
        Kind::Float => Data::Float(fl(Array::zeros(s))),
        Kind::Int => Data::int(Array::zeros(s).into_shared()),
        Kind::Bool => Data::bool(Array::from_elem(s, false).into_shared()),
    })
}

/// `max.dim` / `argmax`'s refusal of boolean inputs and the indices as `i64`.
fn indices_out<E: Element, G: Element>(t: F<G>) -> NdTensor<E> {
    int_out(t.arr().mapv(|x| x.as_f64() as i64))
}

/// Max pooling over the geometry `p` of any dtype (integers pooled as `f64`, narrowed
/// back): the values and the `int64` indices.
fn max_pool_any<E: Element>(t: &NdTensor<E>, p: &meta::Pool) -> (NdTensor<E>, NdTensor<E>) {
    if let Data::Float(a) = t.data() {
        let (v, i) = F::max_pool(a, p);
        return (float_out(v), indices_out(i));
    }
    let (v, i) = F::max_pool(&wide(t), p);
    (narrowed(v, kind(t)), indices_out(i))
}

/// Max pooling's backward over the geometry `p`: the gradient scattered at `indices`.
fn max_pool_backward_any<E: Element>(
    g: &NdTensor<E>,
    x: &NdTensor<E>,
    p: &meta::Pool,
    indices: &A<i64>,
) -> R<NdTensor<E>> {
    let idx: Vec<i64> = indices.iter().copied().collect();
    let r = F::max_pool_backward(&promoted(g), &promoted(x), p, &idx)?;
    Ok(float_out(r))
}

/// Average pooling over the geometry `p` of any dtype: integers as PyTorch's integer
/// division of each window's sum (toward zero).
fn avg_pool_any<E: Element>(
    t: &NdTensor<E>,
    p: &meta::Pool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> NdTensor<E> {
    if let Data::Float(a) = t.data() {
        return float_out(F::avg_pool(a, p, count_include_pad, divisor_override));
    }
    let r = F::avg_pool(&wide(t), p, count_include_pad, divisor_override);
    narrowed(fl(r.arr().mapv(f64::trunc)), kind(t))
}

/// A kernel PyTorch computes in floating point (integers and booleans promoted to `E`).
fn float_unary<E: Element>(t: &NdTensor<E>, kernel: fn(&F<E>) -> R<F<E>>) -> R<NdTensor<E>> {
    Ok(float_out(kernel(&promoted(t))?))
}

/// The result of an in-place op written into `self_`'s dtype, or PyTorch's cast error.
fn write_back<E: Element>(self_: &mut NdTensor<E>, r: NdTensor<E>) -> R<()> {
    rules::check_cast(r.dtype(), self_.dtype())?;
    *self_ = if kind(&r) == kind(self_) {
        r
    } else {
        to_kind(&r, kind(self_))
    };
    Ok(())
}

// ------------------------------------------------------------------------------- the impl

impl<E: Element> Backend for NdTensor<E> {
    type Error = Error;

    autograd_opset::written_back_kernels!(write_back);
    autograd_opset::float_unary_kernels!(float_unary, F<E>);

    fn add_tensor(self_: &Self, other: &Self, alpha: Scalar) -> R<Self> {
        let r = add_sub(self_, other, alpha, 1)?;
        Ok(zero_aware(ZeroOp::Add, self_, other, r))
    }
    fn add_scalar(self_: &Self, other: Scalar, alpha: Scalar) -> R<Self> {
        add_sub_scalar(self_, other, alpha, 1)
    }
    fn sub_tensor(self_: &Self, other: &Self, alpha: Scalar) -> R<Self> {
        let r = add_sub(self_, other, alpha, -1)?;
        Ok(zero_aware(ZeroOp::Add, self_, other, r))
    }
    fn sub_scalar(self_: &Self, other: Scalar, alpha: Scalar) -> R<Self> {
        add_sub_scalar(self_, other, alpha, -1)
    }
    fn mul_tensor(self_: &Self, other: &Self) -> R<Self> {
        mul(self_, other)
    }
    fn mul_scalar(self_: &Self, other: Scalar) -> R<Self> {
        match scalar_kind(self_, other) {
            Kind::Float => {
                let r = float_out(F::mul_scalar(&promoted(self_), other.to_f64())?);
                return Ok(zero_aware_scalar(self_, r));
            }
            Kind::Bool => {
                let on = other.to_bool();
                return Ok(bool_out(ints(self_).mapv(|x| x != 0 && on)));
            }
            Kind::Int => {}
        }
        let s = other.to_i64();
        Ok(int_out(ints(self_).mapv(|x| x.wrapping_mul(s))))
    }
    fn div_tensor(self_: &Self, other: &Self) -> R<Self> {
        let r = float_out(F::div_tensor(&promoted(self_), &promoted(other))?);
        Ok(zero_aware(ZeroOp::Div, self_, other, r))
    }
    fn div_scalar(self_: &Self, other: Scalar) -> R<Self> {
        let r = float_out(F::div_scalar(&promoted(self_), other.to_f64())?);
        Ok(zero_aware_scalar(self_, r))
    }
    fn neg(self_: &Self) -> R<Self> {
        rules::check_neg(kind(self_))?;
        match self_.data() {
            Data::Float(a) => Ok(float_out(F::neg(a)?)),
            _ => Ok(int_out(ints(self_).mapv(i64::wrapping_neg))),
        }
    }
    fn pow_tensor_scalar(self_: &Self, exponent: Scalar) -> R<Self> {
        if scalar_kind(self_, exponent) == Kind::Float {
            let e = exponent.to_f64();
            return Ok(float_out(F::pow_tensor_scalar(&promoted(self_), e)?));
        }
        rules::check_int_pow(Kind::Int, exponent)?;
        let e = exponent.to_i64() as u32;
        let r = ints(self_).mapv(|x| x.wrapping_pow(e));
        // A boolean tensor to a boolean power stays boolean (PyTorch's result type).
        Ok(match scalar_kind(self_, exponent) {
            Kind::Bool => bool_out(r.mapv(|x| x != 0)),
            _ => int_out(r),
        })
    }
    fn pow_tensor_tensor(self_: &Self, exponent: &Self) -> R<Self> {
        let k = kind(self_).max(kind(exponent));
        rules::check_not_bool(k, kernel::POW)?;
        match k {
            Kind::Float => Ok(float_out(F::pow_tensor_tensor(
                &promoted(self_),
                &promoted(exponent),
            )?)),
            _ => Ok(int_out(bzip(
                &ints(self_),
                &ints(exponent),
                rules::int_pow,
            )?)),
        }
    }
    fn abs(self_: &Self) -> R<Self> {
        rules::check_not_bool(kind(self_), kernel::ABS)?;
        match self_.data() {
            Data::Float(a) => Ok(float_out(F::abs(a)?)),
            _ => Ok(int_out(ints(self_).mapv(i64::wrapping_abs))),
        }
    }
    fn sign(self_: &Self) -> R<Self> {
        match self_.data() {
            Data::Int(a) => Ok(int_out(a.mapv(i64::signum))),
            Data::Bool(_) => Ok(self_.clone()),
            Data::Float(a) => Ok(float_out(F::sign(a)?)),
        }
    }
    fn tanh_backward(grad_output: &Self, output: &Self) -> R<Self> {
        // PyTorch promotes the two, and has the kernel for floats only (two floats: nothing
        // to check).
        if kind(grad_output) != Kind::Float || kind(output) != Kind::Float {
            rules::check_promoted_floats(
                kernel::TANH_BACKWARD,
                grad_output.dtype(),
                output.dtype(),
            )?;
        }
        Ok(float_out(F::tanh_backward(
            &promoted(grad_output),
            &promoted(output),
        )?))
    }
    fn relu(self_: &Self) -> R<Self> {
        rules::check_relu(kind(self_))?;
        match self_.data() {
            Data::Float(a) => Ok(float_out(F::relu(a)?)),
            _ => Ok(int_out(ints(self_).mapv(|x| x.max(0)))),
        }
    }
    fn leaky_relu(self_: &Self, negative_slope: Scalar) -> R<Self> {
        Ok(float_out(F::leaky_relu(
            &*floats(self_, kernel::LEAKY_RELU)?,
            negative_slope.to_f64(),
        )?))
    }
    fn threshold_backward(grad_output: &Self, self_: &Self, threshold: Scalar) -> R<Self> {
        let threshold = threshold.to_f64();
        let k = kind(grad_output).max(kind(self_));
        rules::check_not_bool(k, kernel::THRESHOLD)?;
        match k {
            Kind::Float => Ok(float_out(F::threshold_backward(
                &promoted(grad_output),
                &promoted(self_),
                threshold,
            )?)),
            _ => Ok(narrowed(
                F::threshold_backward(&wide(grad_output), &wide(self_), threshold)?,
                Kind::Int,
            )),
        }
    }
    fn gelu(self_: &Self, approximate: &str) -> R<Self> {
        Ok(float_out(F::gelu(
            &*floats(self_, kernel::GELU)?,
            approximate,
        )?))
    }
    fn clamp(self_: &Self, min: Option<Scalar>, max: Option<Scalar>) -> R<Self> {
        let kind = rules::clamp_kind(kind(self_), min, max);
        rules::check_clamp(kind)?;
        let (min, max) = (min.map(Scalar::to_f64), max.map(Scalar::to_f64));
        if kind == Kind::Float {
            return Ok(float_out(F::clamp(&promoted(self_), min, max)?));
        }
        Ok(narrowed(F::clamp(&wide(self_), min, max)?, Kind::Int))
    }
    fn where_self(condition: &Self, self_: &Self, other: &Self) -> R<Self> {
        rules::check_where_condition(condition.dtype())?;
        let c = &bools(condition);
        let k = kind(self_).max(kind(other));
        if k == Kind::Float {
            let cf = F::from_array(c.mapv(|x| if x { E::one() } else { E::zero() }));
            return Ok(float_out(F::where_self(
                &cf,
                &promoted(self_),
                &promoted(other),
            )?));
        }
        let (a, b) = (ints(self_), ints(other));
        let shape = broadcast_shape(&broadcast_shape(c.shape(), a.shape())?, b.shape())?;
        let r = Zip::from(&bview(c, &shape)?)
            .and(&bview(&a, &shape)?)
            .and(&bview(&b, &shape)?)
            .map_collect(|c, x, y| if *c { *x } else { *y });
        Ok(match k {
            Kind::Bool => bool_out(r.mapv(|x| x != 0)),
            _ => int_out(r),
        })
    }
    fn maximum(self_: &Self, other: &Self) -> R<Self> {
        match kind(self_).max(kind(other)) {
            Kind::Float => Ok(float_out(F::maximum(&promoted(self_), &promoted(other))?)),
            Kind::Int => Ok(int_out(bzip(&ints(self_), &ints(other), i64::max)?)),
            Kind::Bool => Ok(bool_out(bzip(&ints(self_), &ints(other), |x, y| {
                x != 0 || y != 0
            })?)),
        }
    }
    fn minimum(self_: &Self, other: &Self) -> R<Self> {
        match kind(self_).max(kind(other)) {
            Kind::Float => Ok(float_out(F::minimum(&promoted(self_), &promoted(other))?)),
            Kind::Int => Ok(int_out(bzip(&ints(self_), &ints(other), i64::min)?)),
            Kind::Bool => Ok(bool_out(bzip(&ints(self_), &ints(other), |x, y| {
                x != 0 && y != 0
            })?)),
        }
    }
    fn eq_tensor(self_: &Self, other: &Self) -> R<Self> {
        compare(self_, other, F::eq_tensor, i64::eq)
    }
    fn eq_scalar(self_: &Self, other: Scalar) -> R<Self> {
        compare_scalar(self_, other, F::eq_scalar, f64::eq)
    }
    fn ne_scalar(self_: &Self, other: Scalar) -> R<Self> {
        compare_scalar(self_, other, F::ne_scalar, f64::ne)
    }
    fn gt_tensor(self_: &Self, other: &Self) -> R<Self> {
        compare(self_, other, F::gt_tensor, i64::gt)
    }
    fn ge_tensor(self_: &Self, other: &Self) -> R<Self> {
        compare(self_, other, F::ge_tensor, i64::ge)
    }
    fn le_tensor(self_: &Self, other: &Self) -> R<Self> {
        compare(self_, other, F::le_tensor, i64::le)
    }
    fn ne_tensor(self_: &Self, other: &Self) -> R<Self> {
        compare(self_, other, F::ne_tensor, i64::ne)
    }
    fn gt_scalar(self_: &Self, other: Scalar) -> R<Self> {
        compare_scalar(self_, other, F::gt_scalar, f64::gt)
    }
    fn lt_tensor(self_: &Self, other: &Self) -> R<Self> {
        compare(self_, other, F::lt_tensor, i64::lt)
    }
    fn lt_scalar(self_: &Self, other: Scalar) -> R<Self> {
        compare_scalar(self_, other, F::lt_scalar, f64::lt)
    }
    fn ge_scalar(self_: &Self, other: Scalar) -> R<Self> {
        compare_scalar(self_, other, F::ge_scalar, f64::ge)
    }
    fn le_scalar(self_: &Self, other: Scalar) -> R<Self> {
        compare_scalar(self_, other, F::le_scalar, f64::le)
    }
    fn argmax(self_: &Self, dim: Option<i64>, keepdim: bool) -> R<Self> {
        rules::check_argmax(kind(self_))?;
        match self_.data() {
            Data::Float(a) => Ok(indices_out(F::argmax(a, dim, keepdim)?)),
            _ => Ok(indices_out(F::argmax(&wide(self_), dim, keepdim)?)),
        }
    }
    fn new_zeros(
        self_: &Self,
        size: &[i64],
        dtype: Option<ScalarType>,
        layout: Option<Layout>,
        device: Option<Device>,
        pin_memory: Option<bool>,
    ) -> R<Self> {
        // The kernel checks the sizes; the dtype is `self`'s (or `dtype`).
        let z = F::<E>::new_zeros(&promoted(self_), size, dtype, layout, device, pin_memory)?;
        Ok(zeros_as(self_, dtype, z.shape()))
    }
    fn zeros_like(
        self_: &Self,
        dtype: Option<ScalarType>,
        layout: Option<Layout>,
        device: Option<Device>,
        pin_memory: Option<bool>,
        memory_format: Option<MemoryFormat>,
    ) -> R<Self> {
        if let (Data::Float(a), None) = (self_.data(), dtype) {
            let args = (layout, device, pin_memory, memory_format);
            let z = F::zeros_like(a, None, args.0, args.1, args.2, args.3)?;
            return Ok(float_out(z));
        }
        Ok(zeros_as(self_, dtype, self_.shape()))
    }
    fn zero_(self_: &mut Self) -> R<()> {
        if let Data::Float(a) = self_.data() {
            let mut f = a.clone();
            F::zero_(&mut f)?;
            *self_ = float_out(f);
            return Ok(());
        }
        *self_ = zeros_as(self_, None, self_.shape());
        Ok(())
    }
    fn fill_scalar_(self_: &mut Self, value: Scalar) -> R<()> {
        let s = IxDyn(self_.shape());
        let d = match self_.data() {
            Data::Float(a) => {
                let mut f = a.clone();
                F::fill_scalar_(&mut f, value.to_f64())?;
                Data::Float(f)
            }
            Data::Int(_) => Data::int(Array::from_elem(s, value.to_i64()).into_shared()),
            Data::Bool(_) => Data::bool(Array::from_elem(s, value.to_bool()).into_shared()),
        };
        *self_ = NdTensor::from_data(d);
        Ok(())
    }
    fn mm(self_: &Self, mat2: &Self) -> R<Self> {
        // PyTorch's meta function checks the ranks and sizes, its kernel the dtypes.
        autograd_opset::shape::check_mm(self_.shape(), mat2.shape())?;
        matmul_like(self_, mat2, kernel::MM, F::mm, F::mm)
    }
    fn bmm(self_: &Self, mat2: &Self) -> R<Self> {
        autograd_opset::meta::bmm(self_.shape(), mat2.shape())?;
        rules::check_same(self_.dtype(), mat2.dtype())?;
        matmul_like(self_, mat2, kernel::BMM, F::bmm, F::bmm)
    }
    fn sum(self_: &Self, dtype: Option<ScalarType>) -> R<Self> {
        let t = &*cast_to(self_, dtype);
        if kind(t) == Kind::Float {
            return Ok(float_out(F::sum(&promoted(t), None)?));
        }
        let axes: Vec<usize> = (0..t.shape().len()).collect();
        let r = sum_ints(t, &axes, false);
        // A sum asked for as `bool` is a boolean (any); of booleans otherwise an `i64` count.
        Ok(match dtype {
            Some(ScalarType::Bool) => to_bool(&r),
            _ => r,
        })
    }
    fn sum_dim_intlist(
        self_: &Self,
        dim: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<ScalarType>,
    ) -> R<Self> {
        let t = &*cast_to(self_, dtype);
        if kind(t) == Kind::Float {
            return Ok(float_out(F::sum_dim_intlist(
                &promoted(t),
                dim,
                keepdim,
                None,
            )?));
        }
        let axes = reduce_axes(dim, t.shape().len())?;
        let r = sum_ints(t, &axes, keepdim);
        // A sum asked for as `bool` is a boolean (PyTorch casts the sum back: any); a sum
        // of booleans is otherwise an `i64` count.
        Ok(match dtype {
            Some(ScalarType::Bool) => to_bool(&r),
            _ => r,
        })
    }
    fn mean(self_: &Self, dtype: Option<ScalarType>) -> R<Self> {
        let t = &*cast_to(self_, dtype);
        rules::check_mean(t.dtype(), dtype.is_some())?;
        Ok(float_out(F::mean(&promoted(t), None)?))
    }
    fn mean_dim(
        self_: &Self,
        dim: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<ScalarType>,
    ) -> R<Self> {
        let t = &*cast_to(self_, dtype);
        rules::check_mean(t.dtype(), dtype.is_some())?;
        Ok(float_out(F::mean_dim(&promoted(t), dim, keepdim, None)?))
    }
    fn max_dim(self_: &Self, dim: i64, keepdim: bool) -> R<(Self, Self)> {
        if let Data::Float(a) = self_.data() {
            let (v, i) = F::max_dim(a, dim, keepdim)?;
            return Ok((float_out(v), indices_out(i)));
        }
        let (v, i) = F::max_dim(&wide(self_), dim, keepdim)?;
        Ok((narrowed(v, kind(self_)), indices_out(i)))
    }
    fn amax(self_: &Self, dim: &[i64], keepdim: bool) -> R<Self> {
        let k = kind(self_);
        int_kernel(
            self_,
            |x| F::amax(x, dim, keepdim),
            |x| F::amax(x, dim, keepdim),
            k,
        )
    }
    fn _softmax(self_: &Self, dim: i64, half_to_float: bool) -> R<Self> {
        meta::softmax(false, self_.dtype(), self_.shape(), dim, half_to_float)?;
        Ok(float_out(F::_softmax(
            &promoted(self_),
            dim,
            half_to_float,
        )?))
    }
    fn _log_softmax(self_: &Self, dim: i64, half_to_float: bool) -> R<Self> {
        meta::softmax(true, self_.dtype(), self_.shape(), dim, half_to_float)?;
        Ok(float_out(F::_log_softmax(
            &promoted(self_),
            dim,
            half_to_float,
        )?))
    }
    // ---- softmax's backward functions (issue 30): floating-point kernels in backend/softmax.rs
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
        Ok(float_out(F::logsumexp(&promoted(self_), dim, keepdim)?))
    }
    fn transpose_int(self_: &Self, dim0: i64, dim1: i64) -> R<Self> {
        moved!(self_, x => F::transpose_int(x, dim0, dim1))
    }
    fn t(self_: &Self) -> R<Self> {
        moved!(self_, x => F::t(x))
    }
    fn permute(self_: &Self, dims: &[i64]) -> R<Self> {
        moved!(self_, x => F::permute(x, dims))
    }
    fn reshape(self_: &Self, shape: &[i64]) -> R<Self> {
        moved!(self_, x => F::reshape(x, shape))
    }
    fn view(self_: &Self, size: &[i64]) -> R<Self> {
        moved!(self_, x => F::view(x, size))
    }
    fn expand(self_: &Self, size: &[i64], implicit: bool) -> R<Self> {
        moved!(self_, x => F::expand(x, size, implicit))
    }
    fn squeeze(self_: &Self) -> R<Self> {
        moved!(self_, x => F::squeeze(x))
    }
    fn squeeze_dims(self_: &Self, dim: &[i64]) -> R<Self> {
        moved!(self_, x => F::squeeze_dims(x, dim))
    }
    fn clone(self_: &Self, memory_format: Option<MemoryFormat>) -> R<Self> {
        moved!(self_, x => F::clone(x, memory_format))
    }
    fn squeeze_dim(self_: &Self, dim: i64) -> R<Self> {
        moved!(self_, x => F::squeeze_dim(x, dim))
    }
    fn unsqueeze(self_: &Self, dim: i64) -> R<Self> {
        moved!(self_, x => F::unsqueeze(x, dim))
    }
    fn slice_tensor(
        self_: &Self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> R<Self> {
        moved!(self_, x => F::slice_tensor(x, dim, start, end, step))
    }
    fn slice_backward(
        grad_output: &Self,
        input_sizes: &[i64],
        dim: i64,
        start: i64,
        end: i64,
        step: i64,
    ) -> R<Self> {
        let f = |x: &F<E>| F::slice_backward(x, input_sizes, dim, start, end, step);
        let w = |x: &F<f64>| F::slice_backward(x, input_sizes, dim, start, end, step);
        placed_any(grad_output, f, w)
    }
    fn cat(tensors: &[Self], dim: i64) -> R<Self> {
        joined(tensors, |ts| F::cat(ts, dim), |ts| F::cat(ts, dim))
    }
    fn stack(tensors: &[Self], dim: i64) -> R<Self> {
        joined(tensors, |ts| F::stack(ts, dim), |ts| F::stack(ts, dim))
    }
    fn narrow(self_: &Self, dim: i64, start: i64, length: i64) -> R<Self> {
        moved!(self_, x => F::narrow(x, dim, start, length))
    }
    fn as_strided(
        self_: &Self,
        size: &[i64],
        stride: &[i64],
        storage_offset: Option<i64>,
    ) -> R<Self> {
        moved!(self_, x => F::as_strided_view(x, size, stride, storage_offset))
    }
    fn diagonal(self_: &Self, offset: i64, dim1: i64, dim2: i64) -> R<Self> {
        moved!(self_, x => F::diagonal(x, offset, dim1, dim2))
    }
    fn diagonal_backward(
        grad_output: &Self,
        input_sizes: &[i64],
        offset: i64,
        dim1: i64,
        dim2: i64,
    ) -> R<Self> {
        let f = |x: &F<E>| F::diagonal_backward(x, input_sizes, offset, dim1, dim2);
        let w = |x: &F<f64>| F::diagonal_backward(x, input_sizes, offset, dim1, dim2);
        placed_any(grad_output, f, w)
    }
    fn select_int(self_: &Self, dim: i64, index: i64) -> R<Self> {
        moved!(self_, x => F::select_int(x, dim, index))
    }
    fn unbind_int(self_: &Self, dim: i64) -> R<Vec<Self>> {
        moved_all!(self_, x => F::unbind_int(x, dim))
    }
    fn index_select(self_: &Self, dim: i64, index: &Self) -> R<Self> {
        let i = index_arg(index, IndexUse::IndexSelect)?;
        if needs_f64::<E>(&i) {
            let r = <NdTensor<f64> as Backend>::index_select(&self_.cast(), dim, &index.cast());
            return r.map(|r| r.cast());
        }
        moved!(self_, x => F::index_select(x, dim, &idx(&i)))
    }
    fn index_add(self_: &Self, dim: i64, index: &Self, source: &Self, alpha: Scalar) -> R<Self> {
        let i = index_arg(index, IndexUse::IndexAdd)?;
        rules::check_index_add_source(self_.dtype(), source.dtype())?;
        if needs_f64::<E>(&i) {
            let (x, ix, src) = (self_.cast(), index.cast(), source.cast());
            let r = <NdTensor<f64> as Backend>::index_add(&x, dim, &ix, &src, alpha);
            return r.map(|r| r.cast());
        }
        if let (Data::Float(a), Data::Float(s)) = (self_.data(), source.data()) {
            let r = F::index_add(a, dim, &idx(&i), s, alpha.to_f64())?;
            return Ok(float_out(r));
        }
        // PyTorch converts alpha to the integer dtype (truncates; for bools, != 0).
        let alpha = rules::converted_scalar(kind(self_), alpha);
        let r = F::index_add(&wide(self_), dim, &idx(&i), &wide(source), alpha)?;
        Ok(narrowed(r, kind(self_)))
    }
    fn gather(self_: &Self, dim: i64, index: &Self, sparse_grad: bool) -> R<Self> {
        let i = index_arg(index, IndexUse::Gather)?;
        if needs_f64::<E>(&i) {
            let r =
                <NdTensor<f64> as Backend>::gather(&self_.cast(), dim, &index.cast(), sparse_grad);
            return r.map(|r| r.cast());
        }
        moved!(self_, x => F::gather(x, dim, &idx(&i), sparse_grad))
    }
    fn scatter_add(self_: &Self, dim: i64, index: &Self, src: &Self) -> R<Self> {
        let i = index_arg(index, IndexUse::Scatter)?;
        rules::check_scatter_src(self_.dtype(), src.dtype())?;
        if needs_f64::<E>(&i) {
            let (x, ix, s) = (self_.cast(), index.cast(), src.cast());
            return <NdTensor<f64> as Backend>::scatter_add(&x, dim, &ix, &s).map(|r| r.cast());
        }
        if let (Data::Float(a), Data::Float(s)) = (self_.data(), src.data()) {
            let r = F::scatter_add(a, dim, &idx(&i), s)?;
            return Ok(float_out(r));
        }
        let r = F::scatter_add(&wide(self_), dim, &idx(&i), &wide(src))?;
        Ok(narrowed(r, kind(self_)))
    }
    fn mse_loss(self_: &Self, target: &Self, reduction: i64) -> R<Self> {
        rules::check_promoted_floats(kernel::MSE_LOSS, self_.dtype(), target.dtype())?;
        Ok(float_out(F::mse_loss(
            &promoted(self_),
            &promoted(target),
            reduction,
        )?))
    }
    fn nll_loss_forward(
        self_: &Self,
        target: &Self,
        weight: Option<&Self>,
        reduction: i64,
        ignore_index: i64,
    ) -> R<(Self, Self)> {
        let t = index_arg(target, IndexUse::NllTarget)?;
        let x = floats(self_, kernel::NLL_LOSS)?;
        let w = nll_weight(self_, weight)?;
        let (l, tw) = F::nll_loss_forward(&x, &idx(&t), w.as_deref(), reduction, ignore_index)?;
        Ok((float_out(l), float_out(tw)))
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
        let t = index_arg(target, IndexUse::NllBackwardTarget)?;
        let x = floats(self_, kernel::NLL_LOSS_BACKWARD)?;
        let w = nll_weight(self_, weight)?;
        let r = F::nll_loss_backward(
            &promoted(grad_output),
            &x,
            &idx(&t),
            w.as_deref(),
            reduction,
            ignore_index,
            &promoted(total_weight),
        )?;
        Ok(float_out(r))
    }
    fn native_dropout(input: &Self, p: f64, train: Option<bool>) -> R<(Self, Self)> {
        rules::check_dropout(input.dtype(), E::NAME)?;
        let (y, mask) = F::native_dropout(&promoted(input), p, train)?;
        Ok((float_out(y), mask_out(mask)))
    }
    fn native_dropout_backward(grad_output: &Self, mask: &Self, scale: f64) -> R<Self> {
        Ok(float_out(F::native_dropout_backward(
            &promoted(grad_output),
            &promoted(mask),
            scale,
        )?))
    }
    fn embedding(
        weight: &Self,
        indices: &Self,
        padding_idx: i64,
        scale_grad_by_freq: bool,
        sparse: bool,
    ) -> R<Self> {
        let i = index_arg(indices, IndexUse::Embedding)?;
        if needs_f64::<E>(&i) {
            let (w, ix) = (weight.cast(), indices.cast());
            let r = <NdTensor<f64> as Backend>::embedding(
                &w,
                &ix,
                padding_idx,
                scale_grad_by_freq,
                sparse,
            );
            return r.map(|r| r.cast());
        }
        moved!(weight, x => F::embedding(x, &idx(&i), padding_idx, scale_grad_by_freq, sparse))
    }
    fn ceil(self_: &Self) -> R<Self> {
        rounded(self_, kernel::CEIL, E::ceil)
    }
    fn floor(self_: &Self) -> R<Self> {
        rounded(self_, kernel::FLOOR, E::floor)
    }
    fn round(self_: &Self) -> R<Self> {
        rounded(self_, kernel::ROUND, round_half_even)
    }
    fn trunc(self_: &Self) -> R<Self> {
        rounded(self_, kernel::TRUNC, E::trunc)
    }
    fn remainder_scalar(self_: &Self, other: Scalar) -> R<Self> {
        modulo(self_, other, kernel::REMAINDER, true)
    }
    fn fmod_scalar(self_: &Self, other: Scalar) -> R<Self> {
        modulo(self_, other, kernel::FMOD, false)
    }
    fn flip(self_: &Self, dims: &[i64]) -> R<Self> {
        let axes = meta::flip(self_.shape(), dims)?;
        moved!(self_, x => Ok::<_, Error>(flipped(x, &axes)))
    }
    fn amin(self_: &Self, dim: &[i64], keepdim: bool) -> R<Self> {
        let axes = reduce_axes(Some(dim), self_.shape().len())?;
        check_amin(dim, &axes, self_.shape())?;
        // min(x) = -max(-x), exactly (negation is exact), NaN kept.
        let k = kind(self_);
        let r = F::amax(&negated(self_), dim, keepdim)?;
        Ok(narrowed(negated_wide(&r), k))
    }
    fn min_dim(self_: &Self, dim: i64, keepdim: bool) -> R<(Self, Self)> {
        meta::min_dim(self_.shape(), dim)?;
        let (v, i) = F::max_dim(&negated(self_), dim, keepdim)?;
        Ok((narrowed(negated_wide(&v), kind(self_)), indices_out(i)))
    }
    fn argmin(self_: &Self, dim: Option<i64>, keepdim: bool) -> R<Self> {
        rules::check_argmin(kind(self_))?;
        match dim {
            None => meta::argmin(self_.shape())?,
            Some(d) => drop(meta::argmin_dim(self_.shape(), d)?),
        }
        // The first smallest element is the first largest of `-x` (a NaN wins in both).
        Ok(indices_out(F::argmax(&negated(self_), dim, keepdim)?))
    }
    fn isnan(self_: &Self) -> R<Self> {
        Ok(match self_.data() {
            Data::Float(a) => bool_out(a.arr().mapv(|x| x.is_nan())),
            _ => bool_out(Array::from_elem(IxDyn(self_.shape()), false)),
        })
    }
    fn isinf(self_: &Self) -> R<Self> {
        Ok(match self_.data() {
            Data::Float(a) => bool_out(a.arr().mapv(|x| x.is_infinite())),
            _ => bool_out(Array::from_elem(IxDyn(self_.shape()), false)),
        })
    }
    fn logical_not(self_: &Self) -> R<Self> {
        Ok(bool_out(bools(self_).mapv(|x| !x)))
    }
    fn logical_and(self_: &Self, other: &Self) -> R<Self> {
        Ok(bool_out(bzip(&bools(self_), &bools(other), |x, y| x && y)?))
    }
    fn logical_or(self_: &Self, other: &Self) -> R<Self> {
        Ok(bool_out(bzip(&bools(self_), &bools(other), |x, y| x || y)?))
    }
    fn logical_xor(self_: &Self, other: &Self) -> R<Self> {
        Ok(bool_out(bzip(&bools(self_), &bools(other), |x, y| x != y)?))
    }
    fn bitwise_not(self_: &Self) -> R<Self> {
        match self_.data() {
            Data::Float(_) => Err(rules::not_implemented(kernel::BITWISE_NOT, self_.dtype())),
            Data::Int(a) => Ok(int_out(a.mapv(|x| !x))),
            Data::Bool(a) => Ok(bool_out(a.mapv(|x| !x))),
        }
    }
    fn bitwise_and_tensor(self_: &Self, other: &Self) -> R<Self> {
        bitwise(self_, other, kernel::BITWISE_AND, |x, y| x & y)
    }
    fn bitwise_and_scalar(self_: &Self, other: Scalar) -> R<Self> {
        bitwise(self_, &scalar_tensor(other), kernel::BITWISE_AND, |x, y| {
            x & y
        })
    }
    fn bitwise_or_tensor(self_: &Self, other: &Self) -> R<Self> {
        bitwise(self_, other, kernel::BITWISE_OR, |x, y| x | y)
    }
    fn bitwise_or_scalar(self_: &Self, other: Scalar) -> R<Self> {
        bitwise(self_, &scalar_tensor(other), kernel::BITWISE_OR, |x, y| {
            x | y
        })
    }
    fn bitwise_xor_tensor(self_: &Self, other: &Self) -> R<Self> {
        bitwise(self_, other, kernel::BITWISE_XOR, |x, y| x ^ y)
    }
    fn bitwise_xor_scalar(self_: &Self, other: Scalar) -> R<Self> {
        bitwise(self_, &scalar_tensor(other), kernel::BITWISE_XOR, |x, y| {
            x ^ y
        })
    }
    fn any(self_: &Self) -> R<Self> {
        let all: Vec<usize> = (0..self_.shape().len()).collect();
        Ok(any_over(self_, &all, false))
    }
    fn any_dim(self_: &Self, dim: i64, keepdim: bool) -> R<Self> {
        let ax = norm_dim(dim, self_.shape().len())?;
        let axes: Vec<usize> = if self_.shape().is_empty() {
            vec![]
        } else {
            vec![ax]
        };
        Ok(any_over(self_, &axes, keepdim))
    }
    fn any_dims(self_: &Self, dim: Option<&[i64]>, keepdim: bool) -> R<Self> {
        // `None` reduces every dim; `[]` none (unlike `sum`'s).
        let axes = match dim {
            Some([]) => vec![],
            _ => reduce_axes(dim, self_.shape().len())?,
        };
        Ok(any_over(self_, &axes, keepdim))
    }
    fn div_tensor_mode(self_: &Self, other: &Self, rounding_mode: Option<&str>) -> R<Self> {
        match meta::rounding_mode(rounding_mode)? {
            None => <Self as Backend>::div_tensor(self_, other),
            Some(floor) => divided(self_, other, floor),
        }
    }
    fn div_scalar_mode(self_: &Self, other: Scalar, rounding_mode: Option<&str>) -> R<Self> {
        match meta::rounding_mode(rounding_mode)? {
            None => <Self as Backend>::div_scalar(self_, other),
            Some(floor) => divided(self_, &scalar_tensor(other), floor),
        }
    }
    fn remainder_tensor(self_: &Self, other: &Self) -> R<Self> {
        modulo_tensor(self_, other, kernel::REMAINDER, true)
    }
    fn fmod_tensor(self_: &Self, other: &Self) -> R<Self> {
        modulo_tensor(self_, other, kernel::FMOD, false)
    }
    fn atan2(self_: &Self, other: &Self) -> R<Self> {
        fzip(self_, other, E::atan2)
    }
    fn elu(self_: &Self, alpha: Scalar, scale: Scalar, input_scale: Scalar) -> R<Self> {
        rules::check_floats(self_.dtype(), kernel::ELU)?;
        let (neg, pos, inp) = elu_coefs::<E>(alpha, scale, input_scale);
        let x = promoted(self_);
        Ok(float_out(fl(x.arr().mapv(|a| {
            if a <= E::zero() {
                (a * inp).exp_m1() * neg
            } else {
                a * pos
            }
        }))))
    }
    fn elu_backward(
        grad_output: &Self,
        alpha: Scalar,
        scale: Scalar,
        input_scale: Scalar,
        is_result: bool,
        self_or_result: &Self,
    ) -> R<Self> {
        meta::elu_backward(alpha.to_f64(), is_result)?;
        rules::check_promoted_floats(
            kernel::ELU_BACKWARD,
            grad_output.dtype(),
            self_or_result.dtype(),
        )?;
        let (neg, pos, inp) = elu_coefs::<E>(alpha, scale, input_scale);
        fzip(grad_output, self_or_result, |a, b| {
            match (b <= E::zero(), is_result) {
                (false, _) => a * pos,
                (true, true) => a * inp * (b + neg),
                (true, false) => a * inp * neg * (b * inp).exp(),
            }
        })
    }
    fn hardtanh(self_: &Self, min_val: Scalar, max_val: Scalar) -> R<Self> {
        rules::check_hardtanh(kind(self_))?;
        let (lo, hi) = (min_val.to_f64(), max_val.to_f64());
        match self_.data() {
            Data::Float(a) => {
                let (lo, hi) = (E::of(lo), E::of(hi));
                // NaN stays NaN, as in PyTorch's clamp.
                let c = |x: E| {
                    if x < lo {
                        lo
                    } else if x > hi {
                        hi
                    } else {
                        x
                    }
                };
                Ok(float_out(fl(a.arr().mapv(c))))
            }
            // Integers keep their dtype: the bounds clamp, then the cast truncates.
            _ => Ok(int_out(
                ints(self_).mapv(|x| (x as f64).max(lo).min(hi) as i64),
            )),
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
        let (lo, hi) = (E::of(min_val.to_f64()), E::of(max_val.to_f64()));
        fzip(grad_output, self_, |g, x| {
            if x <= lo || x >= hi { E::zero() } else { g }
        })
    }
    fn alias(self_: &Self) -> R<Self> {
        // The same values (tensors are values; the autograd layer keeps the view).
        Ok(self_.clone())
    }

    // ---- normalization and variance (issue 30): floating-point kernels in backend/norm.rs
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
        let (mut rm, mut rv) = (
            promoted(running_mean).into_owned(),
            promoted(running_var).into_owned(),
        );
        let (w, b) = (weight.map(promoted), bias.map(promoted));
        let (y, m, s) = F::batch_norm_legit(
            &promoted(input),
            w.as_deref(),
            b.as_deref(),
            Some((&mut rm, &mut rv)),
            training,
            momentum,
            eps,
        )?;
        if training {
            *running_mean = float_out(rm);
            *running_var = float_out(rv);
        }
        Ok((float_out(y), float_out(m), float_out(s)))
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
        let (mut rm, mut rv) = (
            promoted(running_mean).into_owned(),
            promoted(running_var).into_owned(),
        );
        let (w, b) = (weight.map(promoted), bias.map(promoted));
        let running = Some((&mut rm, &mut rv));
        let (y, m, s) = F::batch_norm_legit(
            &promoted(input),
            w.as_deref(),
            b.as_deref(),
            running,
            false,
            0.0,
            eps,
        )?;
        Ok((float_out(y), float_out(m), float_out(s)))
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
        let (w, b) = (weight.map(promoted), bias.map(promoted));
        let (y, m, s) = F::batch_norm_legit(
            &promoted(input),
            w.as_deref(),
            b.as_deref(),
            None,
            true,
            momentum,
            eps,
        )?;
        Ok((float_out(y), float_out(m), float_out(s)))
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
        let (w, rm, rv) = (
            weight.map(promoted),
            running_mean.map(promoted),
            running_var.map(promoted),
        );
        let (sm, si) = (save_mean.map(promoted), save_invstd.map(promoted));
        let (gi, gw, gb) = F::native_batch_norm_backward(
            &promoted(grad_out),
            &promoted(input),
            w.as_deref(),
            rm.as_deref(),
            rv.as_deref(),
            sm.as_deref(),
            si.as_deref(),
            train,
            eps,
            output_mask,
        )?;
        Ok((float_out(gi), float_out(gw), float_out(gb)))
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
        let (w, b) = (weight.map(promoted), bias.map(promoted));
        let (y, m, s) = F::native_layer_norm(
            &promoted(input),
            normalized_shape,
            w.as_deref(),
            b.as_deref(),
            eps,
        )?;
        Ok((float_out(y), float_out(m), float_out(s)))
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
        let (w, b) = (weight.map(promoted), bias.map(promoted));
        let (gi, gw, gb) = F::native_layer_norm_backward(
            &promoted(grad_out),
            &promoted(input),
            normalized_shape,
            [&promoted(mean), &promoted(rstd)],
            w.as_deref(),
            b.as_deref(),
            output_mask,
        )?;
        Ok((float_out(gi), float_out(gw), float_out(gb)))
    }
    fn var_correction(
        self_: &Self,
        dim: Option<&[i64]>,
        correction: Option<Scalar>,
        keepdim: bool,
    ) -> R<Self> {
        let correction = correction.map(Scalar::to_f64);
        autograd_opset::meta::var_dtype(self_.dtype())?;
        Ok(float_out(F::var_correction(
            &promoted(self_),
            dim,
            correction,
            keepdim,
        )?))
    }

    // ---- convolution and pooling (backend/conv.rs): floats as they are; integers through
    // `f64`, the result in their dtype.
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
        if k == Kind::Float {
            let (x, w, b) = (promoted(input), promoted(weight), bias.map(promoted));
            let r = F::convolution(
                &x,
                &w,
                b.as_deref(),
                stride,
                padding,
                dilation,
                transposed,
                output_padding,
                groups,
            )?;
            return Ok(float_out(r));
        }
        let b = bias.map(wide);
        let r = F::convolution(
            &wide(input),
            &wide(weight),
            b.as_ref(),
            stride,
            padding,
            dilation,
            transposed,
            output_padding,
            groups,
        )?;
        Ok(narrowed(r, k))
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
        let (g, x, w) = (promoted(grad_output), promoted(input), promoted(weight));
        let (a, b, c) = F::convolution_backward(
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
        )?;
        Ok((float_out(a), float_out(b), float_out(c)))
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
        Ok(max_pool_any(self_, &p))
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
        let i = index_arg(indices, IndexUse::Gather)?;
        let (g, x) = (grad_output.shape(), self_.shape());
        let geo = (kernel_size, stride, padding, dilation);
        let p = meta::max_pool2d_backward(g, x, geo.0, geo.1, geo.2, geo.3, ceil_mode, i.shape())?;
        max_pool_backward_any(grad_output, self_, &p, &i)
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
        Ok(avg_pool_any(self_, &p, count_include_pad, divisor_override))
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
        let (g, x, k, s) = (grad_output.shape(), self_.shape(), kernel_size, stride);
        let p = meta::avg_pool2d_backward(g, x, k, s, padding, ceil_mode, divisor_override)?;
        let (g, x) = (promoted(grad_output), promoted(self_));
        let r = F::avg_pool_backward(&g, &x, &p, (count_include_pad, divisor_override), false);
        Ok(float_out(r))
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
        Ok(max_pool_any(self_, &p))
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
        let (g, x, i) = (grad_output.shape(), self_.shape(), indices.shape());
        let geo = (kernel_size, stride, padding, dilation);
        let p = meta::max_pool3d_backward(g, x, geo.0, geo.1, geo.2, geo.3, ceil_mode, i)?;
        rules::check_pool3d_backward(self_.dtype(), grad_output.dtype(), indices.dtype())?;
        let i = index_arg(indices, IndexUse::Gather)?;
        max_pool_backward_any(grad_output, self_, &p, &i)
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
        Ok(avg_pool_any(self_, &p, count_include_pad, divisor_override))
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
        let (g, x, k, s) = (grad_output.shape(), self_.shape(), kernel_size, stride);
        let p = meta::avg_pool3d_backward(g, x, k, s, padding, ceil_mode, divisor_override)?;
        rules::check_same(self_.dtype(), grad_output.dtype())?;
        rules::check_not_bool(kind(self_), kernel::AVG_POOL3D_BACKWARD)?;
        let avg = (count_include_pad, divisor_override);
        if kind(self_) == Kind::Float {
            let (g, x) = (promoted(grad_output), promoted(self_));
            return Ok(float_out(F::avg_pool_backward(&g, &x, &p, avg, false)));
        }
        // Integers: PyTorch's integer division of each gradient by its divisor.
        let r = F::avg_pool_backward(&wide(grad_output), &wide(self_), &p, avg, true);
        Ok(narrowed(r, kind(self_)))
    }
    fn _adaptive_avg_pool2d(self_: &Self, output_size: &[i64]) -> R<Self> {
        let x = floats(self_, kernel::ADAPTIVE_AVG_POOL2D)?;
        Ok(float_out(F::adaptive_avg_pool2d(&x, output_size)?))
    }
    fn _adaptive_avg_pool2d_backward(grad_output: &Self, self_: &Self) -> R<Self> {
        let x = floats(self_, kernel::ADAPTIVE_AVG_POOL2D_BACKWARD)?;
        let r = F::adaptive_avg_pool2d_backward(&promoted(grad_output), &x)?;
        Ok(float_out(r))
    }
    fn constant_pad_nd(self_: &Self, pad: &[i64], value: Scalar) -> R<Self> {
        let value = value.to_f64();
        if let Data::Float(a) = self_.data() {
            return Ok(float_out(F::constant_pad_nd(a, pad, value)?));
        }
        // Integers and booleans: padded in `f64`, the value converted as `fill_` converts it.
        let r = F::constant_pad_nd(&wide(self_), pad, value)?;
        Ok(narrowed(r, kind(self_)))
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
        let out = meta::repeat(self_.shape(), repeats)?;
        moved!(self_, x => Ok::<_, Error>(tiled(x, &out)))
    }
    fn full(
        size: &[i64],
        fill_value: Scalar,
        dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
    ) -> R<Self> {
        Ok(from_values(factory::full(size, fill_value, dtype)?))
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
        Ok(from_values(factory::arange(start, end, step, dtype)?))
    }
    fn rand(
        size: &[i64],
        dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
    ) -> R<Self> {
        Ok(from_values(factory::rand(size, dtype)?))
    }
    fn randn(
        size: &[i64],
        dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
    ) -> R<Self> {
        Ok(from_values(factory::randn(size, dtype)?))
    }
    fn randperm(
        n: i64,
        dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
    ) -> R<Self> {
        Ok(from_values(factory::randperm(n, dtype)?))
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
        Ok(converted(self_, dtype.map_or(kind(self_), Kind::requested)))
    }
    fn _local_scalar_dense(self_: &Self) -> R<Scalar> {
        factory::check_local_scalar(self_.shape().iter().product())?;
        // PyTorch reads the first element, whatever the count.
        Ok(match self_.data() {
            Data::Float(a) => Scalar::Float(a.iter().next().map_or(0.0, |x| x.as_f64())),
            Data::Int(a) => Scalar::Int(a.iter().next().copied().unwrap_or(0)),
            Data::Bool(a) => Scalar::Bool(a.iter().next().copied().unwrap_or(false)),
        })
    }
    fn sym_stride_int(self_: &Self, dim: i64) -> R<i64> {
        let d = autograd_opset::layout::stride_dim(self_.shape().len(), dim)?;
        Ok(layout(self_).0[d])
    }
    fn sym_storage_offset(self_: &Self) -> R<i64> {
        Ok(layout(self_).1)
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
    // the floating-point kernel; PyTorch's results without a kernel (`N` = 0) in the
    // input's dtype.
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
            let (stat, k) = ([0, group.max(0) as usize], kind(input));
            return Ok((
                zeros_of(input.shape(), k),
                zeros_of(&stat, k),
                zeros_of(&stat, k),
            ));
        };
        let (w, b) = (weight.map(promoted), bias.map(promoted));
        let (y, m, s) = F::native_group_norm(&promoted(input), w.as_deref(), b.as_deref(), l, eps);
        Ok((float_out(y), float_out(m), float_out(s)))
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
            let (pk, cs) = (weight.map_or(kind(input), kind), [c.max(0) as usize]);
            let gi = zeros_of(input.shape(), kind(input));
            return Ok((gi, zeros_of(&cs, pk), zeros_of(&cs, pk)));
        };
        let (g, x) = (promoted(grad_out), promoted(input));
        let (m, s, w) = (promoted(mean), promoted(rstd), weight.map(promoted));
        let (gi, gw, gb) =
            F::native_group_norm_backward(&g, &x, [&m, &s], w.as_deref(), l, output_mask);
        Ok((float_out(gi), float_out(gw), float_out(gb)))
    }
    // ---- grid sampling (issue 30): floating-point kernels in backend/grid.rs
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
fn gn_arg<E: Element>(t: &NdTensor<E>) -> meta::GnArg<'_> {
    (t.shape(), t.dtype())
}

/// Zeros of `shape` and `kind`.
fn zeros_of<E: Element>(shape: &[usize], kind: Kind) -> NdTensor<E> {
    narrowed(fl(Array::zeros(IxDyn(shape))), kind)
}

/// `nll_loss`'s weight: of the input's dtype (PyTorch's "expected scalar type Double but
/// found Long").
fn nll_weight<'a, E: Element>(
    input: &NdTensor<E>,
    weight: Option<&'a NdTensor<E>>,
) -> R<Option<Cow<'a, F<E>>>> {
    let Some(w) = weight else { return Ok(None) };
    rules::check_same(input.dtype(), w.dtype())?;
    Ok(Some(promoted(w)))
}

// ---------------------------------------------------------------- rounding, modulo, selection

/// `ceil`, `floor`, `round`, `trunc`: floats rounded, integers as they are, booleans refused.
fn rounded<E: Element>(t: &NdTensor<E>, kernel: &str, f: fn(E) -> E) -> R<NdTensor<E>> {
    match t.data() {
        Data::Float(a) => Ok(float_out(fl(a.arr().mapv(f)))),
        Data::Int(_) => Ok(t.clone()),
        Data::Bool(_) => Err(rules::not_implemented(kernel, "bool")),
    }
}

/// Round half to even (PyTorch's `round`, C's `nearbyint`).
fn round_half_even<E: Element>(x: E) -> E {
    let half = E::of(0.5);
    if (x - x.trunc()).abs() == half {
        (x * half).round() * E::of(2.0)
    } else {
        x.round()
    }
}

/// `remainder` (`floor`: the sign of the divisor, Python's `%`) or `fmod` (the sign of the
/// dividend, C's `fmod`) by a Scalar, in the kind PyTorch's promotion gives.
fn modulo<E: Element>(t: &NdTensor<E>, s: Scalar, kernel: &str, floor: bool) -> R<NdTensor<E>> {
    let k = scalar_kind(t, s);
    rules::check_modulo(k, kernel)?;
    rules::check_int_divisor(k, s)?;
    if k == Kind::Float {
        let b = E::of(s.to_f64());
        let r = promoted(t).arr().mapv(|a| {
            let m = a % b;
            if floor && m != E::zero() && (m < E::zero()) != (b < E::zero()) {
                m + b
            } else {
                m
            }
        });
        return Ok(float_out(fl(r)));
    }
    let b = s.to_i64();
    Ok(int_out(ints(t).mapv(|a| {
        let m = a.wrapping_rem(b);
        if floor && m != 0 && (m < 0) != (b < 0) {
            m + b
        } else {
            m
        }
    })))
}

/// `x` with the axes `axes` reversed (a copy, as PyTorch's `flip`).
fn flipped<G: Element>(x: &F<G>, axes: &[usize]) -> F<G> {
    let mut v = x.arr().view();
    for &ax in axes {
        v.invert_axis(Axis(ax));
    }
    fl(v.to_owned())
}

/// `-t` in `f64` (integers and booleans too: the selection kernels of `amin`, `min.dim` and
/// `argmin` run on it).
fn negated<E: Element>(t: &NdTensor<E>) -> F<f64> {
    fl(wide(t).arr().mapv(|x| -x))
}

/// `-r`, back from [`negated`]'s space.
fn negated_wide(r: &F<f64>) -> F<f64> {
    fl(r.arr().mapv(|x| -x))
}

// ---------------------------------------------------------------- logical, bitwise, any

/// A bitwise op on integers or booleans (booleans with integers as `i64`), PyTorch's error
/// for a float operand.
fn bitwise<E: Element>(
    a: &NdTensor<E>,
    b: &NdTensor<E>,
    kernel: &str,
    f: fn(i64, i64) -> i64,
) -> R<NdTensor<E>> {
    match kind(a).max(kind(b)) {
        Kind::Float => {
            let float = if kind(a) == Kind::Float { a } else { b };
            Err(rules::not_implemented(kernel, float.dtype()))
        }
        Kind::Int => Ok(int_out(bzip(&ints(a), &ints(b), f)?)),
        Kind::Bool => Ok(bool_out(bzip(&ints(a), &ints(b), |x, y| f(x, y) != 0)?)),
    }
}

/// A Scalar as a 0-d tensor of its own kind (PyTorch's wrapped number): an
/// integer `i64`, a boolean `bool`, a float the library's float.
pub(super) fn scalar_tensor<E: Element>(s: Scalar) -> NdTensor<E> {
    let at = IxDyn(&[]);
    match s {
        Scalar::Bool(b) => bool_out(Array::from_elem(at, b)),
        Scalar::Int(i) => int_out(Array::from_elem(at, i)),
        Scalar::Float(x) => float_out(fl(Array::from_elem(at, E::of(x)))),
    }
}

/// `any` over `axes` (ascending, distinct): `true` where some element is non-zero.
fn any_over<E: Element>(t: &NdTensor<E>, axes: &[usize], keepdim: bool) -> NdTensor<E> {
    let mut r = bools(t).to_owned();
    for &ax in axes.iter().rev() {
        r = r.map_axis(Axis(ax), |l| l.iter().any(|x| *x));
    }
    if keepdim {
        for &ax in axes {
            r = r.insert_axis(Axis(ax));
        }
    }
    bool_out(r)
}

// ---------------------------------------------------------------- divisions with rounding

/// `a op b` elementwise on the two promoted to float, broadcast.
fn fzip<E: Element>(a: &NdTensor<E>, b: &NdTensor<E>, f: impl Fn(E, E) -> E) -> R<NdTensor<E>> {
    let (x, y) = (promoted(a), promoted(b));
    let shape = broadcast_shape(x.shape(), y.shape())?;
    let missing = || Error::internal("ndarray", "broadcast of a broadcastable shape failed");
    let xv = x.arr().broadcast(IxDyn(&shape)).ok_or_else(missing)?;
    let yv = y.arr().broadcast(IxDyn(&shape)).ok_or_else(missing)?;
    Ok(float_out(fl(Zip::from(&xv)
        .and(&yv)
        .map_collect(|p, q| f(*p, *q)))))
}

/// PyTorch's `div_floor_floating` (`c10/util/generic_math.h`): the floor of `a / b`
/// computed from `fmod`, so that it is exact where `floor(a / b)` rounds wrongly.
fn div_floor_float<E: Element>(a: E, b: E) -> E {
    if b == E::zero() {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != E::zero() && (b < E::zero()) != (m < E::zero()) {
        div -= E::one();
    }
    if div == E::zero() {
        return E::zero().copysign(a / b);
    }
    let f = div.floor();
    if div - f > E::of(0.5) {
        f + E::one()
    } else {
        f
    }
}

/// `div` with a rounding mode (`floor`, else `trunc`): integers stay integers (a zero
/// divisor is PyTorch's error), booleans are refused.
fn divided<E: Element>(a: &NdTensor<E>, b: &NdTensor<E>, floor: bool) -> R<NdTensor<E>> {
    let kernel = if floor {
        kernel::DIV_FLOOR
    } else {
        kernel::DIV_TRUNC
    };
    match kind(a).max(kind(b)) {
        Kind::Bool => Err(rules::not_implemented(kernel, "bool")),
        Kind::Float if floor => fzip(a, b, div_floor_float),
        Kind::Float => fzip(a, b, |x, y| (x / y).trunc()),
        Kind::Int => {
            let d = ints(b);
            check_divisors(&d)?;
            Ok(int_out(bzip(&ints(a), &d, |x, y| {
                let q = x.wrapping_div(y);
                if floor && x.wrapping_rem(y) != 0 && (x < 0) != (y < 0) {
                    q - 1
                } else {
                    q
                }
            })?))
        }
    }
}

/// An integer division by zero: PyTorch's `ZeroDivisionError`.
fn check_divisors(d: &A<i64>) -> R<()> {
    rules::check_int_divisors(Kind::Int, d.iter().any(|&y| y == 0))
}

/// `remainder` / `fmod` of two tensors (see [`modulo`]).
fn modulo_tensor<E: Element>(
    a: &NdTensor<E>,
    b: &NdTensor<E>,
    kernel: &str,
    floor: bool,
) -> R<NdTensor<E>> {
    let k = kind(a).max(kind(b));
    rules::check_modulo(k, kernel)?;
    let adjust = move |m: f64, y: f64| floor && m != 0.0 && (m < 0.0) != (y < 0.0);
    if k == Kind::Float {
        return fzip(a, b, |x, y| {
            let m = x % y;
            if adjust(m.as_f64(), y.as_f64()) {
                m + y
            } else {
                m
            }
        });
    }
    let d = ints(b);
    check_divisors(&d)?;
    Ok(int_out(bzip(&ints(a), &d, |x, y| {
        let m = x.wrapping_rem(y);
        if floor && m != 0 && (m < 0) != (y < 0) {
            m + y
        } else {
            m
        }
    })?))
}

/// `elu`'s coefficients as PyTorch's kernel names them: `negcoef` (`alpha * scale`),
/// `poscoef` (`scale`), `negiptcoef` (`input_scale`).
fn elu_coefs<E: Element>(alpha: Scalar, scale: Scalar, input_scale: Scalar) -> (E, E, E) {
    let scale = scale.to_f64();
    (
        E::of(alpha.to_f64() * scale),
        E::of(scale),
        E::of(input_scale.to_f64()),
    )
}

/// `x` repeated to `out` (PyTorch's `repeat`: `x`'s shape padded with leading 1s tiles it):
/// each element of the result reads `x` at its index modulo `x`'s sizes.
fn tiled<G: Element>(x: &F<G>, out: &[usize]) -> F<G> {
    let v = x.arr();
    let pad = out.len() - v.ndim();
    fl(Array::from_shape_fn(IxDyn(out), |ix| {
        let at: Vec<usize> = (pad..out.len())
            .map(|d| ix[d] % v.shape()[d - pad])
            .collect();
        v[IxDyn(&at)]
    }))
}

// ------------------------------------------------------------------------- factories

/// A factory's result (`autograd_opset::factory`) as a tensor: floats as `E`.
fn from_values<E: Element>(v: Values) -> NdTensor<E> {
    match v.elements {
        Elements::Float(x) => NdTensor::from_f64(&x, &v.shape),
        Elements::Int(x) => NdTensor::from_i64(x, &v.shape),
        Elements::Bool(x) => NdTensor::from_bool(x, &v.shape),
    }
}

/// `t` converted to `to` as PyTorch's casts do: floats to integers truncate (what does not
/// fit is `i64::MIN`, x86's result), anything to `bool` is `!= 0`.
fn converted<E: Element>(t: &NdTensor<E>, to: Kind) -> NdTensor<E> {
    match (t.data(), to) {
        (_, Kind::Float) => float_out(promoted(t).into_owned()),
        (Data::Int(a), Kind::Int) => int_out(a.mapv(|x| x)),
        (Data::Bool(a), Kind::Int) => int_out(a.mapv(i64::from)),
        (Data::Float(a), Kind::Int) => int_out(a.arr().mapv(|x| factory::cast_i64(x.as_f64()))),
        (Data::Bool(a), Kind::Bool) => bool_out(a.mapv(|x| x)),
        (Data::Int(a), Kind::Bool) => bool_out(a.mapv(|x| x != 0)),
        (Data::Float(a), Kind::Bool) => bool_out(a.arr().mapv(|x| x.as_f64() != 0.0)),
    }
}

// ------------------------------------------- padding and upsampling (backend/resample.rs)

/// `reflection_pad{1,2,3}d`, `replication_pad{1,2,3}d`: the op set's checks and maps, then
/// PyTorch's refusal of booleans; integers padded in `f64` (elements only copied: exact).
fn padded<E: Element>(
    x: &NdTensor<E>,
    padding: &[i64],
    dim: usize,
    mode: PadMode,
) -> R<NdTensor<E>> {
    let r = meta::pad(x.shape(), padding, dim, mode)?;
    let k = kind(x);
    rules::check_not_bool(k, &mode.name(dim))?;
    if let Data::Float(a) = x.data() {
        return Ok(float_out(F::resample(a, &r)));
    }
    Ok(narrowed(F::resample(&wide(x), &r), k))
}

/// The padding ops' backward: the op set's checks, PyTorch's dtype rules (floating-point
/// only, the gradient's dtype the input's), the transposed maps.
fn padded_backward<E: Element>(
    g: &NdTensor<E>,
    x: &NdTensor<E>,
    padding: &[i64],
    dim: usize,
    mode: PadMode,
) -> R<NdTensor<E>> {
    let r = meta::pad_backward(g.shape(), x.shape(), padding, dim, mode)?;
    rules::check_same(g.dtype(), x.dtype())?;
    let name = mode.backward_name(dim);
    rules::check_floats(g.dtype(), &name)?;
    let g = floats(g, &name)?;
    Ok(float_out(F::resample_backward(&g, &r)))
}

/// The upsampling ops: PyTorch's refusal of integers and booleans, then the maps.
fn upsampled<E: Element>(x: &NdTensor<E>, r: &meta::Resample, name: &str) -> R<NdTensor<E>> {
    let x = floats(x, name)?;
    Ok(float_out(F::resample(&x, r)))
}

/// The upsampling ops' backward: floating-point gradients only, the transposed maps.
fn upsampled_backward<E: Element>(
    g: &NdTensor<E>,
    r: &meta::Resample,
    name: &str,
) -> R<NdTensor<E>> {
    let g = floats(g, name)?;
    Ok(float_out(F::resample_backward(&g, r)))
}

/// `_softmax_backward_data` (`log` false) and `_log_softmax_backward_data`: the op set's
/// checks, then the one kernel of both.
fn softmax_backward<E: Element>(
    grad_output: &NdTensor<E>,
    output: &NdTensor<E>,
    dim: i64,
    log: bool,
) -> R<NdTensor<E>> {
    let g = (grad_output.shape(), grad_output.dtype());
    let o = (output.shape(), output.dtype());
    let ax = meta::softmax_backward_data(log, g, o, dim)?;
    Ok(float_out(F::softmax_backward_data(
        &promoted(grad_output),
        &promoted(output),
        ax,
        log,
    )))
}

#[cfg(test)]
mod zero_tensor_tests {
    use super::*;

    /// The kernels through `Backend`, the dtype layer.
    type B = NdTensor<f64>;

    fn v(x: &[f64]) -> NdTensor<f64> {
        NdTensor::from_vec(x.to_vec(), &[x.len()])
    }

    #[test]
    fn zero_tensors_leave_their_terms_out_as_pytorch_s() {
        let z = B::zero_tensor(&[2]);
        let x = v(&[f64::INFINITY, f64::NAN]);
        let m = B::mul_tensor(&z, &x).unwrap();
        assert!(m.is_zero_tensor());
        assert_eq!(m.to_vec(), [0.0, 0.0], "zero * inf is zero, not NaN");
        assert!(
            B::mul_scalar(&z, f64::INFINITY.into())
                .unwrap()
                .is_zero_tensor()
        );
        assert_eq!(
            B::div_tensor(&v(&[1.0, 0.0]), &z).unwrap().to_vec(),
            [f64::INFINITY; 2]
        );
        assert!(
            B::div_tensor(&z, &z)
                .unwrap()
                .to_vec()
                .iter()
                .all(|x| x.is_nan())
        );
        assert!(B::div_tensor(&z, &v(&[0.0, 1.0])).unwrap().is_zero_tensor());
        let s = B::sub_tensor(&v(&[1.0, 2.0]), &z, 1.0.into()).unwrap();
        assert_eq!((s.is_zero_tensor(), s.to_vec()), (false, vec![1.0, 2.0]));
        assert!(B::add_tensor(&z, &z, 2.0.into()).unwrap().is_zero_tensor());
        // Other kernels read it as zeros, and their results are ordinary tensors.
        let e = B::exp(&z).unwrap();
        assert_eq!((e.is_zero_tensor(), e.to_vec()), (false, vec![1.0, 1.0]));
    }
}
