//! The convolution and pooling kernels over floating-point tensors, over the taps the op
//! set's meta functions list (`meta::Conv::taps`, `meta::Pool::windows` and `avg_windows`,
//! `meta::adaptive_range`), so the index arithmetic and the argument checks are PyTorch's,
//! shared with every backend: convolutions as matrix products over the taps' columns,
//! poolings as loops over the windows.

use crate::storage::FloatTensor;
use crate::tensor::Element;
use autograd_opset::error::Error;
use autograd_opset::meta::{self, Conv, Pool, Tap};
use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2};

type F<E> = FloatTensor<E>;
type R<T> = Result<T, Error>;

/// The three operands of a convolution's sum `small[n, cs, s] ~ large[n, cl, l] * w[cs,
/// cl_g, k]`: `small_from_large` computes the small side (a direct convolution, a transposed
/// one's input gradient), `large_from_small` the large side (a transposed convolution, a
/// direct one's input gradient), `weight_from` the weight's gradient.
///
/// Each is a matrix product per sample and group over the large side's columns
/// (`im2col`: row `cl * nk + k`, column `s` holds `large[cl, l]` of tap `(s, k, l)`, zero
/// where the tap falls in the padding), as PyTorch's CPU `slow_conv2d` computes it:
/// `small = w · cols`, `w' += small · colsᵀ`, `cols' = wᵀ · small` added back onto the
/// large side (`col2im`). ndarray's `general_mat_mul` runs `matrixmultiply`'s kernels.
struct Sides<'a> {
    c: &'a Conv,
    taps: Vec<Tap>,
    ns: usize,
    nl: usize,
    nk: usize,
}

/// A row-major `rows x cols` matrix over `v`.
fn mat<E: Element>(v: &[E], rows: usize, cols: usize) -> ArrayView2<'_, E> {
    ArrayView2::from_shape((rows, cols), v).expect("the block holds rows * cols elements")
}

/// A mutable row-major `rows x cols` matrix over `v`.
fn mat_mut<E: Element>(v: &mut [E], rows: usize, cols: usize) -> ArrayViewMut2<'_, E> {
    ArrayViewMut2::from_shape((rows, cols), v).expect("the block holds rows * cols elements")
}

impl<'a> Sides<'a> {
    fn new(c: &'a Conv) -> Self {
        Sides {
            c,
            taps: c.taps(),
            ns: c.small.iter().product(),
            nl: c.large.iter().product(),
            nk: c.kernel.iter().product(),
        }
    }

    /// The large side's channels per group times the kernel's taps: the columns' rows.
    fn rows(&self) -> usize {
        self.c.large_per_group() * self.nk
    }

    /// The large side's block of sample `n` and group `g` (`lg` channels of `nl`).
    fn large_block(&self, n: usize, g: usize) -> std::ops::Range<usize> {
        let lg = self.c.large_per_group();
        let start = (n * self.c.large_channels + g * lg) * self.nl;
        start..start + lg * self.nl
    }

    /// The small side's block of sample `n` and group `g` (`sg` channels of `ns`).
    fn small_block(&self, n: usize, g: usize) -> std::ops::Range<usize> {
        let sg = self.c.small_per_group();
        let start = (n * self.c.small_channels + g * sg) * self.ns;
        start..start + sg * self.ns
    }

    /// The weight's rows of group `g` (`sg` rows of `lg * nk`).
    fn weight_block(&self, g: usize) -> std::ops::Range<usize> {
        let len = self.c.small_per_group() * self.rows();
        g * len..(g + 1) * len
    }

    /// `im2col` of one large block into `cols` (`rows x ns`, zero where no tap lands).
    fn columns<E: Element>(&self, large: &[E], cols: &mut [E]) {
        cols.fill(E::zero());
        for cl in 0..self.c.large_per_group() {
            let (src, dst) = (cl * self.nl, cl * self.nk * self.ns);
            for &(s, k, l) in &self.taps {
                cols[dst + k * self.ns + s] = large[src + l];
            }
        }
    }

    /// `col2im`: `cols` added onto one large block at its taps.
    fn add_columns<E: Element>(&self, cols: &[E], large: &mut [E]) {
        for cl in 0..self.c.large_per_group() {
            let (dst, src) = (cl * self.nl, cl * self.nk * self.ns);
            for &(s, k, l) in &self.taps {
                large[dst + l] += cols[src + k * self.ns + s];
            }
        }
    }

    /// Calls `f(n, g)` for every sample and group.
    fn blocks(&self, mut f: impl FnMut(usize, usize)) {
        for n in 0..self.c.batch {
            for g in 0..self.c.groups {
                f(n, g);
            }
        }
    }

    fn small_from_large<E: Element>(&self, large: &[E], w: &[E]) -> Vec<E> {
        let (sg, rows, ns) = (self.c.small_per_group(), self.rows(), self.ns);
        let mut out = vec![E::zero(); self.c.batch * self.c.small_channels * ns];
        let mut cols = vec![E::zero(); rows * ns];
        self.blocks(|n, g| {
            self.columns(&large[self.large_block(n, g)], &mut cols);
            let wg = mat(&w[self.weight_block(g)], sg, rows);
            let mut o = mat_mut(&mut out[self.small_block(n, g)], sg, ns);
            general_mat_mul(E::one(), &wg, &mat(&cols, rows, ns), E::zero(), &mut o);
        });
        out
    }

    fn large_from_small<E: Element>(&self, small: &[E], w: &[E]) -> Vec<E> {
        let (sg, rows, ns) = (self.c.small_per_group(), self.rows(), self.ns);
        let mut out = vec![E::zero(); self.c.batch * self.c.large_channels * self.nl];
        let mut cols = vec![E::zero(); rows * ns];
        self.blocks(|n, g| {
            let wg = mat(&w[self.weight_block(g)], sg, rows);
            let sm = mat(&small[self.small_block(n, g)], sg, ns);
            general_mat_mul(
                E::one(),
                &wg.t(),
                &sm,
                E::zero(),
                &mut mat_mut(&mut cols, rows, ns),
            );
            self.add_columns(&cols, &mut out[self.large_block(n, g)]);
        });
        out
    }

    fn weight_from<E: Element>(&self, small: &[E], large: &[E], len: usize) -> Vec<E> {
        let (sg, rows, ns) = (self.c.small_per_group(), self.rows(), self.ns);
        let mut out = vec![E::zero(); len];
        let mut cols = vec![E::zero(); rows * ns];
        self.blocks(|n, g| {
            self.columns(&large[self.large_block(n, g)], &mut cols);
            let sm = mat(&small[self.small_block(n, g)], sg, ns);
            let mut wg = mat_mut(&mut out[self.weight_block(g)], sg, rows);
            general_mat_mul(E::one(), &sm, &mat(&cols, rows, ns).t(), E::one(), &mut wg);
        });
        out
    }
}

/// `out[n, c, ...] += bias[c]`.
fn add_bias<E: Element>(out: &mut [E], bias: &[E], batch: usize) {
    let per = out.len() / (batch * bias.len()).max(1);
    for (r, run) in out.chunks_mut(per.max(1)).enumerate() {
        let b = bias[r % bias.len()];
        run.iter_mut().for_each(|x| *x += b);
    }
}

/// The sums over the batch and the spatial dims of `t` (`[N, C, ...]`), per channel.
fn channel_sums<E: Element>(t: &[E], batch: usize, channels: usize) -> Vec<E> {
    let mut out = vec![E::zero(); channels];
    let per = t.len() / (batch * channels).max(1);
    for (r, run) in t.chunks(per.max(1)).enumerate() {
        out[r % channels] += run.iter().fold(E::zero(), |a, x| a + *x);
    }
    out
}

impl<E: Element> FloatTensor<E> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn convolution(
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
        let sides = Sides::new(&c);
        let (x, w) = (input.to_vec(), weight.to_vec());
        let mut out = if transposed {
            sides.large_from_small(&x, &w)
        } else {
            sides.small_from_large(&x, &w)
        };
        if let Some(b) = bias {
            add_bias(&mut out, &b.to_vec(), c.batch);
        }
        Ok(F::from_row_major(out, &c.output))
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn convolution_backward(
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
        let sides = Sides::new(&c);
        let (g, x, w) = (grad_output.to_vec(), input.to_vec(), weight.to_vec());
        let empty = || F::from_row_major(Vec::new(), &[0]);
        let gi = match (output_mask[0], transposed) {
            (false, _) => empty(),
            (true, false) => F::from_row_major(sides.large_from_small(&g, &w), input.shape()),
            (true, true) => F::from_row_major(sides.small_from_large(&g, &w), input.shape()),
        };
        let gw = match (output_mask[1], transposed) {
            (false, _) => empty(),
            (true, false) => F::from_row_major(sides.weight_from(&g, &x, w.len()), weight.shape()),
            (true, true) => F::from_row_major(sides.weight_from(&x, &g, w.len()), weight.shape()),
        };
        let gb = if output_mask[2] {
            let channels = c.output[1];
            F::from_row_major(channel_sums(&g, c.batch, channels), &[channels])
        } else {
            empty()
        };
        Ok((gi, gw, gb))
    }

    /// Max pooling of `self_` over the geometry `p` (PyTorch's checks passed): the values
    /// and the flat positions in their plane.
    pub(crate) fn max_pool(self_: &Self, p: &Pool) -> (Self, Self) {
        let (vals, idx) = max_pool_planes(p, &self_.to_vec());
        (
            F::from_row_major(vals, &p.shape),
            F::from_row_major(idx, &p.shape),
        )
    }

    /// The adjoint of [`Self::max_pool`]: each gradient added at its plane's index (an
    /// index outside the plane, where PyTorch's kernel writes out of bounds, is an error).
    pub(crate) fn max_pool_backward(
        grad_output: &Self,
        self_: &Self,
        p: &Pool,
        indices: &[i64],
    ) -> R<Self> {
        let g = grad_output.to_vec();
        let (plane_in, plane_out) = (p.plane_in(), p.plane_out());
        let mut out = vec![E::zero(); self_.len()];
        for (i, (gv, ix)) in g.iter().zip(indices).enumerate() {
            let at = p.plane_index(*ix)?;
            out[(i / plane_out.max(1)) * plane_in + at] += *gv;
        }
        Ok(F::from_row_major(out, self_.shape()))
    }
}

/// Max pooling of every plane (the pooled dims) of `x`: the values and the flat positions
/// in their plane, as PyTorch's CPU kernel picks them: the first of equal
/// maxima, the last NaN (a NaN always wins), the window's first position when nothing beats
/// `-inf`.
fn max_pool_planes<E: Element>(p: &Pool, x: &[E]) -> (Vec<E>, Vec<E>) {
    let plane_in = p.plane_in();
    let planes = x.len() / plane_in.max(1);
    let windows = p.windows();
    let mut vals = Vec::with_capacity(planes * windows.len());
    let mut idx = Vec::with_capacity(planes * windows.len());
    for plane in 0..planes {
        let xs = &x[plane * plane_in..(plane + 1) * plane_in];
        for w in &windows {
            let mut best = w.first().copied().unwrap_or(0);
            let mut max = E::neg_infinity();
            for &pos in w {
                let v = xs[pos];
                if v > max || v.is_nan() {
                    max = v;
                    best = pos;
                }
            }
            vals.push(max);
            idx.push(E::of(best as f64));
        }
    }
    (vals, idx)
}

/// The windows of every output position of a pooling over `(H, W)` planes, with each
/// window's divisor.
type Windows = Vec<(Vec<usize>, f64)>;

/// Adaptive average pooling's windows from an `(ih, iw)` plane to `(oh, ow)`.
fn adaptive_windows(input: [usize; 2], output: [usize; 2]) -> Windows {
    let mut out = Vec::new();
    for oh in 0..output[0] {
        for ow in 0..output[1] {
            let (hs, ws) = (
                meta::adaptive_range(oh, output[0], input[0]),
                meta::adaptive_range(ow, output[1], input[1]),
            );
            let n = (hs.len() * ws.len()) as f64;
            let win = hs
                .flat_map(|h| ws.clone().map(move |w| h * input[1] + w))
                .collect();
            out.push((win, n));
        }
    }
    out
}

/// Each plane of `x` (`plane` elements) averaged over `windows`: the sums divided by the
/// divisors (a window outside the input gives 0).
fn pool_mean<E: Element>(x: &[E], plane: usize, windows: &Windows) -> Vec<E> {
    let planes = x.len() / plane.max(1);
    let mut out = Vec::with_capacity(planes * windows.len());
    for pl in 0..planes {
        let xs = &x[pl * plane..(pl + 1) * plane];
        for (win, div) in windows {
            if win.is_empty() {
                out.push(E::zero());
                continue;
            }
            let sum = win.iter().fold(E::zero(), |a, i| a + xs[*i]);
            out.push(sum / E::of(*div));
        }
    }
    out
}

/// The adjoint of [`pool_mean`]: each gradient divided by its window's divisor (the
/// quotient truncated toward zero with `trunc`, PyTorch's integer kernels), added to the
/// window's elements.
fn pool_mean_backward<E: Element>(
    g: &[E],
    plane: usize,
    len: usize,
    windows: &Windows,
    trunc: bool,
) -> Vec<E> {
    let mut out = vec![E::zero(); len];
    let per = windows.len();
    for (i, gv) in g.iter().enumerate() {
        let (win, div) = &windows[i % per.max(1)];
        let base = (i / per.max(1)) * plane;
        let mut q = *gv / E::of(*div);
        if trunc {
            q = E::of(q.as_f64().trunc());
        }
        for j in win {
            out[base + j] += q;
        }
    }
    out
}

impl<E: Element> FloatTensor<E> {
    /// Average pooling of `self_` over the geometry `p` (PyTorch's checks passed).
    pub(crate) fn avg_pool(
        self_: &Self,
        p: &Pool,
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> Self {
        let windows = p.avg_windows(count_include_pad, divisor_override);
        let out = pool_mean(&self_.to_vec(), p.plane_in(), &windows);
        F::from_row_major(out, &p.shape)
    }

    /// The adjoint of [`Self::avg_pool`]: the gradient back to `self_`'s shape (`trunc`:
    /// each quotient truncated, as PyTorch's integer kernel divides).
    pub(crate) fn avg_pool_backward(
        grad_output: &Self,
        self_: &Self,
        p: &Pool,
        (count_include_pad, divisor_override): (bool, Option<i64>),
        trunc: bool,
    ) -> Self {
        let windows = p.avg_windows(count_include_pad, divisor_override);
        let (g, plane) = (grad_output.to_vec(), p.plane_in());
        let out = pool_mean_backward(&g, plane, self_.len(), &windows, trunc);
        F::from_row_major(out, self_.shape())
    }

    pub(crate) fn adaptive_avg_pool2d(self_: &Self, output_size: &[i64]) -> R<Self> {
        let shape = meta::adaptive_avg_pool2d(self_.shape(), output_size)?;
        let nd = shape.len();
        let input = [self_.shape()[nd - 2], self_.shape()[nd - 1]];
        let windows = adaptive_windows(input, [shape[nd - 2], shape[nd - 1]]);
        let out = pool_mean(&self_.to_vec(), input[0] * input[1], &windows);
        Ok(F::from_row_major(out, &shape))
    }

    pub(crate) fn adaptive_avg_pool2d_backward(grad_output: &Self, self_: &Self) -> R<Self> {
        let xs = self_.shape();
        let shape = meta::adaptive_avg_pool2d_backward(grad_output.shape(), xs)?;
        let nd = xs.len();
        let input = [xs[nd - 2], xs[nd - 1]];
        let windows = adaptive_windows(input, [shape[nd - 2], shape[nd - 1]]);
        let plane = input[0] * input[1];
        let out = pool_mean_backward(&grad_output.to_vec(), plane, self_.len(), &windows, false);
        Ok(F::from_row_major(out, xs))
    }
}

impl<E: Element> FloatTensor<E> {
    pub(crate) fn constant_pad_nd(self_: &Self, pad: &[i64], value: f64) -> R<Self> {
        let (shape, offset) = meta::constant_pad_nd(self_.shape(), pad)?;
        let mut out = ndarray::ArrayD::from_elem(ndarray::IxDyn(&shape), E::of(value));
        let mut at = vec![0usize; shape.len()];
        'elements: for (ix, x) in self_.arr().indexed_iter() {
            for (d, a) in at.iter_mut().enumerate() {
                let o = ix[d] as i64 + offset[d];
                if o < 0 || o >= shape[d] as i64 {
                    continue 'elements;
                }
                *a = o as usize;
            }
            out[at.as_slice()] = *x;
        }
        Ok(F::from_array(out))
    }
}
