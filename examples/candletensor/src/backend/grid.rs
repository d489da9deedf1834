//! `grid_sampler_2d` and `grid_sampler_2d_backward` (Core ATen; issue 30), compositions of
//! candle's ops over the op set's plan (`meta::GridPlan`: for each output point, the input
//! positions it reads, their weights and the weights' derivatives in the grid), so the
//! coordinate arithmetic, the padding modes and the argument checks are PyTorch's, shared
//! with every backend. Each tap is a `gather` of the input's planes, masked where the tap is
//! outside the input (it adds nothing there, as in PyTorch's kernels: no `0 * inf`); the
//! input's gradient `scatter_add`s the masked terms back.

use super::{Ce, R, cpu};
use crate::tensor::CandleTensor;
use autograd::runtime::Tensor as _;
use autograd_opset::dtype::{self as rules, GRID_SAMPLER_2D, GRID_SAMPLER_2D_BACKWARD};
use autograd_opset::meta::{self, GridPlan, GridTap};
use candle_core::{DType, Tensor};

type C = CandleTensor;

/// A tap's tensors over `[N, C, P]` (`P` output points): the positions, the mask and the
/// weight, the derivatives in the grid's `x` and `y` (`[N, 1, P]`).
struct Tap {
    index: Tensor,
    valid: Tensor,
    w: Tensor,
    dx: Tensor,
    dy: Tensor,
}

/// `v` as an `[n, 1, p]` tensor of `dtype`.
fn column(v: &[f64], n: usize, dtype: DType) -> R<Tensor> {
    let p = v.len() / n.max(1);
    Tensor::from_vec(v.to_vec(), (n, 1, p), &cpu())
        .ce()?
        .to_dtype(dtype)
        .ce()
}

impl Tap {
    /// `t`'s tensors for `c` channels of `dtype`.
    fn of(t: &GridTap, n: usize, c: usize, dtype: DType) -> R<Self> {
        let p = t.index.len() / n.max(1);
        let index: Vec<u32> = t.index.iter().map(|&i| i as u32).collect();
        let index = Tensor::from_vec(index, (n, 1, p), &cpu()).ce()?;
        let valid: Vec<u8> = t.valid.iter().map(|&v| u8::from(v)).collect();
        let valid = Tensor::from_vec(valid, (n, 1, p), &cpu()).ce()?;
        Ok(Tap {
            index: index.broadcast_as((n, c, p)).ce()?.contiguous().ce()?,
            valid: valid.broadcast_as((n, c, p)).ce()?,
            w: column(&t.weight, n, dtype)?,
            dx: column(&t.dx, n, dtype)?,
            dy: column(&t.dy, n, dtype)?,
        })
    }

    /// `x` where the tap is inside the input, else zero.
    fn masked(&self, x: &Tensor) -> R<Tensor> {
        self.valid.where_cond(x, &x.zeros_like().ce()?).ce()
    }
}

/// `x`'s planes flattened: `[N, C, H * W]`.
fn planes(x: &C) -> R<Tensor> {
    let d = x.t.dims();
    x.t.reshape((d[0], d[1], d[2] * d[3]))
        .ce()?
        .contiguous()
        .ce()
}

/// The plan of `grid`'s values over `input`'s shape.
fn plan(input: &C, grid: &C, modes: (i64, i64, bool)) -> R<GridPlan> {
    let values = grid.t.flatten_all().ce()?.to_dtype(DType::F64).ce()?;
    let values = values.to_vec1::<f64>().ce()?;
    meta::grid_plan(input.t.dims(), grid.t.dims(), &values, modes)
}

/// The plan's taps over `x`'s dtype.
fn taps(p: &GridPlan, dtype: DType) -> R<Vec<Tap>> {
    let [n, c, ..] = p.out;
    p.taps.iter().map(|t| Tap::of(t, n, c, dtype)).collect()
}

/// `grid_sampler_2d`: PyTorch's checks, its dtype rules, then the taps' weighted gathers.
pub(super) fn grid_sampler_2d(input: &C, grid: &C, modes: (i64, i64, bool)) -> R<C> {
    let out = meta::grid_sampler_2d(input.t.dims(), grid.t.dims(), modes.0, modes.1)?;
    rules::check_grid_sampler(input.dtype(), &[grid.dtype()], GRID_SAMPLER_2D)?;
    let p = plan(input, grid, modes)?;
    let mut sum = Tensor::zeros((out[0], out[1], out[2] * out[3]), input.t.dtype(), &cpu()).ce()?;
    if sum.elem_count() > 0 {
        let x = planes(input)?;
        for t in taps(&p, x.dtype())? {
            let v = t.masked(&x.gather(&t.index, 2).ce()?)?;
            sum = (sum + v.broadcast_mul(&t.w).ce()?).ce()?;
        }
    }
    Ok(C::new(sum.reshape(out.as_slice()).ce()?))
}

/// `grid_sampler_2d_backward`: the input's gradient where `output_mask[0]` (else an empty
/// tensor), the grid's always (as PyTorch's kernel).
pub(super) fn grid_sampler_2d_backward(
    grad_output: &C,
    input: &C,
    grid: &C,
    modes: (i64, i64, bool),
    output_mask: [bool; 2],
) -> R<(C, C)> {
    let (g, x) = (grad_output.t.dims(), input.t.dims());
    let [n, _, ho, wo] = meta::grid_sampler_2d_backward(g, x, grid.t.dims(), modes.0, modes.1)?;
    let others = [grad_output.dtype(), grid.dtype()];
    rules::check_grid_sampler(input.dtype(), &others, GRID_SAMPLER_2D_BACKWARD)?;
    let p = plan(input, grid, modes)?;
    let xs = planes(input)?;
    let dtype = xs.dtype();
    let mut gi = xs.zeros_like().ce()?;
    let mut gx = Tensor::zeros((n, 1, ho * wo), dtype, &cpu()).ce()?;
    let mut gy = gx.clone();
    if grad_output.t.elem_count() > 0 {
        let go = grad_output.t.reshape((g[0], g[1], ho * wo)).ce()?;
        for t in taps(&p, dtype)? {
            let gv = t.masked(&(&go * xs.gather(&t.index, 2).ce()?).ce()?)?;
            let gv = gv.sum_keepdim(1).ce()?;
            gx = (gx + gv.broadcast_mul(&t.dx).ce()?).ce()?;
            gy = (gy + gv.broadcast_mul(&t.dy).ce()?).ce()?;
            if output_mask[0] {
                let src = t.masked(&go.broadcast_mul(&t.w).ce()?)?;
                gi = gi.scatter_add(&t.index, &src, 2).ce()?;
            }
        }
    }
    let gi = match output_mask[0] {
        true => gi.reshape(x).ce()?,
        false => Tensor::zeros(0, dtype, &cpu()).ce()?,
    };
    let (gx, gy) = (gx.reshape((n, ho, wo)).ce()?, gy.reshape((n, ho, wo)).ce()?);
    let gg = Tensor::stack(&[gx, gy], 3).ce()?;
    Ok((C::new(gi), C::new(gg)))
}
