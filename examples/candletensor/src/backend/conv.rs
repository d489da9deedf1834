//! The convolution and pooling kernels, compositions of candle's ops over the taps the op
//! set's meta functions list (`meta::Conv::taps`, `meta::Pool::windows`), so the argument
//! checks and the index arithmetic are PyTorch's, shared with every backend:
//!
//! * a convolution unfolds the "large" side (a direct convolution's input, a transposed
//!   one's output) into columns with one `index_select` (positions outside it read a zero
//!   column), multiplies them with the weight by groups (`broadcast_matmul`), and folds
//!   columns back with `index_add`; the weight's gradient is the product of the columns and
//!   the other side summed over the batch, the bias's a `sum`; a direct convolution's
//!   forward is candle's own `conv1d` or `conv2d` where they fit (they take one padding,
//!   stride and dilation for every dim; `tests/conv_paths.rs` checks that the two paths
//!   agree), the composition otherwise;
//! * max pooling gathers each window (the positions inside the input first, the padding
//!   after them as `-inf`) and picks the first maximum (`argmax_keepdim`) or, where the
//!   window has a NaN, its last NaN, as PyTorch's CPU kernel; its backward is a
//!   `scatter_add`;
//! * average pooling (plain and adaptive) is a product with the pooling's matrix (each
//!   window's elements weighted by one over its divisor, `meta::Pool::avg_windows`,
//!   `meta::adaptive_range`), its backward the product with the matrix's transpose.

use super::{Ce, R, cpu, sc, sum_axes, w};
use crate::tensor::CandleTensor;
use autograd_opset::meta::{self, Conv, Pool};
use candle_core::{DType, Tensor};

/// The unfold/fold of one convolution: for every (kernel tap, small position) the large
/// side's flat position, or `nl` (a zero column) outside it.
struct Columns<'a> {
    c: &'a Conv,
    idx: Tensor,
    ns: usize,
    nl: usize,
    nk: usize,
}

impl<'a> Columns<'a> {
    fn new(c: &'a Conv) -> R<Self> {
        let ns: usize = c.small.iter().product();
        let nl: usize = c.large.iter().product();
        let nk: usize = c.kernel.iter().product();
        let mut v = vec![nl as u32; nk * ns];
        for (s, k, l) in c.taps() {
            v[k * ns + s] = l as u32;
        }
        let idx = Tensor::from_vec(v, nk * ns, &cpu()).ce()?;
        Ok(Columns { c, idx, ns, nl, nk })
    }

    fn groups(&self) -> usize {
        self.c.groups
    }

    /// `[N, C, nl]` as columns `[N, G, C/G * nk, ns]`.
    fn unfold(&self, large: &Tensor) -> R<Tensor> {
        let (n, ch) = (large.dims()[0], large.dims()[1]);
        let zero = Tensor::zeros((n, ch, 1), large.dtype(), &cpu()).ce()?;
        let padded = Tensor::cat(&[&large.contiguous().ce()?, &zero], 2).ce()?;
        let cols = padded.index_select(&self.idx, 2).ce()?;
        let g = self.groups();
        cols.reshape((n, g, ch / g * self.nk, self.ns)).ce()
    }

    /// Columns `[N, G, C/G * nk, ns]` summed back into `[N, C, nl]`.
    fn fold(&self, cols: &Tensor) -> R<Tensor> {
        let (n, ch) = (cols.dims()[0], self.c.large_channels);
        let cols = cols
            .reshape((n, ch, self.nk * self.ns))
            .ce()?
            .contiguous()
            .ce()?;
        let zeros = Tensor::zeros((n, ch, self.nl + 1), cols.dtype(), &cpu()).ce()?;
        let out = zeros.index_add(&self.idx, &cols, 2).ce()?;
        out.narrow(2, 0, self.nl).ce()
    }

    /// The weight `[Cs, Cl/G, k...]` as `[1, G, Cs/G, Cl/G * nk]`.
    fn weight(&self, w: &Tensor) -> R<Tensor> {
        let (g, c) = (self.groups(), self.c);
        w.reshape((1, g, c.small_per_group(), c.large_per_group() * self.nk))
            .ce()
    }

    /// The small side `[N, Cs, ns]` by groups.
    fn small(&self, s: &Tensor) -> R<Tensor> {
        let c = self.c;
        s.reshape((c.batch, self.groups(), c.small_per_group(), self.ns))
            .ce()
    }

    /// The small side from the large one (a direct convolution; a transposed one's input
    /// gradient).
    fn small_from_large(&self, large: &Tensor, w: &Tensor) -> R<Tensor> {
        let out = self
            .weight(w)?
            .broadcast_matmul(&self.unfold(large)?)
            .ce()?;
        out.reshape((self.c.batch, self.c.small_channels, self.ns))
            .ce()
    }

    /// The large side from the small one (a transposed convolution; a direct one's input
    /// gradient).
    fn large_from_small(&self, small: &Tensor, w: &Tensor) -> R<Tensor> {
        let wt = self.weight(w)?.transpose(2, 3).ce()?.contiguous().ce()?;
        let cols = wt.broadcast_matmul(&self.small(small)?).ce()?;
        self.fold(&cols)
    }

    /// The weight's gradient: the small side times the large side's columns, summed over
    /// the batch inside the product (`[G, Cs/G, N * ns] x [G, N * ns, Cl/G * nk]`).
    fn weight_from(&self, small: &Tensor, large: &Tensor) -> R<Tensor> {
        let (c, g) = (self.c, self.groups());
        let rows = c.large_per_group() * self.nk;
        let cols = self.unfold(large)?.permute((1, 0, 3, 2)).ce()?;
        let cols = cols.contiguous().ce()?;
        let cols = cols.reshape((g, c.batch * self.ns, rows)).ce()?;
        let sm = self.small(small)?.permute((1, 2, 0, 3)).ce()?;
        let sm = sm.contiguous().ce()?;
        let sm = sm
            .reshape((g, c.small_per_group(), c.batch * self.ns))
            .ce()?;
        sm.matmul(&cols).ce()
    }

    /// Whether a product has an empty dim (candle's ops refuse some of them; the result is
    /// zeros).
    fn empty(&self) -> bool {
        let c = self.c;
        [
            c.batch,
            c.small_channels,
            c.large_channels,
            self.ns,
            self.nl,
            self.nk,
        ]
        .contains(&0)
    }
}

/// `out[n, c, ...] + bias[c]`.
fn add_bias(out: Tensor, bias: Option<&CandleTensor>, c: &Conv) -> R<CandleTensor> {
    let Some(b) = bias else { return Ok(w(out)) };
    let mut bshape = vec![1; c.output.len()];
    bshape[1] = c.output[1];
    let b = b.t.reshape(bshape).ce()?;
    Ok(w(out.broadcast_add(&b).ce()?))
}

/// candle's own convolution where it fits: a direct 1-d or 2-d one with one stride,
/// padding and dilation for every dim and no empty operand; `None` otherwise. (Not its
/// transposed ones: `conv_transpose1d` panics (an overflow in `l_out`) where the padding
/// exceeds `(l_in - 1) * stride`, which PyTorch accepts, and the PyTorch fixtures' double
/// backward of transposed convolutions did not match through them.)
fn candle_conv(x: &Tensor, wt: &Tensor, c: &Conv) -> R<Option<Tensor>> {
    let uniform = |v: &[usize]| v.iter().all(|a| *a == v[0]);
    let fits = c.spatial <= 2
        && uniform(&c.stride)
        && uniform(&c.padding)
        && uniform(&c.dilation)
        && !c.output.contains(&0)
        && x.elem_count() > 0
        && wt.elem_count() > 0;
    if !fits {
        return Ok(None);
    }
    let (p, s, d, g) = (c.padding[0], c.stride[0], c.dilation[0], c.groups);
    let (x, wt) = (x.contiguous().ce()?, wt.contiguous().ce()?);
    let out = match (c.transposed, c.spatial) {
        (false, 1) => x.conv1d(&wt, p, s, d, g),
        (false, 2) => x.conv2d(&wt, p, s, d, g),
        _ => return Ok(None),
    };
    Ok(Some(out.ce()?))
}

/// `t` with its spatial dims flattened: `[N, C, prod]`.
fn flat(t: &Tensor) -> R<Tensor> {
    let d = t.dims();
    t.reshape((d[0], d[1], d[2..].iter().product::<usize>()))
        .ce()
}

/// `values` of `shape`, or zeros of `shape` in `like`'s dtype when the product is empty.
fn shaped(
    values: impl FnOnce() -> R<Tensor>,
    empty: bool,
    shape: &[usize],
    like: &Tensor,
) -> R<Tensor> {
    if empty {
        return Tensor::zeros(shape, like.dtype(), &cpu()).ce();
    }
    values()?.reshape(shape).ce()
}

impl CandleTensor {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn convolution(
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
        let c = meta::convolution(
            input.shape(),
            weight.shape(),
            bias.map(|b| b.shape()),
            stride,
            padding,
            dilation,
            transposed,
            output_padding,
            groups,
        )?;
        if let Some(out) = candle_conv(&input.t, &weight.t, &c)? {
            return add_bias(out, bias, &c);
        }
        let cols = Columns::new(&c)?;
        let (x, wt) = (flat(&input.t)?, &weight.t);
        let out = shaped(
            || match transposed {
                false => cols.small_from_large(&x, wt),
                true => cols.large_from_small(&x, wt),
            },
            cols.empty(),
            &c.output,
            &x,
        )?;
        add_bias(out, bias, &c)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn convolution_backward(
        grad_output: &Self,
        input: &Self,
        weight: &Self,
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        transposed: bool,
        output_padding: &[i64],
        groups: i64,
        output_mask: [bool; 3],
    ) -> R<(Self, Self, Self)> {
        let c = meta::convolution_backward(
            grad_output.shape(),
            input.shape(),
            weight.shape(),
            stride,
            padding,
            dilation,
            transposed,
            output_padding,
            groups,
        )?;
        let cols = Columns::new(&c)?;
        let (g, x, wt) = (flat(&grad_output.t)?, flat(&input.t)?, &weight.t);
        let empty = || Tensor::zeros(0, g.dtype(), &cpu()).ce();
        let e = cols.empty();
        let gi = match (output_mask[0], transposed) {
            (false, _) => empty()?,
            (true, false) => shaped(|| cols.large_from_small(&g, wt), e, input.shape(), &g)?,
            (true, true) => shaped(|| cols.small_from_large(&g, wt), e, input.shape(), &g)?,
        };
        let gw = match (output_mask[1], transposed) {
            (false, _) => empty()?,
            (true, false) => shaped(|| cols.weight_from(&g, &x), e, weight.shape(), &g)?,
            (true, true) => shaped(|| cols.weight_from(&x, &g), e, weight.shape(), &g)?,
        };
        let gb = if !output_mask[2] {
            empty()?
        } else if g.elem_count() == 0 {
            Tensor::zeros(c.output[1], g.dtype(), &cpu()).ce()?
        } else {
            sum_axes(&g, &[0, 2], false)?
        };
        Ok((w(gi), w(gw), w(gb)))
    }

    /// Max pooling of `self_` over the geometry `p` (PyTorch's checks passed): the values
    /// and the flat positions in their plane (as `self_`'s dtype).
    pub(super) fn max_pool(self_: &Self, p: &Pool) -> R<(Self, Self)> {
        let x = &self_.t;
        let plane = p.plane_in();
        let planes = x.elem_count() / plane.max(1);
        if planes == 0 {
            let z = Tensor::zeros(p.shape.as_slice(), x.dtype(), &cpu()).ce()?;
            return Ok((w(z.clone()), w(z)));
        }
        let (idx, pos, nk) = windows(p)?;
        let ns = p.plane_out();
        let x = x.reshape((planes, plane)).ce()?;
        let pad = Tensor::full(f64::NEG_INFINITY, (planes, 1), &cpu())
            .ce()?
            .to_dtype(x.dtype())
            .ce()?;
        let padded = Tensor::cat(&[&x, &pad], 1).ce()?;
        let cols = padded
            .index_select(&idx, 1)
            .ce()?
            .reshape((planes, ns, nk))
            .ce()?;
        let best = first_max_last_nan(&cols, nk)?;
        let values = cols.gather(&best, 2).ce()?;
        let pos = pos.broadcast_as((planes, ns, nk)).ce()?.contiguous().ce()?;
        let at = pos.gather(&best, 2).ce()?.to_dtype(x.dtype()).ce()?;
        let shape = p.shape.as_slice();
        Ok((w(values.reshape(shape).ce()?), w(at.reshape(shape).ce()?)))
    }

    /// The adjoint of [`Self::max_pool`]: the gradient scattered (`scatter_add`) at the
    /// indices (positions in their plane, checked first: `meta::Pool::plane_index`).
    pub(super) fn max_pool_backward(
        grad_output: &Self,
        self_: &Self,
        p: &Pool,
        indices: &Self,
    ) -> R<Self> {
        let g = &grad_output.t;
        let plane = p.plane_in();
        let planes = self_.t.elem_count() / plane.max(1);
        let zeros = Tensor::zeros(self_.shape(), g.dtype(), &cpu()).ce()?;
        if planes == 0 {
            return Ok(w(zeros));
        }
        let ns = p.plane_out();
        let all = indices.t.flatten_all().ce()?.to_dtype(DType::F64).ce()?;
        for ix in all.to_vec1::<f64>().ce()? {
            p.plane_index(ix as i64)?;
        }
        let idx = indices
            .t
            .to_dtype(DType::U32)
            .ce()?
            .reshape((planes, ns))
            .ce()?;
        let g = g.reshape((planes, ns)).ce()?.contiguous().ce()?;
        let out = zeros
            .reshape((planes, plane))
            .ce()?
            .scatter_add(&idx, &g, 1)
            .ce()?;
        Ok(w(out.reshape(self_.shape()).ce()?))
    }
}

/// The windows of a pooling: the `U32` positions to gather from a plane with a padding
/// column appended (`[ns * nk]`: each window's positions inside the input in order, then the
/// padding column), the positions themselves (`[1, ns, nk]`, `U32`) and the window size.
fn windows(p: &Pool) -> R<(Tensor, Tensor, usize)> {
    let nk = p.taps();
    let pad = p.plane_in() as u32;
    let mut idx = Vec::new();
    let mut pos = Vec::new();
    for win in p.windows() {
        let first = win.first().copied().unwrap_or(0) as u32;
        for k in 0..nk {
            let at = win.get(k).map(|x| *x as u32);
            idx.push(at.unwrap_or(pad));
            pos.push(at.unwrap_or(first));
        }
    }
    let ns = p.plane_out();
    let idx = Tensor::from_vec(idx, ns * nk, &cpu()).ce()?;
    let pos = Tensor::from_vec(pos, (1, ns, nk), &cpu()).ce()?;
    Ok((idx, pos, nk))
}

/// The position (`U32`, keepdim) along the last dim of `cols` (`[P, ns, nk]`) PyTorch's max
/// pooling picks: the first maximum (candle's `argmax`), or the last NaN where there is one.
fn first_max_last_nan(cols: &Tensor, nk: usize) -> R<Tensor> {
    let a = cols.argmax_keepdim(2).ce()?;
    let nan = cols.ne(cols).ce()?.to_dtype(cols.dtype()).ce()?;
    let ks = Tensor::arange(1u32, nk as u32 + 1, &cpu())
        .ce()?
        .to_dtype(cols.dtype())
        .ce()?
        .reshape((1, 1, nk))
        .ce()?;
    let ranked = nan.broadcast_mul(&ks).ce()?;
    let last_nan = ranked.argmax_keepdim(2).ce()?;
    let has = nan
        .sum_keepdim(2)
        .ce()?
        .broadcast_gt(&sc(0.0, cols)?)
        .ce()?;
    has.where_cond(&last_nan, &a).ce()
}

/// The matrix (`[outputs, plane]`) of an average pooling with these windows and divisors.
fn mean_matrix(windows: &[(Vec<usize>, f64)], plane: usize, like: &Tensor) -> R<Tensor> {
    let mut m = vec![0f64; windows.len() * plane];
    for (o, (win, div)) in windows.iter().enumerate() {
        for i in win {
            m[o * plane + i] += 1.0 / div;
        }
    }
    Tensor::from_vec(m, (windows.len(), plane), &cpu())
        .ce()?
        .to_dtype(like.dtype())
        .ce()
}

/// `x`'s `(H, W)` planes averaged by `m` (`[outputs, plane]`), shaped `shape`.
fn mean_pool(x: &Tensor, m: &Tensor, shape: &[usize]) -> R<Tensor> {
    let (outs, plane) = m.dims2().ce()?;
    let planes = x.elem_count() / plane.max(1);
    if planes == 0 || outs == 0 {
        return Tensor::zeros(shape, x.dtype(), &cpu()).ce();
    }
    let x = x.reshape((planes, plane)).ce()?.contiguous().ce()?;
    x.matmul(&m.t().ce()?.contiguous().ce()?)
        .ce()?
        .reshape(shape)
        .ce()
}

/// The adjoint of [`mean_pool`]: the gradient `g` back to planes of `shape`.
fn mean_pool_backward(g: &Tensor, m: &Tensor, shape: &[usize]) -> R<Tensor> {
    let (outs, plane) = m.dims2().ce()?;
    let planes = g.elem_count() / outs.max(1);
    if planes == 0 || outs == 0 || plane == 0 {
        return Tensor::zeros(shape, g.dtype(), &cpu()).ce();
    }
    let g = g.reshape((planes, outs)).ce()?.contiguous().ce()?;
    g.matmul(m).ce()?.reshape(shape).ce()
}

/// Adaptive average pooling's windows from an `(ih, iw)` plane to `(oh, ow)`.
fn adaptive_windows(input: [usize; 2], output: [usize; 2]) -> Vec<(Vec<usize>, f64)> {
    let mut out = Vec::new();
    for oh in 0..output[0] {
        for ow in 0..output[1] {
            let hs = meta::adaptive_range(oh, output[0], input[0]);
            let ws = meta::adaptive_range(ow, output[1], input[1]);
            let n = (hs.len() * ws.len()) as f64;
            let win = hs
                .flat_map(|h| ws.clone().map(move |w| h * input[1] + w))
                .collect();
            out.push((win, n));
        }
    }
    out
}

/// The last two dims of a shape.
fn plane_of(shape: &[usize]) -> [usize; 2] {
    let nd = shape.len();
    [shape[nd - 2], shape[nd - 1]]
}

impl CandleTensor {
    /// Average pooling of `self_` over the geometry `p` (PyTorch's checks passed).
    pub(super) fn avg_pool(
        self_: &Self,
        p: &Pool,
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> R<Self> {
        let windows = p.avg_windows(count_include_pad, divisor_override);
        let m = mean_matrix(&windows, p.plane_in(), &self_.t)?;
        Ok(w(mean_pool(&self_.t, &m, &p.shape)?))
    }

    /// The adjoint of [`Self::avg_pool`]: the gradient back to `self_`'s shape.
    pub(super) fn avg_pool_backward(
        grad_output: &Self,
        self_: &Self,
        p: &Pool,
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> R<Self> {
        let windows = p.avg_windows(count_include_pad, divisor_override);
        let m = mean_matrix(&windows, p.plane_in(), &grad_output.t)?;
        Ok(w(mean_pool_backward(&grad_output.t, &m, self_.shape())?))
    }

    pub(super) fn adaptive_avg_pool2d(self_: &Self, output_size: &[i64]) -> R<Self> {
        let shape = meta::adaptive_avg_pool2d(self_.shape(), output_size)?;
        let input = plane_of(self_.shape());
        let windows = adaptive_windows(input, plane_of(&shape));
        let m = mean_matrix(&windows, input[0] * input[1], &self_.t)?;
        Ok(w(mean_pool(&self_.t, &m, &shape)?))
    }

    pub(super) fn adaptive_avg_pool2d_backward(grad_output: &Self, self_: &Self) -> R<Self> {
        let xs = self_.shape();
        let shape = meta::adaptive_avg_pool2d_backward(grad_output.shape(), xs)?;
        let input = plane_of(xs);
        let windows = adaptive_windows(input, plane_of(&shape));
        let m = mean_matrix(&windows, input[0] * input[1], &grad_output.t)?;
        Ok(w(mean_pool_backward(&grad_output.t, &m, xs)?))
    }
}

impl CandleTensor {
    /// `constant_pad_nd`: the negative pads' crops (`narrow`), then the value's blocks
    /// concatenated on both sides of each padded dim (`cat`).
    pub(super) fn constant_pad_nd(self_: &Self, pad: &[i64], value: f64) -> R<Self> {
        let (shape, offset) = meta::constant_pad_nd(self_.shape(), pad)?;
        let x = &self_.t;
        let full = |s: &[usize]| -> R<Tensor> {
            Tensor::full(value, s, &cpu())
                .ce()?
                .to_dtype(x.dtype())
                .ce()
        };
        // The input's part that stays: `[max(0, -left), size - max(0, -right))` per dim.
        let ranges: Vec<(usize, usize)> = (0..shape.len())
            .map(|d| {
                let size = x.dims()[d] as i64;
                let right = shape[d] as i64 - size - offset[d];
                let start = (-offset[d]).max(0);
                (
                    start as usize,
                    (size - start - (-right).max(0)).max(0) as usize,
                )
            })
            .collect();
        if shape.contains(&0) || ranges.iter().any(|(_, n)| *n == 0) {
            return Ok(w(full(&shape)?));
        }
        let mut t = x.clone();
        for (d, (start, len)) in ranges.iter().enumerate() {
            if *len < t.dims()[d] {
                t = t.narrow(d, *start, *len).ce()?;
            }
            let left = offset[d].max(0) as usize;
            let right = shape[d] - len - left;
            let mut parts = Vec::new();
            let mut block = t.dims().to_vec();
            if left > 0 {
                block[d] = left;
                parts.push(full(&block)?);
            }
            parts.push(t.clone());
            if right > 0 {
                block[d] = right;
                parts.push(full(&block)?);
            }
            if parts.len() > 1 {
                t = Tensor::cat(&parts, d).ce()?;
            }
        }
        Ok(w(t))
    }
}
