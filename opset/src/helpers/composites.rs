//! PyTorch's composites (CompositeImplicitAutograd functions without a derivatives entry):
//! `matmul`, `chunk`, `nll_loss`, `nll_loss_nd`, `cross_entropy_loss`, built from the
//! differentiable ops, so their nodes are those of the ops PyTorch dispatches to. Over
//! `Variable<T>` only (no backward formula calls them).

use super::*;

/// `matmul`, PyTorch's composite (`_matmul_impl`): by the ranks, a dot product, a
/// matrix-vector or matrix product, a folded matrix product (a batch folded into the rows),
/// or a batched product of the broadcast inputs; so its errors and nodes are those of the
/// op PyTorch dispatches to.
pub fn matmul<T: Backend>(a: &V<T>, b: &V<T>) -> Res<V<T>> {
    let (sa, sb) = (a.shape(), b.shape());
    let (da, db) = (sa.len(), sb.len());
    if da == 0 || db == 0 {
        return Err(runtime_error(format!(
            "both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
        )));
    }
    match (da, db) {
        (1, 1) => {
            if sa[0] != sb[0] {
                let (x, y) = (sa[0], sb[0]);
                return Err(runtime_error(format!(
                    "inconsistent tensor size, expected tensor [{x}] and src [{y}] to have the same number of elements, but got {x} and {y} elements respectively"
                )));
            }
            sum(&mul_tensor(a, b)?, None)
        }
        (2, 1) => mv(a, b),
        (1, 2) => squeeze_dim(&mm(&unsqueeze(a, 0)?, b)?, 0),
        (2, 2) => mm(a, b),
        _ if should_fold(a, b) => folded_matmul(a, b),
        _ => batched_matmul(a, b),
    }
}

/// A matrix times a vector, with `mv`'s error.
fn mv<T: Backend>(m: &V<T>, v: &V<T>) -> Res<V<T>> {
    let (sm, sv) = (m.shape(), v.shape());
    if sm[1] != sv[0] {
        return Err(runtime_error(format!(
            "size mismatch, got input ({}), mat ({}x{}), vec ({})",
            sm[0], sm[0], sm[1], sv[0]
        )));
    }
    squeeze_dim(&mm(m, &unsqueeze(v, 1)?)?, 1)
}

/// PyTorch's `should_fold`: fold the larger (>= 3-D) input's batch into its rows when the
/// other is a vector or a matrix, and either the smaller input requires grad or the fold
/// needs no copy.
fn should_fold<T: Backend>(a: &V<T>, b: &V<T>) -> bool {
    let (da, db) = (a.shape().len(), b.shape().len());
    let larger = da >= db;
    let (dim_t1, dim_t2) = if larger { (da, db) } else { (db, da) };
    if !(dim_t1 >= 3 && dim_t2 <= 2) {
        return false;
    }
    let small_requires_grad = if larger {
        b.requires_grad()
    } else {
        a.requires_grad()
    };
    if small_requires_grad {
        return true;
    }
    if da == 2 {
        return false;
    }
    // The stride test of PyTorch's fold, on the layout of a contiguous input (a value
    // backend has no strides to ask; a non-contiguous input may only change which error
    // text a shape mismatch gets, never a value).
    let mut shape = if larger { a.shape() } else { b.shape() };
    let mut strides: Vec<usize> = vec![1; dim_t1];
    for i in (0..dim_t1 - 1).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    if !larger {
        // t1 is b.mT: its last two dims swapped.
        strides.swap(dim_t1 - 1, dim_t1 - 2);
        shape.swap(dim_t1 - 1, dim_t1 - 2);
    }
    shape.contains(&0) || (0..dim_t1 - 2).all(|i| strides[i] == strides[i + 1] * shape[i + 1])
}

/// The folded product: `(batch * n, k) @ matrix` (or `@ vector`), then the batch restored.
fn folded_matmul<T: Backend>(a: &V<T>, b: &V<T>) -> Res<V<T>> {
    let (da, db) = (a.shape().len(), b.shape().len());
    let transpose = db > da;
    let t1 = if transpose {
        transpose_int(b, -1, -2)?
    } else {
        a.clone()
    };
    let t2 = match (transpose, da) {
        (false, _) => b.clone(),
        (true, 2) => t(a)?,
        (true, _) => a.clone(),
    };
    let s1 = t1.shape();
    let mut out_shape: Vec<usize> = s1[..s1.len() - 1].to_vec();
    let folded = out_shape.iter().product::<usize>() as i64;
    let rows = reshape(&t1, &[folded, s1[s1.len() - 1] as i64])?;
    if t2.shape().len() == 2 {
        out_shape.push(t2.shape()[1]);
        let out = reshape(&mm(&rows, &t2)?, &dims(&out_shape))?;
        return if transpose {
            transpose_int(&out, -1, -2)
        } else {
            Ok(out)
        };
    }
    reshape(&mv(&rows, &t2)?, &dims(&out_shape))
}

/// The batched product: both inputs expanded to the broadcast batch and multiplied by `bmm`.
fn batched_matmul<T: Backend>(a: &V<T>, b: &V<T>) -> Res<V<T>> {
    let (sa, sb) = (a.shape(), b.shape());
    let (da, db) = (sa.len(), sb.len());
    let n = if da > 1 { sa[da - 2] } else { 1 };
    let m1 = sa[da - 1];
    let (m2, p) = if db > 1 {
        (sb[db - 2], sb[db - 1])
    } else {
        (sb[0], 1)
    };
    let batch_a = &sa[..da.saturating_sub(2)];
    let batch_b = &sb[..db.saturating_sub(2)];
    let batch = crate::shape::broadcast_shape(batch_a, batch_b).map_err(AutogradError::backend)?;
    let bp = batch.iter().product::<usize>() as i64;
    let expand_to = |extra: [usize; 2]| {
        let mut s = batch.clone();
        s.extend(extra);
        dims(&s)
    };
    let a3 = reshape(
        &expand(a, &expand_to([n, m1]), false)?,
        &[bp, n as i64, m1 as i64],
    )?;
    let b3 = match db {
        1 => reshape(
            &expand(&unsqueeze(b, 1)?, &expand_to([m2, 1]), false)?,
            &[bp, m2 as i64, 1],
        )?,
        _ => reshape(
            &expand(b, &expand_to([m2, p]), false)?,
            &[bp, m2 as i64, p as i64],
        )?,
    };
    let mut out_shape = batch.clone();
    if da > 1 {
        out_shape.push(n);
    }
    if db > 1 {
        out_shape.push(p);
    }
    reshape(&bmm(&a3, &b3)?, &dims(&out_shape))
}

/// `chunk`, PyTorch's composite: `split` into pieces of `ceil(n / chunks)` (or `chunks`
/// empty pieces of an empty dim), so the pieces are outputs of `split`'s node.
pub fn chunk<T: Backend>(self_: &V<T>, chunks: i64, dim: i64) -> Res<Vec<V<T>>> {
    let nd = self_.shape().len();
    let fail = |m: String| AutogradError::backend(crate::Error::runtime(m));
    if nd == 0 {
        return Err(fail("chunk expects at least a 1-dimensional tensor".into()));
    }
    if chunks <= 0 {
        return Err(fail(format!(
            "chunk expects `chunks` to be greater than 0, got: {chunks}"
        )));
    }
    let ax = crate::shape::norm_dim(dim, nd).map_err(AutogradError::backend)?;
    let n = self_.shape()[ax] as i64;
    if n == 0 {
        return (0..chunks).map(|_| narrow(self_, dim, 0, 0)).collect();
    }
    split_tensor(self_, chunk_size(n, chunks), dim)
}

/// `nll_loss`, PyTorch's composite: the output of `nll_loss_forward`.
pub fn nll_loss<T: Backend>(
    self_: &V<T>,
    target: &V<T>,
    weight: Option<&V<T>>,
    reduction: i64,
    ignore_index: i64,
) -> Res<V<T>> {
    Ok(nll_loss_forward(self_, target, weight, reduction, ignore_index)?.0)
}

/// PyTorch's `nll_loss_nd`: `(C)` and `(N, C)` inputs directly, `(N, C, d1, ...)` as one row
/// of classes per target element.
pub fn nll_loss_nd<T: Backend>(
    input: &V<T>,
    target: &V<T>,
    weight: Option<&V<T>>,
    reduction: i64,
    ignore_index: i64,
) -> Res<V<T>> {
    let (s, ts) = (input.shape(), target.shape());
    if s.is_empty() {
        return Err(runtime_error(
            "Expected 1 or more dimensions (got 0)".into(),
        ));
    }
    let tb = ts.first().copied().unwrap_or(0);
    if s.len() != 1 && s[0] != tb {
        return Err(runtime_error(format!(
            "Expected input batch_size ({}) to match target batch_size ({tb}).",
            s[0]
        )));
    }
    if s.len() <= 2 {
        return nll_loss(input, target, weight, reduction, ignore_index);
    }
    let mut out_size = vec![s[0]];
    out_size.extend(&s[2..]);
    if ts.get(1..) != Some(&s[2..]) {
        return Err(runtime_error(format!(
            "Expected target size {out_size:?}, got {ts:?}"
        )));
    }
    // (N, C, d1, ...) -> (N, d1, ..., C) -> (M, C)
    let nd = s.len() as i64;
    let mut perm: Vec<i64> = vec![0];
    perm.extend(2..nd);
    perm.push(1);
    let m = out_size.iter().product::<usize>() as i64;
    let rows = reshape(&permute(input, &perm)?, &[m, s[1] as i64])?;
    let out = nll_loss(
        &rows,
        &reshape(target, &[m])?,
        weight,
        reduction,
        ignore_index,
    )?;
    match reduction {
        0 => reshape(&out, &dims(&out_size)),
        _ => Ok(out),
    }
}

/// `cross_entropy_loss`, PyTorch's composite: `log_softmax` then `nll_loss_nd` for class
/// indices (with label smoothing, PyTorch's smoothing term), or the class-probability loss
/// when the target has the input's shape.
pub fn cross_entropy_loss<T: Backend>(
    self_: &V<T>,
    target: &V<T>,
    weight: Option<&V<T>>,
    reduction: i64,
    ignore_index: i64,
    label_smoothing: f64,
) -> Res<V<T>> {
    if self_.shape().is_empty() {
        // A 0-d input has the 0-d target's shape: PyTorch takes it for probabilities and
        // refuses the (integer) target.
        return Err(runtime_error(
            "Expected floating point type for target with class probabilities, got Long".into(),
        ));
    }
    if self_.shape() == target.shape() {
        let dtype = target.with_data(|t| t.dtype());
        if !matches!(dtype, "f16" | "bf16" | "f32" | "f64") {
            return Err(runtime_error(format!(
                "Expected floating point type for target with class probabilities, got {}",
                if dtype == "bool" { "Bool" } else { "Long" }
            )));
        }
        if ignore_index >= 0 {
            return Err(runtime_error(
                "ignore_index is not supported for floating point target".into(),
            ));
        }
        return cross_entropy_prob_target(self_, target, weight, reduction, label_smoothing);
    }
    check_label_smoothing(label_smoothing)?;
    let cd = crate::shape::class_dim(self_.shape().len()) as i64;
    let input = log_softmax_int(self_, cd, None)?;
    if label_smoothing > 0.0 {
        return cross_entropy_label_smoothing(
            &input,
            target,
            weight,
            reduction,
            ignore_index,
            label_smoothing,
        );
    }
    nll_loss_nd(&input, target, weight, reduction, ignore_index)
}

fn check_label_smoothing(ls: f64) -> Res<()> {
    if (0.0..=1.0).contains(&ls) {
        return Ok(());
    }
    Err(runtime_error(format!(
        "label_smoothing must be between 0.0 and 1.0. Got: {ls}"
    )))
}

/// A class weight viewed to broadcast along the class dim `cd` of a rank-`nd` input.
fn class_weight<T: Backend>(w: &V<T>, nd: usize, cd: usize) -> Res<V<T>> {
    if nd <= 1 {
        return Ok(w.clone());
    }
    let mut s = vec![1i64; nd];
    s[cd] = w.shape().first().copied().unwrap_or(1) as i64;
    view(w, &s)
}

/// PyTorch's `cross_entropy_loss_prob_target`: `-sum(log_softmax(x) * t * w)`, `t` smoothed.
fn cross_entropy_prob_target<T: Backend>(
    self_: &V<T>,
    target: &V<T>,
    weight: Option<&V<T>>,
    reduction: i64,
    label_smoothing: f64,
) -> Res<V<T>> {
    let nd = self_.shape().len();
    let cd = crate::shape::class_dim(nd);
    let c = self_.shape()[cd];
    if let Some(w) = weight.filter(|w| w.shape() != [c]) {
        return Err(runtime_error(format!(
            "cross_entropy: weight tensor should be defined either for all {c} classes or no classes but got weight tensor of shape: {:?}",
            w.shape()
        )));
    }
    let input = log_softmax_int(self_, cd as i64, None)?;
    check_label_smoothing(label_smoothing)?;
    let target = match label_smoothing > 0.0 {
        true => add_scalar(
            &mul_scalar(target, 1.0 - label_smoothing)?,
            label_smoothing / c as f64,
            1.0,
        )?,
        false => target.clone(),
    };
    let mut prod = mul_tensor(&input, &target)?;
    if let Some(w) = weight {
        prod = mul_tensor(&prod, &class_weight(w, nd, cd)?)?;
    }
    match reduction {
        0 => neg(&sum_dim_intlist(&prod, Some(&[cd as i64]), false, None)?),
        2 => neg(&sum(&prod, None)?),
        1 if prod.shape().contains(&0) => {
            let s = neg(&sum(&prod, None)?)?;
            fill_scalar_(&s, f64::NAN)?;
            Ok(s)
        }
        1 => div_scalar(
            &neg(&sum(&prod, None)?)?,
            (input.shape().iter().product::<usize>() / c) as f64,
        ),
        r => Err(runtime_error(format!(
            "Invalid reduction type encountered in cross_entropy: {r}"
        ))),
    }
}

/// PyTorch's `cross_entropy_loss_label_smoothing` on the log-probabilities `input`:
/// `(1 - ls) * nll + ls / C * smooth`, where `smooth` is `-sum(input * w)` over the classes
/// (0 where the target is ignored), reduced like the loss.
fn cross_entropy_label_smoothing<T: Backend>(
    input: &V<T>,
    target: &V<T>,
    weight: Option<&V<T>>,
    reduction: i64,
    ignore_index: i64,
    label_smoothing: f64,
) -> Res<V<T>> {
    let nd = input.shape().len();
    let cd = crate::shape::class_dim(nd);
    let c = input.shape()[cd];
    let nll = nll_loss_nd(input, target, weight, reduction, ignore_index)?;
    let ignored = eq_scalar(target, ignore_index as f64)?;
    let weighted = match weight {
        Some(w) => mul_tensor(input, &class_weight(w, nd, cd)?)?,
        None => input.clone(),
    };
    let smooth = neg(&sum_dim_intlist(
        &weighted,
        Some(&[cd as i64]),
        false,
        None,
    )?)?;
    let smooth = where_self(&ignored, &zeros_of(&smooth), &smooth)?;
    let reduced = match reduction {
        0 => smooth,
        2 => sum(&smooth, None)?,
        _ => {
            // Normalized by the total weight of the targets kept, as `nll_loss` is.
            let kept = reshape(&ne_scalar(target, ignore_index as f64)?, &[-1])?;
            let total = match weight {
                Some(w) => {
                    let t0 = where_self(&ignored, &zeros_of(target), target)?;
                    let tw = index_select(w, 0, &reshape(&t0, &[-1])?)?;
                    sum(&mul_tensor(&tw, &kept)?, None)?
                }
                None => sum(&kept, None)?,
            };
            div_tensor(&sum(&smooth, None)?, &total)?
        }
    };
    add_tensor(
        &mul_scalar(&nll, 1.0 - label_smoothing)?,
        &mul_scalar(&reduced, label_smoothing / c as f64)?,
        1.0,
    )
}

/// A kernel-style error (PyTorch's `RuntimeError`) as an op's error.
fn runtime_error(message: String) -> AutogradError {
    AutogradError::backend(crate::Error::runtime(message))
}
