//! The raw operations: `impl Backend for NdTensor<E>` (one method per native function).
//! No autograd here: the generated layer calls these and records the backward nodes.

use crate::ops::Backend;
use crate::tensor::{Element, NdTensor, next_uniform};
use autograd::types::{Device, Layout, MemoryFormat, ScalarType};
use ndarray::{ArcArray, Array, ArrayView, Axis, Dimension, IxDyn, Slice, Zip};

type Arr<E> = ArcArray<E, IxDyn>;

/// A PyTorch dimension (`-1` is the last) as an axis of a rank-`nd` tensor.
pub(crate) fn norm_dim(d: i64, nd: usize) -> usize {
    let n = nd.max(1) as i64;
    let i = if d < 0 { d + n } else { d };
    assert!(
        (0..n).contains(&i),
        "dimension {d} out of range for a tensor of rank {nd}"
    );
    i as usize
}

/// Sorted, distinct axes of `dim` (`None` or `[]`: all). A 0-d tensor accepts dims 0 and -1
/// (PyTorch treats it as having one dimension of size 1 there) and has no axis to reduce.
pub(crate) fn reduce_axes(dim: Option<&[i64]>, nd: usize) -> Vec<usize> {
    match dim {
        Some(d) if nd == 0 => {
            d.iter().for_each(|x| {
                norm_dim(*x, nd);
            });
            Vec::new()
        }
        Some(d) if !d.is_empty() => {
            let mut v: Vec<usize> = d.iter().map(|x| norm_dim(*x, nd)).collect();
            v.sort_unstable();
            v.dedup();
            v
        }
        _ => (0..nd).collect(),
    }
}

/// `diagonal`'s axes, the diagonal's length and the other dims' sizes.
fn diagonal_geometry(
    shape: &[usize],
    offset: i64,
    dim1: i64,
    dim2: i64,
) -> (usize, usize, usize, Vec<usize>) {
    let (d1, d2) = (norm_dim(dim1, shape.len()), norm_dim(dim2, shape.len()));
    let (n1, n2) = (shape[d1] as i64, shape[d2] as i64);
    let len = if offset >= 0 {
        n1.min(n2 - offset)
    } else {
        (n1 + offset).min(n2)
    }
    .max(0) as usize;
    let rest = (0..shape.len())
        .filter(|a| *a != d1 && *a != d2)
        .map(|a| shape[a])
        .collect();
    (d1, d2, len, rest)
}

/// The input index of element `ix` (the other dims, then the position on the diagonal) of
/// `diagonal(offset, d1, d2)`.
fn diagonal_source(ix: &IxDyn, shape: &[usize], d1: usize, d2: usize, offset: i64) -> IxDyn {
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

/// The broadcast shape of two shapes.
pub(crate) fn broadcast_shape(a: &[usize], b: &[usize]) -> Vec<usize> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            let x = if i + a.len() >= n {
                a[i + a.len() - n]
            } else {
                1
            };
            let y = if i + b.len() >= n {
                b[i + b.len() - n]
            } else {
                1
            };
            match (x, y) {
                (x, y) if x == y => x,
                (1, y) => y,
                (x, 1) => x,
                _ => panic!("shapes {a:?} and {b:?} do not broadcast"),
            }
        })
        .collect()
}

fn wrap<E: Element>(a: Array<E, IxDyn>) -> NdTensor<E> {
    NdTensor {
        data: a.into_shared(),
    }
}

fn map<E: Element>(a: &NdTensor<E>, f: impl Fn(E) -> E) -> NdTensor<E> {
    wrap(a.data.mapv(f))
}

fn zip<E: Element>(a: &NdTensor<E>, b: &NdTensor<E>, f: impl Fn(E, E) -> E) -> NdTensor<E> {
    // Same shapes (the common case): no broadcast views, no shape computation.
    if a.data.shape() == b.data.shape() {
        return wrap(
            Zip::from(&a.data)
                .and(&b.data)
                .map_collect(|x, y| f(*x, *y)),
        );
    }
    let shape = broadcast_shape(a.shape(), b.shape());
    let av = a.data.broadcast(IxDyn(&shape)).expect("broadcast");
    let bv = b.data.broadcast(IxDyn(&shape)).expect("broadcast");
    wrap(Zip::from(&av).and(&bv).map_collect(|x, y| f(*x, *y)))
}

fn mask<E: Element>(c: bool) -> E {
    if c { E::one() } else { E::zero() }
}

fn contiguous<E: Element>(a: &Arr<E>) -> Arr<E> {
    if a.is_standard_layout() {
        a.clone()
    } else {
        a.as_standard_layout().into_owned().into_shared()
    }
}

/// A shape with at most one `-1`, resolved for `numel` elements.
fn infer_shape(shape: &[i64], numel: usize) -> Vec<usize> {
    let known: usize = shape
        .iter()
        .filter(|d| **d >= 0)
        .map(|d| *d as usize)
        .product();
    shape
        .iter()
        .map(|d| {
            if *d < 0 {
                assert!(
                    known > 0 && (numel / known) * known == numel,
                    "shape {shape:?} is invalid for {numel} elements"
                );
                numel / known
            } else {
                *d as usize
            }
        })
        .collect()
}

fn reshape_arr<E: Element>(a: &Arr<E>, shape: &[i64]) -> Arr<E> {
    let s = infer_shape(shape, a.len());
    contiguous(a)
        .into_shape_with_order(IxDyn(&s))
        .unwrap_or_else(|e| panic!("cannot reshape {:?} to {s:?}: {e}", a.shape()))
}

fn sum_axes<E: Element>(a: &Arr<E>, axes: &[usize], keepdim: bool) -> Arr<E> {
    if axes.is_empty() {
        return a.clone();
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
    r.into_shared()
}

fn fold_axes<E: Element>(
    a: &Arr<E>,
    axes: &[usize],
    keepdim: bool,
    init: E,
    f: impl Fn(E, E) -> E + Copy,
) -> Arr<E> {
    let mut r: Array<E, IxDyn> = a.to_owned();
    for ax in axes.iter().rev() {
        r = r.fold_axis(Axis(*ax), init, |acc, x| f(*acc, *x));
    }
    if keepdim {
        for ax in axes {
            r = r.insert_axis(Axis(*ax));
        }
    }
    r.into_shared()
}

/// Applies `f` to every 1-D lane along `axis` of a copy of `a`.
fn per_lane<E: Element>(a: &Arr<E>, axis: usize, f: impl Fn(ndarray::ArrayViewMut1<E>)) -> Arr<E> {
    let mut r: Array<E, IxDyn> = a.to_owned();
    if r.ndim() == 0 {
        let mut r1 = r.insert_axis(Axis(0));
        r1.lanes_mut(Axis(0)).into_iter().for_each(&f);
        return r1.index_axis_move(Axis(0), 0).into_shared();
    }
    r.lanes_mut(Axis(axis)).into_iter().for_each(f);
    r.into_shared()
}

fn log_softmax_lane<E: Element>(mut lane: ndarray::ArrayViewMut1<E>) {
    let m = lane.fold(E::neg_infinity(), |a, b| a.max(*b));
    let s = lane.fold(E::zero(), |a, b| a + (*b - m).exp());
    let l = m + s.ln();
    lane.mapv_inplace(|x| x - l);
}

fn matmul2<E: Element>(a: ArrayView<E, IxDyn>, b: ArrayView<E, IxDyn>) -> Array<E, ndarray::Ix2> {
    let a2 = a.into_dimensionality::<ndarray::Ix2>().expect("2-D");
    let b2 = b.into_dimensionality::<ndarray::Ix2>().expect("2-D");
    assert_eq!(
        a2.ncols(),
        b2.nrows(),
        "matmul: {:?} x {:?}",
        a2.shape(),
        b2.shape()
    );
    a2.dot(&b2)
}

/// Batched matrix product with broadcast batch dimensions (both inputs at least 2-D).
fn batched_matmul<E: Element>(a: &Arr<E>, b: &Arr<E>) -> Arr<E> {
    let (an, bn) = (a.ndim(), b.ndim());
    let (m, k) = (a.shape()[an - 2], a.shape()[an - 1]);
    let (k2, n) = (b.shape()[bn - 2], b.shape()[bn - 1]);
    assert_eq!(k, k2, "matmul: shapes {:?} and {:?}", a.shape(), b.shape());
    let batch = broadcast_shape(&a.shape()[..an - 2], &b.shape()[..bn - 2]);
    let mut ash = batch.clone();
    ash.extend([m, k]);
    let mut bsh = batch.clone();
    bsh.extend([k, n]);
    let av = a.broadcast(IxDyn(&ash)).expect("broadcast");
    let bv = b.broadcast(IxDyn(&bsh)).expect("broadcast");
    let nb: usize = batch.iter().product();
    let mut out_shape = batch.clone();
    out_shape.extend([m, n]);
    let av = av.to_shape(IxDyn(&[nb, m, k])).expect("reshape");
    let bv = bv.to_shape(IxDyn(&[nb, k, n])).expect("reshape");
    let mut out = Array::<E, _>::zeros(IxDyn(&[nb, m, n]));
    for i in 0..nb {
        let r = matmul2(av.index_axis(Axis(0), i), bv.index_axis(Axis(0), i));
        out.index_axis_mut(Axis(0), i).assign(&r.into_dyn());
    }
    out.into_shape_with_order(IxDyn(&out_shape))
        .expect("reshape")
        .into_shared()
}

fn scale_for_reduction<E: Element>(loss_sum: E, n: f64, reduction: i64) -> E {
    match reduction {
        1 => loss_sum / E::of(n),
        _ => loss_sum,
    }
}

/// `nll_loss_forward` for `(N, C)` log-probabilities and `(N)` targets.
/// `nll_loss`'s input as `(M, C)` (classes last, one row per target element): PyTorch accepts
/// `(C)` with a 0-d target, `(N, C)` with `(N)`, and `(N, C, d1, ...)` with `(N, d1, ...)`.
fn nll_rows<E: Element>(input: &NdTensor<E>) -> Arr<E> {
    let nd = input.data.ndim();
    if nd == 1 {
        return reshape_arr(&input.data, &[1, input.shape()[0] as i64]);
    }
    if nd == 2 {
        return input.data.clone();
    }
    // (N, C, d1, ...) -> (N, d1, ..., C) -> (M, C)
    let mut perm: Vec<usize> = vec![0];
    perm.extend(2..nd);
    perm.push(1);
    let moved = input.data.clone().permuted_axes(IxDyn(&perm));
    let c = input.shape()[1] as i64;
    let rows = moved.len() as i64 / c.max(1);
    reshape_arr(
        &moved.as_standard_layout().to_owned().into_shared(),
        &[rows, c],
    )
}

/// The inverse of [`nll_rows`]: `(M, C)` back to the input's layout.
fn nll_unrows<E: Element>(rows: Arr<E>, shape: &[usize]) -> Arr<E> {
    let nd = shape.len();
    if nd <= 2 {
        let s: Vec<i64> = shape.iter().map(|d| *d as i64).collect();
        return reshape_arr(&rows, &s);
    }
    let mut moved: Vec<i64> = vec![shape[0] as i64];
    moved.extend(shape[2..].iter().map(|d| *d as i64));
    moved.push(shape[1] as i64);
    let m = reshape_arr(&rows, &moved);
    // (N, d1, ..., C) -> (N, C, d1, ...)
    let mut perm: Vec<usize> = vec![0, nd - 1];
    perm.extend(1..nd - 1);
    m.permuted_axes(IxDyn(&perm))
        .as_standard_layout()
        .to_owned()
        .into_shared()
}

fn nll_forward<E: Element>(
    input: &NdTensor<E>,
    target: &NdTensor<E>,
    weight: Option<&NdTensor<E>>,
    reduction: i64,
    ignore_index: i64,
) -> (NdTensor<E>, NdTensor<E>) {
    let rows = NdTensor {
        data: nll_rows(input),
    };
    let (input, target_shape) = (&rows, target.shape().to_vec());
    let n = input.shape()[0];
    let c = input.shape()[1];
    assert_eq!(target.data.len(), n, "nll_loss: target must be (N)");
    let mut losses = Vec::with_capacity(n);
    let mut total = E::zero();
    for (i, t) in target.data.iter().enumerate() {
        if t.as_f64() as i64 == ignore_index {
            losses.push(E::zero());
            continue;
        }
        let t = t.index();
        assert!(t < c, "nll_loss: target {t} out of range for {c} classes");
        let w = weight.map_or(E::one(), |w| w.data[[t].as_slice()]);
        losses.push(-w * input.data[[i, t].as_slice()]);
        total += w;
    }
    let out = match reduction {
        0 => NdTensor::from_vec(losses, &target_shape),
        1 => NdTensor::scalar(losses.iter().fold(E::zero(), |a, b| a + *b) / total),
        _ => NdTensor::scalar(losses.iter().fold(E::zero(), |a, b| a + *b)),
    };
    // PyTorch's total_weight is 0 without a reduction.
    let total = if reduction == 0 { E::zero() } else { total };
    (out, NdTensor::scalar(total))
}

/// The class dim of `cross_entropy`'s input: 0 for `(C)`, else 1.
pub(crate) fn class_dim(nd: usize) -> usize {
    usize::from(nd >= 2)
}

/// `cross_entropy_loss` with class-probability targets (`target` shaped like the input):
/// `-sum(w * t * log_softmax(x))` over the class dim, `t` smoothed first; the mean divides
/// by the number of rows, as PyTorch's `cross_entropy_loss_prob_target`.
fn cross_entropy_probabilities<E: Element>(
    self_: &NdTensor<E>,
    target: &NdTensor<E>,
    weight: Option<&NdTensor<E>>,
    reduction: i64,
    label_smoothing: f64,
) -> NdTensor<E> {
    let nd = self_.data.ndim();
    let cd = class_dim(nd);
    let c = self_.shape()[cd];
    let lsm = <NdTensor<E> as Backend>::log_softmax_int(self_, cd as i64, None);
    let (keep, add) = (
        E::of(1.0 - label_smoothing),
        E::of(label_smoothing / c as f64),
    );
    let mut prod = zip(&lsm, target, |l, t| -l * (t * keep + add));
    if let Some(w) = weight {
        let mut ws = vec![1i64; nd];
        ws[cd] = c as i64;
        let wb = NdTensor {
            data: reshape_arr(&w.data, &ws),
        };
        prod = zip(&prod, &wb, |p, w| p * w);
    }
    match reduction {
        0 => NdTensor {
            data: sum_axes(&prod.data, &[cd], false),
        },
        r => NdTensor::scalar(scale_for_reduction(
            prod.data.sum(),
            (prod.data.len() / c.max(1)) as f64,
            r,
        )),
    }
}

/// `cross_entropy_loss` on `(N, C)` input and `(N)` target.
fn cross_entropy_2d<E: Element>(
    self_: &NdTensor<E>,
    target: &NdTensor<E>,
    weight: Option<&NdTensor<E>>,
    reduction: i64,
    ignore_index: i64,
    label_smoothing: f64,
) -> NdTensor<E> {
    let lsm = <NdTensor<E> as Backend>::log_softmax_int(self_, 1, None);
    let (nll, total) = nll_forward(&lsm, target, weight, reduction, ignore_index);
    if label_smoothing <= 0.0 {
        return nll;
    }
    // PyTorch's cross_entropy_loss_label_smoothing.
    let c = self_.shape()[1];
    let mut smooth = Vec::with_capacity(self_.shape()[0]);
    for (i, t) in target.data.iter().enumerate() {
        if t.as_f64() as i64 == ignore_index {
            smooth.push(E::zero());
            continue;
        }
        let row = lsm.data.index_axis(Axis(0), i);
        let s = row.iter().enumerate().fold(E::zero(), |a, (j, x)| {
            a - *x * weight.map_or(E::one(), |w| w.data[[j].as_slice()])
        });
        smooth.push(s);
    }
    let smooth_red = match reduction {
        0 => NdTensor::from_vec(smooth, &[target.shape()[0]]),
        1 => NdTensor::scalar(smooth.iter().fold(E::zero(), |a, b| a + *b) / total.item()),
        _ => NdTensor::scalar(smooth.iter().fold(E::zero(), |a, b| a + *b)),
    };
    let ls = label_smoothing;
    zip(&nll, &smooth_red, |a, b| {
        E::of(1.0 - ls) * a + E::of(ls / c as f64) * b
    })
}

impl<E: Element> Backend for NdTensor<E> {
    fn add_tensor(self_: &Self, other: &Self, alpha: f64) -> Self {
        let a = E::of(alpha);
        zip(self_, other, |x, y| x + a * y)
    }
    fn add_scalar(self_: &Self, other: f64, alpha: f64) -> Self {
        let c = E::of(other * alpha);
        map(self_, |x| x + c)
    }
    fn sub_tensor(self_: &Self, other: &Self, alpha: f64) -> Self {
        let a = E::of(alpha);
        zip(self_, other, |x, y| x - a * y)
    }
    fn sub_scalar(self_: &Self, other: f64, alpha: f64) -> Self {
        let c = E::of(other * alpha);
        map(self_, |x| x - c)
    }
    fn mul_tensor(self_: &Self, other: &Self) -> Self {
        zip(self_, other, |x, y| x * y)
    }
    fn mul_scalar(self_: &Self, other: f64) -> Self {
        let c = E::of(other);
        map(self_, |x| x * c)
    }
    fn div_tensor(self_: &Self, other: &Self) -> Self {
        zip(self_, other, |x, y| x / y)
    }
    fn div_scalar(self_: &Self, other: f64) -> Self {
        let c = E::of(other);
        map(self_, |x| x / c)
    }
    fn neg(self_: &Self) -> Self {
        map(self_, |x| -x)
    }
    fn exp(self_: &Self) -> Self {
        map(self_, |x| x.exp())
    }
    fn log(self_: &Self) -> Self {
        map(self_, |x| x.ln())
    }
    fn sqrt(self_: &Self) -> Self {
        map(self_, |x| x.sqrt())
    }
    fn rsqrt(self_: &Self) -> Self {
        map(self_, |x| x.sqrt().recip())
    }
    fn pow_tensor_scalar(self_: &Self, exponent: f64) -> Self {
        if exponent.fract() == 0.0 && exponent.abs() < 64.0 {
            let e = exponent as i32;
            map(self_, |x| x.powi(e))
        } else {
            let e = E::of(exponent);
            map(self_, |x| x.powf(e))
        }
    }
    fn pow_tensor_tensor(self_: &Self, exponent: &Self) -> Self {
        zip(self_, exponent, |x, y| x.powf(y))
    }
    fn abs(self_: &Self) -> Self {
        map(self_, |x| x.abs())
    }
    fn sign(self_: &Self) -> Self {
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
    fn sin(self_: &Self) -> Self {
        map(self_, |x| x.sin())
    }
    fn cos(self_: &Self) -> Self {
        map(self_, |x| x.cos())
    }
    fn erf(self_: &Self) -> Self {
        map(self_, |x| Element::erf(x))
    }
    fn tanh(self_: &Self) -> Self {
        map(self_, |x| x.tanh())
    }
    fn tanh_backward(grad_output: &Self, output: &Self) -> Self {
        zip(grad_output, output, |g, y| g * (E::one() - y * y))
    }
    fn sigmoid(self_: &Self) -> Self {
        map(self_, |x| (E::one() + (-x).exp()).recip())
    }
    fn relu(self_: &Self) -> Self {
        // NaN stays NaN, as in PyTorch.
        map(self_, |x| {
            if x > E::zero() || x.is_nan() {
                x
            } else {
                E::zero()
            }
        })
    }
    fn leaky_relu(self_: &Self, negative_slope: f64) -> Self {
        let a = E::of(negative_slope);
        map(self_, |x| if x > E::zero() { x } else { a * x })
    }
    fn threshold_backward(grad_output: &Self, self_: &Self, threshold: f64) -> Self {
        let t = E::of(threshold);
        // PyTorch: zero where `x <= threshold`; a NaN input passes the gradient.
        zip(
            grad_output,
            self_,
            |g, x| if x <= t { E::zero() } else { g },
        )
    }
    fn gelu(self_: &Self, approximate: &str) -> Self {
        match approximate {
            "none" => map(self_, |x| {
                x * E::of(0.5)
                    * (E::one() + Element::erf(x * E::of(std::f64::consts::FRAC_1_SQRT_2)))
            }),
            "tanh" => {
                let k = E::of((2.0 / std::f64::consts::PI).sqrt());
                map(self_, |x| {
                    E::of(0.5) * x * (E::one() + (k * (x + E::of(0.044715) * x * x * x)).tanh())
                })
            }
            other => panic!("gelu: approximate must be 'none' or 'tanh', got {other:?}"),
        }
    }
    fn clamp(self_: &Self, min: Option<f64>, max: Option<f64>) -> Self {
        let lo = min.map(E::of);
        let hi = max.map(E::of);
        map(self_, |x| {
            let x = lo.map_or(x, |l| if x < l { l } else { x });
            hi.map_or(x, |h| if x > h { h } else { x })
        })
    }
    fn where_self(condition: &Self, self_: &Self, other: &Self) -> Self {
        let s1 = broadcast_shape(condition.shape(), self_.shape());
        let shape = broadcast_shape(&s1, other.shape());
        let c = condition.data.broadcast(IxDyn(&shape)).expect("broadcast");
        let a = self_.data.broadcast(IxDyn(&shape)).expect("broadcast");
        let b = other.data.broadcast(IxDyn(&shape)).expect("broadcast");
        wrap(
            Zip::from(&c)
                .and(&a)
                .and(&b)
                .map_collect(|c, a, b| if *c != E::zero() { *a } else { *b }),
        )
    }
    fn maximum(self_: &Self, other: &Self) -> Self {
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
    fn eq_tensor(self_: &Self, other: &Self) -> Self {
        zip(self_, other, |x, y| mask(x == y))
    }
    fn eq_scalar(self_: &Self, other: f64) -> Self {
        let c = E::of(other);
        map(self_, |x| mask(x == c))
    }
    fn ne_scalar(self_: &Self, other: f64) -> Self {
        let c = E::of(other);
        map(self_, |x| mask(x != c))
    }
    fn gt_tensor(self_: &Self, other: &Self) -> Self {
        zip(self_, other, |x, y| mask(x > y))
    }
    fn gt_scalar(self_: &Self, other: f64) -> Self {
        let c = E::of(other);
        map(self_, |x| mask(x > c))
    }
    fn lt_tensor(self_: &Self, other: &Self) -> Self {
        zip(self_, other, |x, y| mask(x < y))
    }
    fn lt_scalar(self_: &Self, other: f64) -> Self {
        let c = E::of(other);
        map(self_, |x| mask(x < c))
    }
    fn ge_scalar(self_: &Self, other: f64) -> Self {
        let c = E::of(other);
        map(self_, |x| mask(x >= c))
    }
    fn le_scalar(self_: &Self, other: f64) -> Self {
        let c = E::of(other);
        map(self_, |x| mask(x <= c))
    }
    fn argmax(self_: &Self, dim: Option<i64>, keepdim: bool) -> Self {
        let arg = |lane: ndarray::ArrayView1<E>| {
            let mut best = 0;
            for (i, x) in lane.iter().enumerate() {
                if *x > lane[best] || x.is_nan() {
                    best = i;
                }
            }
            E::of(best as f64)
        };
        match dim {
            None => {
                let flat = contiguous(&self_.data);
                let flat = flat.view().into_shape_with_order(flat.len()).expect("flat");
                let r = NdTensor::scalar(arg(flat));
                if keepdim {
                    let ones = vec![1; self_.data.ndim()];
                    NdTensor::from_vec(r.to_vec(), &ones)
                } else {
                    r
                }
            }
            Some(d) => {
                let ax = norm_dim(d, self_.data.ndim());
                let r = self_.data.map_axis(Axis(ax), arg);
                let r = if keepdim { r.insert_axis(Axis(ax)) } else { r };
                wrap(r)
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
    ) -> Self {
        let s: Vec<usize> = size.iter().map(|d| *d as usize).collect();
        NdTensor::zeros(&s)
    }
    fn zeros_like(
        self_: &Self,
        _dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
        _memory_format: Option<MemoryFormat>,
    ) -> Self {
        NdTensor::zeros(self_.shape())
    }
    fn zero_(self_: &mut Self) {
        *self_ = NdTensor::zeros(self_.shape());
    }
    fn fill_scalar_(self_: &mut Self, value: f64) {
        *self_ = wrap(Array::from_elem(IxDyn(self_.shape()), E::of(value)));
    }
    fn mm(self_: &Self, mat2: &Self) -> Self {
        assert!(
            self_.data.ndim() == 2 && mat2.data.ndim() == 2,
            "mm: both inputs must be 2-D"
        );
        wrap(matmul2(self_.data.view(), mat2.data.view()).into_dyn())
    }
    fn matmul(self_: &Self, other: &Self) -> Self {
        let (an, bn) = (self_.data.ndim(), other.data.ndim());
        assert!(
            an >= 1 && bn >= 1,
            "matmul: both arguments need at least 1 dimension"
        );
        let a = if an == 1 {
            self_.data.clone().insert_axis(Axis(0))
        } else {
            self_.data.clone()
        };
        let b = if bn == 1 {
            other.data.clone().insert_axis(Axis(1))
        } else {
            other.data.clone()
        };
        let mut r = batched_matmul(&a, &b);
        if bn == 1 {
            let last = r.ndim() - 1;
            r = r.index_axis_move(Axis(last), 0);
        }
        if an == 1 {
            let at = r.ndim() - if bn == 1 { 1 } else { 2 };
            r = r.index_axis_move(Axis(at), 0);
        }
        NdTensor { data: r }
    }
    fn bmm(self_: &Self, mat2: &Self) -> Self {
        assert!(
            self_.data.ndim() == 3 && mat2.data.ndim() == 3,
            "bmm: both inputs must be 3-D"
        );
        assert_eq!(self_.shape()[0], mat2.shape()[0], "bmm: batch sizes differ");
        NdTensor {
            data: batched_matmul(&self_.data, &mat2.data),
        }
    }
    fn sum(self_: &Self, _dtype: Option<ScalarType>) -> Self {
        NdTensor::scalar(self_.data.sum())
    }
    fn sum_dim_intlist(
        self_: &Self,
        dim: Option<&[i64]>,
        keepdim: bool,
        _dtype: Option<ScalarType>,
    ) -> Self {
        let axes = reduce_axes(dim, self_.data.ndim());
        NdTensor {
            data: sum_axes(&self_.data, &axes, keepdim),
        }
    }
    fn mean(self_: &Self, _dtype: Option<ScalarType>) -> Self {
        NdTensor::scalar(self_.data.sum() / E::of(self_.data.len() as f64))
    }
    fn mean_dim(
        self_: &Self,
        dim: Option<&[i64]>,
        keepdim: bool,
        _dtype: Option<ScalarType>,
    ) -> Self {
        let axes = reduce_axes(dim, self_.data.ndim());
        let n: usize = axes.iter().map(|a| self_.shape()[*a]).product();
        let s = sum_axes(&self_.data, &axes, keepdim);
        NdTensor {
            data: s.mapv(|x| x / E::of(n as f64)).into_shared(),
        }
    }
    fn max_dim(self_: &Self, dim: i64, keepdim: bool) -> (Self, Self) {
        let nd = self_.data.ndim();
        let ax = norm_dim(dim, nd);
        let src = if nd == 0 {
            self_.data.clone().insert_axis(Axis(0))
        } else {
            self_.data.clone()
        };
        let best = |lane: ndarray::ArrayView1<E>| {
            let mut b = 0;
            for (i, x) in lane.iter().enumerate() {
                if *x > lane[b] || x.is_nan() {
                    b = i;
                }
            }
            b
        };
        let mut values = src.map_axis(Axis(ax), |l| l[best(l.view())]);
        let mut indices = src.map_axis(Axis(ax), |l| E::of(best(l) as f64));
        if keepdim && nd > 0 {
            values = values.insert_axis(Axis(ax));
            indices = indices.insert_axis(Axis(ax));
        }
        (wrap(values), wrap(indices))
    }
    fn amax(self_: &Self, dim: &[i64], keepdim: bool) -> Self {
        let axes = reduce_axes(Some(dim), self_.data.ndim());
        NdTensor {
            // NaN propagates, as in PyTorch (`f64::max` would drop it).
            data: fold_axes(&self_.data, &axes, keepdim, E::neg_infinity(), |a, b| {
                if a.is_nan() || b.is_nan() {
                    E::nan()
                } else {
                    a.max(b)
                }
            }),
        }
    }
    fn softmax_int(self_: &Self, dim: i64, _dtype: Option<ScalarType>) -> Self {
        let ax = norm_dim(dim, self_.data.ndim());
        NdTensor {
            data: per_lane(&self_.data, ax, |mut l| {
                log_softmax_lane(l.view_mut());
                l.mapv_inplace(|x| x.exp());
            }),
        }
    }
    fn log_softmax_int(self_: &Self, dim: i64, _dtype: Option<ScalarType>) -> Self {
        let ax = norm_dim(dim, self_.data.ndim());
        NdTensor {
            data: per_lane(&self_.data, ax, log_softmax_lane),
        }
    }
    fn logsumexp(self_: &Self, dim: &[i64], keepdim: bool) -> Self {
        let axes = reduce_axes(Some(dim), self_.data.ndim());
        let m = fold_axes(&self_.data, &axes, true, E::neg_infinity(), |a, b| a.max(b));
        let m = m.mapv(|x| if x.is_infinite() { E::zero() } else { x });
        let e = Zip::from(&self_.data)
            .and_broadcast(&m)
            .map_collect(|x, m| (*x - *m).exp())
            .into_shared();
        let s = sum_axes(&e, &axes, true);
        let r = Zip::from(&s)
            .and(&m)
            .map_collect(|s, m| s.ln() + *m)
            .into_shared();
        let r = if keepdim { r } else { r.remove_axes(&axes) };
        NdTensor { data: r }
    }
    fn transpose_int(self_: &Self, dim0: i64, dim1: i64) -> Self {
        let nd = self_.data.ndim();
        if nd == 0 {
            return self_.clone();
        }
        let mut r = self_.data.clone();
        r.swap_axes(norm_dim(dim0, nd), norm_dim(dim1, nd));
        NdTensor { data: r }
    }
    fn t(self_: &Self) -> Self {
        assert!(
            self_.data.ndim() <= 2,
            "t() expects a tensor with <= 2 dimensions"
        );
        NdTensor {
            data: self_.data.clone().reversed_axes(),
        }
    }
    fn permute(self_: &Self, dims: &[i64]) -> Self {
        let nd = self_.data.ndim();
        assert_eq!(
            dims.len(),
            nd,
            "permute: {} dims for a rank-{nd} tensor",
            dims.len()
        );
        let p: Vec<usize> = dims.iter().map(|d| norm_dim(*d, nd)).collect();
        NdTensor {
            data: self_.data.clone().permuted_axes(IxDyn(&p)),
        }
    }
    fn reshape(self_: &Self, shape: &[i64]) -> Self {
        NdTensor {
            data: reshape_arr(&self_.data, shape),
        }
    }
    fn view(self_: &Self, size: &[i64]) -> Self {
        NdTensor {
            data: reshape_arr(&self_.data, size),
        }
    }
    fn expand(self_: &Self, size: &[i64], _implicit: bool) -> Self {
        let nd = self_.data.ndim();
        let off = size.len() - nd;
        let s: Vec<usize> = size
            .iter()
            .enumerate()
            .map(|(i, d)| {
                if *d < 0 {
                    self_.shape()[i - off]
                } else {
                    *d as usize
                }
            })
            .collect();
        let v = self_
            .data
            .broadcast(IxDyn(&s))
            .unwrap_or_else(|| panic!("cannot expand {:?} to {s:?}", self_.shape()));
        wrap(v.to_owned())
    }
    fn squeeze(self_: &Self) -> Self {
        let s: Vec<i64> = self_
            .shape()
            .iter()
            .filter(|d| **d != 1)
            .map(|d| *d as i64)
            .collect();
        NdTensor {
            data: reshape_arr(&self_.data, &s),
        }
    }
    fn squeeze_dims(self_: &Self, dim: &[i64]) -> Self {
        let nd = self_.data.ndim();
        // Only the listed dims (an empty list squeezes nothing, unlike a reduction's).
        let drop: Vec<usize> = dim.iter().map(|d| norm_dim(*d, nd)).collect();
        let s: Vec<i64> = (0..nd)
            .filter(|a| !(drop.contains(a) && self_.shape()[*a] == 1))
            .map(|a| self_.shape()[a] as i64)
            .collect();
        NdTensor {
            data: reshape_arr(&self_.data, &s),
        }
    }
    fn clone(self_: &Self, _memory_format: Option<MemoryFormat>) -> Self {
        NdTensor {
            data: self_.data.to_owned().into_shared(),
        }
    }
    fn squeeze_dim(self_: &Self, dim: i64) -> Self {
        let nd = self_.data.ndim();
        if nd == 0 {
            return self_.clone();
        }
        let ax = norm_dim(dim, nd);
        if self_.shape()[ax] != 1 {
            return self_.clone();
        }
        NdTensor {
            data: self_.data.clone().index_axis_move(Axis(ax), 0),
        }
    }
    fn unsqueeze(self_: &Self, dim: i64) -> Self {
        let ax = norm_dim(dim, self_.data.ndim() + 1);
        NdTensor {
            data: self_.data.clone().insert_axis(Axis(ax)),
        }
    }
    fn slice_tensor(
        self_: &Self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Self {
        let ax = norm_dim(dim, self_.data.ndim());
        let n = self_.shape()[ax] as i64;
        let (s, e) = crate::helpers::slice_bounds(n, start, end);
        let mut r = self_.data.clone();
        r.slice_axis_inplace(
            Axis(ax),
            Slice::new(s as isize, Some(e as isize), step as isize),
        );
        NdTensor { data: r }
    }
    fn slice_backward(
        grad_output: &Self,
        input_sizes: &[i64],
        dim: i64,
        start: i64,
        end: i64,
        step: i64,
    ) -> Self {
        let s: Vec<usize> = input_sizes.iter().map(|d| *d as usize).collect();
        let ax = norm_dim(dim, s.len());
        let mut out = Array::<E, _>::zeros(IxDyn(&s));
        out.slice_axis_mut(
            Axis(ax),
            Slice::new(start as isize, Some(end as isize), step as isize),
        )
        .assign(&grad_output.data);
        wrap(out)
    }
    fn cat(tensors: &[Self], dim: i64) -> Self {
        assert!(!tensors.is_empty(), "cat: no tensors");
        let ax = norm_dim(dim, tensors[0].data.ndim());
        let views: Vec<_> = tensors.iter().map(|t| t.data.view()).collect();
        wrap(ndarray::concatenate(Axis(ax), &views).expect("cat: shapes differ"))
    }
    fn stack(tensors: &[Self], dim: i64) -> Self {
        assert!(!tensors.is_empty(), "stack: no tensors");
        let ax = norm_dim(dim, tensors[0].data.ndim() + 1);
        let views: Vec<_> = tensors.iter().map(|t| t.data.view()).collect();
        wrap(ndarray::stack(Axis(ax), &views).expect("stack: shapes differ"))
    }
    fn narrow(self_: &Self, dim: i64, start: i64, length: i64) -> Self {
        let ax = norm_dim(dim, self_.data.ndim());
        let n = self_.shape()[ax] as i64;
        let s = if start < 0 { start + n } else { start };
        Self::slice_tensor(self_, ax as i64, Some(s), Some(s + length), 1)
    }
    fn diagonal(self_: &Self, offset: i64, dim1: i64, dim2: i64) -> Self {
        let shape = self_.shape().to_vec();
        let (d1, d2, len, rest) = diagonal_geometry(&shape, offset, dim1, dim2);
        let mut out_shape = rest.clone();
        out_shape.push(len);
        let src = &self_.data;
        let out = Array::from_shape_fn(IxDyn(&out_shape), |ix| {
            src[diagonal_source(&ix, &shape, d1, d2, offset)]
        });
        wrap(out)
    }
    fn diagonal_backward(
        grad_output: &Self,
        input_sizes: &[i64],
        offset: i64,
        dim1: i64,
        dim2: i64,
    ) -> Self {
        let shape: Vec<usize> = input_sizes.iter().map(|d| *d as usize).collect();
        let (d1, d2, _, _) = diagonal_geometry(&shape, offset, dim1, dim2);
        let mut out = Array::<E, _>::zeros(IxDyn(&shape));
        for (ix, g) in grad_output.data.indexed_iter() {
            out[diagonal_source(&ix, &shape, d1, d2, offset)] = *g;
        }
        wrap(out)
    }
    fn select_int(self_: &Self, dim: i64, index: i64) -> Self {
        let ax = norm_dim(dim, self_.data.ndim());
        let n = self_.shape()[ax] as i64;
        let i = if index < 0 { index + n } else { index };
        assert!(
            (0..n).contains(&i),
            "select(): index {index} out of range for tensor of size {:?} at dimension {dim}",
            self_.shape()
        );
        NdTensor {
            data: self_.data.clone().index_axis_move(Axis(ax), i as usize),
        }
    }
    fn split_tensor(self_: &Self, split_size: i64, dim: i64) -> Vec<Self> {
        let ax = norm_dim(dim, self_.data.ndim());
        let n = self_.shape()[ax] as i64;
        let step = split_size.max(1);
        let pieces = if n == 0 { 1 } else { (n + step - 1) / step };
        (0..pieces)
            .map(|i| Self::slice_tensor(self_, ax as i64, Some(i * step), Some((i + 1) * step), 1))
            .collect()
    }
    fn chunk(self_: &Self, chunks: i64, dim: i64) -> Vec<Self> {
        let ax = norm_dim(dim, self_.data.ndim());
        let n = self_.shape()[ax] as i64;
        Self::split_tensor(self_, crate::helpers::chunk_size(n, chunks), dim)
    }
    fn unbind_int(self_: &Self, dim: i64) -> Vec<Self> {
        let ax = norm_dim(dim, self_.data.ndim());
        (0..self_.shape()[ax])
            .map(|i| NdTensor {
                data: self_.data.clone().index_axis_move(Axis(ax), i),
            })
            .collect()
    }
    fn index_select(self_: &Self, dim: i64, index: &Self) -> Self {
        let ax = norm_dim(dim, self_.data.ndim());
        let idx: Vec<usize> = index.data.iter().map(|i| i.index()).collect();
        wrap(self_.data.select(Axis(ax), &idx))
    }
    fn index_add(self_: &Self, dim: i64, index: &Self, source: &Self, alpha: f64) -> Self {
        let ax = norm_dim(dim, self_.data.ndim());
        let a = E::of(alpha);
        let mut out = self_.data.to_owned();
        for (i, ix) in index.data.iter().enumerate() {
            let src = source.data.index_axis(Axis(ax), i);
            let mut dst = out.index_axis_mut(Axis(ax), ix.index());
            dst.zip_mut_with(&src, |d, s| *d += a * *s);
        }
        wrap(out)
    }
    fn gather(self_: &Self, dim: i64, index: &Self, _sparse_grad: bool) -> Self {
        let ax = norm_dim(dim, self_.data.ndim());
        let mut out = Array::<E, _>::zeros(IxDyn(index.shape()));
        for (pos, o) in out.indexed_iter_mut() {
            let mut p: Vec<usize> = pos.slice().to_vec();
            p[ax] = index.data[pos.slice()].index();
            *o = self_.data[p.as_slice()];
        }
        wrap(out)
    }
    fn scatter_add(self_: &Self, dim: i64, index: &Self, src: &Self) -> Self {
        let ax = norm_dim(dim, self_.data.ndim());
        let mut out = self_.data.to_owned();
        for (pos, ix) in index.data.indexed_iter() {
            let mut p: Vec<usize> = pos.slice().to_vec();
            p[ax] = ix.index();
            out[p.as_slice()] += src.data[pos.slice()];
        }
        wrap(out)
    }
    fn mse_loss(self_: &Self, target: &Self, reduction: i64) -> Self {
        let d = zip(self_, target, |x, y| (x - y) * (x - y));
        match reduction {
            0 => d,
            r => NdTensor::scalar(scale_for_reduction(d.data.sum(), d.data.len() as f64, r)),
        }
    }
    fn nll_loss(
        self_: &Self,
        target: &Self,
        weight: Option<&Self>,
        reduction: i64,
        ignore_index: i64,
    ) -> Self {
        // PyTorch's `aten::nll_loss` takes (C) or (N, C); more dims are `nll_loss2d`/`_nd`.
        assert!(self_.data.ndim() <= 2, "input tensor should be 1D or 2D");
        nll_forward(self_, target, weight, reduction, ignore_index).0
    }
    fn nll_loss_forward(
        self_: &Self,
        target: &Self,
        weight: Option<&Self>,
        reduction: i64,
        ignore_index: i64,
    ) -> (Self, Self) {
        assert!(self_.data.ndim() <= 2, "input tensor should be 1D or 2D");
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
    ) -> Self {
        let rows = nll_rows(self_);
        let mut out = Array::<E, _>::zeros(IxDyn(rows.shape()));
        let tw = total_weight.item();
        let grads: Vec<E> = grad_output.data.iter().copied().collect();
        for (i, t) in target.data.iter().enumerate() {
            if t.as_f64() as i64 == ignore_index {
                continue;
            }
            let t = t.index();
            let w = weight.map_or(E::one(), |w| w.data[[t].as_slice()]);
            let g = match reduction {
                0 => grads[i],
                1 => grad_output.item() / tw,
                _ => grad_output.item(),
            };
            out[[i, t].as_slice()] = -w * g;
        }
        NdTensor {
            data: nll_unrows(out.into_shared(), self_.shape()),
        }
    }
    fn cross_entropy_loss(
        self_: &Self,
        target: &Self,
        weight: Option<&Self>,
        reduction: i64,
        ignore_index: i64,
        label_smoothing: f64,
    ) -> Self {
        if target.shape() == self_.shape() {
            return cross_entropy_probabilities(self_, target, weight, reduction, label_smoothing);
        }
        if self_.data.ndim() == 2 {
            return cross_entropy_2d(
                self_,
                target,
                weight,
                reduction,
                ignore_index,
                label_smoothing,
            );
        }
        // (C) with a 0-d target, (N, C, d1, ...) with (N, d1, ...): one row per target element.
        let rows = NdTensor {
            data: nll_rows(self_),
        };
        let m = rows.shape()[0] as i64;
        let t = NdTensor {
            data: reshape_arr(&target.data, &[m]),
        };
        let out = cross_entropy_2d(&rows, &t, weight, reduction, ignore_index, label_smoothing);
        if reduction != 0 {
            return out;
        }
        let ts: Vec<i64> = target.shape().iter().map(|d| *d as i64).collect();
        NdTensor {
            data: reshape_arr(&out.data, &ts),
        }
    }
    fn native_dropout(input: &Self, p: f64, train: Option<bool>) -> (Self, Self) {
        if !train.unwrap_or(true) {
            return (input.clone(), NdTensor::ones(input.shape()));
        }
        let scale = crate::helpers::dropout_scale(p, train);
        let m =
            Array::from_shape_simple_fn(IxDyn(input.shape()), || mask::<E>(next_uniform() >= p));
        let mask_t = wrap(m);
        let out = zip(input, &mask_t, |x, m| x * m * E::of(scale));
        (out, mask_t)
    }
    fn native_dropout_backward(grad_output: &Self, mask: &Self, scale: f64) -> Self {
        let s = E::of(scale);
        zip(grad_output, mask, |g, m| g * m * s)
    }
    fn layer_norm(
        input: &Self,
        normalized_shape: &[i64],
        weight: Option<&Self>,
        bias: Option<&Self>,
        eps: f64,
        _cudnn_enable: bool,
    ) -> Self {
        let nd = input.data.ndim();
        let k = normalized_shape.len();
        assert!(
            k <= nd,
            "layer_norm: normalized_shape longer than the input's shape"
        );
        let axes: Vec<usize> = (nd - k..nd).collect();
        let n: usize = axes.iter().map(|a| input.shape()[*a]).product();
        let mean = sum_axes(&input.data, &axes, true).mapv(|x| x / E::of(n as f64));
        let xc = Zip::from(&input.data)
            .and_broadcast(&mean)
            .map_collect(|x, m| *x - *m)
            .into_shared();
        let var =
            sum_axes(&xc.mapv(|x| x * x).into_shared(), &axes, true).mapv(|x| x / E::of(n as f64));
        let e = E::of(eps);
        let mut y = Zip::from(&xc)
            .and_broadcast(&var)
            .map_collect(|x, v| *x / (*v + e).sqrt());
        if let Some(w) = weight {
            y = &y * &w.data;
        }
        if let Some(b) = bias {
            y = &y + &b.data;
        }
        wrap(y)
    }
    fn embedding(
        weight: &Self,
        indices: &Self,
        _padding_idx: i64,
        _scale_grad_by_freq: bool,
        _sparse: bool,
    ) -> Self {
        assert_eq!(weight.data.ndim(), 2, "embedding: weight must be 2-D");
        let idx: Vec<usize> = indices.data.iter().map(|i| i.index()).collect();
        let rows = weight.data.select(Axis(0), &idx);
        let mut s = indices.shape().to_vec();
        s.push(weight.shape()[1]);
        wrap(
            rows.into_shape_with_order(IxDyn(&s))
                .expect("embedding reshape"),
        )
    }
}

trait RemoveAxes {
    fn remove_axes(self, axes: &[usize]) -> Self;
}

impl<E: Element> RemoveAxes for Arr<E> {
    fn remove_axes(mut self, axes: &[usize]) -> Self {
        for ax in axes.iter().rev() {
            self = self.index_axis_move(Axis(*ax), 0);
        }
        self
    }
}
