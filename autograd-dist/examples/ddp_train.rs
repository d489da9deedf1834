//! Data-parallel training of the Iris MLP (`Linear(4, 16) -> ReLU -> Linear(16, 3)`, f64,
//! Adam(lr = 0.01)) over MPI: each step's batch of 24 flowers is split across the ranks,
//! [`Ddp`] averages the gradients, and rank 0 prints the loss of the whole batch, then the
//! single-process run's curve difference and the time per step.
//!
//! ```sh
//! cargo build --release -p autograd-dist --features mpi --example ddp_train
//! mpirun -n 2 --allow-run-as-root target/release/examples/ddp_train
//! mpirun -n 4 --allow-run-as-root --oversubscribe target/release/examples/ddp_train
//! target/release/examples/ddp_train   # one process
//! ```
//!
//! Every rank draws its model from a seed of its own (`1 + rank`): the broadcast from rank 0
//! in `Ddp::new` makes them rank 0's, so the curve is the single-process run's from seed 1.
//! Options: `--steps N` (20), `--batch B` (24; the number of processes must divide it).

mod mlp;

use autograd_dist::{Ddp, DdpOptions, DistError, ProcessGroup};
use autograd_opset::nn::Adam;
use mlp::{Mlp, iris, loss, max_rel_diff, reference_curve, scalar, shard, step_rows};
use ndtensor::NdTensor;
use std::process::ExitCode;
use std::time::Instant;

type T = NdTensor<f64>;

const WIDTHS: [usize; 3] = [4, 16, 3];
const LR: f64 = 0.01;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> ExitCode {
    let pg = match ProcessGroup::init() {
        Ok(pg) => pg,
        Err(e) => {
            eprintln!("cannot start MPI: {e}");
            return ExitCode::FAILURE;
        }
    };
    match train(&pg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rank {}: error: {e}", pg.rank());
            ExitCode::FAILURE
        }
    }
}

fn train(pg: &ProcessGroup) -> Result<(), Box<dyn std::error::Error>> {
    let (rank, world) = (pg.rank(), pg.size());
    let (steps, batch) = (arg("--steps", 20), arg("--batch", 24));
    if batch % world != 0 {
        return Err(format!("{world} processes do not divide a batch of {batch}").into());
    }
    let data = iris();
    let model: Mlp<T> = Mlp::new(&WIDTHS, &autograd::types::Generator::new(1 + rank as u64));
    let ddp = Ddp::new(pg, model.parameters(), DdpOptions::default())?;
    let mut opt = Adam::new(model.parameters(), LR);
    if rank == 0 {
        println!(
            "Iris MLP 4-16-3 (f64, Adam lr {LR}), batch {batch} split over {world} process(es) \
             ({} rows each), buckets {:?}",
            batch / world,
            ddp.bucket_indices()
        );
    }
    let mut curve = Vec::with_capacity(steps);
    let mut times = Vec::with_capacity(steps);
    for step in 0..steps {
        let t0 = Instant::now();
        let mine = shard(&step_rows(&data, step, batch), rank, world);
        let l = loss(&model, &data, &mine)?;
        opt.zero_grad();
        ddp.backward(&l)?;
        opt.step()?;
        times.push(t0.elapsed().as_secs_f64());
        // The whole batch's loss: the mean of the ranks' (equal shares).
        let whole = pg.all_reduce_sum(&[scalar(&l)])?[0] / world as f64;
        curve.push(whole);
        if rank == 0 {
            println!("step {:>3}: loss {whole:.12}", step + 1);
        }
    }
    if rank == 0 {
        let reference = reference_curve::<T>(&data, &WIDTHS, 1, batch, LR, steps)?;
        times.sort_by(f64::total_cmp);
        println!(
            "max relative difference to one process with the whole batch: {:.2e} ({steps} steps)",
            max_rel_diff(&curve, &reference)
        );
        println!(
            "time per step (forward, backward, all-reduce, Adam), median of {steps}: {:.3} ms on {world} process(es)",
            times[steps / 2] * 1e3
        );
    }
    pg.barrier().map_err(|e: DistError| e.into())
}
