//! The kernels of the normalization ops and of `var.correction` (issue 30), composed of
//! candle's ops: `_native_batch_norm_legit` (its running statistics updated in place),
//! `_native_batch_norm_legit_no_training`, `_native_batch_norm_legit.no_stats`,
//! `native_batch_norm_backward`, `var.correction`, `native_layer_norm`,
//! `native_layer_norm_backward`, `native_group_norm` and `native_group_norm_backward`
//! (the last four share their math over rows), as PyTorch's CPU kernels compute them
//! (the mean, then the sum of squared deviations from it).

use super::{Ce, R, count, sc, sum_axes, w};
use crate::tensor::CandleTensor;
use autograd_opset::meta;
use candle_core::Tensor;

/// Every axis but the channels' (1).
fn channel_axes(x: &Tensor) -> Vec<usize> {
    (0..x.rank()).filter(|a| *a != 1).collect()
}

/// A per-channel vector `[C]` shaped `[1, C, 1, ...]` to broadcast against `x`.
fn per_channel(v: &Tensor, x: &Tensor) -> R<Tensor> {
    let mut s = vec![1; x.rank()];
    s[1] = x.dims()[1];
    v.reshape(s).ce()
}

/// `1 / sqrt(var + eps)`.
fn invstd(var: &Tensor, eps: f64) -> R<Tensor> {
    var.broadcast_add(&sc(eps, var)?)
        .ce()?
        .sqrt()
        .ce()?
        .recip()
        .ce()
}

/// `(x - mean) * invstd * weight + bias`, the statistics shaped per channel.
fn normalize(
    x: &Tensor,
    mean: &Tensor,
    invstd: &Tensor,
    weight: Option<&CandleTensor>,
    bias: Option<&CandleTensor>,
) -> R<Tensor> {
    let mut y = x.broadcast_sub(mean).ce()?.broadcast_mul(invstd).ce()?;
    if let Some(wt) = weight {
        y = y.broadcast_mul(&per_channel(&wt.t, x)?).ce()?;
    }
    if let Some(b) = bias {
        y = y.broadcast_add(&per_channel(&b.t, x)?).ce()?;
    }
    Ok(y)
}

/// `(1 - momentum) * running + momentum * batch`, written into `running`.
fn update(running: &mut CandleTensor, batch: &Tensor, momentum: f64) -> R<()> {
    let old = running.t.affine(1.0 - momentum, 0.0).ce()?;
    let new = batch
        .affine(momentum, 0.0)
        .ce()?
        .to_dtype(old.dtype())
        .ce()?;
    *running = w(old.add(&new.reshape(old.dims()).ce()?).ce()?);
    Ok(())
}

/// `t` (of `m * n` elements) as a contiguous `[m, n]` matrix.
fn rows_of(t: &Tensor, rows: meta::LayerNormRows) -> R<Tensor> {
    t.contiguous().ce()?.reshape((rows.m, rows.n)).ce()
}

/// One row of `rows`' width (a layer norm's weight or bias).
fn one_row(rows: meta::LayerNormRows) -> meta::LayerNormRows {
    meta::LayerNormRows { m: 1, n: rows.n }
}

/// Each row's mean and `rstd`, `[m, 1]`, and the normalized rows of `x` (`[m, n]`), as
/// PyTorch's layer and group norm CPU kernels compute them: a row without elements has mean
/// 0 and a NaN `rstd`.
fn row_stats(x: &Tensor, rows: meta::LayerNormRows, eps: f64) -> R<(Tensor, Tensor, Tensor)> {
    if rows.n == 0 {
        let zeros = Tensor::zeros((rows.m, 1), x.dtype(), x.device()).ce()?;
        let nan = zeros.broadcast_add(&sc(f64::NAN, x)?).ce()?;
        return Ok((zeros, nan, x.clone()));
    }
    let n = sc(rows.n as f64, x)?;
    let mean = x.sum_keepdim(1).ce()?.broadcast_div(&n).ce()?;
    let xc = x.broadcast_sub(&mean).ce()?;
    let var = xc.sqr().ce()?.sum_keepdim(1).ce()?.broadcast_div(&n).ce()?;
    let rstd = invstd(&var, eps)?;
    let y = xc.broadcast_mul(&rstd).ce()?;
    Ok((mean, rstd, y))
}

/// The input's gradient of a normalization over rows of `n` elements (PyTorch's layer and
/// group norm backward kernels): `rstd * gxhat + b * x + c` per row, `gxhat` the output's
/// gradient times the weight, the statistics `[m, 1]` columns.
fn rows_grad_input(
    x: &Tensor,
    gxhat: &Tensor,
    (mean, rstd): (&Tensor, &Tensor),
    n: usize,
) -> R<Tensor> {
    let n = sc(n as f64, x)?;
    let ds = gxhat.mul(x).ce()?.sum_keepdim(1).ce()?;
    let db = gxhat.sum_keepdim(1).ce()?;
    let rstd3 = rstd.powf(3.0).ce()?;
    let b = db.mul(mean).ce()?.sub(&ds).ce()?.mul(&rstd3).ce()?;
    let b = b.broadcast_div(&n).ce()?;
    let c = db.mul(rstd).ce()?.broadcast_div(&n).ce()?;
    let c = b.mul(mean).ce()?.neg().ce()?.sub(&c).ce()?;
    let gi = gxhat.broadcast_mul(rstd).ce()?;
    gi.add(&x.broadcast_mul(&b).ce()?)
        .ce()?
        .broadcast_add(&c)
        .ce()
}

/// A group norm's rows (each sample's group) and the `[1, C, 1]` shape of its weight and
/// bias against the `[N, C, HxW]` input.
fn group_rows(l: meta::GroupNormLayout) -> meta::LayerNormRows {
    meta::LayerNormRows {
        m: l.rows(),
        n: l.row_len(),
    }
}

/// `t` (of `N * C * HxW` elements) as `[N, C, HxW]`.
fn channels(t: &Tensor, l: meta::GroupNormLayout) -> R<Tensor> {
    t.contiguous().ce()?.reshape((l.n, l.c, l.hxw)).ce()
}

impl CandleTensor {
    /// `_native_batch_norm_legit` and its `.no_stats` and `_no_training` forms: the output,
    /// the saved mean and inverse standard deviation (empty `[0]` in evaluation, as
    /// PyTorch's CPU kernel returns); in training, running statistics given are updated in
    /// place with the unbiased variance.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn batch_norm_legit(
        input: &Self,
        weight: Option<&Self>,
        bias: Option<&Self>,
        running: Option<(&mut Self, &mut Self)>,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> R<(Self, Self, Self)> {
        let numel = |t: Option<&Self>| t.map(|t| t.shape().iter().product::<usize>());
        let (rm, rv) = match &running {
            Some((m, v)) => (numel(Some(&**m)), numel(Some(&**v))),
            None => (None, None),
        };
        let sizes = meta::ChannelSizes {
            weight: numel(weight),
            bias: numel(bias),
            running_mean: rm,
            running_var: rv,
            ..Default::default()
        };
        meta::batch_norm_legit(input.shape(), &sizes, training)?;
        let x = &input.t;
        if !training {
            let (rm, rv) = running.expect("evaluation has running statistics");
            let mean = per_channel(&rm.t, x)?;
            let is = per_channel(&invstd(&rv.t, eps)?, x)?;
            let y = normalize(x, &mean, &is, weight, bias)?;
            let empty = || Tensor::zeros(0, x.dtype(), x.device()).ce().map(w);
            return Ok((w(y), empty()?, empty()?));
        }
        let axes = channel_axes(x);
        let n = count(x, &axes) as f64;
        let mean = sum_axes(x, &axes, true)?.broadcast_div(&sc(n, x)?).ce()?;
        let m2 = sum_axes(&x.broadcast_sub(&mean).ce()?.sqr().ce()?, &axes, true)?;
        let is = invstd(&m2.broadcast_div(&sc(n, x)?).ce()?, eps)?;
        let y = normalize(x, &mean, &is, weight, bias)?;
        if let Some((rm, rv)) = running {
            update(rm, &mean, momentum)?;
            update(rv, &m2.broadcast_div(&sc(n - 1.0, x)?).ce()?, momentum)?;
        }
        let flat = |t: &Tensor| t.flatten_all().ce().map(w);
        Ok((w(y), flat(&mean)?, flat(&is)?))
    }

    /// `native_batch_norm_backward`: PyTorch's `batch_norm_backward_cpu_template`, from the
    /// saved statistics in training and the running ones in evaluation. Outputs the mask
    /// leaves out are zeros.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn native_batch_norm_backward(
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
        let numel = |t: Option<&Self>| t.map(|t| t.shape().iter().product::<usize>());
        // The statistics the mode reads.
        let read = |t: Option<&Self>, read: bool| if read { numel(t) } else { None };
        let sizes = meta::ChannelSizes {
            weight: numel(weight),
            running_mean: read(running_mean, !train),
            running_var: read(running_var, !train),
            save_mean: read(save_mean, train),
            save_invstd: read(save_invstd, train),
            bias: None,
        };
        let c = meta::batch_norm_backward_channels(grad_out.shape(), input.shape(), &sizes)?;
        let (x, go) = (&input.t, &grad_out.t);
        use meta::Stat;
        let stat = |t: Option<&Self>, which| meta::batch_norm_stat(t.map(|t| t.t.clone()), which);
        let (mean, is) = if train {
            (
                stat(save_mean, Stat::SaveMean)?,
                stat(save_invstd, Stat::SaveInvstd)?,
            )
        } else {
            let rv = stat(running_var, Stat::RunningVar)?;
            (stat(running_mean, Stat::RunningMean)?, invstd(&rv, eps)?)
        };
        let (mean, is) = (per_channel(&mean, x)?, per_channel(&is, x)?);
        let axes = channel_axes(x);
        let n = count(x, &axes) as f64;
        let xc = x.broadcast_sub(&mean).ce()?;
        let sum = sum_axes(go, &axes, true)?;
        let dotp = sum_axes(&xc.mul(go).ce()?, &axes, true)?;
        let scale = match weight {
            Some(wt) => is.broadcast_mul(&per_channel(&wt.t, x)?).ce()?,
            None => is.clone(),
        };
        let gi = if train {
            let k = dotp
                .mul(&is.sqr().ce()?)
                .ce()?
                .broadcast_div(&sc(n, x)?)
                .ce()?;
            let mean_g = sum.broadcast_div(&sc(n, x)?).ce()?;
            let centered = go
                .broadcast_sub(&mean_g)
                .ce()?
                .sub(&xc.broadcast_mul(&k).ce()?)
                .ce()?;
            centered.broadcast_mul(&scale).ce()?
        } else {
            go.broadcast_mul(&scale).ce()?
        };
        let zeros = || Tensor::zeros(c, x.dtype(), x.device()).ce();
        let gw = match output_mask[1] {
            true => dotp.mul(&is).ce()?.flatten_all().ce()?,
            false => zeros()?,
        };
        let gb = match output_mask[2] {
            true => sum.flatten_all().ce()?,
            false => zeros()?,
        };
        Ok((w(gi), w(gw), w(gb)))
    }

    /// `native_layer_norm`: the input as `[M, N]` rows normalized by their mean and `rstd`
    /// (PyTorch's CPU kernel: a row without elements has mean 0 and a NaN `rstd`); the
    /// statistics shaped the input's leading dims, then ones.
    pub(super) fn native_layer_norm(
        input: &Self,
        normalized_shape: &[i64],
        weight: Option<&Self>,
        bias: Option<&Self>,
        eps: f64,
    ) -> R<(Self, Self, Self)> {
        let shape = |t: &Self| t.shape().to_vec();
        let (ws, bs) = (weight.map(shape), bias.map(shape));
        let rows = meta::layer_norm(
            input.shape(),
            normalized_shape,
            ws.as_deref(),
            bs.as_deref(),
        )?;
        let x = rows_of(&input.t, rows)?;
        let stat = meta::layer_norm_stat_shape(input.shape(), normalized_shape.len());
        let (mean, rstd, mut y) = row_stats(&x, rows, eps)?;
        if let Some(wt) = weight {
            y = y.broadcast_mul(&rows_of(&wt.t, one_row(rows))?).ce()?;
        }
        if let Some(b) = bias {
            y = y.broadcast_add(&rows_of(&b.t, one_row(rows))?).ce()?;
        }
        let out = |t: Tensor, s: &[usize]| t.reshape(s).ce().map(w);
        Ok((out(y, input.shape())?, out(mean, &stat)?, out(rstd, &stat)?))
    }

    /// `native_layer_norm_backward`: PyTorch's `LayerNormBackwardKernelImpl` from the saved
    /// `mean` and `rstd` (`stats`), over `[M, N]` rows. Outputs the mask leaves out are zeros.
    pub(super) fn native_layer_norm_backward(
        grad_out: &Self,
        input: &Self,
        normalized_shape: &[i64],
        stats: [&Self; 2],
        weight: Option<&Self>,
        bias: Option<&Self>,
        output_mask: [bool; 3],
    ) -> R<(Self, Self, Self)> {
        let shape = |t: &Self| t.shape().to_vec();
        let (ws, bs) = (weight.map(shape), bias.map(shape));
        let numel = |t: &Self| t.shape().iter().product::<usize>();
        let rows = meta::layer_norm_backward(
            grad_out.shape(),
            input.shape(),
            normalized_shape,
            [numel(stats[0]), numel(stats[1])],
            ws.as_deref(),
            bs.as_deref(),
        )?;
        let (x, go) = (rows_of(&input.t, rows)?, rows_of(&grad_out.t, rows)?);
        let col = meta::LayerNormRows { m: rows.m, n: 1 };
        let (mean, rstd) = (rows_of(&stats[0].t, col)?, rows_of(&stats[1].t, col)?);
        let gxhat = match weight {
            Some(wt) => go.broadcast_mul(&rows_of(&wt.t, one_row(rows))?).ce()?,
            None => go.clone(),
        };
        let gi = rows_grad_input(&x, &gxhat, (&mean, &rstd), rows.n)?;
        let xhat = x.broadcast_sub(&mean).ce()?.broadcast_mul(&rstd).ce()?;
        let ps: Vec<usize> = normalized_shape
            .iter()
            .map(|&d| d.max(0) as usize)
            .collect();
        let out = |on: bool, t: Tensor, s: &[usize]| -> R<Self> {
            let t = if on { t } else { t.zeros_like().ce()? };
            t.reshape(s).ce().map(w)
        };
        Ok((
            out(output_mask[0], gi, input.shape())?,
            out(
                output_mask[1],
                sum_axes(&go.mul(&xhat).ce()?, &[0], false)?,
                &ps,
            )?,
            out(output_mask[2], sum_axes(&go, &[0], false)?, &ps)?,
        ))
    }

    /// `native_group_norm` on checked arguments (`l`): PyTorch's CPU kernel over the
    /// (sample, group) rows of the flat input; the statistics shaped `[N, group]`.
    pub(super) fn native_group_norm(
        input: &Self,
        weight: Option<&Self>,
        bias: Option<&Self>,
        l: meta::GroupNormLayout,
        eps: f64,
    ) -> R<(Self, Self, Self)> {
        let rows = group_rows(l);
        let (mean, rstd, y) = row_stats(&rows_of(&input.t, rows)?, rows, eps)?;
        let mut y = channels(&y, l)?;
        let per_channel = |t: &Self| t.t.reshape((1, l.c, 1)).ce();
        if let Some(wt) = weight {
            y = y.broadcast_mul(&per_channel(wt)?).ce()?;
        }
        if let Some(b) = bias {
            y = y.broadcast_add(&per_channel(b)?).ce()?;
        }
        let out = |t: Tensor, s: &[usize]| t.reshape(s).ce().map(w);
        let stat = [l.n, l.group];
        Ok((out(y, input.shape())?, out(mean, &stat)?, out(rstd, &stat)?))
    }

    /// `native_group_norm_backward` on checked arguments (`l`): PyTorch's
    /// `GroupNormBackwardKernelImpl` from the saved `mean` and `rstd` (`stats`). Outputs the
    /// mask leaves out are zeros.
    pub(super) fn native_group_norm_backward(
        grad_out: &Self,
        input: &Self,
        stats: [&Self; 2],
        weight: Option<&Self>,
        l: meta::GroupNormLayout,
        output_mask: [bool; 3],
    ) -> R<(Self, Self, Self)> {
        let rows = group_rows(l);
        let col = meta::LayerNormRows { m: rows.m, n: 1 };
        let (mean, rstd) = (rows_of(&stats[0].t, col)?, rows_of(&stats[1].t, col)?);
        let (x, go) = (rows_of(&input.t, rows)?, channels(&grad_out.t, l)?);
        let gxhat = match weight {
            Some(wt) => go.broadcast_mul(&wt.t.reshape((1, l.c, 1)).ce()?).ce()?,
            None => go.clone(),
        };
        let gxhat = rows_of(&gxhat, rows)?;
        let gi = rows_grad_input(&x, &gxhat, (&mean, &rstd), rows.n)?;
        let xhat = x.broadcast_sub(&mean).ce()?.broadcast_mul(&rstd).ce()?;
        let xhat = channels(&xhat, l)?;
        let out = |on: bool, t: Tensor, s: &[usize]| -> R<Self> {
            let t = if on { t } else { t.zeros_like().ce()? };
            t.reshape(s).ce().map(w)
        };
        let gw = sum_axes(&go.mul(&xhat).ce()?, &[0, 2], false)?;
        Ok((
            out(output_mask[0], gi, input.shape())?,
            out(output_mask[1], gw, &[l.c])?,
            out(output_mask[2], sum_axes(&go, &[0, 2], false)?, &[l.c])?,
        ))
    }

    /// `var.correction`: the sum of squared deviations from the mean over `dim` divided by
    /// `max(0, n - correction)` (PyTorch's; 0 / 0 is NaN, x / 0 infinity).
    pub(super) fn var_correction(
        self_: &Self,
        dim: Option<&[i64]>,
        correction: Option<f64>,
        keepdim: bool,
    ) -> R<Self> {
        let x = &self_.t;
        let axes = meta::var(self_.shape(), dim)?;
        let n = count(x, &axes) as f64;
        let mean = sum_axes(x, &axes, true)?.broadcast_div(&sc(n, x)?).ce()?;
        let m2 = sum_axes(&x.broadcast_sub(&mean).ce()?.sqr().ce()?, &axes, keepdim)?;
        let dof = (n - correction.unwrap_or(1.0)).max(0.0);
        Ok(w(m2.broadcast_div(&sc(dof, x)?).ce()?))
    }
}
