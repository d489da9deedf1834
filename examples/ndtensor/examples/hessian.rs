//! The sharpness of a trained network: the top eigenvalue of the Hessian of the Iris MLP's
//! training loss with respect to its 131 parameters, by power iteration on Hessian-vector
//! products computed forward over reverse (`autograd::functional::hvp`: one backward pass
//! under a dual level, whose gradients carry `H v` as their tangents; PyTorch's
//! `torch.func.jvp(torch.func.grad(f), ...)`), checked against double backward.
//!
//! Run: `cargo run --release -p ndtensor --example hessian`
//!
//! Trains the MLP of `examples/train.rs` briefly (f64, 40 epochs), prints the Rayleigh quotient
//! `vᵀ H v` per iteration and writes `examples/ndtensor/hessian_power_iteration.svg`.

mod iris;

use autograd::functional::hvp;
use autograd::runtime::{AutogradError, GradOptions, grad_with};
use autograd::types::Generator;
use iris::{Iris, Mlp, evaluate, loss_of_parameters, train_epoch};
use ndtensor::nn::Adam;
use ndtensor::ops::*;
use ndtensor::{NdTensor, Var, manual_seed};
use plotters::prelude::*;
use std::time::Instant;

const EPOCHS: usize = 40;
const ITERATIONS: usize = 20;

/// The values of a list of tensors, concatenated.
fn flat(vs: &[Var]) -> Vec<f64> {
    vs.iter().flat_map(|v| v.data().to_vec()).collect()
}

/// `values` cut into tensors shaped like `like`.
fn unflat(values: &[f64], like: &[Var]) -> Vec<Var> {
    let mut at = 0;
    like.iter()
        .map(|p| {
            let shape = p.shape();
            let n: usize = shape.iter().product();
            at += n;
            Var::from_data(NdTensor::from_vec(values[at - n..at].to_vec(), &shape))
        })
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `H v` forward over reverse.
fn hvp_forward_over_reverse(
    params: &[Var],
    v: &[Var],
    data: &Iris<NdTensor<f64>>,
) -> Result<Vec<f64>, AutogradError> {
    let (_, hv) = hvp(
        |p: &[Var]| loss_of_parameters(p, &data.x_train, &data.y_train),
        params,
        v,
    )?;
    Ok(flat(&hv))
}

/// `H v` by double backward: the gradient of `Σ_i <∂L/∂p_i, v_i>`.
fn hvp_double_backward(
    params: &[Var],
    v: &[Var],
    data: &Iris<NdTensor<f64>>,
) -> Result<Vec<f64>, AutogradError> {
    let leaves: Vec<Var> = params.iter().map(|p| Var::new(p.data(), true)).collect();
    let loss = loss_of_parameters(&leaves, &data.x_train, &data.y_train)?;
    let opts = GradOptions {
        create_graph: true,
        retain_graph: Some(true),
        ..Default::default()
    };
    let gs = grad_with(&[loss], &leaves, &[], opts)?;
    let mut gv: Option<Var> = None;
    for (g, vi) in gs.iter().zip(v) {
        let g = g
            .as_ref()
            .ok_or_else(|| AutogradError::msg("a parameter without gradient"))?;
        let term = sum(&mul_tensor(g, vi)?, None)?;
        gv = Some(match gv {
            None => term,
            Some(acc) => add_tensor(&acc, &term, 1.0)?,
        });
    }
    let gv = gv.ok_or_else(|| AutogradError::msg("no parameters"))?;
    let h = grad_with(&[gv], &leaves, &[], GradOptions::default())?;
    Ok(h.iter()
        .zip(&leaves)
        .flat_map(|(g, x)| match g {
            Some(g) => g.data().to_vec(),
            None => vec![0.0; x.shape().iter().product()],
        })
        .collect())
}

// The whole program in order (train, power iteration, the check against double backward,
// the figure), as a reader follows it: long on purpose.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let g = Generator::new(42);
    let data: Iris<NdTensor<f64>> = iris::load(&g);
    manual_seed(7);
    let model = Mlp::new(data.d, &Generator::new(1));
    let mut opt = Adam::new(model.parameters(), 0.01);
    let mut order: Vec<usize> = (0..data.x_train.shape()[0]).collect();
    for _ in 0..EPOCHS {
        train_epoch(&model, &mut opt, &data, &mut order, &g)?;
    }
    let (loss, acc) = evaluate(&model, &data.x_train, &data.y_train)?;
    let (_, test_acc) = evaluate(&model, &data.x_test, &data.y_test)?;
    // The loss as a function of plain parameter values (hvp makes its own leaves).
    let params: Vec<Var> = model
        .parameters()
        .iter()
        .map(|p| Var::from_data(p.data()))
        .collect();
    let n: usize = params
        .iter()
        .map(|p| p.shape().iter().product::<usize>())
        .sum();
    println!(
        "Iris MLP (f64) after {EPOCHS} epochs: train loss {loss:.4}, train acc {:.1}%, test acc {:.1}%; {n} parameters",
        100.0 * acc,
        100.0 * test_acc
    );
    println!(
        "power iteration on H = d²L/dθ² (training loss, evaluation mode), H v forward over reverse:"
    );

    let init = Generator::new(3);
    let mut v: Vec<f64> = (0..n).map(|_| init.next_f64() - 0.5).collect();
    let norm = dot(&v, &v).sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    let mut history = Vec::with_capacity(ITERATIONS);
    for k in 1..=ITERATIONS {
        let hv = hvp_forward_over_reverse(&params, &unflat(&v, &params), &data)?;
        let lambda = dot(&v, &hv);
        let norm = dot(&hv, &hv).sqrt();
        let change = history.last().map_or("-".to_string(), |l: &f64| {
            format!("{:.1e}", (lambda - l).abs() / lambda.abs())
        });
        println!("iteration {k:>2}: vᵀHv = {lambda:.8}  (relative change {change})");
        history.push(lambda);
        v = hv.iter().map(|x| x / norm).collect();
    }
    let lambda = *history.last().ok_or("no iterations")?;
    // The eigenpair's residual, and the same H v by double backward.
    let vs = unflat(&v, &params);
    let fwd = hvp_forward_over_reverse(&params, &vs, &data)?;
    let dbl = hvp_double_backward(&params, &vs, &data)?;
    let diff = fwd
        .iter()
        .zip(&dbl)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    let scale = dbl.iter().map(|x| x.abs()).fold(0.0, f64::max);
    let residual: Vec<f64> = fwd.iter().zip(&v).map(|(h, x)| h - lambda * x).collect();
    println!(
        "top eigenvalue λ = {lambda:.6}; residual |Hv - λv| / λ = {:.1e}",
        dot(&residual, &residual).sqrt() / lambda.abs()
    );
    println!(
        "check: forward-over-reverse H v vs double-backward H v: max |difference| {diff:.1e} (largest entry {scale:.3})"
    );
    if diff > 1e-9 * scale.max(1.0) {
        return Err(format!("forward-over-reverse and double backward differ by {diff:e}").into());
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/hessian_power_iteration.svg");
    plot(&history, path)?;
    // Relative to the current directory when inside it (`cargo run` from the repository).
    let cwd = std::env::current_dir()?;
    let shown = std::path::Path::new(path)
        .strip_prefix(&cwd)
        .unwrap_or(path.as_ref());
    println!(
        "convergence plot written to {}; took {:.2?}",
        shown.display(),
        start.elapsed()
    );
    Ok(())
}

fn plot(history: &[f64], path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (720, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let lo = history.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = history.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pad = 0.05 * (hi - lo).max(1e-9);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Top Hessian eigenvalue of the Iris MLP's loss: power iteration",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(65)
        .build_cartesian_2d(1..history.len(), (lo - pad)..(hi + pad))?;
    chart
        .configure_mesh()
        .x_desc("iteration")
        .y_desc("vᵀ H v (H v forward over reverse)")
        .draw()?;
    chart.draw_series(LineSeries::new(
        history.iter().enumerate().map(|(i, l)| (i + 1, *l)),
        &BLUE,
    ))?;
    chart.draw_series(
        history
            .iter()
            .enumerate()
            .map(|(i, l)| Circle::new((i + 1, *l), 3, BLUE.filled())),
    )?;
    root.present()?;
    Ok(())
}
