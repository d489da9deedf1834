//! The convolution and pooling kernels over floating-point tensors: loops over the taps the
//! op set's meta functions list (`meta::Conv::taps`, `meta::Pool::windows` and
//! `avg_windows`, `meta::adaptive_range`), so the index
//! arithmetic and the argument checks are PyTorch's, shared with every backend.

use crate::storage::FloatTensor;
use crate::tensor::Element;
use autograd_opset::error::Error;
use autograd_opset::meta::{self, Conv, Pool, Tap};

type F<E> = FloatTensor<E>;
type R<T> = Result<T, Error>;

/// The elements of `t` in row-major order.
fn values<E: Element>(t: &F<E>) -> Vec<E> {
    t.iter().copied().collect()
}

/// The three operands of a convolution's sum `small[n, cs, s] ~ large[n, cl, l] * w[cs,
/// cl_g, k]`: `small_from_large` computes the small side (a direct convolution, a transposed
/// one's input gradient), `large_from_small` the large side (a transposed convolution, a
/// direct one's input gradient), `weight_from` the weight's gradient.
struct Sides<'a> {
    c: &'a Conv,
    taps: Vec<Tap>,
    ns: usize,
    nl: usize,
    nk: usize,
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

    /// Calls `f(small index, large index, weight index)` for every product of the sum.
    fn each(&self, mut f: impl FnMut(usize, usize, usize)) {
        let c = self.c;
        let (sg, lg) = (c.small_per_group(), c.large_per_group());
        for n in 0..c.batch {
            for g in 0..c.groups {
                for cs in g * sg..(g + 1) * sg {
                    for cl in 0..lg {
                        let sb = (n * c.small_channels + cs) * self.ns;
                        let lb = (n * c.large_channels + g * lg + cl) * self.nl;
                        let wb = (cs * lg + cl) * self.nk;
                        for (s, k, l) in &self.taps {
                            f(sb + s, lb + l, wb + k);
                        }
                    }
                }
            }
        }
    }

    fn small_from_large<E: Element>(&self, large: &[E], w: &[E]) -> Vec<E> {
        let mut out = vec![E::zero(); self.c.batch * self.c.small_channels * self.ns];
        self.each(|s, l, k| out[s] += large[l] * w[k]);
        out
    }

    fn large_from_small<E: Element>(&self, small: &[E], w: &[E]) -> Vec<E> {
        let mut out = vec![E::zero(); self.c.batch * self.c.large_channels * self.nl];
        self.each(|s, l, k| out[l] += small[s] * w[k]);
        out
    }

    fn weight_from<E: Element>(&self, small: &[E], large: &[E], len: usize) -> Vec<E> {
        let mut out = vec![E::zero(); len];
        self.each(|s, l, k| out[k] += small[s] * large[l]);
        out
    }
}

/// `out[n, c, ...] += bias[c]`.
fn add_bias<E: Element>(out: &mut [E], bias: &[E], batch: usize) {
    let per = out.len() / (batch * bias.len()).max(1);
    for (i, x) in out.iter_mut().enumerate() {
        *x += bias[(i / per.max(1)) % bias.len()];
    }
}

/// The sums over the batch and the spatial dims of `t` (`[N, C, ...]`), per channel.
fn channel_sums<E: Element>(t: &[E], batch: usize, channels: usize) -> Vec<E> {
    let mut out = vec![E::zero(); channels];
    let per = t.len() / (batch * channels).max(1);
    for (i, x) in t.iter().enumerate() {
        let c = (i / per.max(1)) % channels.max(1);
        out[c] += *x;
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
        let (x, w) = (values(input), values(weight));
        let mut out = if transposed {
            sides.large_from_small(&x, &w)
        } else {
            sides.small_from_large(&x, &w)
        };
        if let Some(b) = bias {
            add_bias(&mut out, &values(b), c.batch);
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
        let (g, x, w) = (values(grad_output), values(input), values(weight));
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
        let (vals, idx) = max_pool_planes(p, &values(self_));
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
        let g = values(grad_output);
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
        let out = pool_mean(&values(self_), p.plane_in(), &windows);
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
        let (g, plane) = (values(grad_output), p.plane_in());
        let out = pool_mean_backward(&g, plane, self_.len(), &windows, trunc);
        F::from_row_major(out, self_.shape())
    }

    pub(crate) fn adaptive_avg_pool2d(self_: &Self, output_size: &[i64]) -> R<Self> {
        let shape = meta::adaptive_avg_pool2d(self_.shape(), output_size)?;
        let nd = shape.len();
        let input = [self_.shape()[nd - 2], self_.shape()[nd - 1]];
        let windows = adaptive_windows(input, [shape[nd - 2], shape[nd - 1]]);
        let out = pool_mean(&values(self_), input[0] * input[1], &windows);
        Ok(F::from_row_major(out, &shape))
    }

    pub(crate) fn adaptive_avg_pool2d_backward(grad_output: &Self, self_: &Self) -> R<Self> {
        let xs = self_.shape();
        let shape = meta::adaptive_avg_pool2d_backward(grad_output.shape(), xs)?;
        let nd = xs.len();
        let input = [xs[nd - 2], xs[nd - 1]];
        let windows = adaptive_windows(input, [shape[nd - 2], shape[nd - 1]]);
        let plane = input[0] * input[1];
        let out = pool_mean_backward(&values(grad_output), plane, self_.len(), &windows, false);
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
