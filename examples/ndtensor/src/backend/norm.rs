//! The floating-point kernels of the normalization ops and of `var.correction` (issue 30):
//! `_native_batch_norm_legit` (with its running statistics updated in place),
//! `_native_batch_norm_legit_no_training`, `_native_batch_norm_legit.no_stats`,
//! `native_batch_norm_backward`, `var.correction`, `native_layer_norm`,
//! `native_layer_norm_backward`, `native_group_norm` and `native_group_norm_backward`
//! (the last four share their math over rows), as PyTorch's CPU kernels compute them
//! (two passes: the mean, then the sum of squared deviations), in `f64`.

use super::{NdTensor, R};
use crate::tensor::Element;
use autograd_opset::meta;
use ndarray::{Array, IxDyn};

/// The values of `t` in row-major order, as `f64`.
fn values<E: Element>(t: &NdTensor<E>) -> Vec<f64> {
    t.map_to_vec(E::as_f64)
}

/// A tensor of `shape` from row-major `f64` values.
fn tensor<E: Element>(shape: &[usize], v: Vec<f64>) -> NdTensor<E> {
    let a = Array::from_shape_vec(IxDyn(shape), v.into_iter().map(E::of).collect());
    NdTensor::from_array(a.expect("values of the shape"))
}

/// A batch norm's layout: `n` rows of `c` channels of `inner` elements each.
#[derive(Clone, Copy)]
struct Layout {
    n: usize,
    c: usize,
    inner: usize,
}

impl Layout {
    fn of(shape: &[usize], c: usize) -> Self {
        Layout {
            n: shape[0],
            c,
            inner: shape[2..].iter().product(),
        }
    }
    /// The row-major elements of `x` in runs of one channel's `inner` elements, each with
    /// its channel.
    fn runs<T>(self, x: &[T]) -> impl Iterator<Item = (usize, &[T])> {
        let c = self.c.max(1);
        x.chunks(self.inner.max(1))
            .enumerate()
            .map(move |(r, run)| (r % c, run))
    }
    /// The elements per channel.
    fn count(&self) -> usize {
        self.n * self.inner
    }
}

/// Per channel: the mean and the sum of squared deviations.
fn channel_moments(x: &[f64], l: Layout) -> (Vec<f64>, Vec<f64>) {
    let mut sum = vec![0.0; l.c];
    for (c, run) in l.runs(x) {
        sum[c] += run.iter().sum::<f64>();
    }
    let mean: Vec<f64> = sum.iter().map(|s| s / l.count() as f64).collect();
    let mut m2 = vec![0.0; l.c];
    for (c, run) in l.runs(x) {
        m2[c] += run
            .iter()
            .map(|v| (v - mean[c]) * (v - mean[c]))
            .sum::<f64>();
    }
    (mean, m2)
}

/// `(x - mean) * invstd * weight + bias` per channel.
fn normalize(
    x: &[f64],
    l: Layout,
    mean: &[f64],
    invstd: &[f64],
    w: Option<&[f64]>,
    b: Option<&[f64]>,
) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for (c, run) in l.runs(x) {
        let (m, s) = (mean[c], invstd[c]);
        let (wc, bc) = (w.map_or(1.0, |w| w[c]), b.map_or(0.0, |b| b[c]));
        out.extend(run.iter().map(|v| (v - m) * s * wc + bc));
    }
    out
}

/// A batch norm's input gradient (PyTorch's `batch_norm_backward_cpu_template`): in
/// training, with the per-channel sums of `g` and of `(x - mean) * g`,
/// `(g - sum / n - (x - mean) * dotp * invstd² / n) * invstd * w`; in evaluation
/// (`sums` `None`), `g * invstd * w`.
fn input_grad(
    x: &[f64],
    go: &[f64],
    l: Layout,
    (mean, invstd): (&[f64], &[f64]),
    sums: Option<(&[f64], &[f64])>,
    w: Option<&[f64]>,
) -> Vec<f64> {
    let n = l.count() as f64;
    let mut out = Vec::with_capacity(x.len());
    for ((ch, xr), (_, gr)) in l.runs(x).zip(l.runs(go)) {
        let (m, s, wc) = (mean[ch], invstd[ch], w.map_or(1.0, |w| w[ch]));
        let values = xr.iter().zip(gr);
        match sums {
            Some((sum, dotp)) => {
                let k = dotp[ch] * s * s / n;
                out.extend(values.map(|(xv, g)| (g - sum[ch] / n - (xv - m) * k) * s * wc));
            }
            None => out.extend(values.map(|(_, g)| g * s * wc)),
        }
    }
    out
}

/// `(1 - momentum) * running + momentum * batch`, written into `running`.
fn update<E: Element>(running: &mut NdTensor<E>, batch: &[f64], momentum: f64) {
    let old = values(running);
    let v = old
        .iter()
        .zip(batch)
        .map(|(r, b)| momentum * b + (1.0 - momentum) * r)
        .collect();
    *running = tensor(running.shape(), v);
}

/// Per row of `n` elements: the mean and `1 / sqrt(var + eps)` (PyTorch's CPU layer norm: a
/// row without elements has mean 0 and a NaN `rstd`).
fn row_moments(x: &[f64], rows: meta::LayerNormRows, eps: f64) -> (Vec<f64>, Vec<f64>) {
    let n = rows.n as f64;
    let mut mean = vec![0.0; rows.m];
    let mut rstd = vec![f64::NAN; rows.m];
    if rows.n == 0 {
        return (mean, rstd);
    }
    for (r, row) in x.chunks(rows.n).enumerate() {
        let mu = row.iter().sum::<f64>() / n;
        let var = row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / n;
        mean[r] = mu;
        rstd[r] = 1.0 / (var + eps).sqrt();
    }
    (mean, rstd)
}

/// The parameters of a normalization over rows: a weight and a bias (`None`: 1 and 0),
/// indexed by `param(row, j)` for element `j` of a row.
type Affine<'a> = (Option<&'a [f64]>, Option<&'a [f64]>);

/// `(x - mean) * rstd * weight + bias` over rows of `rows.n` elements (layer norm's rows,
/// group norm's (sample, group) blocks); `param(r, j)` is the weight and bias index of
/// element `j` of row `r`.
fn normalize_rows(
    x: &[f64],
    rows: meta::LayerNormRows,
    (mean, rstd): (&[f64], &[f64]),
    (w, b): Affine,
    param: impl Fn(usize, usize) -> usize,
) -> Vec<f64> {
    x.iter()
        .enumerate()
        .map(|(i, v)| {
            let (r, j) = (i / rows.n, i % rows.n);
            let p = param(r, j);
            let y = (v - mean[r]) * rstd[r];
            y * w.map_or(1.0, |w| w[p]) + b.map_or(0.0, |b| b[p])
        })
        .collect()
}

/// The backward of [`normalize_rows`] (PyTorch's layer and group norm backward kernels):
/// the input's gradient, `rstd * gamma * dy + b * x + c` per row, and per parameter (of
/// `gamma.1` of them) the sums of `dy * xhat` (the weight's gradient) and of `dy` (the
/// bias's).
fn rows_backward(
    x: &[f64],
    go: &[f64],
    (mean, rstd): (&[f64], &[f64]),
    rows: meta::LayerNormRows,
    gamma: (Option<&[f64]>, usize),
    param: impl Fn(usize, usize) -> usize,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let g = |p: usize| gamma.0.map_or(1.0, |w| w[p]);
    let n = rows.n as f64;
    let mut gi = vec![0.0; x.len()];
    let (mut gw, mut gb) = (vec![0.0; gamma.1], vec![0.0; gamma.1]);
    for r in 0..rows.m {
        let span = r * rows.n..(r + 1) * rows.n;
        let (xr, gr) = (&x[span.clone()], &go[span.clone()]);
        let (mut ds, mut db) = (0.0, 0.0);
        for j in 0..rows.n {
            let p = param(r, j);
            ds += gr[j] * g(p) * xr[j];
            db += gr[j] * g(p);
            gw[p] += gr[j] * (xr[j] - mean[r]) * rstd[r];
            gb[p] += gr[j];
        }
        let b = (db * mean[r] - ds) * rstd[r] * rstd[r] * rstd[r] / n;
        let c = -b * mean[r] - db * rstd[r] / n;
        for j in 0..rows.n {
            gi[span.start + j] = rstd[r] * g(param(r, j)) * gr[j] + b * xr[j] + c;
        }
    }
    (gi, gw, gb)
}

/// A group norm's (sample, group) blocks as rows, and the channel of element `j` of row `r`.
fn group_rows(l: meta::GroupNormLayout) -> (meta::LayerNormRows, impl Fn(usize, usize) -> usize) {
    let rows = meta::LayerNormRows {
        m: l.rows(),
        n: l.row_len(),
    };
    let d = l.c / l.group;
    (rows, move |r: usize, j: usize| {
        (r % l.group) * d + j / l.hxw
    })
}

/// The shape of a layer norm's weight and bias (`normalized_shape`).
fn param_shape(normalized_shape: &[i64]) -> Vec<usize> {
    normalized_shape
        .iter()
        .map(|&d| d.max(0) as usize)
        .collect()
}

impl<E: Element> NdTensor<E> {
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
        let c = meta::batch_norm_legit(input.shape(), &sizes, training)?;
        let l = Layout::of(input.shape(), c);
        let x = values(input);
        let (w, b) = (weight.map(values), bias.map(values));
        if !training {
            let (rm, rv) = running.expect("evaluation has running statistics");
            let mean = values(rm);
            let invstd: Vec<f64> = values(rv).iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
            let y = normalize(&x, l, &mean, &invstd, w.as_deref(), b.as_deref());
            let empty = || tensor(&[0], Vec::new());
            return Ok((tensor(input.shape(), y), empty(), empty()));
        }
        let (mean, m2) = channel_moments(&x, l);
        let n = l.count() as f64;
        let invstd: Vec<f64> = m2.iter().map(|s| 1.0 / (s / n + eps).sqrt()).collect();
        let y = normalize(&x, l, &mean, &invstd, w.as_deref(), b.as_deref());
        if let Some((rm, rv)) = running {
            update(rm, &mean, momentum);
            let unbiased: Vec<f64> = m2.iter().map(|s| s / (n - 1.0)).collect();
            update(rv, &unbiased, momentum);
        }
        Ok((
            tensor(input.shape(), y),
            tensor(&[c], mean),
            tensor(&[c], invstd),
        ))
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
        let l = Layout::of(input.shape(), c);
        use meta::Stat;
        let stat = |t: Option<&Self>, which| meta::batch_norm_stat(t.map(values), which);
        let (mean, invstd) = if train {
            (
                stat(save_mean, Stat::SaveMean)?,
                stat(save_invstd, Stat::SaveInvstd)?,
            )
        } else {
            let rv = stat(running_var, Stat::RunningVar)?;
            let invstd = rv.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
            (stat(running_mean, Stat::RunningMean)?, invstd)
        };
        let (x, go) = (values(input), values(grad_out));
        let w = weight.map(values);
        let (mut sum, mut dotp) = (vec![0.0; c], vec![0.0; c]);
        for ((ch, xr), (_, gr)) in l.runs(&x).zip(l.runs(&go)) {
            sum[ch] += gr.iter().sum::<f64>();
            dotp[ch] += xr
                .iter()
                .zip(gr)
                .map(|(xv, g)| (xv - mean[ch]) * g)
                .sum::<f64>();
        }
        let gi = match output_mask[0] {
            false => vec![0.0; x.len()],
            true => {
                let sums = train.then_some((sum.as_slice(), dotp.as_slice()));
                input_grad(&x, &go, l, (&mean, &invstd), sums, w.as_deref())
            }
        };
        let gw: Vec<f64> = dotp.iter().zip(&invstd).map(|(d, s)| d * s).collect();
        Ok((
            tensor(input.shape(), gi),
            tensor(&[c], if output_mask[1] { gw } else { vec![0.0; c] }),
            tensor(&[c], if output_mask[2] { sum } else { vec![0.0; c] }),
        ))
    }

    /// `native_layer_norm`: PyTorch's CPU kernel over `M` rows of `N` normalized elements:
    /// the output, and each row's mean and `rstd` (shaped the input's leading dims, then
    /// ones).
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
        let x = values(input);
        let (w, b) = (weight.map(values), bias.map(values));
        let (mean, rstd) = row_moments(&x, rows, eps);
        let affine = (w.as_deref(), b.as_deref());
        let y = normalize_rows(&x, rows, (&mean, &rstd), affine, |_, j| j);
        let stat = meta::layer_norm_stat_shape(input.shape(), normalized_shape.len());
        Ok((
            tensor(input.shape(), y),
            tensor(&stat, mean),
            tensor(&stat, rstd),
        ))
    }

    /// `native_layer_norm_backward`: PyTorch's `LayerNormBackwardKernelImpl` from the saved
    /// `mean` and `rstd` (`stats`). Outputs the mask leaves out are zeros.
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
        let (x, go) = (values(input), values(grad_out));
        let (mean, rstd) = (values(stats[0]), values(stats[1]));
        let w = weight.map(values);
        let st = (mean.as_slice(), rstd.as_slice());
        let (gi, gw, gb) = rows_backward(&x, &go, st, rows, (w.as_deref(), rows.n), |_, j| j);
        let masked = |on: bool, v: Vec<f64>| if on { v } else { vec![0.0; rows.n] };
        let ps = param_shape(normalized_shape);
        Ok((
            tensor(
                input.shape(),
                if output_mask[0] {
                    gi
                } else {
                    vec![0.0; x.len()]
                },
            ),
            tensor(&ps, masked(output_mask[1], gw)),
            tensor(&ps, masked(output_mask[2], gb)),
        ))
    }

    /// `native_group_norm` on checked arguments (`l`): PyTorch's CPU kernel over the
    /// (sample, group) rows of the flat input: the output, and each row's mean and `rstd`,
    /// shaped `[N, group]`.
    pub(super) fn native_group_norm(
        input: &Self,
        weight: Option<&Self>,
        bias: Option<&Self>,
        l: meta::GroupNormLayout,
        eps: f64,
    ) -> (Self, Self, Self) {
        let (rows, param) = group_rows(l);
        let x = values(input);
        let (w, b) = (weight.map(values), bias.map(values));
        let (mean, rstd) = row_moments(&x, rows, eps);
        let y = normalize_rows(
            &x,
            rows,
            (&mean, &rstd),
            (w.as_deref(), b.as_deref()),
            param,
        );
        let stat = [l.n, l.group];
        (
            tensor(input.shape(), y),
            tensor(&stat, mean),
            tensor(&stat, rstd),
        )
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
    ) -> (Self, Self, Self) {
        let (rows, param) = group_rows(l);
        let (x, go) = (values(input), values(grad_out));
        let (mean, rstd) = (values(stats[0]), values(stats[1]));
        let w = weight.map(values);
        let st = (mean.as_slice(), rstd.as_slice());
        let (gi, gw, gb) = rows_backward(&x, &go, st, rows, (w.as_deref(), l.c), param);
        let masked = |on: bool, v: Vec<f64>| if on { v } else { vec![0.0; v.len()] };
        (
            tensor(input.shape(), masked(output_mask[0], gi)),
            tensor(&[l.c], masked(output_mask[1], gw)),
            tensor(&[l.c], masked(output_mask[2], gb)),
        )
    }

    /// `var.correction`: the sum of squared deviations from the mean over `dim` divided by
    /// `max(0, n - correction)` (PyTorch's; 0 / 0 is NaN, x / 0 infinity).
    pub(super) fn var_correction(
        self_: &Self,
        dim: Option<&[i64]>,
        correction: Option<f64>,
        keepdim: bool,
    ) -> R<Self> {
        let shape = self_.shape();
        let axes = meta::var(shape, dim)?;
        let correction = correction.unwrap_or(1.0);
        let kept: Vec<usize> = (0..shape.len())
            .map(|a| if axes.contains(&a) { 1 } else { shape[a] })
            .collect();
        let out_len: usize = kept.iter().product();
        let n: usize = axes.iter().map(|a| shape[*a]).product();
        let x = values(self_);
        // The output position of each input element.
        let pos = |mut i: usize| {
            let (mut p, mut stride) = (0, 1);
            for a in (0..shape.len()).rev() {
                let k = i % shape[a].max(1);
                i /= shape[a].max(1);
                if !axes.contains(&a) {
                    p += k * stride;
                    stride *= shape[a];
                }
            }
            p
        };
        let mut sum = vec![0.0; out_len];
        for (i, v) in x.iter().enumerate() {
            sum[pos(i)] += v;
        }
        let mean: Vec<f64> = sum.iter().map(|s| s / n as f64).collect();
        let mut m2 = vec![0.0; out_len];
        for (i, v) in x.iter().enumerate() {
            let p = pos(i);
            m2[p] += (v - mean[p]) * (v - mean[p]);
        }
        let dof = (n as f64 - correction).max(0.0);
        let v = m2.iter().map(|s| s / dof).collect();
        let out_shape: Vec<usize> = match keepdim {
            true => kept,
            false => (0..shape.len())
                .filter(|a| !axes.contains(a))
                .map(|a| shape[a])
                .collect(),
        };
        Ok(tensor(&out_shape, v))
    }
}
