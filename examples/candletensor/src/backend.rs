//! The raw operations, one per native function, written for floating-point tensors
//! (`backend/dtype.rs` holds `impl Backend for CandleTensor`, which applies PyTorch's dtype
//! rules to `I64` and `U8` (boolean) tensors and calls these kernels).
//! No autograd here: the generated layer calls these and records the backward nodes.
//! Every kernel checks its arguments first (the op set's meta functions,
//! `autograd_opset::meta`, as ndtensor's kernels: PyTorch's checks and messages) and then
//! calls candle; a candle error becomes a `RuntimeError` with candle's message.
//!
//! candle's own ops do all the arithmetic (broadcast arithmetic, unary ops, `matmul`,
//! `sum_keepdim`, `max_keepdim`, `argmax_keepdim`, `where_cond`, `narrow`, `cat`, `stack`,
//! `index_select`, `index_add`, `gather`, `scatter_add`, ...). Only two things go through
//! the host values: `native_dropout`'s mask (drawn from the thread's generator, so that
//! `manual_seed` reproduces it) and index tensors (targets, `gather`/`index_select`/
//! `embedding` indices), read to raise PyTorch's out-of-bounds errors and then passed to
//! candle as `U32`. Where candle refuses what PyTorch accepts (reductions of empty tensors,
//! empty `narrow`s, `index_select` of a strided tensor), the kernel handles the case first.

mod advanced;
mod conv;
mod dtype;
pub(crate) use dtype::strides;
mod geom;
mod grid;
mod norm;
mod products;
mod resample;
mod scatter;
mod softmax;

use crate::tensor::CandleTensor;
use autograd::types::{Device, Layout, MemoryFormat, ScalarType};
use autograd_opset::error::Error;
use autograd_opset::meta;
use autograd_opset::shape::{
    broadcast_shape, cat_skips, check_amax, check_gather_shapes, check_mm, expanded_shape,
    infer_shape, new_shape, norm_dim, reduce_axes,
};
use candle_core::{DType, Tensor};
use std::sync::atomic::{AtomicUsize, Ordering};

type R<T> = Result<T, Error>;

/// A candle error as a `RuntimeError` with candle's message.
trait Ce<T> {
    fn ce(self) -> R<T>;
}

static CANDLE_ERRORS: AtomicUsize = AtomicUsize::new(0);

/// How many candle errors the kernels have passed on since the process started. Each is a
/// case the kernels' own checks missed (its message is candle's, not PyTorch's): the
/// conformance tests expect none.
pub fn candle_errors() -> usize {
    CANDLE_ERRORS.load(Ordering::Relaxed)
}

impl<T> Ce<T> for candle_core::Result<T> {
    fn ce(self) -> R<T> {
        self.map_err(|e| {
            CANDLE_ERRORS.fetch_add(1, Ordering::Relaxed);
            // candle appends a backtrace when RUST_BACKTRACE is set: its message is the first line.
            let m = e.to_string();
            Error::internal("candle", m.lines().next().unwrap_or_default())
        })
    }
}

fn w(t: Tensor) -> CandleTensor {
    CandleTensor::new(t)
}

fn cpu() -> candle_core::Device {
    candle_core::Device::Cpu
}

/// A 0-d tensor of `x` in `like`'s dtype.
fn sc(x: f64, like: &Tensor) -> R<Tensor> {
    Tensor::new(x, &cpu()).ce()?.to_dtype(like.dtype()).ce()
}

/// Host values in row-major order.
fn host(t: &Tensor) -> R<Vec<f64>> {
    t.flatten_all()
        .ce()?
        .to_dtype(DType::F64)
        .ce()?
        .to_vec1::<f64>()
        .ce()
}

/// A tensor of host values (`F64`).
fn from_host(v: Vec<f64>, shape: &[usize]) -> R<Tensor> {
    Tensor::from_vec(v, shape, &cpu()).ce()
}

/// A 0/1 (`U8`) mask as a float tensor of `like`'s dtype.
fn as_float(mask: Tensor, like: &Tensor) -> R<CandleTensor> {
    Ok(w(mask.to_dtype(like.dtype()).ce()?))
}

/// `a` broadcast to `shape`, or PyTorch's error for a value of shape `a` written into a
/// tensor of shape `shape`.
fn broadcast_to(a: &Tensor, shape: &[usize]) -> R<Tensor> {
    meta::broadcast_to(a.dims(), shape)?;
    if a.dims() == shape {
        return Ok(a.clone());
    }
    a.broadcast_as(shape).ce()
}

/// Both operands broadcast to their common shape (PyTorch's error if they do not fit).
fn both(a: &Tensor, b: &Tensor) -> R<(Tensor, Tensor)> {
    if a.dims() == b.dims() {
        return Ok((a.clone(), b.clone()));
    }
    let s = broadcast_shape(a.dims(), b.dims())?;
    Ok((a.broadcast_as(s.as_slice()).ce()?, b.broadcast_as(s).ce()?))
}

fn reshape_to(a: &Tensor, s: &[usize]) -> R<Tensor> {
    if a.dims() == s {
        return Ok(a.clone());
    }
    a.reshape(s).ce()
}

fn reshape_t(a: &Tensor, shape: &[i64]) -> R<Tensor> {
    let s = infer_shape(shape, a.elem_count())?;
    reshape_to(a, &s)
}

/// Sum over `axes` (sorted), keeping them as size-1 dims when `keepdim`.
///
/// candle sums a contiguous tensor's trailing dims with one loop a result element and any
/// other dims with two divisions an element: the summed axes are moved last (one copy)
/// first. Each result still adds its elements in their row-major order.
fn sum_axes(a: &Tensor, axes: &[usize], keepdim: bool) -> R<Tensor> {
    if axes.is_empty() {
        return Ok(a.clone());
    }
    let dims = a.dims();
    let kept: Vec<usize> = (0..dims.len()).filter(|x| !axes.contains(x)).collect();
    let order: Vec<usize> = kept.iter().chain(axes).copied().collect();
    let mut flat: Vec<usize> = kept.iter().map(|&k| dims[k]).collect();
    flat.push(axes.iter().map(|&x| dims[x]).product());
    let moved = a.permute(order).ce()?.contiguous().ce()?;
    let summed = moved.reshape(flat).ce()?.sum(kept.len()).ce()?;
    if !keepdim {
        return Ok(summed);
    }
    let shape: Vec<usize> = (0..dims.len())
        .map(|x| if axes.contains(&x) { 1 } else { dims[x] })
        .collect();
    summed.reshape(shape).ce()
}

/// candle's `narrow`, with empty tensors and empty ranges handled here (zeros of the
/// narrowed shape).
fn narrow(t: &Tensor, ax: usize, start: usize, len: usize) -> R<Tensor> {
    if t.elem_count() == 0 || len == 0 {
        let mut s = t.dims().to_vec();
        s[ax] = len;
        return Tensor::zeros(s, t.dtype(), &cpu()).ce();
    }
    t.narrow(ax, start, len).ce()
}

/// A tensor of `value` shaped as `t` reduced over `axes`.
fn reduced_full(t: &Tensor, axes: &[usize], keepdim: bool, value: f64) -> R<Tensor> {
    let s: Vec<usize> = (0..t.rank())
        .filter_map(|a| match (axes.contains(&a), keepdim) {
            (false, _) => Some(t.dims()[a]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    sc(value, t)?.broadcast_as(s).ce()?.contiguous().ce()
}

/// `t` without its (size-1) dims `axes`.
fn drop_axes(t: &Tensor, axes: &[usize]) -> R<Tensor> {
    let s: Vec<usize> = (0..t.rank())
        .filter(|a| !axes.contains(a))
        .map(|a| t.dims()[a])
        .collect();
    reshape_to(t, &s)
}

/// The product of the sizes of `axes`.
fn count(a: &Tensor, axes: &[usize]) -> usize {
    axes.iter().map(|x| a.dims()[*x]).product()
}

/// A matrix product (candle's gemm), with empty operands handled.
fn matmul(a: &Tensor, b: &Tensor) -> R<Tensor> {
    let (an, bn) = (a.rank(), b.rank());
    let k = a.dims()[an - 1];
    if a.elem_count() == 0 || b.elem_count() == 0 || k == 0 {
        let mut s = a.dims()[..an - 1].to_vec();
        s.push(b.dims()[bn - 1]);
        return Tensor::zeros(s, a.dtype(), &cpu()).ce();
    }
    // candle's CPU kernel (gemm) takes any strides of the two matrix dims, transposes
    // included (the backward formulas' `mm(grad, t(w))`): no copy. Layouts a backend refuses
    // (MKL, Accelerate, CUDA, Metal: some strides; any backend: some batch strides) go through
    // contiguous copies.
    match a.matmul(b) {
        Ok(r) => Ok(r),
        Err(e) if is_non_contiguous(&e) => a.contiguous().ce()?.matmul(&b.contiguous().ce()?).ce(),
        Err(e) => Err(e).ce(),
    }
}

/// candle's error for a matmul layout its kernel does not take.
fn is_non_contiguous(e: &candle_core::Error) -> bool {
    match e {
        candle_core::Error::MatMulUnexpectedStriding(_) => true,
        candle_core::Error::WithBacktrace { inner, .. } => is_non_contiguous(inner),
        candle_core::Error::Context { inner, .. } => is_non_contiguous(inner),
        _ => false,
    }
}

/// A 0-d tensor as a 1-element 1-d one (PyTorch's `ensure_nonempty_dim`).
fn promote(t: &Tensor) -> R<Tensor> {
    if t.rank() == 0 {
        t.reshape(1).ce()
    } else {
        Ok(t.clone())
    }
}

/// The size of axis `ax` (1 for a 0-d tensor).
fn axis_len(t: &Tensor, ax: usize) -> usize {
    t.dims().get(ax).copied().unwrap_or(1)
}

/// An elementwise function that candle has no op for (the inverse and hyperbolic
/// trigonometric functions, `tan`, `expm1`, `log1p`, `log2`, `log10`), as a candle custom op:
/// Rust's own function on each element (read through the layout, so strided inputs work).
struct Map {
    name: &'static str,
    f64: fn(f64) -> f64,
    f32: fn(f32) -> f32,
}

impl candle_core::CustomOp1 for Map {
    fn name(&self) -> &'static str {
        self.name
    }
    fn cpu_fwd(
        &self,
        s: &candle_core::CpuStorage,
        l: &candle_core::Layout,
    ) -> candle_core::Result<(candle_core::CpuStorage, candle_core::Shape)> {
        use candle_core::CpuStorage as S;
        let out = match s {
            S::F64(v) => S::F64(positions(l).map(|i| (self.f64)(v[i])).collect()),
            S::F32(v) => S::F32(positions(l).map(|i| (self.f32)(v[i])).collect()),
            _ => candle_core::bail!("{} takes a floating-point tensor", self.name),
        };
        Ok((out, l.shape().clone()))
    }
}

/// `as_strided` over a tensor's storage: the elements at PyTorch's positions `offset + Σ
/// index·stride` of the whole storage (candle has no such view: a copy).
struct AsStrided {
    size: Vec<usize>,
    stride: Vec<usize>,
    offset: usize,
}

impl candle_core::CustomOp1 for AsStrided {
    fn name(&self) -> &'static str {
        "strided_read"
    }
    fn cpu_fwd(
        &self,
        s: &candle_core::CpuStorage,
        _: &candle_core::Layout,
    ) -> candle_core::Result<(candle_core::CpuStorage, candle_core::Shape)> {
        use candle_core::CpuStorage as S;
        let l =
            candle_core::Layout::new(self.size.clone().into(), self.stride.clone(), self.offset);
        let out = match s {
            S::F64(v) => S::F64(positions(&l).map(|i| v[i]).collect()),
            S::F32(v) => S::F32(positions(&l).map(|i| v[i]).collect()),
            S::I64(v) => S::I64(positions(&l).map(|i| v[i]).collect()),
            S::U32(v) => S::U32(positions(&l).map(|i| v[i]).collect()),
            S::U8(v) => S::U8(positions(&l).map(|i| v[i]).collect()),
            _ => candle_core::bail!("strided_read: unsupported dtype"),
        };
        Ok((out, l.shape().clone()))
    }
}

/// The number of elements of `t`'s storage, and their size in bytes.
fn storage_numel(t: &Tensor) -> (usize, usize) {
    use candle_core::{CpuStorage as S, Storage};
    let (storage, _) = t.storage_and_layout();
    let n = match &*storage {
        Storage::Cpu(S::F64(v)) => v.len(),
        Storage::Cpu(S::F32(v)) => v.len(),
        Storage::Cpu(S::I64(v)) => v.len(),
        Storage::Cpu(S::U32(v)) => v.len(),
        Storage::Cpu(S::U8(v)) => v.len(),
        _ => 0,
    };
    (n, t.dtype().size_in_bytes())
}

/// `as_strided` (PyTorch's checks first): the elements of `t`'s storage at the view's
/// positions, as a fresh tensor.
pub(crate) fn as_strided(
    t: &CandleTensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> R<CandleTensor> {
    let offset = storage_offset.unwrap_or(t.t.layout().start_offset() as i64);
    let (n, itemsize) = storage_numel(&t.t);
    autograd_opset::layout::as_strided(size, stride, offset, n, itemsize)?;
    let op = AsStrided {
        size: size.iter().map(|&d| d as usize).collect(),
        stride: stride.iter().map(|&s| s as usize).collect(),
        offset: offset as usize,
    };
    Ok(w(t.t.apply_op1_no_bwd(&op).ce()?))
}

/// The storage positions of a layout's elements, in row-major order.
fn positions(l: &candle_core::Layout) -> impl Iterator<Item = usize> + '_ {
    let (dims, stride) = (l.dims(), l.stride());
    let n: usize = dims.iter().product();
    (0..n).map(move |mut flat| {
        let mut at = l.start_offset();
        for (d, s) in dims.iter().zip(stride).rev() {
            at += (flat % d) * s;
            flat /= d;
        }
        at
    })
}

fn elementwise(t: &CandleTensor, m: Map) -> R<CandleTensor> {
    Ok(w(t.t.apply_op1_no_bwd(&m).ce()?))
}

/// The values of an index tensor, each checked by `position` (one of the op set's index
/// checks, [`meta::index_in_self`] or [`meta::index_in_dim`]), as candle's `U32` indices
/// (same shape).
fn indices(index: &Tensor, position: impl Fn(f64) -> R<usize>) -> R<(Tensor, Vec<u32>)> {
    let v = host(index)?
        .into_iter()
        .map(|x| position(x).map(|i| i as u32))
        .collect::<R<Vec<u32>>>()?;
    let t = Tensor::from_vec(v.clone(), index.dims(), &cpu()).ce()?;
    Ok((t, v))
}

/// The position (`U32`, keepdim) of the largest element along `ax` of a non-empty tensor of
/// rank >= 1, with PyTorch's rules: the first of ties (candle's `argmax`), and a NaN wins
/// (the first NaN, where a lane has one).
fn first_max(t: &Tensor, ax: usize) -> R<Tensor> {
    if t.elem_count() == 0 {
        // Another dim is empty: an empty result (candle refuses to reduce it).
        let mut s = t.dims().to_vec();
        s[ax] = 1;
        return Tensor::zeros(s, DType::U32, &cpu()).ce();
    }
    let a = t.argmax_keepdim(ax).ce()?;
    let nan = t.ne(t).ce()?.to_dtype(t.dtype()).ce()?;
    let has = nan.sum_keepdim(ax).ce()?.broadcast_gt(&sc(0.0, t)?).ce()?;
    let first_nan = nan.argmax_keepdim(ax).ce()?;
    has.where_cond(&first_nan, &a).ce()
}

/// `diagonal`'s layout on candle: the permutation moving `d1`, `d2` last, and the flat
/// positions (in the trailing `n1 * n2` block) of the diagonal's elements.
fn diagonal_layout(shape: &[usize], d: &meta::Diagonal, offset: i64) -> R<(Vec<usize>, Tensor)> {
    let (d1, d2, len) = (d.d1, d.d2, d.len);
    let mut perm: Vec<usize> = (0..shape.len()).filter(|a| *a != d1 && *a != d2).collect();
    perm.extend([d1, d2]);
    let n2 = shape[d2] as i64;
    let idx: Vec<u32> = (0..len as i64)
        .map(|k| ((k - offset.min(0)) * n2 + k + offset.max(0)) as u32)
        .collect();
    Ok((perm, Tensor::from_vec(idx, len, &cpu()).ce()?))
}

/// `nll_loss`'s targets, checked on the host: each row's class as `U32` indices `(M, 1)`
/// (0 for an ignored row), whether the row counts (`U8`, `(M)`) and its class weight
/// (`(M)`, in `like`'s dtype).
fn nll_targets(
    target: &Tensor,
    weight: Option<&CandleTensor>,
    c: usize,
    ignore_index: i64,
    like: &Tensor,
) -> R<(Tensor, Tensor, Tensor)> {
    let mut cls = Vec::new();
    let mut keep = Vec::new();
    for t in host(target)? {
        let k = meta::nll_target(t, c, ignore_index)?;
        cls.push(k.unwrap_or(0) as u32);
        keep.push(u8::from(k.is_some()));
    }
    let m = cls.len();
    let cls = Tensor::from_vec(cls, (m, 1), &cpu()).ce()?;
    let keep = Tensor::from_vec(keep, m, &cpu()).ce()?;
    let wv = match weight {
        Some(wt) if m > 0 => {
            wt.t.to_dtype(like.dtype())
                .ce()?
                .contiguous()
                .ce()?
                .index_select(&cls.flatten_all().ce()?, 0)
                .ce()?
        }
        _ => Tensor::ones(m, like.dtype(), &cpu()).ce()?,
    };
    Ok((cls, keep, wv))
}

/// The floating-point kernels (`dtype`'s `impl Backend` calls them; inherent functions with
/// the op set's names and signatures).
impl CandleTensor {
    fn add_tensor(self_: &Self, other: &Self, alpha: f64) -> R<Self> {
        let (a, b) = both(&self_.t, &other.t)?;
        let b = if alpha == 1.0 {
            b
        } else {
            b.broadcast_mul(&sc(alpha, &b)?).ce()?
        };
        Ok(w((a + b).ce()?))
    }
    fn add_scalar(self_: &Self, other: f64, alpha: f64) -> R<Self> {
        // candle's scalar kernel (`x * 1 + c`, exactly `x + c`), as `tensor + f64`.
        Ok(w(self_.t.affine(1.0, other * alpha).ce()?))
    }
    fn sub_tensor(self_: &Self, other: &Self, alpha: f64) -> R<Self> {
        let (a, b) = both(&self_.t, &other.t)?;
        let b = if alpha == 1.0 {
            b
        } else {
            b.broadcast_mul(&sc(alpha, &b)?).ce()?
        };
        Ok(w((a - b).ce()?))
    }
    fn sub_scalar(self_: &Self, other: f64, alpha: f64) -> R<Self> {
        // `x * 1 + (-c)`: exactly `x - c`.
        Ok(w(self_.t.affine(1.0, -(other * alpha)).ce()?))
    }
    fn mul_tensor(self_: &Self, other: &Self) -> R<Self> {
        let (a, b) = both(&self_.t, &other.t)?;
        Ok(w((a * b).ce()?))
    }
    fn mul_scalar(self_: &Self, other: f64) -> R<Self> {
        // candle's scalar kernel, `x * c + (-0.0)`: adding -0.0 changes no value (a +0.0
        // would turn a -0.0 product into +0.0), so this is exactly `x * c`.
        Ok(w(self_.t.affine(other, -0.0).ce()?))
    }
    fn div_tensor(self_: &Self, other: &Self) -> R<Self> {
        let (a, b) = both(&self_.t, &other.t)?;
        Ok(w((a / b).ce()?))
    }
    fn div_scalar(self_: &Self, other: f64) -> R<Self> {
        let t = &self_.t;
        Ok(w(t.broadcast_div(&sc(other, t)?).ce()?))
    }
    fn neg(self_: &Self) -> R<Self> {
        Ok(w(self_.t.neg().ce()?))
    }
    fn exp(self_: &Self) -> R<Self> {
        Ok(w(self_.t.exp().ce()?))
    }
    fn log(self_: &Self) -> R<Self> {
        Ok(w(self_.t.log().ce()?))
    }
    fn sqrt(self_: &Self) -> R<Self> {
        Ok(w(self_.t.sqrt().ce()?))
    }
    fn rsqrt(self_: &Self) -> R<Self> {
        Ok(w(self_.t.sqrt().ce()?.recip().ce()?))
    }
    fn pow_tensor_scalar(self_: &Self, exponent: f64) -> R<Self> {
        Ok(w(self_.t.powf(exponent).ce()?))
    }
    fn pow_tensor_tensor(self_: &Self, exponent: &Self) -> R<Self> {
        // candle's `pow` is exp(y ln x), NaN for a negative base; here |x|^y = exp(y ln|x|), with
        // the sign of an odd integer power of a negative base, NaN for a non-integer power of
        // one, and x^0 = 1 (as `f64::powf`).
        let (x, y) = both(&self_.t, &exponent.t)?;
        let r = (&y * x.abs().ce()?.log().ce()?).ce()?.exp().ce()?;
        let zero = x.zeros_like().ce()?;
        let neg = x.lt(&zero).ce()?;
        let is_int = y.eq(&y.floor().ce()?).ce()?;
        let half = y.broadcast_mul(&sc(0.5, &y)?).ce()?;
        let odd = (is_int.clone() * half.ne(&half.floor().ce()?).ce()?).ce()?;
        let r = (neg.clone() * odd)
            .ce()?
            .where_cond(&r.neg().ce()?, &r)
            .ce()?;
        let nan = sc(f64::NAN, &x)?.broadcast_as(x.dims()).ce()?;
        let non_int = is_int.eq(&zero.to_dtype(DType::U8).ce()?).ce()?;
        let r = (neg * non_int).ce()?.where_cond(&nan, &r).ce()?;
        // IEEE's ones: x^0, 1^y (even NaN or inf), (-1)^±inf.
        let one = x.ones_like().ce()?;
        let r = y.eq(&zero).ce()?.where_cond(&one, &r).ce()?;
        let r = x.eq(&one).ce()?.where_cond(&one, &r).ce()?;
        let minus_one_inf = (x.eq(&one.neg().ce()?).ce()?
            * y.abs().ce()?.broadcast_eq(&sc(f64::INFINITY, &y)?).ce()?)
        .ce()?;
        Ok(w(minus_one_inf.where_cond(&one, &r).ce()?))
    }
    fn abs(self_: &Self) -> R<Self> {
        Ok(w(self_.t.abs().ce()?))
    }
    fn sign(self_: &Self) -> R<Self> {
        // (x > 0) - (x < 0): PyTorch's sign(0) is 0.
        let t = &self_.t;
        let z = sc(0.0, t)?;
        let p = t.broadcast_gt(&z).ce()?.to_dtype(t.dtype()).ce()?;
        let n = t.broadcast_lt(&z).ce()?.to_dtype(t.dtype()).ce()?;
        Ok(w((p - n).ce()?))
    }
    fn sin(self_: &Self) -> R<Self> {
        Ok(w(self_.t.sin().ce()?))
    }
    fn cos(self_: &Self) -> R<Self> {
        Ok(w(self_.t.cos().ce()?))
    }
    fn erf(self_: &Self) -> R<Self> {
        Ok(w(self_.t.erf().ce()?))
    }
    fn acos(self_: &Self) -> R<Self> {
        elementwise(
            self_,
            Map {
                name: "acos",
                f64: f64::acos,
                f32: f32::acos,
            },
        )
    }
    fn asin(self_: &Self) -> R<Self> {
        elementwise(
            self_,
            Map {
                name: "asin",
                f64: f64::asin,
                f32: f32::asin,
            },
        )
    }
    fn atan(self_: &Self) -> R<Self> {
        elementwise(
            self_,
            Map {
                name: "atan",
                f64: f64::atan,
                f32: f32::atan,
            },
        )
    }
    fn acosh(self_: &Self) -> R<Self> {
        elementwise(
            self_,
            Map {
                name: "acosh",
                f64: f64::acosh,
                f32: f32::acosh,
            },
        )
    }
    fn asinh(self_: &Self) -> R<Self> {
        elementwise(
            self_,
            Map {
                name: "asinh",
                f64: f64::asinh,
                f32: f32::asinh,
            },
        )
    }
    fn atanh(self_: &Self) -> R<Self> {
        elementwise(
            self_,
            Map {
                name: "atanh",
                f64: f64::atanh,
                f32: f32::atanh,
            },
        )
    }
    fn sinh(self_: &Self) -> R<Self> {
        elementwise(
            self_,
            Map {
                name: "sinh",
                f64: f64::sinh,
                f32: f32::sinh,
            },
        )
    }
    fn cosh(self_: &Self) -> R<Self> {
        elementwise(
            self_,
            Map {
                name: "cosh",
                f64: f64::cosh,
                f32: f32::cosh,
            },
        )
    }
    fn tan(self_: &Self) -> R<Self> {
        elementwise(
            self_,
            Map {
                name: "tan",
                f64: f64::tan,
                f32: f32::tan,
            },
        )
    }
    fn expm1(self_: &Self) -> R<Self> {
        elementwise(
            self_,
            Map {
                name: "expm1",
                f64: f64::exp_m1,
                f32: f32::exp_m1,
            },
        )
    }
    fn log1p(self_: &Self) -> R<Self> {
        elementwise(
            self_,
            Map {
                name: "log1p",
                f64: f64::ln_1p,
                f32: f32::ln_1p,
            },
        )
    }
    fn log2(self_: &Self) -> R<Self> {
        elementwise(
            self_,
            Map {
                name: "log2",
                f64: f64::log2,
                f32: f32::log2,
            },
        )
    }
    fn log10(self_: &Self) -> R<Self> {
        elementwise(
            self_,
            Map {
                name: "log10",
                f64: f64::log10,
                f32: f32::log10,
            },
        )
    }
    fn reciprocal(self_: &Self) -> R<Self> {
        Ok(w(self_.t.recip().ce()?))
    }
    fn tanh(self_: &Self) -> R<Self> {
        Ok(w(self_.t.tanh().ce()?))
    }
    fn tanh_backward(grad_output: &Self, output: &Self) -> R<Self> {
        let (g, y) = both(&grad_output.t, &output.t)?;
        let one_minus = y.sqr().ce()?.affine(-1.0, 1.0).ce()?;
        Ok(w((g * one_minus).ce()?))
    }
    fn sigmoid(self_: &Self) -> R<Self> {
        let t = &self_.t;
        Ok(w(t
            .neg()
            .ce()?
            .exp()
            .ce()?
            .affine(1.0, 1.0)
            .ce()?
            .recip()
            .ce()?))
    }
    fn relu(self_: &Self) -> R<Self> {
        // where(x <= 0, 0, x): NaN stays NaN, as in PyTorch.
        let t = &self_.t;
        let z = t.zeros_like().ce()?;
        let le = t.broadcast_le(&sc(0.0, t)?).ce()?;
        Ok(w(le.where_cond(&z, t).ce()?))
    }
    fn leaky_relu(self_: &Self, negative_slope: f64) -> R<Self> {
        let t = &self_.t;
        let gt = t.broadcast_gt(&sc(0.0, t)?).ce()?;
        let scaled = t.broadcast_mul(&sc(negative_slope, t)?).ce()?;
        Ok(w(gt.where_cond(t, &scaled).ce()?))
    }
    fn threshold_backward(grad_output: &Self, self_: &Self, threshold: f64) -> R<Self> {
        // Zero where `x <= threshold`; a NaN input passes the gradient.
        let (g, x) = both(&grad_output.t, &self_.t)?;
        let le = x.broadcast_le(&sc(threshold, &x)?).ce()?;
        let z = g.zeros_like().ce()?;
        Ok(w(le.where_cond(&z, &g).ce()?))
    }
    fn gelu(self_: &Self, approximate: &str) -> R<Self> {
        if meta::gelu(approximate)? {
            Ok(w(self_.t.gelu().ce()?))
        } else {
            Ok(w(self_.t.gelu_erf().ce()?))
        }
    }
    fn clamp(self_: &Self, min: Option<f64>, max: Option<f64>) -> R<Self> {
        meta::clamp(min, max)?;
        // where-based, so that NaN stays NaN.
        let mut t = self_.t.clone();
        if let Some(lo) = min {
            let l = sc(lo, &t)?;
            let below = t.broadcast_lt(&l).ce()?;
            t = below.where_cond(&l.broadcast_as(t.dims()).ce()?, &t).ce()?;
        }
        if let Some(hi) = max {
            let h = sc(hi, &t)?;
            let above = t.broadcast_gt(&h).ce()?;
            t = above.where_cond(&h.broadcast_as(t.dims()).ce()?, &t).ce()?;
        }
        Ok(w(t))
    }
    fn where_self(condition: &Self, self_: &Self, other: &Self) -> R<Self> {
        let shape = meta::where_self(condition.shape(), self_.shape(), other.shape())?;
        let c = broadcast_to(&condition.t, &shape)?;
        let a = broadcast_to(&self_.t, &shape)?;
        let b = broadcast_to(&other.t, &shape)?;
        let mask = c.ne(0.0).ce()?;
        Ok(w(mask.where_cond(&a, &b).ce()?))
    }
    fn maximum(self_: &Self, other: &Self) -> R<Self> {
        // NaN propagates, as in PyTorch.
        let (a, b) = both(&self_.t, &other.t)?;
        let m = a.gt(&b).ce()?.where_cond(&a, &b).ce()?;
        let m = b.ne(&b).ce()?.where_cond(&b, &m).ce()?;
        Ok(w(a.ne(&a).ce()?.where_cond(&a, &m).ce()?))
    }
    fn minimum(self_: &Self, other: &Self) -> R<Self> {
        // NaN propagates, as in PyTorch.
        let (a, b) = both(&self_.t, &other.t)?;
        let m = a.lt(&b).ce()?.where_cond(&a, &b).ce()?;
        let m = b.ne(&b).ce()?.where_cond(&b, &m).ce()?;
        Ok(w(a.ne(&a).ce()?.where_cond(&a, &m).ce()?))
    }
    fn eq_tensor(self_: &Self, other: &Self) -> R<Self> {
        let (a, b) = both(&self_.t, &other.t)?;
        as_float(a.eq(&b).ce()?, &a)
    }
    fn eq_scalar(self_: &Self, other: f64) -> R<Self> {
        let t = &self_.t;
        as_float(t.broadcast_eq(&sc(other, t)?).ce()?, t)
    }
    fn ne_scalar(self_: &Self, other: f64) -> R<Self> {
        let t = &self_.t;
        as_float(t.broadcast_ne(&sc(other, t)?).ce()?, t)
    }
    fn gt_tensor(self_: &Self, other: &Self) -> R<Self> {
        let (a, b) = both(&self_.t, &other.t)?;
        as_float(a.gt(&b).ce()?, &a)
    }
    fn ge_tensor(self_: &Self, other: &Self) -> R<Self> {
        let (a, b) = both(&self_.t, &other.t)?;
        as_float(a.ge(&b).ce()?, &a)
    }
    fn le_tensor(self_: &Self, other: &Self) -> R<Self> {
        let (a, b) = both(&self_.t, &other.t)?;
        as_float(a.le(&b).ce()?, &a)
    }
    fn ne_tensor(self_: &Self, other: &Self) -> R<Self> {
        let (a, b) = both(&self_.t, &other.t)?;
        as_float(a.ne(&b).ce()?, &a)
    }
    fn gt_scalar(self_: &Self, other: f64) -> R<Self> {
        let t = &self_.t;
        as_float(t.broadcast_gt(&sc(other, t)?).ce()?, t)
    }
    fn lt_tensor(self_: &Self, other: &Self) -> R<Self> {
        let (a, b) = both(&self_.t, &other.t)?;
        as_float(a.lt(&b).ce()?, &a)
    }
    fn lt_scalar(self_: &Self, other: f64) -> R<Self> {
        let t = &self_.t;
        as_float(t.broadcast_lt(&sc(other, t)?).ce()?, t)
    }
    fn ge_scalar(self_: &Self, other: f64) -> R<Self> {
        let t = &self_.t;
        as_float(t.broadcast_ge(&sc(other, t)?).ce()?, t)
    }
    fn le_scalar(self_: &Self, other: f64) -> R<Self> {
        let t = &self_.t;
        as_float(t.broadcast_le(&sc(other, t)?).ce()?, t)
    }
    fn argmax(self_: &Self, dim: Option<i64>, keepdim: bool) -> R<Self> {
        let t = &self_.t;
        match dim {
            None => {
                meta::argmax(t.dims())?;
                let i = first_max(&t.flatten_all().ce()?, 0)?
                    .to_dtype(t.dtype())
                    .ce()?;
                let shape = if keepdim { vec![1; t.rank()] } else { vec![] };
                Ok(w(reshape_to(&i, &shape)?))
            }
            Some(d) => {
                let ax = meta::argmax_dim(t.dims(), d)?;
                if t.rank() == 0 {
                    return Ok(w(t.zeros_like().ce()?));
                }
                let i = first_max(t, ax)?.to_dtype(t.dtype()).ce()?;
                Ok(w(if keepdim { i } else { i.squeeze(ax).ce()? }))
            }
        }
    }
    fn new_zeros(
        self_: &Self,
        size: &[i64],
        _dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
    ) -> R<Self> {
        let s = new_shape(size)?;
        Ok(w(Tensor::zeros(s, self_.t.dtype(), &cpu()).ce()?))
    }
    fn zero_(self_: &mut Self) -> R<()> {
        self_.t = self_.t.zeros_like().ce()?;
        Ok(())
    }
    fn fill_scalar_(self_: &mut Self, value: f64) -> R<()> {
        let v = sc(value, &self_.t)?;
        self_.t = v.broadcast_as(self_.t.dims()).ce()?.contiguous().ce()?;
        Ok(())
    }
    fn mm(self_: &Self, mat2: &Self) -> R<Self> {
        check_mm(self_.shape(), mat2.shape())?;
        Ok(w(matmul(&self_.t, &mat2.t)?))
    }
    fn bmm(self_: &Self, mat2: &Self) -> R<Self> {
        meta::bmm(self_.shape(), mat2.shape())?;
        Ok(w(matmul(&self_.t, &mat2.t)?))
    }
    fn sum_dim_intlist(
        self_: &Self,
        dim: Option<&[i64]>,
        keepdim: bool,
        _dtype: Option<ScalarType>,
    ) -> R<Self> {
        let axes = reduce_axes(dim, self_.t.rank())?;
        Ok(w(sum_axes(&self_.t, &axes, keepdim)?))
    }
    fn mean_dim(
        self_: &Self,
        dim: Option<&[i64]>,
        keepdim: bool,
        _dtype: Option<ScalarType>,
    ) -> R<Self> {
        let t = &self_.t;
        let axes = reduce_axes(dim, t.rank())?;
        let n = count(t, &axes);
        let s = sum_axes(t, &axes, keepdim)?;
        Ok(w(s.broadcast_div(&sc(n as f64, t)?).ce()?))
    }
    fn max_dim(self_: &Self, dim: i64, keepdim: bool) -> R<(Self, Self)> {
        let t = &self_.t;
        let nd = t.rank();
        let ax = meta::max_dim(t.dims(), dim)?;
        let p = promote(t)?;
        let i = first_max(&p, ax)?;
        let values = if p.elem_count() == 0 {
            i.to_dtype(t.dtype()).ce()?
        } else {
            p.contiguous().ce()?.gather(&i, ax).ce()?
        };
        let i = i.to_dtype(t.dtype()).ce()?;
        Ok(if keepdim && nd > 0 {
            (w(values), w(i))
        } else {
            (w(values.squeeze(ax).ce()?), w(i.squeeze(ax).ce()?))
        })
    }
    fn amax(self_: &Self, dim: &[i64], keepdim: bool) -> R<Self> {
        let t = &self_.t;
        let axes = reduce_axes(Some(dim), t.rank())?;
        check_amax(dim, &axes, t.dims())?;
        if axes.is_empty() {
            return Ok(self_.clone());
        }
        if t.elem_count() == 0 {
            // Another dim is empty: an empty result (candle refuses to reduce it).
            return Ok(w(reduced_full(t, &axes, keepdim, 0.0)?));
        }
        let mut m = t.clone();
        for ax in &axes {
            m = m.max_keepdim(*ax).ce()?;
        }
        // NaN propagates, as in PyTorch.
        let nans = t.ne(t).ce()?.to_dtype(t.dtype()).ce()?;
        let nans = nans.sum_keepdim(axes.clone()).ce()?;
        let has = nans.broadcast_gt(&sc(0.0, t)?).ce()?;
        let nan = sc(f64::NAN, t)?.broadcast_as(m.dims()).ce()?;
        let mut m = has.where_cond(&nan, &m).ce()?;
        if !keepdim {
            m = drop_axes(&m, &axes)?;
        }
        Ok(w(m))
    }
    fn _softmax(self_: &Self, dim: i64, _half_to_float: bool) -> R<Self> {
        let l = Self::_log_softmax(self_, dim, false)?;
        Ok(w(l.t.exp().ce()?))
    }
    fn _log_softmax(self_: &Self, dim: i64, _half_to_float: bool) -> R<Self> {
        let ax = norm_dim(dim, self_.t.rank())?;
        if self_.numel() == 0 {
            return Ok(self_.clone());
        }
        let t = promote(&self_.t)?;
        let m = t.max_keepdim(ax).ce()?;
        let xm = t.broadcast_sub(&m).ce()?;
        let lse = xm.exp().ce()?.sum_keepdim(ax).ce()?.log().ce()?;
        let r = xm.broadcast_sub(&lse).ce()?;
        Ok(w(reshape_to(&r, self_.shape())?))
    }
    fn logsumexp(self_: &Self, dim: &[i64], keepdim: bool) -> R<Self> {
        let t = &self_.t;
        let axes = reduce_axes(Some(dim), t.rank())?;
        if axes.is_empty() {
            return Ok(self_.clone());
        }
        if t.elem_count() == 0 {
            // log(0) over an empty dim (candle refuses to reduce an empty tensor).
            return Ok(w(reduced_full(t, &axes, keepdim, f64::NEG_INFINITY)?));
        }
        let mut m = t.clone();
        for ax in &axes {
            m = m.max_keepdim(*ax).ce()?;
        }
        // An infinite max is replaced by 0 (PyTorch's rule: no inf - inf).
        let inf = m.abs().ce()?.broadcast_eq(&sc(f64::INFINITY, t)?).ce()?;
        let m = inf.where_cond(&m.zeros_like().ce()?, &m).ce()?;
        let e = t.broadcast_sub(&m).ce()?.exp().ce()?;
        let s = e.sum_keepdim(axes.clone()).ce()?;
        let r = (s.log().ce()? + m).ce()?;
        Ok(w(if keepdim { r } else { drop_axes(&r, &axes)? }))
    }
    fn transpose_int(self_: &Self, dim0: i64, dim1: i64) -> R<Self> {
        let (a, b) = meta::transpose(self_.t.rank(), dim0, dim1)?;
        if a == b {
            return Ok(self_.clone());
        }
        Ok(w(self_.t.transpose(a, b).ce()?))
    }
    fn permute(self_: &Self, dims: &[i64]) -> R<Self> {
        let p = meta::permute(self_.t.rank(), dims)?;
        if p.is_empty() {
            return Ok(self_.clone());
        }
        Ok(w(self_.t.permute(p).ce()?))
    }
    fn reshape(self_: &Self, shape: &[i64]) -> R<Self> {
        Ok(w(reshape_t(&self_.t, shape)?))
    }
    fn view(self_: &Self, size: &[i64]) -> R<Self> {
        let t = &self_.t;
        let strides: Vec<isize> = t.stride().iter().map(|x| *x as isize).collect();
        let s = meta::view(t.dims(), &strides, size)?;
        Ok(w(reshape_to(t, &s)?))
    }
    fn expand(self_: &Self, size: &[i64], _implicit: bool) -> R<Self> {
        let s = expanded_shape(self_.shape(), size)?;
        // candle's broadcast view: PyTorch's strides (0 for a new or broadcast dimension).
        Ok(w(broadcast_to(&self_.t, &s)?))
    }
    fn clone(self_: &Self, memory_format: Option<MemoryFormat>) -> R<Self> {
        // candle's tensors are immutable: sharing the storage is a copy; a contiguous clone
        // (PyTorch's `contiguous()`) is laid out row-major.
        match memory_format {
            Some(MemoryFormat::Contiguous) => Ok(w(self_.t.contiguous().ce()?)),
            _ => Ok(self_.clone()),
        }
    }
    fn slice_tensor(
        self_: &Self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> R<Self> {
        let (ax, range) = meta::slice(self_.shape(), dim, start, end, step)?;
        let narrowed = narrow(&self_.t, ax, range.start, range.len())?;
        if step == 1 || narrowed.elem_count() == 0 {
            return Ok(w(narrowed));
        }
        let idx = stepped(0..range.len(), step)?;
        Ok(w(narrowed
            .contiguous()
            .ce()?
            .index_select(&idx, ax)
            .ce()?))
    }
    fn slice_backward(
        grad_output: &Self,
        input_sizes: &[i64],
        dim: i64,
        start: i64,
        end: i64,
        step: i64,
    ) -> R<Self> {
        let (s, ax, range) = meta::slice_backward(input_sizes, dim, start, end, step)?;
        let idx = stepped(range, step)?;
        let mut region = s.clone();
        region[ax] = idx.elem_count();
        let g = broadcast_to(&grad_output.t, &region)?.contiguous().ce()?;
        let zeros = Tensor::zeros(s, grad_output.t.dtype(), &cpu()).ce()?;
        if idx.elem_count() == 0 || g.elem_count() == 0 {
            return Ok(w(zeros));
        }
        Ok(w(zeros.index_add(&idx, &g, ax).ce()?))
    }
    /// Contiguous as PyTorch's, so that a `view` of it works whatever the axis; PyTorch's
    /// legacy empty inputs (shape `[0]`) are skipped.
    fn cat(tensors: &[Self], dim: i64) -> R<Self> {
        let ax = meta::cat(&shapes(tensors), dim)?;
        let ts: Vec<&Tensor> = tensors
            .iter()
            .filter(|t| !cat_skips(t.shape()))
            .map(|t| &t.t)
            .collect();
        if ts.is_empty() {
            return Ok(w(Tensor::zeros(0, tensors[0].t.dtype(), &cpu()).ce()?));
        }
        Ok(w(Tensor::cat(&ts, ax).ce()?.contiguous().ce()?))
    }
    fn diagonal(self_: &Self, offset: i64, dim1: i64, dim2: i64) -> R<Self> {
        // The two dims moved last and flattened, then candle's index_select.
        let shape = self_.shape();
        let d = meta::diagonal(shape, offset, dim1, dim2)?;
        if d.len == 0 || self_.numel() == 0 {
            return Ok(w(
                Tensor::zeros(d.out_shape(), self_.t.dtype(), &cpu()).ce()?
            ));
        }
        let (perm, idx) = diagonal_layout(shape, &d, offset)?;
        let mut flat = d.rest.clone();
        flat.push(shape[d.d1] * shape[d.d2]);
        let x = self_
            .t
            .permute(perm)
            .ce()?
            .contiguous()
            .ce()?
            .reshape(flat)
            .ce()?;
        Ok(w(x.index_select(&idx, d.rest.len()).ce()?))
    }
    fn diagonal_backward(
        grad_output: &Self,
        input_sizes: &[i64],
        offset: i64,
        dim1: i64,
        dim2: i64,
    ) -> R<Self> {
        // candle's index_add into zeros, then the dims moved back.
        let shape = new_shape(input_sizes)?;
        let d = meta::diagonal(&shape, offset, dim1, dim2)?;
        let g = broadcast_to(&grad_output.t, &d.out_shape())?
            .contiguous()
            .ce()?;
        let zeros = |s: Vec<usize>| Tensor::zeros(s, grad_output.t.dtype(), &cpu()).ce();
        if d.len == 0 || g.elem_count() == 0 {
            return Ok(w(zeros(shape)?));
        }
        let (perm, idx) = diagonal_layout(&shape, &d, offset)?;
        let (n1, n2) = (shape[d.d1], shape[d.d2]);
        let mut flat = d.rest.clone();
        flat.push(n1 * n2);
        let mut moved = d.rest.clone();
        moved.extend([n1, n2]);
        let r = zeros(flat)?.index_add(&idx, &g, d.rest.len()).ce()?;
        let mut inv = vec![0; perm.len()];
        for (i, p) in perm.iter().enumerate() {
            inv[*p] = i;
        }
        Ok(w(r.reshape(moved).ce()?.permute(inv).ce()?))
    }
    fn select_int(self_: &Self, dim: i64, index: i64) -> R<Self> {
        let (ax, i) = meta::select(self_.shape(), dim, index)?;
        Ok(w(narrow(&self_.t, ax, i, 1)?.squeeze(ax).ce()?))
    }
    fn index_select(self_: &Self, dim: i64, index: &Self) -> R<Self> {
        let ax = meta::index_select(self_.t.dims(), dim, index.t.dims())?;
        let n = axis_len(&self_.t, ax);
        let (idx, _) = indices(&promote(&index.t)?, |v| meta::index_in_self(v, n))?;
        if self_.t.rank() == 0 {
            return Ok(self_.clone());
        }
        Ok(w(self_.t.contiguous().ce()?.index_select(&idx, ax).ce()?))
    }
    fn index_add(self_: &Self, dim: i64, index: &Self, source: &Self, alpha: f64) -> R<Self> {
        let ax = meta::index_add(self_.t.dims(), dim, index.t.dims(), source.t.dims())?;
        let (idx, _) = indices(&promote(&index.t)?, |v| {
            meta::index_in_self(v, axis_len(&self_.t, ax))
        })?;
        let (s, src) = (promote(&self_.t)?, promote(&source.t)?);
        let src = src.broadcast_mul(&sc(alpha, &src)?).ce()?;
        if idx.elem_count() == 0 {
            return Ok(self_.clone());
        }
        let r = s
            .contiguous()
            .ce()?
            .index_add(&idx, &src.contiguous().ce()?, ax)
            .ce()?;
        Ok(w(reshape_to(&r, self_.shape())?))
    }
    fn gather(self_: &Self, dim: i64, index: &Self, _sparse_grad: bool) -> R<Self> {
        let ax = norm_dim(dim, self_.t.rank())?;
        check_gather_shapes(self_.t.dims(), ax, index.t.dims(), None)?;
        let n = axis_len(&self_.t, ax);
        let (idx, _) = indices(&promote(&index.t)?, |v| meta::index_in_dim(v, ax, n))?;
        if idx.elem_count() == 0 {
            return Ok(w(
                Tensor::zeros(index.shape(), self_.t.dtype(), &cpu()).ce()?
            ));
        }
        let s = promote(&self_.t)?.contiguous().ce()?;
        let r = s.gather(&idx.contiguous().ce()?, ax).ce()?;
        Ok(w(reshape_to(&r, index.shape())?))
    }
    fn scatter_add(self_: &Self, dim: i64, index: &Self, src: &Self) -> R<Self> {
        let ax = norm_dim(dim, self_.t.rank())?;
        check_gather_shapes(self_.t.dims(), ax, index.t.dims(), Some(src.t.dims()))?;
        let n = axis_len(&self_.t, ax);
        let (s, ix, sr) = (promote(&self_.t)?, promote(&index.t)?, promote(&src.t)?);
        let (_, iv) = indices(&ix, |v| meta::index_in_dim(v, ax, n))?;
        if iv.is_empty() {
            return Ok(self_.clone());
        }
        // candle wants index and src of one shape, and self's size on the other dims: src is
        // cut to the index's shape, and both are padded with zeros (adding 0 at index 0).
        let mut sr = sr;
        for (d, size) in ix.dims().iter().enumerate() {
            sr = narrow(&sr, d, 0, *size)?;
        }
        let mut ixf = from_host(iv.iter().map(|x| *x as f64).collect(), ix.dims())?;
        for d in (0..s.rank()).filter(|d| *d != ax) {
            let pad = s.dims()[d] - ix.dims()[d];
            if pad > 0 {
                sr = sr.pad_with_zeros(d, 0, pad).ce()?;
                ixf = ixf.pad_with_zeros(d, 0, pad).ce()?;
            }
        }
        let ixu = ixf.to_dtype(DType::U32).ce()?;
        let r = s
            .contiguous()
            .ce()?
            .scatter_add(&ixu, &sr.contiguous().ce()?, ax)
            .ce()?;
        Ok(w(reshape_to(&r, self_.shape())?))
    }
    fn mse_loss(self_: &Self, target: &Self, reduction: i64) -> R<Self> {
        let (a, b) = both(&self_.t, &target.t)?;
        let d = (a - b).ce()?.sqr().ce()?;
        Ok(w(match reduction {
            0 => d,
            1 => d.mean_all().ce()?,
            _ => d.sum_all().ce()?,
        }))
    }
    fn nll_loss_forward(
        self_: &Self,
        target: &Self,
        weight: Option<&Self>,
        reduction: i64,
        ignore_index: i64,
    ) -> R<(Self, Self)> {
        // candle's gather of each row's target class; the targets are checked on the host.
        let c = meta::nll_loss_forward(self_.shape(), target.shape(), weight.map(|w| w.shape()))?;
        let x = &self_.t;
        let rows = target.numel();
        let (cls, keep, wv) = nll_targets(&target.t, weight, c, ignore_index, x)?;
        // No class (every target ignored, the others failed their bounds check): nothing to gather.
        let (losses, total) = if rows == 0 || c == 0 {
            (Tensor::zeros(rows, x.dtype(), &cpu()).ce()?, sc(0.0, x)?)
        } else {
            let picked = x
                .reshape((rows, c))
                .ce()?
                .contiguous()
                .ce()?
                .gather(&cls, 1)
                .ce()?
                .reshape(rows)
                .ce()?;
            let z = Tensor::zeros(rows, x.dtype(), &cpu()).ce()?;
            let losses = keep
                .where_cond(&(picked * &wv).ce()?.neg().ce()?, &z)
                .ce()?;
            let total = keep.where_cond(&wv, &z).ce()?.sum_all().ce()?;
            (losses, total)
        };
        let out = match reduction {
            0 => reshape_to(&losses, target.shape())?,
            1 => (losses.sum_all().ce()? / &total).ce()?,
            _ => losses.sum_all().ce()?,
        };
        // PyTorch's total_weight is 0 without a reduction over a batch (a 1-D input's is its
        // target's weight, reduction or not).
        let total = if reduction == 0 && self_.t.rank() != 1 {
            sc(0.0, x)?
        } else {
            total
        };
        Ok((w(out), w(total)))
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
        let c = meta::nll_loss_backward(meta::NllBackward {
            grad_output: grad_output.shape(),
            input: self_.shape(),
            target: target.shape(),
            weight: weight.map(|w| w.shape()),
            reduction,
            total_weight: total_weight.shape(),
        })?;
        // candle's scatter_add of each row's gradient into its target class.
        let rows = if self_.t.rank() == 2 {
            self_.shape()[0]
        } else {
            1
        };
        let x = &self_.t;
        let (cls, keep, wv) = nll_targets(&target.t, weight, c, ignore_index, x)?;
        let zeros = Tensor::zeros((rows, c), x.dtype(), &cpu()).ce()?;
        if rows == 0 || c == 0 {
            return Ok(w(reshape_to(&zeros, self_.shape())?));
        }
        let g = grad_output.t.flatten_all().ce()?.to_dtype(x.dtype()).ce()?;
        let g = match reduction {
            0 => g,
            1 => g
                .broadcast_div(
                    &total_weight
                        .t
                        .flatten_all()
                        .ce()?
                        .to_dtype(x.dtype())
                        .ce()?,
                )
                .ce()?
                .broadcast_as(rows)
                .ce()?,
            _ => g.broadcast_as(rows).ce()?,
        };
        let z = Tensor::zeros(rows, x.dtype(), &cpu()).ce()?;
        let src = keep.where_cond(&(g * &wv).ce()?.neg().ce()?, &z).ce()?;
        let r = zeros
            .scatter_add(&cls, &src.reshape((rows, 1)).ce()?, 1)
            .ce()?;
        Ok(w(reshape_to(&r, self_.shape())?))
    }
    fn native_dropout(input: &Self, p: f64, train: Option<bool>) -> R<(Self, Self)> {
        if !train.unwrap_or(true) {
            return Ok((input.clone(), w(input.t.ones_like().ce()?)));
        }
        meta::native_dropout(p)?;
        let scale = autograd_opset::helpers::dropout_scale(p, train);
        // The mask from this thread's generator (reproducible under `manual_seed`).
        let m: Vec<f64> = (0..input.numel())
            .map(|_| f64::from(u8::from(autograd_opset::random::next_uniform() >= p)))
            .collect();
        let mask = from_host(m, input.shape())?
            .to_dtype(input.t.dtype())
            .ce()?;
        let out = (&input.t * &mask)
            .ce()?
            .broadcast_mul(&sc(scale, &input.t)?)
            .ce()?;
        Ok((w(out), w(mask)))
    }
    fn native_dropout_backward(grad_output: &Self, mask: &Self, scale: f64) -> R<Self> {
        let (g, m) = both(&grad_output.t, &mask.t)?;
        let r = (g * m).ce()?;
        Ok(w(r.broadcast_mul(&sc(scale, &r)?).ce()?))
    }
    fn embedding(
        weight: &Self,
        indices_: &Self,
        _padding_idx: i64,
        _scale_grad_by_freq: bool,
        _sparse: bool,
    ) -> R<Self> {
        let n = meta::embedding(weight.shape())?;
        let flat = indices_.t.flatten_all().ce()?;
        let (idx, _) = indices(&flat, |v| meta::index_in_self(v, n))?;
        let mut s = indices_.shape().to_vec();
        s.push(weight.shape()[1]);
        if idx.elem_count() == 0 {
            return Ok(w(Tensor::zeros(s, weight.t.dtype(), &cpu()).ce()?));
        }
        let rows = weight.t.contiguous().ce()?.index_select(&idx, 0).ce()?;
        Ok(w(reshape_to(&rows, &s)?))
    }
}

/// The shapes of a tensor list.
fn shapes(tensors: &[CandleTensor]) -> Vec<&[usize]> {
    tensors.iter().map(CandleTensor::shape).collect()
}

/// Every `step`-th position of `range`, as candle's `U32` indices.
fn stepped(range: std::ops::Range<usize>, step: i64) -> R<Tensor> {
    let idx: Vec<u32> = range.step_by(step as usize).map(|i| i as u32).collect();
    Tensor::from_vec(idx.clone(), idx.len(), &cpu()).ce()
}
