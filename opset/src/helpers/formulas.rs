//! The helpers' code, compiled twice: over `Variable<T>` (`helpers`, where gradients of
//! gradients flow through them) and over raw tensors (`helpers::raw`, the raw form of the
//! backward formulas). The enclosing module brings the ops and `V<T>`, the value type.

use super::*;

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
pub fn maybe_multiply<T: Backend>(g: &V<T>, alpha: f64) -> Res<V<T>> {
    if alpha == 1.0 {
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

/// The axes a reduction over `dim` (`None`/`[]`: all) covers.
fn axes(dim: Option<&[i64]>, nd: usize) -> Res<Vec<usize>> {
    crate::shape::reduce_axes(dim, nd).map_err(AutogradError::backend)
}

/// Re-inserts the reduced dimensions of a `keepdim=False` reduction.
pub fn restore_reduced_dims<T: Backend>(
    g: &V<T>,
    dim: Option<&[i64]>,
    keepdim: bool,
    nd: usize,
) -> Res<V<T>> {
    if keepdim || nd == 0 {
        return Ok(g.clone());
    }
    let mut r = g.clone();
    for ax in axes(dim, nd)? {
        r = unsqueeze(&r, ax as i64)?;
    }
    Ok(r)
}

/// Backward of `sum.dim_IntList`.
pub fn sum_backward<T: Backend>(
    g: &V<T>,
    sizes: &[usize],
    dim: Option<&[i64]>,
    keepdim: bool,
) -> Res<V<T>> {
    let r = restore_reduced_dims(g, dim, keepdim, sizes.len())?;
    expand(&r, &dims(sizes), false)
}

/// Backward of `mean.dim`.
pub fn mean_backward<T: Backend>(
    g: &V<T>,
    sizes: &[usize],
    dim: Option<&[i64]>,
    keepdim: bool,
) -> Res<V<T>> {
    let n: usize = axes(dim, sizes.len())?.iter().map(|a| sizes[*a]).product();
    div_scalar(&sum_backward(g, sizes, dim, keepdim)?, n as f64)
}

/// Backward of `max.dim`: the gradient goes to the selected elements.
pub fn value_selecting_reduction_backward<T: Backend>(
    g: &V<T>,
    dim: i64,
    indices: &V<T>,
    sizes: &[usize],
    keepdim: bool,
) -> Res<V<T>> {
    if sizes.is_empty() {
        return Ok(g.clone());
    }
    let (g, idx) = if keepdim {
        (g.clone(), indices.clone())
    } else {
        (unsqueeze(g, dim)?, unsqueeze(indices, dim)?)
    };
    scatter_add(
        &new_zeros(&g, &dims(sizes), None, None, None, None)?,
        dim,
        &idx,
        &g,
    )
}

/// Backward of `amax`: the gradient is shared evenly between tied maxima.
pub fn amax_backward<T: Backend>(
    g: &V<T>,
    self_: &V<T>,
    result: &V<T>,
    dim: &[i64],
    keepdim: bool,
) -> Res<V<T>> {
    let nd = self_.shape().len();
    let g = restore_reduced_dims(g, Some(dim), keepdim, nd)?;
    let r = restore_reduced_dims(&result.detach(), Some(dim), keepdim, nd)?;
    let mask = eq_tensor(self_, &r)?;
    let red = dims(&axes(Some(dim), nd)?);
    let count = sum_dim_intlist(&mask, Some(&red), true, None)?;
    mul_tensor(&div_tensor(&g, &count)?, &mask)
}

/// Backward of `softmax`.
pub fn softmax_backward<T: Backend>(g: &V<T>, result: &V<T>, dim: i64) -> Res<V<T>> {
    let gy = mul_tensor(g, result)?;
    sub_tensor(
        &gy,
        &mul_tensor(result, &sum_dim_intlist(&gy, Some(&[dim]), true, None)?)?,
        1.0,
    )
}

/// Backward of `log_softmax`.
pub fn log_softmax_backward<T: Backend>(g: &V<T>, result: &V<T>, dim: i64) -> Res<V<T>> {
    sub_tensor(
        g,
        &mul_tensor(
            &exp(result)?,
            &sum_dim_intlist(g, Some(&[dim]), true, None)?,
        )?,
        1.0,
    )
}

/// Backward of `logsumexp`.
pub fn logsumexp_backward<T: Backend>(
    g: &V<T>,
    self_: &V<T>,
    result: &V<T>,
    dim: &[i64],
    keepdim: bool,
) -> Res<V<T>> {
    let nd = self_.shape().len();
    let g = restore_reduced_dims(g, Some(dim), keepdim, nd)?;
    let r = restore_reduced_dims(result, Some(dim), keepdim, nd)?;
    mul_tensor(&g, &exp(&sub_tensor(self_, &r, 1.0)?)?)
}

/// Backward of `div.Tensor` for the divisor: `-grad * self / other²`.
pub fn div_tensor_other_backward<T: Backend>(g: &V<T>, self_: &V<T>, other: &V<T>) -> Res<V<T>> {
    neg(&mul_tensor(
        g,
        &div_tensor(&div_tensor(self_, other)?, other)?,
    )?)
}

/// Backward of `pow.Tensor_Scalar`.
pub fn pow_backward<T: Backend>(g: &V<T>, self_: &V<T>, exponent: f64) -> Res<V<T>> {
    if exponent == 0.0 {
        Ok(zeros_of(g))
    } else {
        mul_tensor(
            g,
            &mul_scalar(&pow_tensor_scalar(self_, exponent - 1.0)?, exponent)?,
        )
    }
}

/// Whether `v`'s dtype carries tangents: an integer or boolean operand never has one.
fn has_tangents<T: Backend>(v: &V<T>) -> bool {
    v.with_data(|t| t.is_differentiable())
}

/// The sum of the terms that exist (PyTorch's undefined tangents are zero tensors that
/// annihilate their term, even where it would be NaN or infinite).
fn sum_terms<T: Backend>(terms: [Option<V<T>>; 2], like: &V<T>) -> Res<V<T>> {
    match terms {
        [Some(a), Some(b)] => add_tensor(&a, &b, 1.0),
        [Some(a), None] | [None, Some(a)] => Ok(a),
        [None, None] => Ok(zeros_of(like)),
    }
}

/// The tangent of `div.Tensor` (PyTorch's `self_t / other - other_t * (self / other) /
/// other`), without the term of an operand that has no tangents (an integer or boolean).
pub fn div_tensor_jvp<T: Backend>(
    self_t: &V<T>,
    other_t: &V<T>,
    other_p: &V<T>,
    result: &V<T>,
) -> Res<V<T>> {
    let a = match has_tangents(self_t) {
        true => Some(div_tensor(self_t, other_p)?),
        false => None,
    };
    let b = match has_tangents(other_t) {
        true => Some(neg(&div_tensor(&mul_tensor(other_t, result)?, other_p)?)?),
        false => None,
    };
    sum_terms([a, b], result)
}

/// The tangent of `pow.Tensor_Tensor`, without the term of an operand that has no tangents.
pub fn pow_tensor_tensor_jvp<T: Backend>(
    self_t: &V<T>,
    exponent_t: &V<T>,
    self_p: &V<T>,
    exponent_p: &V<T>,
    result: &V<T>,
) -> Res<V<T>> {
    let a = match has_tangents(self_t) {
        true => Some(pow_backward_self(self_t, self_p, exponent_p)?),
        false => None,
    };
    let b = match has_tangents(exponent_t) {
        true => Some(pow_backward_exponent(
            exponent_t, self_p, exponent_p, result,
        )?),
        false => None,
    };
    sum_terms([a, b], result)
}

/// Backward of `pow.Tensor_Tensor` for the base.
pub fn pow_backward_self<T: Backend>(g: &V<T>, self_: &V<T>, exponent: &V<T>) -> Res<V<T>> {
    // PyTorch: `where(exponent == 0, 0, grad * exponent * pow(self, exponent - 1))`.
    let d = mul_tensor(
        exponent,
        &pow_tensor_tensor(self_, &sub_scalar(exponent, 1.0, 1.0)?)?,
    )?;
    let d = mul_tensor(g, &d)?;
    where_self(&eq_scalar(exponent, 0.0)?, &zeros_of(&d), &d)
}

/// Backward of `pow.Tensor_Tensor` for the exponent: `grad * result * log(self)`, zero where
/// `self == 0` and `exponent >= 0`.
pub fn pow_backward_exponent<T: Backend>(
    g: &V<T>,
    self_: &V<T>,
    exponent: &V<T>,
    result: &V<T>,
) -> Res<V<T>> {
    // PyTorch: `grad * where(self == 0 & exponent >= 0, 0, result * log(self))` (the gradient
    // outside the `where`: a NaN gradient stays NaN in second order).
    let d = mul_tensor(result, &log(self_)?)?;
    let at_zero = mul_tensor(&eq_scalar(self_, 0.0)?, &ge_scalar(exponent, 0.0)?)?;
    mul_tensor(g, &where_self(&at_zero, &zeros_of(&d), &d)?)
}

/// Backward of `gelu` (`approximate` is `"none"` or `"tanh"`).
pub fn gelu_backward<T: Backend>(g: &V<T>, self_: &V<T>, approximate: &str) -> Res<V<T>> {
    let x = self_;
    let d = if approximate == "tanh" {
        let k = (2.0 / std::f64::consts::PI).sqrt();
        let c = 0.044715;
        let x2 = mul_tensor(x, x)?;
        let inner = mul_scalar(
            &mul_tensor(x, &add_scalar(&mul_scalar(&x2, c)?, 1.0, 1.0)?)?,
            k,
        )?;
        let th = tanh(&inner)?;
        let dinner = mul_scalar(&add_scalar(&mul_scalar(&x2, 3.0 * c)?, 1.0, 1.0)?, k)?;
        let left = mul_scalar(&add_scalar(&th, 1.0, 1.0)?, 0.5)?;
        let sech2 = add_scalar(&neg(&mul_tensor(&th, &th)?)?, 1.0, 1.0)?;
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
        add_tensor(&cdf, &mul_tensor(x, &pdf)?, 1.0)?
    };
    mul_tensor(g, &d)
}

/// Backward of `clamp`: the gradient passes where `min < self < max`.
pub fn clamp_backward<T: Backend>(
    g: &V<T>,
    self_: &V<T>,
    min: Option<f64>,
    max: Option<f64>,
) -> Res<V<T>> {
    // PyTorch 2.15: no gradient where the input is exactly at a bound.
    let keep = match (min, max) {
        (Some(lo), Some(hi)) => mul_tensor(&gt_scalar(self_, lo)?, &lt_scalar(self_, hi)?)?,
        (Some(lo), None) => gt_scalar(self_, lo)?,
        (None, Some(hi)) => lt_scalar(self_, hi)?,
        (None, None) => return Ok(g.clone()),
    };
    where_self(&keep, g, &zeros_of(g))
}

/// The share of the gradient of `maximum(a, b)` that goes to `a`: 0 where `a < b`, ½ on ties,
/// else 1.
pub fn maximum_mask<T: Backend>(a: &V<T>, b: &V<T>) -> Res<V<T>> {
    // PyTorch: `where(a == b, g / 2, g).masked_fill(a < b, 0)`, so a NaN on either side
    // passes the whole gradient.
    // 1 - (a < b) - (a == b) / 2, the boolean masks promoted to the float type.
    let lost = add_tensor(&mul_scalar(&eq_tensor(a, b)?, 0.5)?, &lt_tensor(a, b)?, 1.0)?;
    add_scalar(&neg(&lost)?, 1.0, 1.0)
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

/// `slice` bounds with PyTorch's defaults, negative values and clamping.
pub fn slice_bounds(n: i64, start: Option<i64>, end: Option<i64>) -> (i64, i64) {
    let fix = |x: i64| if x < 0 { (x + n).max(0) } else { x.min(n) };
    let s = fix(start.unwrap_or(0));
    let e = fix(end.unwrap_or(n)).max(s);
    (s, e)
}

/// Backward of `slice.Tensor`: normalises the bounds, then `slice_backward`.
pub fn slice_backward_wrapper<T: Backend>(
    g: &V<T>,
    sizes: &[usize],
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Res<V<T>> {
    let ax = crate::shape::norm_dim(dim, sizes.len()).map_err(AutogradError::backend)?;
    let (s, e) = slice_bounds(sizes[ax] as i64, start, end);
    slice_backward(g, &dims(sizes), ax as i64, s, e, step)
}

/// Backward of `cat`: the gradient cut into the inputs' pieces.
/// Only the inputs' sizes are saved (as PyTorch's `to_args_sizes`), so modifying an input in
/// place after `cat` is no error.
pub fn cat_tensors_backward<T: Backend>(g: &V<T>, sizes: &[Vec<i64>], dim: i64) -> Res<Vec<V<T>>> {
    let ax = crate::shape::norm_dim(dim, g.shape().len()).map_err(AutogradError::backend)?;
    let mut at = 0i64;
    sizes
        .iter()
        .map(|s| {
            let n = s[ax];
            let piece = slice_tensor(g, ax as i64, Some(at), Some(at + n), 1);
            at += n;
            piece
        })
        .collect()
}

/// Backward of `unbind`: the gradients stacked back; undefined ones are zeros.
pub fn unbind_backward<T: Backend>(grads: &[Option<V<T>>], dim: i64, sizes: &[usize]) -> Res<V<T>> {
    let ax = crate::shape::norm_dim(dim, sizes.len()).map_err(AutogradError::backend)?;
    let mut piece = sizes.to_vec();
    piece.remove(ax);
    stack(&grads_or_zeros(grads, |_| piece.clone())?, ax as i64)
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

/// Backward of `select.int`: the gradient put back at `index` of `dim`, zeros elsewhere.
pub fn select_backward_wrapper<T: Backend>(
    g: &V<T>,
    sizes: &[usize],
    dim: i64,
    index: i64,
) -> Res<V<T>> {
    let ax = crate::shape::norm_dim(dim, sizes.len()).map_err(AutogradError::backend)?;
    let n = sizes[ax] as i64;
    let i = if index < 0 { index + n } else { index };
    slice_backward_wrapper(
        &unsqueeze(g, ax as i64)?,
        sizes,
        ax as i64,
        Some(i),
        Some(i + 1),
        1,
    )
}

/// The piece size of `chunk(n elements, chunks)`: PyTorch's `ceil(n / chunks)`.
pub fn chunk_size(n: i64, chunks: i64) -> i64 {
    ((n + chunks - 1) / chunks.max(1)).max(1)
}

/// Backward of `split`/`chunk`: the pieces' gradients concatenated; undefined ones are zeros.
pub fn split_backward<T: Backend>(
    grads: &[Option<V<T>>],
    sizes: &[usize],
    dim: i64,
    split_size: i64,
) -> Res<V<T>> {
    let ax = crate::shape::norm_dim(dim, sizes.len()).map_err(AutogradError::backend)?;
    let n = sizes[ax] as i64;
    let piece = |i: usize| {
        let mut p = sizes.to_vec();
        p[ax] = (split_size.min(n - i as i64 * split_size)).max(0) as usize;
        p
    };
    cat(&grads_or_zeros(grads, piece)?, ax as i64)
}

/// Backward of `index_select`.
pub fn index_select_backward<T: Backend>(
    g: &V<T>,
    sizes: &[usize],
    dim: i64,
    index: &V<T>,
) -> Res<V<T>> {
    index_add(
        &new_zeros(g, &dims(sizes), None, None, None, None)?,
        dim,
        index,
        g,
        1.0,
    )
}

/// Backward of `gather`.
pub fn gather_backward<T: Backend>(g: &V<T>, sizes: &[usize], dim: i64, index: &V<T>) -> Res<V<T>> {
    scatter_add(
        &new_zeros(g, &dims(sizes), None, None, None, None)?,
        dim,
        index,
        g,
    )
}

/// Backward of `mse_loss` for its first argument `a` (the other's is this with `a`, `b` swapped).
pub fn mse_loss_backward<T: Backend>(g: &V<T>, a: &V<T>, b: &V<T>, reduction: i64) -> Res<V<T>> {
    // PyTorch's kernel subtracts in the promoted type: a boolean operand counts as 0/1.
    let number = |v: &V<T>| match v.with_data(|t| t.dtype()) {
        "bool" => mul_scalar(v, 1.0),
        _ => Ok(v.clone()),
    };
    let d = mul_scalar(
        &mul_tensor(&sub_tensor(&number(a)?, &number(b)?, 1.0)?, g)?,
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

/// Backward of `layer_norm` for input, weight and bias (recomputes the statistics with
/// differentiable ops, so second derivatives work).
#[allow(clippy::type_complexity)]
pub fn layer_norm_backward<T: Backend>(
    g: &V<T>,
    input: &V<T>,
    normalized_shape: &[i64],
    weight: Option<&V<T>>,
    bias: Option<&V<T>>,
    eps: f64,
    mask: [bool; 3],
) -> Res<(Option<V<T>>, Option<V<T>>, Option<V<T>>)> {
    let nd = input.shape().len();
    let red: Vec<i64> = ((nd - normalized_shape.len()) as i64..nd as i64).collect();
    let mean = mean_dim(input, Some(&red), true, None)?;
    let xc = sub_tensor(input, &mean, 1.0)?;
    let var = mean_dim(&mul_tensor(&xc, &xc)?, Some(&red), true, None)?;
    let rstd = rsqrt(&add_scalar(&var, eps, 1.0)?)?;
    let xhat = mul_tensor(&xc, &rstd)?;
    let gi = mask[0]
        .then(|| {
            let gx = match weight {
                Some(w) => mul_tensor(g, w)?,
                None => g.clone(),
            };
            let m1 = mean_dim(&gx, Some(&red), true, None)?;
            let m2 = mean_dim(&mul_tensor(&gx, &xhat)?, Some(&red), true, None)?;
            mul_tensor(
                &rstd,
                &sub_tensor(&sub_tensor(&gx, &m1, 1.0)?, &mul_tensor(&xhat, &m2)?, 1.0)?,
            )
        })
        .transpose()?;
    let gw = match weight {
        Some(w) if mask[1] => Some(sum_to(&mul_tensor(g, &xhat)?, &w.shape())?),
        _ => None,
    };
    let gb = match bias {
        Some(b) if mask[2] => Some(sum_to(g, &b.shape())?),
        _ => None,
    };
    Ok((gi, gw, gb))
}

/// Backward of `embedding` (dense): rows of the gradient added into the used weight rows.
pub fn embedding_backward<T: Backend>(
    g: &V<T>,
    indices: &V<T>,
    num_weights: usize,
    padding_idx: i64,
    scale_grad_by_freq: bool,
) -> Res<V<T>> {
    let gs = g.shape();
    let d = gs[gs.len() - 1] as i64;
    let idx = reshape(indices, &[-1])?;
    let mut g2 = reshape(g, &[-1, d])?;
    if padding_idx >= 0 {
        g2 = mul_tensor(&g2, &unsqueeze(&ne_scalar(&idx, padding_idx as f64)?, 1)?)?;
    }
    if scale_grad_by_freq {
        let ones = V::<T>::from_data(idx.with_data(|t| t.ones_like()));
        let counts = index_add(
            &new_zeros(&idx, &[num_weights as i64], None, None, None, None)?,
            0,
            &idx,
            &ones,
            1.0,
        )?;
        g2 = div_tensor(&g2, &unsqueeze(&index_select(&counts, 0, &idx)?, 1)?)?;
    }
    index_add(
        &new_zeros(&g2, &[num_weights as i64, d], None, None, None, None)?,
        0,
        &idx,
        &g2,
        1.0,
    )
}

// ---- forward-mode (JVP) helpers: PyTorch's FunctionsManual functions that forward formulas
// call. Built from the generated ops like the backward helpers, so tangents of tangents
// (nested dual levels) and forward-over-reverse work through them.

/// The tangent of `max.dim`'s values: the tangent's elements at the selected indices
/// (PyTorch's `gather_with_keepdimed_indices`).
pub fn gather_with_keepdimed_indices<T: Backend>(
    self_t: &V<T>,
    dim: i64,
    indices: &V<T>,
    keepdim: bool,
) -> Res<V<T>> {
    if self_t.shape().is_empty() {
        return Ok(self_t.clone());
    }
    let idx = if keepdim {
        indices.clone()
    } else {
        unsqueeze(indices, dim)?
    };
    let out = gather(self_t, dim, &idx, false)?;
    if keepdim {
        Ok(out)
    } else {
        squeeze_dim(&out, dim)
    }
}

/// The tangent of `amax` (PyTorch's `amaxamin_jvp`): the mean of the tangent over the tied
/// maxima.
pub fn amaxamin_jvp<T: Backend>(
    self_p: &V<T>,
    self_t: &V<T>,
    result: &V<T>,
    dim: &[i64],
    keepdim: bool,
) -> Res<V<T>> {
    let nd = self_p.shape().len();
    let r = restore_reduced_dims(result, Some(dim), keepdim, nd)?;
    let mask = eq_tensor(self_p, &r)?;
    let num = sum_dim_intlist(&mul_tensor(self_t, &mask)?, Some(dim), keepdim, None)?;
    div_tensor(&num, &sum_dim_intlist(&mask, Some(dim), keepdim, None)?)
}

/// The tangent of `logsumexp` (PyTorch's `logsumexp_jvp`): the softmax-weighted sum of the
/// tangent, computed with the exp-normalize trick.
pub fn logsumexp_jvp<T: Backend>(
    self_p: &V<T>,
    self_t: &V<T>,
    dim: &[i64],
    keepdim: bool,
) -> Res<V<T>> {
    let shifted = if self_p.shape().iter().product::<usize>() > 0 {
        sub_tensor(self_p, &amax(self_p, dim, true)?, 1.0)?
    } else {
        self_p.clone()
    };
    let e = exp(&shifted)?;
    let sumexp_p = sum_dim_intlist(&e, Some(dim), keepdim, None)?;
    let sumexp_t = sum_dim_intlist(&mul_tensor(&e, self_t)?, Some(dim), keepdim, None)?;
    div_tensor(&sumexp_t, &sumexp_p)
}

/// PyTorch's `apply_loss_reduction`: 0 none, 1 mean, 2 sum.
pub fn apply_loss_reduction<T: Backend>(unreduced: &V<T>, reduction: i64) -> Res<V<T>> {
    match reduction {
        1 => mean(unreduced, None),
        2 => sum(unreduced, None),
        _ => Ok(unreduced.clone()),
    }
}

/// The tangent of `native_dropout`'s output: the tangent scaled and masked like the input
/// (in training), the tangent itself in evaluation mode.
pub fn native_dropout_jvp<T: Backend>(
    input_t: &V<T>,
    mask: &V<T>,
    p: f64,
    train: Option<bool>,
) -> Res<V<T>> {
    if !train.unwrap_or(true) {
        return Ok(input_t.clone());
    }
    let scale = if p == 1.0 { 0.0 } else { 1.0 / (1.0 - p) };
    mul_tensor(&mul_scalar(input_t, scale)?, mask)
}

/// The tangent of `layer_norm` (PyTorch's `layer_norm_jvp` followed by `_affine_jvp`). The
/// statistics PyTorch saves from `native_layer_norm` (`mean`, `rstd`) are recomputed here
/// from the primal with differentiable ops.
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_jvp<T: Backend>(
    input_p: &V<T>,
    input_t: &V<T>,
    weight_p: Option<&V<T>>,
    weight_t: Option<&V<T>>,
    bias_t: Option<&V<T>>,
    normalized_shape: &[i64],
    eps: f64,
) -> Res<V<T>> {
    let nd = input_p.shape().len();
    let red: Vec<i64> = ((nd - normalized_shape.len()) as i64..nd as i64).collect();
    let numel: usize = input_p.shape()[nd - normalized_shape.len()..]
        .iter()
        .product();
    let mean_p = mean_dim(input_p, Some(&red), true, None)?;
    let xc = sub_tensor(input_p, &mean_p, 1.0)?;
    let var = mean_dim(&mul_tensor(&xc, &xc)?, Some(&red), true, None)?;
    let invstd_p = rsqrt(&add_scalar(&var, eps, 1.0)?)?;
    let tc = sub_tensor(input_t, &mean_dim(input_t, Some(&red), true, None)?, 1.0)?;
    let dot = sum_dim_intlist(&mul_tensor(&tc, &xc)?, Some(&red), true, None)?;
    let invstd_t = div_scalar(
        &mul_tensor(&neg(&pow_tensor_scalar(&invstd_p, 3.0)?)?, &dot)?,
        numel as f64,
    )?;
    let mut result_t = add_tensor(
        &mul_tensor(&tc, &invstd_p)?,
        &mul_tensor(&xc, &invstd_t)?,
        1.0,
    )?;
    if let Some(w) = weight_p {
        let result_p = mul_tensor(&xc, &invstd_p)?;
        result_t = mul_tensor(&result_t, w)?;
        if let Some(wt) = weight_t {
            result_t = add_tensor(&result_t, &mul_tensor(&result_p, wt)?, 1.0)?;
        }
    }
    match bias_t {
        Some(b) => add_tensor(&result_t, b, 1.0),
        None => Ok(result_t),
    }
}
