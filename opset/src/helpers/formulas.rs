//! The helpers' code, compiled twice: over `Variable<T>` (`helpers`, where gradients of
//! gradients flow through them) and over raw tensors (`helpers::raw`, the raw form of the
//! backward formulas). The enclosing module brings the ops and `V<T>`, the value type.

use super::*;
use autograd::types::Scalar;

/// What a helper returns: an op's error travels up to `backward`.
pub type Res<T> = Result<T, AutogradError>;

/// The gradients of a two-input backward (`None`: not needed).
pub type Grads2<T> = (Option<V<T>>, Option<V<T>>);

/// `usize` sizes as the `int[]` the ops take.
pub fn dims(s: &[usize]) -> Vec<i64> {
    s.iter().map(|d| *d as i64).collect()
}

/// A constant zero gradient shaped like `g` (PyTorch's `zeros_like(grad)`).
pub fn zeros_of<T: Backend>(g: &V<T>) -> V<T> {
    V::<T>::from_data(g.with_data(|t| t.zeros_like()))
}

/// `g * alpha`, skipping the multiplication for `alpha == 1`.
pub fn maybe_multiply<T: Backend>(g: &V<T>, alpha: Scalar) -> Res<V<T>> {
    if alpha.to_f64() == 1.0 {
        Ok(g.clone())
    } else {
        mul_scalar(g, alpha)
    }
}

/// Sums a broadcast gradient back to `shape` (PyTorch's `at::sum_to`): leading dimensions and
/// dimensions of size 1 in `shape` are summed.
pub fn sum_to<T: Backend>(g: &V<T>, shape: &[usize]) -> Res<V<T>> {
    let gs = g.shape();
    if gs == shape {
        return Ok(g.clone());
    }
    let lead = gs.len() - shape.len();
    let mut red: Vec<i64> = (0..lead as i64).collect();
    for (i, s) in shape.iter().enumerate() {
        if *s == 1 && gs[lead + i] != 1 {
            red.push((lead + i) as i64);
        }
    }
    let r = if red.is_empty() {
        g.clone()
    } else {
        sum_dim_intlist(g, Some(&red), true, None)?
    };
    reshape(&r, &dims(shape))
}

/// PyTorch's `at::sum_to` with the sizes as an `int[]` (what C++ formulas call).
pub fn sum_to_sizes<T: Backend>(g: &V<T>, sizes: &[i64]) -> Res<V<T>> {
    let shape: Vec<usize> = sizes.iter().map(|&d| d.max(0) as usize).collect();
    sum_to(g, &shape)
}

/// `sizes` as a `usize` shape.
fn shape_of(sizes: &[i64]) -> Vec<usize> {
    sizes.iter().map(|&d| d.max(0) as usize).collect()
}

/// A dimension wrapped into `0..n` (PyTorch's `maybe_wrap_dim`), an error naming the range
/// otherwise.
fn wrap_dim(dim: i64, n: usize) -> Res<usize> {
    crate::shape::norm_dim(dim, n).map_err(AutogradError::backend)
}

// ---- PyTorch's FunctionsManual helpers, with PyTorch's names and argument order
// (`functions.h` declares them). Conjugation and `handle_r_to_c` are the identity: the op
// set's dtypes are real.

/// What a C++ helper's template parameter `const T& other` binds: a tensor or a scalar.
pub trait Operand<T: Backend> {
    /// `grad * other`.
    fn times(self, grad: &V<T>) -> Res<V<T>>;
    /// `grad / other`.
    fn divides(self, grad: &V<T>) -> Res<V<T>>;
}

impl<T: Backend> Operand<T> for &V<T> {
    fn times(self, grad: &V<T>) -> Res<V<T>> {
        mul_tensor(grad, self)
    }
    fn divides(self, grad: &V<T>) -> Res<V<T>> {
        div_tensor(grad, self)
    }
}

impl<T: Backend> Operand<T> for f64 {
    fn times(self, grad: &V<T>) -> Res<V<T>> {
        mul_scalar(grad, self)
    }
    fn divides(self, grad: &V<T>) -> Res<V<T>> {
        div_scalar(grad, self)
    }
}

/// Backward of `mul` for one factor: `grad * other`.
pub fn mul_tensor_backward<T: Backend>(
    grad: &V<T>,
    other: impl Operand<T>,
    _self_st: &str,
) -> Res<V<T>> {
    other.times(grad)
}

/// Backward of `div` for the dividend: `grad / other`; zeros for a rounding division.
pub fn div_tensor_self_backward<T: Backend>(
    grad: &V<T>,
    other: impl Operand<T>,
    _self_st: &str,
    rounding_mode: Option<&str>,
) -> Res<V<T>> {
    match rounding_mode {
        Some(_) => Ok(zeros_of(grad)),
        None => other.divides(grad),
    }
}

/// Backward of `div.Tensor` for the divisor: `-grad * ((self / other) / other)`; zeros for
/// a rounding division.
pub fn div_tensor_other_backward<T: Backend>(
    grad: &V<T>,
    self_: &V<T>,
    other: &V<T>,
    rounding_mode: Option<&str>,
) -> Res<V<T>> {
    if rounding_mode.is_some() {
        return Ok(zeros_of(grad));
    }
    mul_tensor(&neg(grad)?, &div_tensor(&div_tensor(self_, other)?, other)?)
}

/// Backward of `pow.Tensor_Scalar`: `grad * exponent * self^(exponent - 1)`, zeros for a
/// zero exponent.
pub fn pow_backward<T: Backend>(grad: &V<T>, self_: &V<T>, exponent: Scalar) -> Res<V<T>> {
    // PyTorch's `exponent.toDouble()`: the power is taken with a float exponent.
    let exponent = exponent.to_f64();
    if exponent == 0.0 {
        Ok(zeros_of(grad))
    } else {
        mul_tensor(
            grad,
            &mul_scalar(&pow_tensor_scalar(self_, exponent - 1.0)?, exponent)?,
        )
    }
}

/// Backward of `pow.Tensor_Tensor` for the base.
pub fn pow_backward_self<T: Backend>(grad: &V<T>, self_: &V<T>, exponent: &V<T>) -> Res<V<T>> {
    // PyTorch: `where(exponent == 0, 0, grad * exponent * pow(self, exponent - 1))`.
    let d = mul_tensor(
        exponent,
        &pow_tensor_tensor(self_, &sub_scalar(exponent, 1.0, 1)?)?,
    )?;
    let d = mul_tensor(grad, &d)?;
    where_self(&eq_scalar(exponent, 0.0)?, &zeros_of(&d), &d)
}

/// Backward of `pow.Tensor_Tensor` for the exponent: `grad * result * log(self)`, zero where
/// `self == 0` and `exponent >= 0`.
pub fn pow_backward_exponent<T: Backend>(
    grad: &V<T>,
    self_: &V<T>,
    exponent: &V<T>,
    result: &V<T>,
) -> Res<V<T>> {
    // PyTorch: `grad * where(self == 0 & exponent >= 0, 0, result * log(self))` (the gradient
    // outside the `where`: a NaN gradient stays NaN in second order).
    let d = mul_tensor(result, &log(self_)?)?;
    let at_zero = mul_tensor(&eq_scalar(self_, 0.0)?, &ge_scalar(exponent, 0.0)?)?;
    mul_tensor(grad, &where_self(&at_zero, &zeros_of(&d), &d)?)
}

/// `output` with the dimensions a `keepdim=False` reduction over `dims` removed put back as
/// size 1.
pub fn restore_reduced_dims<T: Backend>(output: &V<T>, dims: &[i64], keepdim: bool) -> Res<V<T>> {
    if keepdim {
        return Ok(output.clone());
    }
    let total = output.shape().len() + dims.len();
    let mut target = vec![0i64; total];
    for &d in dims {
        target[wrap_dim(d, total)?] = 1;
    }
    let shape = output.shape();
    let mut sizes = shape.iter().copied();
    for t in target.iter_mut().filter(|t| **t == 0) {
        *t = sizes.next().unwrap_or(1) as i64;
    }
    reshape(output, &target)
}

/// The gradient shared evenly between the elements `mask` marks along `dims`.
pub fn scale_grad_by_count<T: Backend>(grad: &V<T>, mask: &V<T>, dims: &[i64]) -> Res<V<T>> {
    mul_tensor(
        &div_tensor(grad, &sum_dim_intlist(mask, Some(dims), true, None)?)?,
        mask,
    )
}

/// Backward of `sum.dim_IntList`: the gradient with the reduced dimensions restored,
/// expanded to the input's sizes.
pub fn sum_backward<T: Backend>(
    grad: &V<T>,
    sizes: &[i64],
    opt_dims: Option<&[i64]>,
    keepdim: bool,
) -> Res<V<T>> {
    if keepdim || sizes.is_empty() {
        return expand(grad, sizes, false);
    }
    let all: Vec<i64> = (0..sizes.len() as i64).collect();
    let dims = match opt_dims {
        Some(d) if !d.is_empty() => d,
        _ => &all[..],
    };
    let mut r = grad.clone();
    let mut axes: Vec<usize> = dims
        .iter()
        .map(|&d| wrap_dim(d, sizes.len()))
        .collect::<Res<_>>()?;
    axes.sort_unstable();
    axes.dedup();
    for ax in axes {
        r = unsqueeze(&r, ax as i64)?;
    }
    expand(&r, sizes, false)
}

/// Backward of `mean.dim`: `sum_backward` divided by the number of elements reduced.
pub fn mean_backward<T: Backend>(
    grad: &V<T>,
    shape: &[i64],
    opt_dim: Option<&[i64]>,
    numel: i64,
    keepdim: bool,
) -> Res<V<T>> {
    let n = match opt_dim {
        Some(d) if !d.is_empty() && !shape.is_empty() => d
            .iter()
            .map(|&x| wrap_dim(x, shape.len()).map(|a| shape[a]))
            .product::<Res<i64>>()?,
        _ => numel,
    };
    div_scalar(&sum_backward(grad, shape, opt_dim, keepdim)?, n as f64)
}

/// The tangent of `amax`/`amin`: the mean of the tangent over the tied extrema.
pub fn amaxamin_jvp<T: Backend>(
    x: &V<T>,
    dx: &V<T>,
    result: &V<T>,
    dim: &[i64],
    keepdim: bool,
) -> Res<V<T>> {
    let mask = eq_tensor(x, &restore_reduced_dims(result, dim, keepdim)?)?;
    let num = sum_dim_intlist(
        &where_self(&mask, dx, &zeros_of(dx))?,
        Some(dim),
        keepdim,
        None,
    )?;
    div_tensor(&num, &sum_dim_intlist(&mask, Some(dim), keepdim, None)?)
}

/// Backward of `log1p`: `grad / (self + 1)` (PyTorch's, for dense tensors).
pub fn log1p_backward<T: Backend>(grad: &V<T>, self_: &V<T>) -> Res<V<T>> {
    div_tensor(grad, &add_scalar(self_, 1.0, 1)?)
}

/// Backward of `logsumexp`: `grad * exp(self - result)`, the reduced dimensions restored.
pub fn logsumexp_backward<T: Backend>(
    grad: &V<T>,
    self_: &V<T>,
    result: &V<T>,
    dim: &[i64],
    keepdim: bool,
) -> Res<V<T>> {
    let (g, r) = if !keepdim && !self_.shape().is_empty() {
        (
            restore_reduced_dims(grad, dim, false)?,
            restore_reduced_dims(result, dim, false)?,
        )
    } else {
        (grad.clone(), result.clone())
    };
    mul_tensor(&g, &exp(&sub_tensor(self_, &r, 1)?)?)
}

/// The tangent of `logsumexp`: the softmax-weighted sum of the tangent, computed with the
/// exp-normalize trick.
pub fn logsumexp_jvp<T: Backend>(
    self_p: &V<T>,
    self_t: &V<T>,
    dim: &[i64],
    keepdim: bool,
) -> Res<V<T>> {
    let shifted = if self_p.shape().iter().product::<usize>() > 0 {
        sub_tensor(self_p, &amax(self_p, dim, true)?, 1)?
    } else {
        self_p.clone()
    };
    let e = exp(&shifted)?;
    let sumexp_p = sum_dim_intlist(&e, Some(dim), keepdim, None)?;
    let sumexp_t = sum_dim_intlist(&mul_tensor(&e, self_t)?, Some(dim), keepdim, None)?;
    div_tensor(&sumexp_t, &sumexp_p)
}

/// Backward of `clamp`: the gradient passes where `min < self < max` (torch 2.15: none at a
/// bound).
pub fn clamp_backward<T: Backend>(
    grad: &V<T>,
    self_: &V<T>,
    min: Option<Scalar>,
    max: Option<Scalar>,
) -> Res<V<T>> {
    let keep = match (min, max) {
        (Some(lo), Some(hi)) => mul_tensor(&gt_scalar(self_, lo)?, &lt_scalar(self_, hi)?)?,
        (Some(lo), None) => gt_scalar(self_, lo)?,
        (None, Some(hi)) => lt_scalar(self_, hi)?,
        (None, None) => return Ok(grad.clone()),
    };
    where_self(&keep, grad, &zeros_of(grad))
}

/// `tensor` with `value` where `mask` is set (PyTorch fills in place when it may; the value
/// is the same).
pub fn masked_fill_inplace_if_safe<T: Backend>(
    tensor: &V<T>,
    mask: &V<T>,
    value: Scalar,
) -> Res<V<T>> {
    let fill = add_scalar(&zeros_of(tensor), value, 1)?;
    where_self(mask, &fill, tensor)
}

/// Backward of `mm` for the first factor: `grad @ mat2ᵀ`, times `alpha`.
pub fn mm_mat1_backward<T: Backend>(
    grad: &V<T>,
    mat2: &V<T>,
    _mat1_sizes: &[i64],
    _mat1_strides: &[i64],
    _mat1_layout: autograd::types::Layout,
    alpha: Scalar,
) -> Res<V<T>> {
    maybe_multiply(&mm(grad, &t(mat2)?)?, alpha)
}

/// Backward of `mm` for the second factor: `mat1ᵀ @ grad`, times `alpha`.
pub fn mm_mat2_backward<T: Backend>(
    grad: &V<T>,
    mat1: &V<T>,
    _sizes: &[i64],
    _strides: &[i64],
    _layout: autograd::types::Layout,
    alpha: Scalar,
) -> Res<V<T>> {
    maybe_multiply(&mm(&t(mat1)?, grad)?, alpha)
}

/// Backward of `permute`: the gradient permuted back.
pub fn permute_backwards<T: Backend>(grad: &V<T>, fwd_dims: &[i64]) -> Res<V<T>> {
    permute(grad, &inverse_permutation(fwd_dims)?)
}

/// `self` with a dimension of size 1 put back wherever `sym_sizes` has one (the backward
/// of `squeeze`).
pub fn unsqueeze_to<T: Backend>(self_: &V<T>, sym_sizes: &[i64]) -> Res<V<T>> {
    let mut r = self_.clone();
    for (i, &s) in sym_sizes.iter().enumerate() {
        if s == 1 {
            r = unsqueeze(&r, i as i64)?;
        }
    }
    Ok(r)
}

/// `self` with dimension `dim` put back when `sym_sizes` has size 1 there (the backward of
/// `squeeze.dim`).
pub fn unsqueeze_to_dim<T: Backend>(self_: &V<T>, dim: i64, sym_sizes: &[i64]) -> Res<V<T>> {
    if sym_sizes.is_empty() {
        return Ok(self_.clone());
    }
    let d = wrap_dim(dim, sym_sizes.len())?;
    if sym_sizes[d] == 1 {
        unsqueeze(self_, d as i64)
    } else {
        Ok(self_.clone())
    }
}

/// `self` with the dimensions of `dim` that have size 1 in `sym_sizes` put back (the
/// backward of `squeeze.dims`).
pub fn unsqueeze_to_dims<T: Backend>(self_: &V<T>, dim: &[i64], sym_sizes: &[i64]) -> Res<V<T>> {
    let n = sym_sizes.len();
    let mut mask = vec![false; n];
    for &d in dim {
        if n > 0 {
            mask[wrap_dim(d, n)?] = true;
        }
    }
    let mut r = self_.clone();
    for d in 0..n {
        if mask[d] && sym_sizes[d] == 1 {
            r = unsqueeze(&r, d as i64)?;
        }
    }
    Ok(r)
}

/// Backward of `slice.Tensor`: the bounds normalised as `slice` normalises them, then
/// `slice_backward`.
pub fn slice_backward_wrapper<T: Backend>(
    grad: &V<T>,
    input_sizes: &[i64],
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Res<V<T>> {
    let ax = wrap_dim(dim, input_sizes.len())?;
    let (s, e) = crate::shape::slice_bounds(input_sizes[ax], start, end);
    slice_backward(grad, input_sizes, ax as i64, s, e, step)
}

/// Backward of `narrow`: `slice_backward` over `start..start + length`, a negative `start`
/// counted from the end first (PyTorch's `narrow` normalizes it before it slices).
pub fn narrow_backward_symint<T: Backend>(
    grad: &V<T>,
    input_sizes: &[i64],
    dim: i64,
    start: i64,
    length: i64,
) -> Res<V<T>> {
    let ax = wrap_dim(dim, input_sizes.len())?;
    let s = if start < 0 {
        start + input_sizes[ax]
    } else {
        start
    };
    slice_backward_wrapper(grad, input_sizes, dim, Some(s), Some(s + length), 1)
}

/// Backward of `cat`: the gradient cut into the inputs' pieces. Only the inputs' sizes and
/// dtypes are saved (PyTorch's `to_args_sizes`), so modifying an input in place after
/// `cat` is no error.
pub fn cat_tensors_backward<T: Backend>(
    grad: &V<T>,
    sizes: &[Vec<i64>],
    _dtypes: &[&str],
    dim: i64,
) -> Res<Vec<V<T>>> {
    let ax = wrap_dim(dim, grad.shape().len())?;
    let mut at = 0i64;
    sizes
        .iter()
        .map(|s| {
            // PyTorch's legacy empty inputs (shape `[0]`), which `cat` skips, get an empty
            // gradient of their own shape.
            if s.as_slice() == [0] {
                return new_zeros(grad, &[0], None, None, None, None);
            }
            let n = s[ax];
            let piece = slice_tensor(grad, ax as i64, Some(at), Some(at + n), 1);
            at += n;
            piece
        })
        .collect()
}

/// Backward of `stack`: the gradient's slices along `dim`.
pub fn stack_tensors_backward<T: Backend>(
    grad: &V<T>,
    dim: i64,
    dtypes: &[&str],
) -> Res<Vec<V<T>>> {
    let ax = wrap_dim(dim, grad.shape().len())? as i64;
    (0..dtypes.len() as i64)
        .map(|i| select_int(grad, ax, i))
        .collect()
}

/// Backward of `unbind`: the gradients stacked back; undefined ones are zeros.
pub fn unbind_backward<T: Backend>(grads: &[Option<V<T>>], dim: i64) -> Res<V<T>> {
    let Some(proto) = grads.iter().flatten().next() else {
        return Err(AutogradError::msg(
            "unbind_backward: no gradient is defined",
        ));
    };
    let piece = proto.shape();
    let ax = wrap_dim(dim, piece.len() + 1)?;
    stack(&grads_or_zeros(grads, |_| piece.to_vec())?, ax as i64)
}

/// The gradients of a multi-output op's pieces, each undefined one replaced by zeros of
/// `shape(i)` (for `unbind`, `split`, `chunk`).
fn grads_or_zeros<T: Backend>(
    grads: &[Option<V<T>>],
    shape: impl Fn(usize) -> Vec<usize>,
) -> Res<Vec<V<T>>> {
    // The engine calls a node only when some gradient is defined.
    let Some(proto) = grads.iter().flatten().next() else {
        return Ok(Vec::new());
    };
    grads
        .iter()
        .enumerate()
        .map(|(i, g)| match g {
            Some(g) => Ok(g.clone()),
            None => {
                <T as Backend>::new_zeros(&proto.data(), &dims(&shape(i)), None, None, None, None)
                    .map(V::<T>::from_data)
                    .map_err(AutogradError::backend)
            }
        })
        .collect()
}

/// The piece size of `chunk(n elements, chunks)`: PyTorch's `ceil(n / chunks)`.
pub fn chunk_size(n: i64, chunks: i64) -> i64 {
    ((n + chunks - 1) / chunks.max(1)).max(1)
}

/// Backward of `split`/`chunk`: the pieces' gradients concatenated; undefined ones are zeros.
pub fn split_backward<T: Backend>(
    grads: &[Option<V<T>>],
    split_size: i64,
    dim: i64,
    sizes: &[i64],
    _options: autograd::types::TensorOptions,
) -> Res<V<T>> {
    let ax = wrap_dim(dim, sizes.len())?;
    let n = sizes[ax];
    let shape = shape_of(sizes);
    let piece = |i: usize| {
        let mut p = shape.clone();
        p[ax] = (split_size.min(n - i as i64 * split_size)).max(0) as usize;
        p
    };
    cat(&grads_or_zeros(grads, piece)?, ax as i64)
}

/// PyTorch's `split_with_sizes_backward`: the pieces' gradients concatenated along `dim`,
/// an undefined one as zeros of its piece's sizes.
pub fn split_with_sizes_backward<T: Backend>(
    grads: &[Option<V<T>>],
    split_sizes: &[i64],
    dim: i64,
    sizes: &[i64],
    _options: autograd::types::TensorOptions,
) -> Res<V<T>> {
    let ax = wrap_dim(dim, sizes.len())?;
    let shape = shape_of(sizes);
    let piece = |i: usize| {
        let mut p = shape.clone();
        p[ax] = split_sizes[i].max(0) as usize;
        p
    };
    cat(&grads_or_zeros(grads, piece)?, ax as i64)
}

/// The gradient of `native_dropout`'s backward for its gradient: `ggI * mask * scale`.
pub fn native_dropout_double_backward<T: Backend>(
    ggi: &V<T>,
    _grad: &V<T>,
    mask: &V<T>,
    scale: f64,
) -> Res<V<T>> {
    mul_tensor(ggi, &mul_scalar(mask, scale)?)
}

/// `native_dropout`'s backward with differentiable ops: `grad * (mask * scale)`.
pub fn infinitely_differentiable_native_dropout_backward<T: Backend>(
    grad: &V<T>,
    mask: &V<T>,
    scale: f64,
) -> Res<V<T>> {
    mul_tensor(grad, &mul_scalar(mask, scale)?)
}

/// PyTorch's `apply_loss_reduction`: 0 none, 1 mean, 2 sum.
pub fn apply_loss_reduction<T: Backend>(unreduced: &V<T>, reduction: i64) -> Res<V<T>> {
    match reduction {
        1 => mean(unreduced, None),
        2 => sum(unreduced, None),
        _ => Ok(unreduced.clone()),
    }
}

/// The tangent of `max.dim`'s values: the tangent's elements at the selected indices.
pub fn gather_with_keepdimed_indices<T: Backend>(
    input: &V<T>,
    dim: i64,
    indices: &V<T>,
    keepdim: bool,
) -> Res<V<T>> {
    if input.shape().is_empty() {
        return Ok(input.clone());
    }
    let idx = if keepdim {
        indices.clone()
    } else {
        unsqueeze(indices, dim)?
    };
    let out = gather(input, dim, &idx, false)?;
    if keepdim {
        Ok(out)
    } else {
        squeeze_dim(&out, dim)
    }
}

// ---- The op set's own helpers (`functions.h`, second part): operators PyTorch has that
// the op set computes with differentiable ops, and the helpers of its own entries.

/// `sgn` of a real tensor: `sign`.
pub fn sgn<T: Backend>(self_: &V<T>) -> Res<V<T>> {
    sign(self_)
}

/// `self` expanded to `other`'s sizes.
pub fn expand_as<T: Backend>(self_: &V<T>, other: &V<T>) -> Res<V<T>> {
    expand(self_, &dims(&other.shape()), false)
}

/// `where(condition, self, other)` with a scalar `other`.
pub fn where_scalar_other<T: Backend>(condition: &V<T>, self_: &V<T>, other: Scalar) -> Res<V<T>> {
    let o = add_scalar(&zeros_of(self_), other, 1)?;
    where_self(condition, self_, &o)
}

/// `where(condition, self, other)` with a scalar `self`.
pub fn where_scalar_self<T: Backend>(condition: &V<T>, self_: Scalar, other: &V<T>) -> Res<V<T>> {
    let s = add_scalar(&zeros_of(other), self_, 1)?;
    where_self(condition, &s, other)
}

/// `sigmoid_backward`: `grad_output * (1 - output) * output`, PyTorch's kernel's order.
pub fn sigmoid_backward<T: Backend>(grad_output: &V<T>, output: &V<T>) -> Res<V<T>> {
    let one_minus = add_scalar(&neg(output)?, 1.0, 1)?;
    mul_tensor(&mul_tensor(grad_output, &one_minus)?, output)
}

/// `leaky_relu_backward`: the gradient where `self > 0`, scaled by `negative_slope`
/// elsewhere.
pub fn leaky_relu_backward<T: Backend>(
    grad_output: &V<T>,
    self_: &V<T>,
    negative_slope: Scalar,
    _self_is_result: bool,
) -> Res<V<T>> {
    where_self(
        &gt_scalar(self_, 0.0)?,
        grad_output,
        &mul_scalar(grad_output, negative_slope)?,
    )
}

/// Backward of `gelu` (`approximate` is `"none"` or `"tanh"`).
pub fn gelu_backward<T: Backend>(g: &V<T>, self_: &V<T>, approximate: &str) -> Res<V<T>> {
    let x = self_;
    let d = if approximate == "tanh" {
        let k = (2.0 / std::f64::consts::PI).sqrt();
        let c = 0.044715;
        let x2 = mul_tensor(x, x)?;
        let inner = mul_scalar(
            &mul_tensor(x, &add_scalar(&mul_scalar(&x2, c)?, 1.0, 1)?)?,
            k,
        )?;
        let th = tanh(&inner)?;
        let dinner = mul_scalar(&add_scalar(&mul_scalar(&x2, 3.0 * c)?, 1.0, 1)?, k)?;
        let left = mul_scalar(&add_scalar(&th, 1.0, 1)?, 0.5)?;
        let sech2 = add_scalar(&neg(&mul_tensor(&th, &th)?)?, 1.0, 1)?;
        add_tensor(
            &left,
            &mul_tensor(&mul_scalar(x, 0.5)?, &mul_tensor(&sech2, &dinner)?)?,
            1.0,
        )?
    } else {
        let cdf = mul_scalar(
            &add_scalar(
                &erf(&mul_scalar(x, std::f64::consts::FRAC_1_SQRT_2)?)?,
                1.0,
                1.0,
            )?,
            0.5,
        )?;
        let pdf = mul_scalar(
            &exp(&mul_scalar(&mul_tensor(x, x)?, -0.5)?)?,
            1.0 / (2.0 * std::f64::consts::PI).sqrt(),
        )?;
        add_tensor(&cdf, &mul_tensor(x, &pdf)?, 1)?
    };
    mul_tensor(g, &d)
}

/// `expand`'s `view_inverse`: where nothing was broadcast (every size kept, new leading dims
/// of size 1) the view is the base reshaped, and PyTorch lets in-place ops write through it;
/// otherwise several elements of the view are one of the base, and PyTorch refuses.
pub fn expand_inverse<T: Backend>(base: &V<T>, mutated_view: &V<T>) -> Res<V<T>> {
    let (b, v) = (base.shape(), mutated_view.shape());
    if b.iter().product::<usize>() == v.iter().product::<usize>() {
        return reshape(mutated_view, &dims(&b));
    }
    Err(AutogradError::msg(autograd::runtime::view::ERR_OVERLAP))
}

/// `base` with the elements a view selects replaced by `mutated_view` (PyTorch's
/// `slice_scatter`, `select_scatter`, `diagonal_scatter`): `where(mask, scatter(view), base)`,
/// where `scatter` is the view's backward (the view's elements in place, zeros elsewhere)
/// and `mask` marks the elements it writes. Exact for every dtype (booleans included) and
/// for non-finite values of the base; its gradients are the view's backward for the view
/// and the base's gradient where the view did not write.
pub fn view_scatter<T: Backend>(
    base: &V<T>,
    mutated_view: &V<T>,
    scatter: impl Fn(&V<T>) -> Res<V<T>>,
) -> Res<V<T>> {
    let ones = V::<T>::from_data(mutated_view.with_data(|t| t.ones_like()));
    let mask = ne_scalar(&scatter(&ones)?, 0.0)?;
    where_self(&mask, &scatter(mutated_view)?, base)
}

/// The inverse of a permutation.
pub fn inverse_permutation(p: &[i64]) -> Res<Vec<i64>> {
    let n = p.len();
    let mut inv = vec![0i64; n];
    for (i, d) in p.iter().enumerate() {
        inv[crate::shape::norm_dim(*d, n).map_err(AutogradError::backend)?] = i as i64;
    }
    Ok(inv)
}

/// Backward of `mse_loss` for its first argument `a` (the other's is this with `a`, `b` swapped).
pub fn mse_loss_backward<T: Backend>(g: &V<T>, a: &V<T>, b: &V<T>, reduction: i64) -> Res<V<T>> {
    // PyTorch's kernel subtracts in the promoted type: a boolean operand counts as 0/1.
    let number = |v: &V<T>| match v.with_data(|t| t.dtype()) {
        "bool" => mul_scalar(v, 1),
        _ => Ok(v.clone()),
    };
    let d = mul_scalar(
        &mul_tensor(&sub_tensor(&number(a)?, &number(b)?, 1)?, g)?,
        2.0,
    )?;
    let d = if reduction == 1 {
        let n: usize = crate::shape::broadcast_shape(&a.shape(), &b.shape())
            .map_err(AutogradError::backend)?
            .iter()
            .product();
        div_scalar(&d, n as f64)?
    } else {
        d
    };
    sum_to(&d, &a.shape())
}

/// The scale `native_dropout` applies to kept elements.
pub fn dropout_scale(p: f64, train: Option<bool>) -> f64 {
    if !train.unwrap_or(true) {
        1.0
    } else if p >= 1.0 {
        0.0
    } else {
        1.0 / (1.0 - p)
    }
}

/// Backward of `select.int`: the gradient put back at `index` of `dim`, zeros elsewhere.
pub fn select_backward_symint<T: Backend>(
    grad_output: &V<T>,
    input_sizes: &[i64],
    dim: i64,
    index: i64,
) -> Res<V<T>> {
    let ax = wrap_dim(dim, input_sizes.len())?;
    let n = input_sizes[ax];
    let i = if index < 0 { index + n } else { index };
    slice_backward_wrapper(
        &unsqueeze(grad_output, ax as i64)?,
        input_sizes,
        ax as i64,
        Some(i),
        Some(i + 1),
        1,
    )
}

/// Backward of `max.dim` and the other value-selecting reductions: the gradient goes to the
/// selected elements.
pub fn value_selecting_reduction_backward_symint<T: Backend>(
    grad: &V<T>,
    dim: i64,
    indices: &V<T>,
    sizes: &[i64],
    keepdim: bool,
) -> Res<V<T>> {
    if sizes.is_empty() {
        return Ok(grad.clone());
    }
    let (g, idx) = if keepdim {
        (grad.clone(), indices.clone())
    } else {
        (unsqueeze(grad, dim)?, unsqueeze(indices, dim)?)
    };
    scatter_add(
        &new_zeros(&g, sizes, None, None, None, None)?,
        dim,
        &idx,
        &g,
    )
}

/// Backward of `index_select`: the gradient added back at the selected indices.
pub fn index_select_backward_symint<T: Backend>(
    grad: &V<T>,
    self_sizes: &[i64],
    dim: i64,
    index: &V<T>,
) -> Res<V<T>> {
    let zeros = new_zeros(grad, self_sizes, None, None, None, None)?;
    index_add(&zeros, dim, index, grad, 1)
}

/// Backward of `gather`: the gradient added back where it was gathered from.
pub fn gather_backward<T: Backend>(
    grad: &V<T>,
    self_: &V<T>,
    dim: i64,
    index: &V<T>,
    _sparse_grad: bool,
) -> Res<V<T>> {
    let zeros = new_zeros(grad, &dims(&self_.shape()), None, None, None, None)?;
    scatter_add(&zeros, dim, index, grad)
}

/// An optional's value (C++'s `opt.value()` and `*opt`): PyTorch's `bad optional access`
/// error when there is none.
pub fn required<X>(o: Option<X>) -> Res<X> {
    o.ok_or_else(|| AutogradError::msg("bad optional access"))
}

/// A possibly undefined tensor read where a defined one is needed (what the generator emits
/// for an optional passed as a tensor: `defined(&grads[0])` after `grads[0].defined()`): PyTorch's error for an undefined one.
pub fn defined<T: Backend>(t: &Option<V<T>>) -> Res<V<T>> {
    t.clone()
        .ok_or_else(|| AutogradError::msg("Expected a proper Tensor but got None"))
}

/// The mode `autograd_ops!` runs backward formulas in: gradients are recorded
/// (`GradMode::is_enabled()` in a formula; true under `create_graph`).
pub fn grad_mode_enabled() -> bool {
    autograd::runtime::is_grad_enabled()
}

/// PyTorch's `atan2_backward`: `grad * other / (self² + other²)` and
/// `grad * -self / (self² + other²)`, each where `output_mask` asks.
pub fn atan2_backward<T: Backend>(
    grad: &V<T>,
    self_: &V<T>,
    other: &V<T>,
    output_mask: [bool; 2],
) -> Res<Grads2<T>> {
    let sq = add_tensor(&mul_tensor(self_, self_)?, &mul_tensor(other, other)?, 1)?;
    let recip = reciprocal(&sq)?;
    let gs = output_mask[0]
        .then(|| mul_tensor(&mul_tensor(grad, other)?, &recip))
        .transpose()?;
    let go = output_mask[1]
        .then(|| mul_tensor(&mul_tensor(grad, &neg(self_)?)?, &recip))
        .transpose()?;
    Ok((gs, go))
}

/// PyTorch's `elu_double_backward`: the derivative of `elu_backward` in `self_or_result`.
pub fn elu_double_backward<T: Backend>(
    grad: &V<T>,
    grad_output: &V<T>,
    alpha: Scalar,
    scale: Scalar,
    input_scale: Scalar,
    is_result: bool,
    self_or_result: &V<T>,
) -> Res<V<T>> {
    // `(self_or_result < 0).type_as(grad)`: the mask as the gradient's dtype.
    let negative = mul_scalar(&lt_scalar(self_or_result, 0)?, 1.0)?;
    let gg = mul_tensor(grad, grad_output)?;
    if is_result {
        mul_tensor(&mul_scalar(&gg, input_scale)?, &negative)
    } else {
        let b = elu_backward(
            &mul_scalar(&gg, input_scale)?,
            alpha,
            scale,
            input_scale,
            is_result,
            self_or_result,
        )?;
        mul_tensor(&b, &negative)
    }
}

/// PyTorch's `repeat_backward`: the gradient summed over the repeated copies (zeros for a
/// zero repeat).
pub fn repeat_backward<T: Backend>(grad: &V<T>, repeats: &[i64], input_shape: &[i64]) -> Res<V<T>> {
    if repeats.contains(&0) {
        return new_zeros(grad, input_shape, None, None, None, None);
    }
    let nd = input_shape.len();
    let unsqueezed = grad.shape().len() - nd;
    let mut g = grad.clone();
    for _ in 0..unsqueezed {
        g = sum_dim_intlist(&g, Some(&[0]), false, None)?;
    }
    let (mut grad_size, mut sum_dims) = (Vec::new(), Vec::new());
    for (dim, &size) in input_shape.iter().enumerate() {
        let repeat = repeats[dim + unsqueezed];
        if repeat != 1 {
            grad_size.push(repeat);
            sum_dims.push(grad_size.len() as i64 - 1);
        }
        grad_size.push(size);
    }
    let g = reshape(&g, &grad_size)?;
    if sum_dims.is_empty() {
        return Ok(g);
    }
    sum_dim_intlist(&g, Some(&sum_dims), false, None)
}

/// PyTorch's `_to_copy_backward`: the gradient converted back to the input's dtype.
pub fn _to_copy_backward<T: Backend>(
    grad: &V<T>,
    self_options: autograd::types::TensorOptions,
) -> Res<V<T>> {
    _to_copy(grad, self_options.dtype(), None, None, None, false, None)
}

/// Backward of `pow.Scalar` (a Scalar base) for the exponent: `grad * result * log(base)`;
/// for a zero base, zero where `exponent >= 0` (PyTorch's `pow_backward_exponent` overload
/// taking a Scalar base; the gradient outside the `where`).
pub fn pow_backward_exponent_scalar_base<T: Backend>(
    grad: &V<T>,
    base: Scalar,
    exponent: &V<T>,
    result: &V<T>,
) -> Res<V<T>> {
    // `Scalar::log` is a double's log (of the integer's value for an integer base).
    let d = mul_scalar(result, Scalar::Float(base.to_f64().ln()))?;
    if base.to_f64() == 0.0 {
        let cond = ge_scalar(exponent, 0.0)?;
        return mul_tensor(grad, &where_self(&cond, &zeros_of(&d), &d)?);
    }
    mul_tensor(grad, &d)
}

/// PyTorch's `index_backward`: the gradient accumulated into `zeros_like_self` at the
/// indexed positions (`index_put` with `accumulate=true`, which PyTorch's
/// `_index_put_impl_` computes too).
pub fn index_backward<T: Backend>(
    zeros_like_self: &V<T>,
    indices: &[Option<V<T>>],
    grad: &V<T>,
) -> Res<V<T>> {
    index_put(zeros_like_self, indices, grad, true)
}
