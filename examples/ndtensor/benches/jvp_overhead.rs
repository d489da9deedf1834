//! Forward-mode overhead per op on BENCHMARKS.md's W1 chain: a one-element f32 tensor,
//! 20,000 steps of `y = tanh(y * 0.999 + 0.001)` (three ops a step), timed four ways:
//!
//! * `no_grad`: the ops alone (no recording, no dual level);
//! * `reverse`: W1 itself, forward with recording, then `backward` (what `peers` times);
//! * `jvp`: the forward under a dual level from `make_dual(x, 1)` (each op also evaluates its
//!   forward formula on the tangent), then `unpack_dual`;
//! * `jvp+record`: the same with `x` requiring grad (forward formulas and backward nodes).
//!
//! Every mode checks its numbers first (`dy/dx` from `backward` equals the tangent, on 1,000
//! steps). Runs
//! interleaved in one process after two warm-ups, medians of `REPS`.
//!
//! Run: `CARGO_TARGET_DIR=... cargo bench -p ndtensor --bench jvp_overhead` (release).

use autograd::runtime::{dual_level, make_dual, no_grad, unpack_dual};
use ndtensor::ops::*;
use ndtensor::{NdTensor, Var};
use std::hint::black_box;
use std::time::Instant;

const STEPS: usize = 20_000;
const REPS: usize = 15;

type R<T> = Result<T, Box<dyn std::error::Error>>;

fn x0(requires_grad: bool) -> Var<f32> {
    Var::new(NdTensor::from_vec(vec![0.5f32], &[1]), requires_grad)
}

fn chain(x: &Var<f32>, steps: usize) -> R<Var<f32>> {
    let mut y = x.clone();
    for _ in 0..steps {
        y = tanh(&add_scalar(&mul_scalar(&y, 0.999)?, 0.001, 1.0)?)?;
    }
    Ok(y)
}

/// (value, derivative) of the chain of `steps` steps in `mode`.
fn run(mode: &str, steps: usize) -> R<(f32, f32)> {
    match mode {
        "no_grad" => {
            let _g = no_grad();
            Ok((chain(&x0(false), steps)?.data().item(), f32::NAN))
        }
        "reverse" => {
            let x = x0(true);
            let y = chain(&x, steps)?;
            let v = y.data().item();
            y.backward()?;
            Ok((v, x.grad().ok_or("no grad")?.data().item()))
        }
        "jvp" | "jvp+record" => {
            let _level = dual_level();
            let one = Var::from_data(NdTensor::from_vec(vec![1.0f32], &[1]));
            let x = make_dual(&x0(mode == "jvp+record"), &one)?;
            let u = unpack_dual(&chain(&x, steps)?)?;
            let t = u.tangent.ok_or("no tangent")?.data().item();
            Ok((u.primal.data().item(), t))
        }
        _ => Err(format!("unknown mode {mode}").into()),
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> R<()> {
    let modes = ["no_grad", "reverse", "jvp", "jvp+record"];
    // Checked on 1,000 steps: after 20,000 the derivative is a subnormal (3e-45), where the
    // two modes' different multiplication orders round differently.
    let (value, grad) = run("reverse", 1_000)?;
    for m in modes {
        let (v, d) = run(m, 1_000)?;
        let same_d = m == "no_grad" || d == grad || (d - grad).abs() <= 1e-5 * grad.abs();
        if v != value || !same_d {
            return Err(format!("{m}: y = {v}, dy/dx = {d}; reverse: {value}, {grad}").into());
        }
        println!("check {m:<10} y = {v:.7}  dy/dx = {d:e}");
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    for rep in 0..REPS + 2 {
        for (i, m) in modes.iter().enumerate() {
            let t = Instant::now();
            black_box(run(m, STEPS)?);
            let ns = t.elapsed().as_nanos() as f64 / (3 * STEPS) as f64;
            if rep >= 2 {
                times[i].push(ns);
            }
        }
    }
    println!("W1 chain, {STEPS} steps x 3 ops, f32, medians of {REPS} (min-max), ns/op:");
    let base = median(&mut times[0].clone());
    for (m, t) in modes.iter().zip(&mut times) {
        let (lo, hi) = (
            t.iter().copied().fold(f64::MAX, f64::min),
            t.iter().copied().fold(0.0, f64::max),
        );
        let med = median(t);
        println!(
            "  {m:<10} {med:>7.0}  ({lo:.0}-{hi:.0})  {:.2}x no_grad",
            med / base
        );
    }
    Ok(())
}
