//! The raw operations, one per native function. No autograd here: the generated layer calls
//! them and records the backward nodes. Every kernel checks its arguments (the op set's meta
//! functions, `autograd_opset::meta`, and shape rules) and returns PyTorch's error
//! ([`Error`]) instead of panicking.
//!
//! The kernels of this file are written over floating-point arrays (`FloatTensor`, named
//! `NdTensor` here); `backend/dtype.rs` holds `impl Backend for NdTensor<E>`, which applies
//! PyTorch's dtype rules (integer and boolean tensors, promotion, index dtypes) and calls
//! them.

mod advanced;
mod conv;
mod dtype;
mod geom;
mod grid;
mod norm;
mod products;
mod resample;
mod scatter;
mod softmax;

// The kernels below see the floating-point tensor under the name `NdTensor`.
use crate::element::Element;
use crate::storage::FloatTensor as NdTensor;
use autograd::types::{Device, Layout, MemoryFormat, ScalarType};
use autograd_opset::error::Error;
use autograd_opset::meta;
use autograd_opset::shape::{
    broadcast_shape, cat_skips, check_amax, check_gather_shapes, check_mm, expanded_shape,
    infer_shape, new_shape, norm_dim, reduce_axes,
};
use ndarray::{Array, ArrayView, Axis, CowArray, Dimension, IxDyn, Slice, Zip};

type View<'a, E> = ArrayView<'a, E, IxDyn>;
type R<T> = Result<T, Error>;

/// The input index of element `ix` (the other dims, then the position on the diagonal) of
/// `diagonal(offset, d1, d2)`.
fn diagonal_source(ix: &IxDyn, shape: &[usize], d: &meta::Diagonal, offset: i64) -> IxDyn {
    let (d1, d2) = (d.d1, d.d2);
    let k = ix[ix.ndim() - 1] as i64;
    let mut src = vec![0usize; shape.len()];
    let mut rest = 0;
    for (a, s) in src.iter_mut().enumerate() {
        if a == d1 {
            *s = (k - offset.min(0)) as usize;
        } else if a == d2 {
            *s = (k + offset.max(0)) as usize;
        } else {
            *s = ix[rest];
            rest += 1;
        }
    }
    IxDyn(&src)
}

fn wrap<E: Element>(a: Array<E, IxDyn>) -> NdTensor<E> {
    NdTensor::from_array(a)
}

fn map<E: Element>(a: &NdTensor<E>, f: impl Fn(E) -> E) -> R<NdTensor<E>> {
    // Row-major contiguous (the common case): a plain loop over the slice, without
    // ndarray's general contiguity test (which sorts the strides of an `IxDyn`).
    if let Some(s) = a.as_slice() {
        return Ok(a.with_values(s.iter().map(|x| f(*x))));
    }
    Ok(wrap(a.arr().mapv(f)))
}

/// `a` broadcast to `shape`, or PyTorch's error for a value of shape `a` written into a
/// tensor of shape `shape`.
fn broadcast_to<'a, E: Element>(a: &'a View<'_, E>, shape: &[usize]) -> R<View<'a, E>> {
    meta::broadcast_to(a.shape(), shape)?;
    a.broadcast(IxDyn(shape)).ok_or_else(|| {
        Error::internal(
            "ndarray",
            format!("cannot broadcast {:?} to {shape:?}", a.shape()),
        )
    })
}

fn zip<E: Element>(a: &NdTensor<E>, b: &NdTensor<E>, f: impl Fn(E, E) -> E) -> R<NdTensor<E>> {
    // Same shapes (the common case): no broadcast views, no shape computation; a plain
    // loop over the slices when both are row-major contiguous.
    if a.shape() == b.shape() {
        if let (Some(x), Some(y)) = (a.as_slice(), b.as_slice()) {
            return Ok(a.with_values(x.iter().zip(y).map(|(x, y)| f(*x, *y))));
        }
        return Ok(wrap(
            Zip::from(a.arr())
                .and(b.arr())
                .map_collect(|x, y| f(*x, *y)),
        ));
    }
    let shape = broadcast_shape(a.shape(), b.shape())?;
    let av = broadcast_to(a.arr(), &shape)?;
    let bv = broadcast_to(b.arr(), &shape)?;
    Ok(wrap(Zip::from(&av).and(&bv).map_collect(|x, y| f(*x, *y))))
}

fn mask<E: Element>(c: bool) -> E {
    if c { E::one() } else { E::zero() }
}

/// `t` reshaped to `shape` (row-major order; one dimension may be `-1`): a view of a
/// row-major contiguous `t`, a reshaped copy of another.
fn reshape_arr<E: Element>(t: &NdTensor<E>, shape: &[i64]) -> R<NdTensor<E>> {
    let s = infer_shape(shape, t.len())?;
    let error = |e| {
        Error::internal(
            "ndarray",
            format!("cannot reshape {:?} to {s:?}: {e}", t.shape()),
        )
    };
    if t.is_standard_layout() {
        return t
            .try_derive(|a| a.into_shape_with_order(IxDyn(&s)))
            .map_err(error);
    }
    let a = t.arr().as_standard_layout().into_owned();
    a.into_shape_with_order(IxDyn(&s)).map(wrap).map_err(error)
}

/// The sums over `axes` (`a` itself, borrowed, for no axes).
fn sum_axes<'a, E: Element>(
    a: &View<'a, E>,
    axes: &[usize],
    keepdim: bool,
) -> CowArray<'a, E, IxDyn> {
    if axes.is_empty() {
        return a.clone().into();
    }
    let mut r = a.sum_axis(Axis(axes[axes.len() - 1]));
    for ax in axes[..axes.len() - 1].iter().rev() {
        r = r.sum_axis(Axis(*ax));
    }
    if keepdim {
        for ax in axes {
            r = r.insert_axis(Axis(*ax));
        }
    }
    r.into()
}

fn fold_axes<E: Element>(
    a: &View<'_, E>,
    axes: &[usize],
    keepdim: bool,
    init: E,
    f: impl Fn(E, E) -> E + Copy,
) -> Array<E, IxDyn> {
    let mut r: Array<E, IxDyn> = a.to_owned();
    for ax in axes.iter().rev() {
        r = r.fold_axis(Axis(*ax), init, |acc, x| f(*acc, *x));
    }
    if keepdim {
        for ax in axes {
            r = r.insert_axis(Axis(*ax));
        }
    }
    r
}

/// Applies `f` to every 1-D lane along `axis` of a copy of `a`.
fn per_lane<E: Element>(
    a: &View<'_, E>,
    axis: usize,
    f: impl Fn(ndarray::ArrayViewMut1<E>),
) -> NdTensor<E> {
    let mut r: Array<E, IxDyn> = a.to_owned();
    if r.ndim() == 0 {
        let mut r1 = r.insert_axis(Axis(0));
        r1.lanes_mut(Axis(0)).into_iter().for_each(&f);
        return wrap(r1.index_axis_move(Axis(0), 0));
    }
    r.lanes_mut(Axis(axis)).into_iter().for_each(f);
    wrap(r)
}

fn log_softmax_lane<E: Element>(mut lane: ndarray::ArrayViewMut1<E>) {
    let m = lane.fold(E::neg_infinity(), |a, b| a.max(*b));
    let s = lane.fold(E::zero(), |a, b| a + (*b - m).exp());
    let l = m + s.ln();
    lane.mapv_inplace(|x| x - l);
}

/// The product of two matrices whose shapes the caller has checked.
fn matmul2<E: Element>(a: View<'_, E>, b: View<'_, E>) -> Array<E, IxDyn> {
    let a2 = a.into_dimensionality::<ndarray::Ix2>();
    let b2 = b.into_dimensionality::<ndarray::Ix2>();
    match (a2, b2) {
        (Ok(a2), Ok(b2)) => a2.dot(&b2).into_dyn(),
        _ => unreachable!("matmul2 takes matrices"),
    }
}

/// Batched matrix product of `(b, m, k)` and `(b, k, n)` into `out_shape` (the shapes
/// [`meta::bmm`] checked and returned).
fn batched_matmul<E: Element>(
    a: &View<'_, E>,
    b: &View<'_, E>,
    out_shape: &[usize],
) -> NdTensor<E> {
    let mut out = Array::<E, _>::zeros(IxDyn(out_shape));
    for i in 0..out_shape[0] {
        let r = matmul2(a.index_axis(Axis(0), i), b.index_axis(Axis(0), i));
        out.index_axis_mut(Axis(0), i).assign(&r);
    }
    wrap(out)
}

fn scale_for_reduction<E: Element>(loss_sum: E, n: f64, reduction: i64) -> E {
    match reduction {
        1 => loss_sum / E::of(n),
        _ => loss_sum,
    }
}

/// `nll_loss`'s input as `(M, C)` (classes last, one row per target element): PyTorch accepts
/// `(C)` with a 0-d target, `(N, C)` with `(N)`, and `(N, C, d1, ...)` with `(N, d1, ...)`.
fn nll_rows<E: Element>(input: &NdTensor<E>) -> R<NdTensor<E>> {
    let nd = input.ndim();
    if nd == 0 {
        return reshape_arr(input, &[1, 1]);
    }
    if nd == 1 {
        return reshape_arr(input, &[1, input.shape()[0] as i64]);
    }
    if nd == 2 {
        return Ok(input.clone());
    }
    // (N, C, d1, ...) -> (N, d1, ..., C) -> (M, C)
    let mut perm: Vec<usize> = vec![0];
    perm.extend(2..nd);
    perm.push(1);
    let moved = input.arr().view().permuted_axes(IxDyn(&perm));
    let c = input.shape()[1] as i64;
    let rows = if c == 0 { 0 } else { moved.len() as i64 / c };
    reshape_arr(&wrap(moved.as_standard_layout().to_owned()), &[rows, c])
}

/// The inverse of [`nll_rows`]: `(M, C)` back to the input's layout.
fn nll_unrows<E: Element>(rows: NdTensor<E>, shape: &[usize]) -> R<NdTensor<E>> {
    let nd = shape.len();
    if nd <= 2 {
        let s: Vec<i64> = shape.iter().map(|d| *d as i64).collect();
        return reshape_arr(&rows, &s);
    }
    let mut moved: Vec<i64> = vec![shape[0] as i64];
    moved.extend(shape[2..].iter().map(|d| *d as i64));
    moved.push(shape[1] as i64);
    let m = reshape_arr(&rows, &moved)?;
    // (N, d1, ..., C) -> (N, C, d1, ...)
    let mut perm: Vec<usize> = vec![0, nd - 1];
    perm.extend(1..nd - 1);
    Ok(wrap(
        m.arr()
            .view()
            .permuted_axes(IxDyn(&perm))
            .as_standard_layout()
            .to_owned(),
    ))
}

fn nll_forward<E: Element>(
    input: &NdTensor<E>,
    target: &NdTensor<E>,
    weight: Option<&NdTensor<E>>,
    reduction: i64,
    ignore_index: i64,
) -> R<(NdTensor<E>, NdTensor<E>)> {
    let batched = input.ndim() != 1;
    let rows = nll_rows(input)?;
    let (input, target_shape) = (&rows, target.shape().to_vec());
    let c = input.shape()[1];
    let mut losses = Vec::with_capacity(input.shape()[0]);
    let mut total = E::zero();
    for (i, t) in target.iter().enumerate() {
        let Some(t) = meta::nll_target(t.as_f64(), c, ignore_index)? else {
            losses.push(E::zero());
            continue;
        };
        let w = weight.map_or(E::one(), |w| w.arr()[[t].as_slice()]);
        losses.push(-w * input.arr()[[i, t].as_slice()]);
        total += w;
    }
    let out = match reduction {
        0 => NdTensor::from_row_major(losses, &target_shape),
        1 => NdTensor::scalar(losses.iter().fold(E::zero(), |a, b| a + *b) / total),
        _ => NdTensor::scalar(losses.iter().fold(E::zero(), |a, b| a + *b)),
    };
    // PyTorch's total_weight is 0 without a reduction over a batch (a 1-D input's is its
    // target's weight, reduction or not).
    let total = if reduction == 0 && batched {
        E::zero()
    } else {
        total
    };
    Ok((out, NdTensor::scalar(total)))
}

/// The view of `t` that PyTorch's view op makes: `f` turns `t`'s sizes, strides and storage
/// offset into the view's (an `as_strided` of `t`'s buffer; no allocation but the view's own
/// up to four dimensions).
fn pytorch_view<E: Element>(
    t: &NdTensor<E>,
    f: impl FnOnce(IxDyn, IxDyn, usize) -> (IxDyn, IxDyn, usize),
) -> R<NdTensor<E>> {
    let a = t.arr();
    if a.strides().iter().any(|s| *s < 0) {
        // A reversed view (ndarray's `flip`) is a fresh tensor in PyTorch.
        return pytorch_view(
            &NdTensor::from_array(a.as_standard_layout().into_owned()),
            f,
        );
    }
    let mut strides = IxDyn::zeros(a.ndim());
    for (s, st) in strides.slice_mut().iter_mut().zip(a.strides()) {
        *s = *st as usize;
    }
    let (sizes, strides, offset) = f(a.raw_dim(), strides, t.storage_offset());
    t.as_strided(sizes.slice(), strides.slice(), offset)
        .ok_or_else(|| {
            Error::internal(
                "ndtensor",
                format!("a view of sizes {sizes:?} and strides {strides:?} at {offset} leaves its buffer"),
            )
        })
}

/// The floating-point kernels (`dtype`'s `impl Backend` calls them).
impl<E: Element> NdTensor<E> {
    /// `as_strided`: a view of `self`'s buffer (PyTorch's checks first; a reversed view is
    /// a fresh tensor in PyTorch, so its copy's buffer is read).
    fn as_strided_view(
        self_: &Self,
        size: &[i64],
        stride: &[i64],
        storage_offset: Option<i64>,
    ) -> R<Self> {
        if self_.arr().strides().iter().any(|s| *s < 0) {
            let fresh = NdTensor::from_array(self_.arr().as_standard_layout().into_owned());
            return Self::as_strided_view(&fresh, size, stride, storage_offset);
        }
        let offset = storage_offset.unwrap_or(self_.storage_offset() as i64);
        let n = self_.storage_numel();
        autograd_opset::layout::as_strided(size, stride, offset, n, size_of::<E>())?;
        let (size, stride): (Vec<usize>, Vec<usize>) = size
            .iter()
            .zip(stride)
            .map(|(&d, &s)| (d as usize, s as usize))
            .unzip();
        self_
            .as_strided(&size, &stride, offset as usize)
            .ok_or_else(|| {
                Error::internal(
                    "ndtensor",
                    format!("as_strided({size:?}, {stride:?}, {offset}) leaves its buffer"),
                )
            })
    }
    fn add_tensor(self_: &Self, other: &Self, alpha: f64) -> R<Self> {
        let a = E::of(alpha);
        zip(self_, other, |x, y| x + a * y)
    }
    fn add_scalar(self_: &Self, other: f64, alpha: f64) -> R<Self> {
        let c = E::of(other * alpha);
        map(self_, |x| x + c)
    }
    fn sub_tensor(self_: &Self, other: &Self, alpha: f64) -> R<Self> {
        let a = E::of(alpha);
        zip(self_, other, |x, y| x - a * y)
    }
    fn sub_scalar(self_: &Self, other: f64, alpha: f64) -> R<Self> {
        let c = E::of(other * alpha);
        map(self_, |x| x - c)
    }
    fn mul_tensor(self_: &Self, other: &Self) -> R<Self> {
        zip(self_, other, |x, y| x * y)
    }
    fn mul_scalar(self_: &Self, other: f64) -> R<Self> {
        let c = E::of(other);
        map(self_, |x| x * c)
    }
    fn div_tensor(self_: &Self, other: &Self) -> R<Self> {
        zip(self_, other, |x, y| x / y)
    }
    fn div_scalar(self_: &Self, other: f64) -> R<Self> {
        let c = E::of(other);
        map(self_, |x| x / c)
    }
    fn neg(self_: &Self) -> R<Self> {
        map(self_, |x| -x)
    }
    fn exp(self_: &Self) -> R<Self> {
        map(self_, |x| x.exp())
    }
    fn log(self_: &Self) -> R<Self> {
        map(self_, |x| x.ln())
    }
    fn sqrt(self_: &Self) -> R<Self> {
        map(self_, |x| x.sqrt())
    }
    fn rsqrt(self_: &Self) -> R<Self> {
        map(self_, |x| x.sqrt().recip())
    }
    fn pow_tensor_scalar(self_: &Self, exponent: f64) -> R<Self> {
        if exponent.fract() == 0.0 && exponent.abs() < 64.0 {
            let e = exponent as i32;
            map(self_, |x| x.powi(e))
        } else {
            let e = E::of(exponent);
            map(self_, |x| x.powf(e))
        }
    }
    fn pow_tensor_tensor(self_: &Self, exponent: &Self) -> R<Self> {
        zip(self_, exponent, |x, y| x.powf(y))
    }
    fn abs(self_: &Self) -> R<Self> {
        map(self_, |x| x.abs())
    }
    fn sign(self_: &Self) -> R<Self> {
        map(self_, |x| {
            if x > E::zero() {
                E::one()
            } else if x < E::zero() {
                -E::one()
            } else {
                E::zero()
            }
        })
    }
    fn sin(self_: &Self) -> R<Self> {
        map(self_, |x| x.sin())
    }
    fn cos(self_: &Self) -> R<Self> {
        map(self_, |x| x.cos())
    }
    fn erf(self_: &Self) -> R<Self> {
        map(self_, |x| Element::erf(x))
    }
    fn acos(self_: &Self) -> R<Self> {
        map(self_, |x| x.acos())
    }
    fn asin(self_: &Self) -> R<Self> {
        map(self_, |x| x.asin())
    }
    fn atan(self_: &Self) -> R<Self> {
        map(self_, |x| x.atan())
    }
    fn acosh(self_: &Self) -> R<Self> {
        map(self_, |x| x.acosh())
    }
    fn asinh(self_: &Self) -> R<Self> {
        map(self_, |x| x.asinh())
    }
    fn atanh(self_: &Self) -> R<Self> {
        map(self_, |x| x.atanh())
    }
    fn sinh(self_: &Self) -> R<Self> {
        map(self_, |x| x.sinh())
    }
    fn cosh(self_: &Self) -> R<Self> {
        map(self_, |x| x.cosh())
    }
    fn tan(self_: &Self) -> R<Self> {
        map(self_, |x| x.tan())
    }
    fn expm1(self_: &Self) -> R<Self> {
        map(self_, |x| x.exp_m1())
    }
    fn log1p(self_: &Self) -> R<Self> {
        map(self_, |x| x.ln_1p())
    }
    fn log2(self_: &Self) -> R<Self> {
        map(self_, |x| x.log2())
    }
    fn log10(self_: &Self) -> R<Self> {
        map(self_, |x| x.log10())
    }
    fn reciprocal(self_: &Self) -> R<Self> {
        map(self_, |x| x.recip())
    }
    fn tanh(self_: &Self) -> R<Self> {
        map(self_, |x| x.tanh())
    }
    fn tanh_backward(grad_output: &Self, output: &Self) -> R<Self> {
        zip(grad_output, output, |g, y| g * (E::one() - y * y))
    }
    fn sigmoid(self_: &Self) -> R<Self> {
        map(self_, |x| (E::one() + (-x).exp()).recip())
    }
    fn relu(self_: &Self) -> R<Self> {
        // NaN stays NaN, as in PyTorch.
        map(self_, |x| {
            if x > E::zero() || x.is_nan() {
                x
            } else {
                E::zero()
            }
        })
    }
    fn leaky_relu(self_: &Self, negative_slope: f64) -> R<Self> {
        let a = E::of(negative_slope);
        map(self_, |x| if x > E::zero() { x } else { a * x })
    }
    fn threshold_backward(grad_output: &Self, self_: &Self, threshold: f64) -> R<Self> {
        let t = E::of(threshold);
        // PyTorch: zero where `x <= threshold`; a NaN input passes the gradient.
        zip(
            grad_output,
            self_,
            |g, x| if x <= t { E::zero() } else { g },
        )
    }
    fn gelu(self_: &Self, approximate: &str) -> R<Self> {
        if meta::gelu(approximate)? {
            let k = E::of((2.0 / std::f64::consts::PI).sqrt());
            map(self_, |x| {
                E::of(0.5) * x * (E::one() + (k * (x + E::of(0.044715) * x * x * x)).tanh())
            })
        } else {
            map(self_, |x| {
                x * E::of(0.5)
                    * (E::one() + Element::erf(x * E::of(std::f64::consts::FRAC_1_SQRT_2)))
            })
        }
    }
    fn clamp(self_: &Self, min: Option<f64>, max: Option<f64>) -> R<Self> {
        meta::clamp(min, max)?;
        let lo = min.map(E::of);
        let hi = max.map(E::of);
        map(self_, |x| {
            let x = lo.map_or(x, |l| if x < l { l } else { x });
            hi.map_or(x, |h| if x > h { h } else { x })
        })
    }
    fn where_self(condition: &Self, self_: &Self, other: &Self) -> R<Self> {
        let shape = meta::where_self(condition.shape(), self_.shape(), other.shape())?;
        let c = broadcast_to(condition.arr(), &shape)?;
        let a = broadcast_to(self_.arr(), &shape)?;
        let b = broadcast_to(other.arr(), &shape)?;
        Ok(wrap(Zip::from(&c).and(&a).and(&b).map_collect(
            |c, a, b| if *c != E::zero() { *a } else { *b },
        )))
    }
    fn maximum(self_: &Self, other: &Self) -> R<Self> {
        zip(self_, other, |x, y| {
            if x.is_nan() || y.is_nan() {
                E::nan()
            } else if x > y {
                x
            } else {
                y
            }
        })
    }
    fn minimum(self_: &Self, other: &Self) -> R<Self> {
        zip(self_, other, |x, y| {
            if x.is_nan() || y.is_nan() {
                E::nan()
            } else if x < y {
                x
            } else {
                y
            }
        })
    }
    fn eq_tensor(self_: &Self, other: &Self) -> R<Self> {
        zip(self_, other, |x, y| mask(x == y))
    }
    fn eq_scalar(self_: &Self, other: f64) -> R<Self> {
        let c = E::of(other);
        map(self_, |x| mask(x == c))
    }
    fn ne_scalar(self_: &Self, other: f64) -> R<Self> {
        let c = E::of(other);
        map(self_, |x| mask(x != c))
    }
    fn gt_tensor(self_: &Self, other: &Self) -> R<Self> {
        zip(self_, other, |x, y| mask(x > y))
    }
    fn ge_tensor(self_: &Self, other: &Self) -> R<Self> {
        zip(self_, other, |x, y| mask(x >= y))
    }
    fn le_tensor(self_: &Self, other: &Self) -> R<Self> {
        zip(self_, other, |x, y| mask(x <= y))
    }
    fn ne_tensor(self_: &Self, other: &Self) -> R<Self> {
        zip(self_, other, |x, y| mask(x != y))
    }
    fn gt_scalar(self_: &Self, other: f64) -> R<Self> {
        let c = E::of(other);
        map(self_, |x| mask(x > c))
    }
    fn lt_tensor(self_: &Self, other: &Self) -> R<Self> {
        zip(self_, other, |x, y| mask(x < y))
    }
    fn lt_scalar(self_: &Self, other: f64) -> R<Self> {
        let c = E::of(other);
        map(self_, |x| mask(x < c))
    }
    fn ge_scalar(self_: &Self, other: f64) -> R<Self> {
        let c = E::of(other);
        map(self_, |x| mask(x >= c))
    }
    fn le_scalar(self_: &Self, other: f64) -> R<Self> {
        let c = E::of(other);
        map(self_, |x| mask(x <= c))
    }
    fn argmax(self_: &Self, dim: Option<i64>, keepdim: bool) -> R<Self> {
        let arg = |lane: ndarray::ArrayView1<E>| E::of(best_index(lane) as f64);
        match dim {
            None => {
                meta::argmax(self_.shape())?;
                let flat = self_.arr().as_standard_layout();
                let flat = flat.view().into_shape_with_order(flat.len()).expect("flat");
                let r = NdTensor::scalar(arg(flat));
                Ok(if keepdim {
                    let ones = vec![1; self_.ndim()];
                    NdTensor::from_row_major(r.to_vec(), &ones)
                } else {
                    r
                })
            }
            Some(d) => {
                let ax = meta::argmax_dim(self_.shape(), d)?;
                if self_.ndim() == 0 {
                    return Ok(NdTensor::scalar(E::zero()));
                }
                let r = self_.arr().map_axis(Axis(ax), arg);
                let r = if keepdim { r.insert_axis(Axis(ax)) } else { r };
                Ok(wrap(r))
            }
        }
    }
    fn new_zeros(
        _self_: &Self,
        size: &[i64],
        _dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
    ) -> R<Self> {
        Ok(NdTensor::zeros(&new_shape(size)?))
    }
    fn zeros_like(
        self_: &Self,
        _dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
        _memory_format: Option<MemoryFormat>,
    ) -> R<Self> {
        Ok(NdTensor::zeros(self_.shape()))
    }
    fn zero_(self_: &mut Self) -> R<()> {
        *self_ = NdTensor::zeros(self_.shape());
        Ok(())
    }
    fn fill_scalar_(self_: &mut Self, value: f64) -> R<()> {
        *self_ = wrap(Array::from_elem(IxDyn(self_.shape()), E::of(value)));
        Ok(())
    }
    fn mm(self_: &Self, mat2: &Self) -> R<Self> {
        check_mm(self_.shape(), mat2.shape())?;
        Ok(wrap(matmul2(self_.arr().view(), mat2.arr().view())))
    }
    fn bmm(self_: &Self, mat2: &Self) -> R<Self> {
        let shape = meta::bmm(self_.shape(), mat2.shape())?;
        Ok(batched_matmul(self_.arr(), mat2.arr(), &shape))
    }
    fn sum(self_: &Self, _dtype: Option<ScalarType>) -> R<Self> {
        Ok(NdTensor::scalar(self_.arr().sum()))
    }
    fn sum_dim_intlist(
        self_: &Self,
        dim: Option<&[i64]>,
        keepdim: bool,
        _dtype: Option<ScalarType>,
    ) -> R<Self> {
        let axes = reduce_axes(dim, self_.ndim())?;
        if axes.is_empty() {
            return Ok(self_.clone());
        }
        Ok(wrap(sum_axes(self_.arr(), &axes, keepdim).into_owned()))
    }
    fn mean(self_: &Self, _dtype: Option<ScalarType>) -> R<Self> {
        Ok(NdTensor::scalar(
            self_.arr().sum() / E::of(self_.len() as f64),
        ))
    }
    fn mean_dim(
        self_: &Self,
        dim: Option<&[i64]>,
        keepdim: bool,
        _dtype: Option<ScalarType>,
    ) -> R<Self> {
        let axes = reduce_axes(dim, self_.ndim())?;
        let n: usize = axes.iter().map(|a| self_.shape()[*a]).product();
        let s = sum_axes(self_.arr(), &axes, keepdim);
        Ok(wrap(s.mapv(|x| x / E::of(n as f64))))
    }
    fn max_dim(self_: &Self, dim: i64, keepdim: bool) -> R<(Self, Self)> {
        let nd = self_.ndim();
        let ax = meta::max_dim(self_.shape(), dim)?;
        let src = if nd == 0 {
            self_.arr().view().insert_axis(Axis(0))
        } else {
            self_.arr().view()
        };
        let mut values = src.map_axis(Axis(ax), |l| l[best_index(l.view())]);
        let mut indices = src.map_axis(Axis(ax), |l| E::of(best_index(l) as f64));
        if keepdim && nd > 0 {
            values = values.insert_axis(Axis(ax));
            indices = indices.insert_axis(Axis(ax));
        }
        Ok((wrap(values), wrap(indices)))
    }
    fn amax(self_: &Self, dim: &[i64], keepdim: bool) -> R<Self> {
        let axes = reduce_axes(Some(dim), self_.ndim())?;
        check_amax(dim, &axes, self_.shape())?;
        // NaN propagates, as in PyTorch (`f64::max` would drop it).
        Ok(wrap(fold_axes(
            self_.arr(),
            &axes,
            keepdim,
            E::neg_infinity(),
            |a, b| {
                if a.is_nan() || b.is_nan() {
                    E::nan()
                } else {
                    a.max(b)
                }
            },
        )))
    }
    fn _softmax(self_: &Self, dim: i64, _half_to_float: bool) -> R<Self> {
        let ax = norm_dim(dim, self_.ndim())?;
        Ok(per_lane(self_.arr(), ax, |mut l| {
            log_softmax_lane(l.view_mut());
            l.mapv_inplace(|x| x.exp());
        }))
    }
    fn _log_softmax(self_: &Self, dim: i64, _half_to_float: bool) -> R<Self> {
        let ax = norm_dim(dim, self_.ndim())?;
        Ok(per_lane(self_.arr(), ax, log_softmax_lane))
    }
    fn logsumexp(self_: &Self, dim: &[i64], keepdim: bool) -> R<Self> {
        let axes = reduce_axes(Some(dim), self_.ndim())?;
        let m = fold_axes(self_.arr(), &axes, true, E::neg_infinity(), |a, b| a.max(b));
        let m = m.mapv(|x| if x.is_infinite() { E::zero() } else { x });
        let e = Zip::from(self_.arr())
            .and_broadcast(&m)
            .map_collect(|x, m| (*x - *m).exp());
        let s = sum_axes(&e.view(), &axes, true);
        let r = Zip::from(&s).and(&m).map_collect(|s, m| s.ln() + *m);
        let r = if keepdim { r } else { r.remove_axes(&axes) };
        Ok(wrap(r))
    }
    fn transpose_int(self_: &Self, dim0: i64, dim1: i64) -> R<Self> {
        let (a, b) = meta::transpose(self_.ndim(), dim0, dim1)?;
        Ok(self_.derive(|mut r| {
            if r.ndim() > 0 {
                r.swap_axes(a, b);
            }
            r
        }))
    }
    fn t(self_: &Self) -> R<Self> {
        meta::t(self_.ndim())?;
        Ok(self_.derive(|r| r.reversed_axes()))
    }
    fn permute(self_: &Self, dims: &[i64]) -> R<Self> {
        let p = meta::permute(self_.ndim(), dims)?;
        Ok(self_.derive(|r| r.permuted_axes(IxDyn(&p))))
    }
    fn reshape(self_: &Self, shape: &[i64]) -> R<Self> {
        reshape_arr(self_, shape)
    }
    fn view(self_: &Self, size: &[i64]) -> R<Self> {
        meta::view(self_.shape(), self_.arr().strides(), size)?;
        reshape_arr(self_, size)
    }
    fn expand(self_: &Self, size: &[i64], _implicit: bool) -> R<Self> {
        let s = expanded_shape(self_.shape(), size)?;
        // PyTorch's strides: 0 for a new or broadcast dimension.
        pytorch_view(self_, |sizes, strides, offset| {
            let lead = s.len() - sizes.ndim();
            let mut out = IxDyn::zeros(s.len());
            for i in 0..sizes.ndim() {
                out[lead + i] = if sizes[i] == s[lead + i] {
                    strides[i]
                } else {
                    0
                };
            }
            (IxDyn(&s), out, offset)
        })
    }
    fn squeeze(self_: &Self) -> R<Self> {
        reshape_to(self_, &meta::squeeze(self_.shape()))
    }
    fn squeeze_dims(self_: &Self, dim: &[i64]) -> R<Self> {
        reshape_to(self_, &meta::squeeze_dims(self_.shape(), dim)?)
    }
    fn clone(self_: &Self, memory_format: Option<MemoryFormat>) -> R<Self> {
        // A contiguous clone (PyTorch's `contiguous()`) is laid out row-major; otherwise the
        // copy keeps the layout.
        match memory_format {
            Some(MemoryFormat::Contiguous) => {
                Ok(wrap(self_.arr().as_standard_layout().into_owned()))
            }
            _ => Ok(wrap(self_.to_owned())),
        }
    }
    fn squeeze_dim(self_: &Self, dim: i64) -> R<Self> {
        let Some(ax) = meta::squeeze_dim(self_.shape(), dim)? else {
            return Ok(self_.clone());
        };
        Ok(self_.derive(|r| r.index_axis_move(Axis(ax), 0)))
    }
    fn unsqueeze(self_: &Self, dim: i64) -> R<Self> {
        let ax = meta::unsqueeze(self_.ndim(), dim)?;
        // PyTorch's stride for the new dimension: the size times the stride of the one it
        // goes before, 1 at the end.
        pytorch_view(self_, |sizes, strides, offset| {
            let st = if ax < sizes.ndim() {
                sizes[ax] * strides[ax]
            } else {
                1
            };
            let mut strides = strides.insert_axis(Axis(ax));
            strides[ax] = st;
            (sizes.insert_axis(Axis(ax)), strides, offset)
        })
    }
    fn slice_tensor(
        self_: &Self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> R<Self> {
        let (ax, range) = meta::slice(self_.shape(), dim, start, end, step)?;
        // PyTorch's layout (ndarray's slice gives a length of 0 or 1 the stride 0).
        pytorch_view(self_, |mut sizes, mut strides, offset| {
            let first = offset + range.start * strides[ax];
            sizes[ax] = range.len().div_ceil(step as usize);
            strides[ax] *= step as usize;
            (sizes, strides, first)
        })
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
        let mut out = Array::<E, _>::zeros(IxDyn(&s));
        let mut region = out.slice_axis_mut(Axis(ax), axis_slice(range, step));
        let src = broadcast_to(grad_output.arr(), region.shape())?;
        region.assign(&src);
        Ok(wrap(out))
    }
    /// Contiguous (row-major) as PyTorch's, so that a `view` of it works whatever the axis;
    /// PyTorch's legacy empty inputs (shape `[0]`) are skipped.
    fn cat(tensors: &[Self], dim: i64) -> R<Self> {
        let ax = meta::cat(&shapes(tensors), dim)?;
        let views: Vec<_> = tensors
            .iter()
            .filter(|t| !cat_skips(t.shape()))
            .map(|t| t.arr().view())
            .collect();
        if views.is_empty() {
            return Ok(NdTensor::zeros(&[0]));
        }
        ndarray::concatenate(Axis(ax), &views)
            .map(|a| wrap(a.as_standard_layout().into_owned()))
            .map_err(|e| Error::internal("ndarray", format!("cat: {e}")))
    }
    /// Contiguous (row-major) as PyTorch's.
    fn stack(tensors: &[Self], dim: i64) -> R<Self> {
        let ax = meta::stack(&shapes(tensors), dim)?;
        let views: Vec<_> = tensors.iter().map(|t| t.arr().view()).collect();
        ndarray::stack(Axis(ax), &views)
            .map(|a| wrap(a.as_standard_layout().into_owned()))
            .map_err(|e| Error::internal("ndarray", format!("stack: {e}")))
    }
    fn narrow(self_: &Self, dim: i64, start: i64, length: i64) -> R<Self> {
        let (ax, s) = meta::narrow(self_.shape(), dim, start, length)?;
        let (s, ax) = (s as i64, ax as i64);
        Self::slice_tensor(self_, ax, Some(s), Some(s + length), 1)
    }
    fn diagonal(self_: &Self, offset: i64, dim1: i64, dim2: i64) -> R<Self> {
        let shape = self_.shape();
        let d = meta::diagonal(shape, offset, dim1, dim2)?;
        let out = d.out_shape();
        let n = out[out.len() - 1];
        // PyTorch's view: the two dimensions replaced by one of their strides' sum, the
        // offset moved to the first element (left as it is for an empty diagonal).
        pytorch_view(self_, |sizes, strides, mut first| {
            let (s1, s2) = (strides[d.d1], strides[d.d2]);
            if n > 0 {
                first += offset.max(0) as usize * s2 + (-offset).max(0) as usize * s1;
            }
            let mut kept = IxDyn::zeros(out.len());
            let others = (0..sizes.ndim()).filter(|i| *i != d.d1 && *i != d.d2);
            for (k, i) in others.enumerate() {
                kept[k] = strides[i];
            }
            kept[out.len() - 1] = s1 + s2;
            (IxDyn(&out), kept, first)
        })
    }
    fn diagonal_backward(
        grad_output: &Self,
        input_sizes: &[i64],
        offset: i64,
        dim1: i64,
        dim2: i64,
    ) -> R<Self> {
        let shape = new_shape(input_sizes)?;
        let d = meta::diagonal(&shape, offset, dim1, dim2)?;
        let g = broadcast_to(grad_output.arr(), &d.out_shape())?;
        let mut out = Array::<E, _>::zeros(IxDyn(&shape));
        for (ix, g) in g.indexed_iter() {
            out[diagonal_source(&ix, &shape, &d, offset)] = *g;
        }
        Ok(wrap(out))
    }
    fn select_int(self_: &Self, dim: i64, index: i64) -> R<Self> {
        let (ax, i) = meta::select(self_.shape(), dim, index)?;
        Ok(self_.derive(|r| r.index_axis_move(Axis(ax), i)))
    }
    fn unbind_int(self_: &Self, dim: i64) -> R<Vec<Self>> {
        let ax = meta::unbind(self_.shape(), dim)?;
        Ok((0..self_.shape()[ax])
            .map(|i| self_.derive(|r| r.index_axis_move(Axis(ax), i)))
            .collect())
    }
    fn index_select(self_: &Self, dim: i64, index: &Self) -> R<Self> {
        let ax = meta::index_select(self_.shape(), dim, index.shape())?;
        let n = axis_len(self_, ax);
        let idx = index
            .iter()
            .map(|i| meta::index_in_self(i.as_f64(), n))
            .collect::<R<Vec<usize>>>()?;
        if self_.ndim() == 0 {
            return Ok(self_.clone());
        }
        Ok(wrap(self_.arr().select(Axis(ax), &idx)))
    }
    fn index_add(self_: &Self, dim: i64, index: &Self, source: &Self, alpha: f64) -> R<Self> {
        let ax = meta::index_add(self_.shape(), dim, index.shape(), source.shape())?;
        let a = E::of(alpha);
        if self_.ndim() == 0 {
            // One element: the source's (0-d, checked) for each index, which must be 0.
            for ix in index.iter() {
                meta::index_in_self(ix.as_f64(), 1)?;
            }
            let n = E::of(index.len() as f64);
            return Ok(NdTensor::scalar(self_.item() + a * n * source.item()));
        }
        let mut out = self_.arr().to_owned();
        for (i, ix) in index.iter().enumerate() {
            let j = meta::index_in_self(ix.as_f64(), axis_len(self_, ax))?;
            let src = source.arr().index_axis(Axis(ax), i);
            let mut dst = out.index_axis_mut(Axis(ax), j);
            dst.zip_mut_with(&src, |d, s| *d += a * *s);
        }
        Ok(wrap(out))
    }
    fn gather(self_: &Self, dim: i64, index: &Self, _sparse_grad: bool) -> R<Self> {
        let ax = norm_dim(dim, self_.ndim())?;
        check_gather_shapes(self_.shape(), ax, index.shape(), None)?;
        if self_.ndim() == 0 {
            for i in index.arr() {
                meta::index_in_dim(i.as_f64(), 0, 1)?;
            }
            return Ok(wrap(Array::from_elem(IxDyn(index.shape()), self_.item())));
        }
        if index.ndim() == 0 {
            let r = Self::gather(self_, dim, &promote(index), false)?;
            return Ok(NdTensor::scalar(
                r.iter().copied().next().unwrap_or_default(),
            ));
        }
        let n = axis_len(self_, ax);
        let mut out = Array::<E, _>::zeros(IxDyn(index.shape()));
        for (pos, o) in out.indexed_iter_mut() {
            let mut p: Vec<usize> = pos.slice().to_vec();
            p[ax] = meta::index_in_dim(index.arr()[pos.slice()].as_f64(), ax, n)?;
            *o = self_.arr()[p.as_slice()];
        }
        Ok(wrap(out))
    }
    fn scatter_add(self_: &Self, dim: i64, index: &Self, src: &Self) -> R<Self> {
        let ax = norm_dim(dim, self_.ndim())?;
        check_gather_shapes(self_.shape(), ax, index.shape(), Some(src.shape()))?;
        if self_.ndim() == 0 {
            let mut acc = self_.item();
            for (i, s) in index.iter().zip(src.arr()) {
                meta::index_in_dim(i.as_f64(), 0, 1)?;
                acc += *s;
            }
            return Ok(NdTensor::scalar(acc));
        }
        if index.ndim() == 0 || src.ndim() == 0 {
            return Self::scatter_add(self_, dim, &promote(index), &promote(src));
        }
        let n = axis_len(self_, ax);
        let mut out = self_.arr().to_owned();
        for (pos, ix) in index.arr().indexed_iter() {
            let mut p: Vec<usize> = pos.slice().to_vec();
            p[ax] = meta::index_in_dim(ix.as_f64(), ax, n)?;
            out[p.as_slice()] += src.arr()[pos.slice()];
        }
        Ok(wrap(out))
    }
    fn mse_loss(self_: &Self, target: &Self, reduction: i64) -> R<Self> {
        let d = zip(self_, target, |x, y| (x - y) * (x - y))?;
        Ok(match reduction {
            0 => d,
            r => NdTensor::scalar(scale_for_reduction(d.arr().sum(), d.len() as f64, r)),
        })
    }
    fn nll_loss_forward(
        self_: &Self,
        target: &Self,
        weight: Option<&Self>,
        reduction: i64,
        ignore_index: i64,
    ) -> R<(Self, Self)> {
        // PyTorch's `aten::nll_loss` takes (C) or (N, C); more dims are `nll_loss2d`/`_nd`.
        meta::nll_loss_forward(self_.shape(), target.shape(), weight.map(|w| w.shape()))?;
        nll_forward(self_, target, weight, reduction, ignore_index)
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
        let rows = nll_rows(self_)?;
        let mut out = Array::<E, _>::zeros(IxDyn(rows.shape()));
        let tw = total_weight.item();
        let grads: Vec<E> = grad_output.iter().copied().collect();
        for (i, t) in target.iter().enumerate() {
            let Some(t) = meta::nll_target(t.as_f64(), c, ignore_index)? else {
                continue;
            };
            let w = weight.map_or(E::one(), |w| w.arr()[[t].as_slice()]);
            let g = match reduction {
                0 => grads[i],
                1 => grads[0] / tw,
                _ => grads[0],
            };
            out[[i, t].as_slice()] = -w * g;
        }
        nll_unrows(wrap(out), self_.shape())
    }
    fn native_dropout(input: &Self, p: f64, train: Option<bool>) -> R<(Self, Self)> {
        if !train.unwrap_or(true) {
            return Ok((input.clone(), NdTensor::ones(input.shape())));
        }
        meta::native_dropout(p)?;
        let scale = autograd_opset::helpers::dropout_scale(p, train);
        let m = Array::from_shape_simple_fn(IxDyn(input.shape()), || {
            mask::<E>(autograd_opset::random::next_uniform() >= p)
        });
        let mask_t = wrap(m);
        let out = zip(input, &mask_t, |x, m| x * m * E::of(scale))?;
        Ok((out, mask_t))
    }
    fn native_dropout_backward(grad_output: &Self, mask: &Self, scale: f64) -> R<Self> {
        let s = E::of(scale);
        zip(grad_output, mask, |g, m| g * m * s)
    }
    fn embedding(
        weight: &Self,
        indices: &Self,
        _padding_idx: i64,
        _scale_grad_by_freq: bool,
        _sparse: bool,
    ) -> R<Self> {
        let n = meta::embedding(weight.shape())?;
        let idx = indices
            .iter()
            .map(|i| meta::index_in_self(i.as_f64(), n))
            .collect::<R<Vec<usize>>>()?;
        let rows = weight.arr().select(Axis(0), &idx);
        let mut s = indices.shape().to_vec();
        s.push(weight.shape()[1]);
        Ok(wrap(
            rows.into_shape_with_order(IxDyn(&s)).expect("same numel"),
        ))
    }
}

/// The position of the largest element of a lane (the first of ties; a NaN wins), as
/// PyTorch's `argmax` / `max.dim`.
fn best_index<E: Element>(lane: ndarray::ArrayView1<E>) -> usize {
    let mut best = 0;
    for (i, x) in lane.iter().enumerate() {
        if *x > lane[best] || (x.is_nan() && !lane[best].is_nan()) {
            best = i;
        }
    }
    best
}

/// The size of axis `ax` (1 for a 0-d tensor).
fn axis_len<E: Element>(t: &NdTensor<E>, ax: usize) -> usize {
    t.shape().get(ax).copied().unwrap_or(1)
}

/// A 0-d tensor as a 1-element 1-d one (PyTorch's `ensure_nonempty_dim`).
fn promote<E: Element>(t: &NdTensor<E>) -> NdTensor<E> {
    if t.ndim() == 0 {
        t.derive(|r| r.insert_axis(Axis(0)))
    } else {
        t.clone()
    }
}

trait RemoveAxes {
    fn remove_axes(self, axes: &[usize]) -> Self;
}

impl<E: Element> RemoveAxes for Array<E, IxDyn> {
    fn remove_axes(mut self, axes: &[usize]) -> Self {
        for ax in axes.iter().rev() {
            self = self.index_axis_move(Axis(*ax), 0);
        }
        self
    }
}

/// The shapes of a tensor list.
fn shapes<E: Element>(tensors: &[NdTensor<E>]) -> Vec<&[usize]> {
    tensors.iter().map(NdTensor::shape).collect()
}

/// ndarray's slice of every `step`-th element of `range`.
fn axis_slice(range: std::ops::Range<usize>, step: i64) -> Slice {
    Slice::new(
        range.start as isize,
        Some(range.end as isize),
        step as isize,
    )
}

/// `t` reshaped to `shape` (same number of elements).
fn reshape_to<E: Element>(t: &NdTensor<E>, shape: &[usize]) -> R<NdTensor<E>> {
    let s: Vec<i64> = shape.iter().map(|d| *d as i64).collect();
    reshape_arr(t, &s)
}
