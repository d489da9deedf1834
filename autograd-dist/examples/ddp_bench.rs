//! DDP scaling: the time of a training step (forward, backward, all-reduce, SGD) of an MLP
//! on synthetic data, the global batch split across the processes, and how much of the
//! all-reduce time ran while backward still ran (BENCHMARKS.md, "DDP").
//!
//! ```sh
//! cargo build --release -p autograd-dist --features mpi --example ddp_bench
//! target/release/examples/ddp_bench
//! mpirun -n 2 --allow-run-as-root target/release/examples/ddp_bench
//! mpirun -n 4 --allow-run-as-root --oversubscribe target/release/examples/ddp_bench
//! ```
//!
//! Options: `--width W` (1024) and `--depth D` (4: D layers `W -> W`, then `W -> 10`),
//! `--batch B` (256, global), `--steps S` (12, the first 2 not timed), `--bucket-mb M`
//! (25; the first bucket is 1 MiB).

mod mlp;

use autograd::types::Generator;
use autograd_dist::{Ddp, DdpOptions, ProcessGroup};
use autograd_opset::nn::Sgd;
use mlp::{Mlp, loss, shard, step_rows, synthetic};
use ndtensor::NdTensor;
use std::process::ExitCode;
use std::time::Instant;

type T = NdTensor<f32>;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn main() -> ExitCode {
    let pg = match ProcessGroup::init() {
        Ok(pg) => pg,
        Err(e) => {
            eprintln!("cannot start MPI: {e}");
            return ExitCode::FAILURE;
        }
    };
    match bench(&pg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rank {}: error: {e}", pg.rank());
            ExitCode::FAILURE
        }
    }
}

/// Per timed step: (step, backward, all-reduce, hidden all-reduce, wait after backward), s.
type Sample = (f64, f64, f64, f64, f64);

// One timed loop, read top to bottom: setup, warm-up, timed steps, the report.
fn bench(pg: &ProcessGroup) -> Result<(), Box<dyn std::error::Error>> {
    let (rank, world) = (pg.rank(), pg.size());
    let (width, depth) = (arg("--width", 1024), arg("--depth", 4));
    let (batch, steps) = (arg("--batch", 256), arg("--steps", 12).max(3));
    if batch % world != 0 {
        return Err(format!("{world} processes do not divide a batch of {batch}").into());
    }
    let mut widths = vec![width; depth + 1];
    widths.push(10);
    let data = synthetic(batch * 4, width, 10, 11);
    let model: Mlp<T> = Mlp::new(&widths, &Generator::new(1));
    let opts = DdpOptions {
        bucket_cap_bytes: arg("--bucket-mb", 25) << 20,
        ..DdpOptions::default()
    };
    let ddp = Ddp::new(pg, model.parameters(), opts)?;
    let mut opt = Sgd::new(model.parameters(), 0.01, 0.9);
    let mut samples: Vec<Sample> = Vec::new();
    for step in 0..steps {
        pg.barrier()?;
        let t0 = Instant::now();
        let rows = shard(&step_rows(&data, step, batch), rank, world);
        let l = loss(&model, &data, &rows)?;
        opt.zero_grad();
        ddp.backward(&l)?;
        opt.step()?;
        let total = t0.elapsed().as_secs_f64();
        let t = ddp.last_step().ok_or("no timeline")?;
        if step >= 2 {
            samples.push((
                total,
                t.backward_end
                    .duration_since(t.backward_start)
                    .as_secs_f64(),
                t.all_reduce_secs(),
                t.hidden_secs(),
                t.synced.duration_since(t.backward_end).as_secs_f64(),
            ));
        }
    }
    // Every rank's medians, then the slowest rank's (a step is as slow as its slowest rank).
    let col = |f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
    let mine = [
        col(|s| s.0),
        col(|s| s.1),
        col(|s| s.2),
        col(|s| s.3),
        col(|s| s.4),
    ];
    let mut all = vec![0.0; 5 * world];
    all[5 * rank..5 * rank + 5].copy_from_slice(&mine);
    let all = pg.all_reduce_sum(&all)?;
    if rank == 0 {
        let params: usize = model
            .parameters()
            .iter()
            .map(|p| p.data().shape().iter().product::<usize>())
            .sum();
        println!(
            "MLP {widths:?} f32 ({params} parameters, {:.1} MiB of gradients), SGD, global batch {batch}, \
             {world} process(es), buckets {:?}",
            params as f64 * 4.0 / 1048576.0,
            ddp.bucket_indices()
        );
        for r in 0..world {
            let m = &all[5 * r..5 * r + 5];
            let hidden = if m[2] > 0.0 { m[3] / m[2] } else { 0.0 };
            println!(
                "rank {r}: step {:.1} ms (median of {}), backward {:.1} ms, all-reduce {:.2} ms of which \
                 {:.0}% hidden behind backward, wait after backward {:.2} ms",
                m[0] * 1e3,
                samples.len(),
                m[1] * 1e3,
                m[2] * 1e3,
                100.0 * hidden,
                m[4] * 1e3
            );
        }
    }
    pg.barrier()?;
    Ok(())
}
