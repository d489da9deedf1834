//! `grid_sampler_2d` and `grid_sampler_2d_backward` (Core ATen; issue 30): loops over the taps
//! of the op set's plan (`meta::GridPlan`: for each output point, the input positions it
//! reads, their weights and the weights' derivatives in the grid), so the coordinate
//! arithmetic, the padding modes and the argument checks are PyTorch's, shared with every
//! backend. A tap outside the input reads zero and adds nothing (no `0 * inf`).

use crate::storage::FloatTensor;
use crate::tensor::Element;
use autograd_opset::meta::GridPlan;

type F<E> = FloatTensor<E>;

impl<E: Element> FloatTensor<E> {
    /// The forward op: each output element sums its taps' input elements times their weights.
    pub(crate) fn grid_sample(x: &Self, p: &GridPlan) -> Self {
        let [n, c, ho, wo] = p.out;
        let (pts, xs) = (ho * wo, x.to_vec());
        let mut out = vec![E::zero(); n * c * pts];
        for (k, o) in out.iter_mut().enumerate() {
            let (b, q) = (k / (c * pts), k % pts);
            let plane = &xs[(k / pts) * p.plane..][..p.plane];
            let j = b * pts + q;
            for t in p.taps.iter().filter(|t| t.valid[j]) {
                *o += E::of(t.weight[j]) * plane[t.index[j]];
            }
        }
        F::from_row_major(out, &p.out)
    }

    /// The backward op: the input's gradient (with `input_grad`; else an empty tensor) adds
    /// each output gradient into its taps times their weights; the grid's sums, over the
    /// channels and the taps, the gradient times the tap's element times the weight's
    /// derivatives.
    pub(crate) fn grid_sample_backward(
        g: &Self,
        x: &Self,
        p: &GridPlan,
        input_grad: bool,
    ) -> (Self, Self) {
        let [n, c, ho, wo] = p.out;
        let pts = ho * wo;
        let (gs, xs) = (g.to_vec(), x.to_vec());
        let mut gi = vec![E::zero(); if input_grad { n * c * p.plane } else { 0 }];
        let mut gg = vec![E::zero(); n * pts * 2];
        for (k, &go) in gs.iter().enumerate() {
            let (b, q, line) = (k / (c * pts), k % pts, (k / pts) * p.plane);
            let j = b * pts + q;
            for t in p.taps.iter().filter(|t| t.valid[j]) {
                let v = xs[line + t.index[j]];
                gg[2 * j] += go * v * E::of(t.dx[j]);
                gg[2 * j + 1] += go * v * E::of(t.dy[j]);
                if input_grad {
                    gi[line + t.index[j]] += E::of(t.weight[j]) * go;
                }
            }
        }
        let gi = match input_grad {
            true => F::from_row_major(gi, x.shape()),
            false => F::from_row_major(gi, &[0]),
        };
        (gi, F::from_row_major(gg, &[n, ho, wo, 2]))
    }
}

use crate::tensor::{Data, NdTensor};
use autograd_opset::dtype::{self as rules, GRID_SAMPLER_2D, GRID_SAMPLER_2D_BACKWARD};
use autograd_opset::error::Error;
use autograd_opset::meta;

type R<T> = Result<T, Error>;
type T<E> = NdTensor<E>;

/// The floating-point tensor of `t` (its dtype checked before).
fn float<E: Element>(t: &T<E>) -> R<&F<E>> {
    match t.data() {
        Data::Float(a) => Ok(a),
        _ => Err(Error::internal(
            "ndtensor",
            "grid_sampler_2d of a non-float tensor",
        )),
    }
}

/// The plan of `grid` (values in `f64`) over `input`'s shape.
fn plan<E: Element>(input: &T<E>, grid: &T<E>, modes: (i64, i64, bool)) -> R<GridPlan> {
    let values: Vec<f64> = float(grid)?.iter().map(|v| v.as_f64()).collect();
    meta::grid_plan(input.shape(), grid.shape(), &values, modes)
}

/// `grid_sampler_2d`: PyTorch's checks, its dtype rules, then the plan's sums.
pub(super) fn grid_sampler_2d<E: Element>(
    input: &T<E>,
    grid: &T<E>,
    modes: (i64, i64, bool),
) -> R<T<E>> {
    meta::grid_sampler_2d(input.shape(), grid.shape(), modes.0, modes.1)?;
    rules::check_grid_sampler(input.dtype(), &[grid.dtype()], GRID_SAMPLER_2D)?;
    let p = plan(input, grid, modes)?;
    let out = F::grid_sample(float(input)?, &p);
    Ok(NdTensor::from_data(Data::Float(out)))
}

/// `grid_sampler_2d_backward`: the input's gradient where `output_mask[0]` (else an empty
/// tensor), the grid's always (as PyTorch's kernel).
pub(super) fn grid_sampler_2d_backward<E: Element>(
    grad_output: &T<E>,
    input: &T<E>,
    grid: &T<E>,
    modes: (i64, i64, bool),
    output_mask: [bool; 2],
) -> R<(T<E>, T<E>)> {
    let (g, x) = (grad_output.shape(), input.shape());
    meta::grid_sampler_2d_backward(g, x, grid.shape(), modes.0, modes.1)?;
    let others = [grad_output.dtype(), grid.dtype()];
    rules::check_grid_sampler(input.dtype(), &others, GRID_SAMPLER_2D_BACKWARD)?;
    let p = plan(input, grid, modes)?;
    let (gi, gg) = F::grid_sample_backward(float(grad_output)?, float(input)?, &p, output_mask[0]);
    let t = |f| NdTensor::from_data(Data::Float(f));
    Ok((t(gi), t(gg)))
}
