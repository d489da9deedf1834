//! What each rank runs under `mpirun` (`--scenario NAME`). A rank prints `rank R: ok: ...`
//! lines for what it checked, or `rank R: error: ...` and exits with status 1.

use crate::mlp::{
    Mlp, iris, loss, max_rel_diff, reference_curve, scalar, shard, step_rows, synthetic,
};
use autograd::gradcheck::ElementAccess;
use autograd::runtime::{AutogradError, Variable};
use autograd::types::Generator;
use autograd_dist::{Ddp, DdpOptions, ProcessGroup};
use autograd_opset::nn::Adam;
use autograd_opset::ops::{add_tensor, mul_tensor, sum};
use ndtensor::NdTensor;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

type T = NdTensor<f64>;
type Res = Result<(), Box<dyn std::error::Error>>;

const WIDTHS: [usize; 3] = [4, 16, 3];
const BATCH: usize = 24;

/// Runs scenario `name` on this rank.
pub fn run(name: &str) -> ExitCode {
    let timeout = if name == "timeout" {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(30)
    };
    let pg = match ProcessGroup::init_with_timeout(timeout) {
        Ok(pg) => pg,
        Err(e) => {
            println!("rank ?: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let r = match name {
        "grads" => grads(&pg),
        "curve" => curve(&pg),
        "overlap" => overlap(&pg),
        "no_sync" => no_sync(&pg),
        "unused" => unused(&pg, true),
        "unused_error" => unused(&pg, false),
        "rank_fails" => rank_fails(&pg),
        "rank_leaves" => rank_leaves(&pg),
        "timeout" => timeout_case(&pg),
        _ => Err(format!("no scenario {name:?}").into()),
    };
    let code = match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("rank {}: error: {e}", pg.rank());
            ExitCode::FAILURE
        }
    };
    let _ = std::io::stdout().flush();
    drop(pg);
    code
}

/// The largest `|a - b|` over the largest `|b|`.
fn rel(a: &[f64], b: &[f64]) -> f64 {
    let scale = b
        .iter()
        .fold(0.0f64, |m, x| m.max(x.abs()))
        .max(f64::MIN_POSITIVE);
    a.iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        / scale
}

fn grad_of(p: &Variable<T>) -> Vec<f64> {
    p.grad().map_or_else(Vec::new, |g| g.data().to_f64_vec())
}

/// Every parameter's gradient against the reference's, to `tol` relative.
fn same_grads(ps: &[Variable<T>], refs: &[Variable<T>], tol: f64) -> Result<f64, String> {
    let mut worst = 0.0f64;
    for (i, (p, r)) in ps.iter().zip(refs).enumerate() {
        let (a, b) = (grad_of(p), grad_of(r));
        if a.len() != b.len() || a.is_empty() {
            return Err(format!("parameter {i}: gradient missing"));
        }
        worst = worst.max(rel(&a, &b));
    }
    if worst > tol {
        return Err(format!(
            "gradients differ by {worst:.2e} (relative), over {tol:.0e}"
        ));
    }
    Ok(worst)
}

fn ok(pg: &ProcessGroup, what: &str) {
    println!("rank {}: ok: {what}", pg.rank());
}

/// Each rank draws its model from its own seed; after `Ddp::new` they are rank 0's, and one
/// step's gradients of the split batch equal one process's gradients of the whole batch.
fn grads(pg: &ProcessGroup) -> Res {
    let (rank, world) = (pg.rank(), pg.size());
    let data = iris();
    let model: Mlp<T> = Mlp::new(&WIDTHS, &Generator::new(1 + rank as u64));
    let ddp = Ddp::new(pg, model.parameters(), DdpOptions::default())?;
    let reference: Mlp<T> = Mlp::new(&WIDTHS, &Generator::new(1));
    for (p, r) in model.parameters().iter().zip(reference.parameters()) {
        if p.data().to_f64_vec() != r.data().to_f64_vec() {
            return Err("the parameters are not rank 0's after Ddp::new".into());
        }
    }
    ok(pg, "parameters broadcast from rank 0");
    let rows = step_rows(&data, 0, BATCH);
    ddp.backward(&loss(&model, &data, &shard(&rows, rank, world))?)?;
    loss(&reference, &data, &rows)?.backward()?;
    let d = same_grads(&model.parameters(), &reference.parameters(), 1e-12)?;
    ok(
        pg,
        &format!(
            "gradients of the split batch equal the whole batch's (max relative difference {d:.1e})"
        ),
    );
    Ok(())
}

/// 20 Adam steps: the whole batch's loss (mean of the ranks') matches one process's curve.
fn curve(pg: &ProcessGroup) -> Res {
    let (rank, world) = (pg.rank(), pg.size());
    let data = iris();
    let model: Mlp<T> = Mlp::new(&WIDTHS, &Generator::new(1));
    let ddp = Ddp::new(pg, model.parameters(), DdpOptions::default())?;
    let mut opt = Adam::new(model.parameters(), 0.01);
    let mut curve = Vec::new();
    for step in 0..20 {
        let l = loss(
            &model,
            &data,
            &shard(&step_rows(&data, step, BATCH), rank, world),
        )?;
        opt.zero_grad();
        ddp.backward(&l)?;
        opt.step()?;
        curve.push(pg.all_reduce_sum(&[scalar(&l)])?[0] / world as f64);
    }
    let reference = reference_curve::<T>(&data, &WIDTHS, 1, BATCH, 0.01, 20)?;
    let d = max_rel_diff(&curve, &reference);
    if d > 1e-6 {
        return Err(format!("the loss curve differs from one process's by {d:.2e}").into());
    }
    ok(
        pg,
        &format!(
            "20-step loss curve equals one process's (max relative difference {d:.1e}, bound 1e-6)"
        ),
    );
    Ok(())
}

/// One bucket per gradient on a 4-layer MLP: bucket 0 (the last layer's bias) starts before
/// backward ends and before the last bucket, and some all-reduce completes while backward
/// still runs.
fn overlap(pg: &ProcessGroup) -> Res {
    const STEPS: usize = 8;
    let (rank, world) = (pg.rank(), pg.size());
    let widths = [512, 256, 128, 64, 10];
    let data = synthetic(128, 512, 10, 5);
    let model: Mlp<T> = Mlp::new(&widths, &Generator::new(3));
    let opts = DdpOptions {
        bucket_cap_bytes: 1,
        first_bucket_cap_bytes: 1,
        ..DdpOptions::default()
    };
    let ddp = Ddp::new(pg, model.parameters(), opts)?;
    let expected: Vec<Vec<usize>> = (0..8).rev().map(|i| vec![i]).collect();
    if ddp.bucket_indices() != expected {
        return Err(format!("buckets {:?}, expected {expected:?}", ddp.bucket_indices()).into());
    }
    let mut completed_inside = 0;
    let mut hidden = Vec::new();
    for step in 0..STEPS {
        let rows = shard(&step_rows(&data, step, 128), rank, world);
        ddp.backward(&loss(&model, &data, &rows)?)?;
        let t = ddp.last_step().ok_or("no timeline")?;
        let (first, last) = (&t.buckets[0], &t.buckets[t.buckets.len() - 1]);
        if first.launched >= t.backward_end || first.launched >= last.launched {
            return Err("bucket 0's all-reduce did not start before backward ended".into());
        }
        if t.buckets.iter().any(|b| b.finished < t.backward_end) {
            completed_inside += 1;
        }
        hidden.push(t.hidden_fraction());
        model.parameters().iter().for_each(Variable::zero_grad);
    }
    if completed_inside == 0 {
        return Err(
            format!("no all-reduce completed before backward ended, in {STEPS} steps").into(),
        );
    }
    ok(
        pg,
        &format!(
            "bucket 0's all-reduce started before backward ended in {STEPS} of {STEPS} steps; one \
             completed inside backward in {completed_inside} of {STEPS}; hidden fractions {hidden:.2?}"
        ),
    );
    Ok(())
}

/// Under `no_sync` gradients accumulate locally without communication; the next synchronised
/// backward averages the accumulated gradients.
fn no_sync(pg: &ProcessGroup) -> Res {
    let (rank, world) = (pg.rank(), pg.size());
    let data = iris();
    let model: Mlp<T> = Mlp::new(&WIDTHS, &Generator::new(1));
    let ddp = Ddp::new(pg, model.parameters(), DdpOptions::default())?;
    let (a, b) = (step_rows(&data, 0, BATCH), step_rows(&data, 1, BATCH));
    {
        let _g = ddp.no_sync();
        ddp.backward(&loss(&model, &data, &shard(&a, rank, world))?)?;
    }
    if ddp.last_step().is_some() {
        return Err("a backward under no_sync communicated".into());
    }
    let local: Mlp<T> = Mlp::new(&WIDTHS, &Generator::new(1));
    loss(&local, &data, &shard(&a, rank, world))?.backward()?;
    same_grads(&model.parameters(), &local.parameters(), 0.0)?;
    ok(pg, "no_sync: this rank's own gradients, no all-reduce");
    ddp.backward(&loss(&model, &data, &shard(&b, rank, world))?)?;
    let whole: Mlp<T> = Mlp::new(&WIDTHS, &Generator::new(1));
    loss(&whole, &data, &a)?.backward()?;
    loss(&whole, &data, &b)?.backward()?;
    let d = same_grads(&model.parameters(), &whole.parameters(), 1e-12)?;
    ok(
        pg,
        &format!(
            "after no_sync, the accumulated gradients are averaged (max relative difference {d:.1e})"
        ),
    );
    Ok(())
}

/// Two extra parameters: one no rank uses, one only rank 0 uses (loss + sum(e * e)).
fn unused(pg: &ProcessGroup, find: bool) -> Res {
    let (rank, world) = (pg.rank(), pg.size());
    let data = iris();
    let model: Mlp<T> = Mlp::new(&WIDTHS, &Generator::new(1));
    let never = Variable::new(T::from_f64(&[1.0; 5], &[5]), true);
    let rank0 = Variable::new(T::from_f64(&[0.5, -1.0, 2.0], &[3]), true);
    let mut params = model.parameters();
    params.extend([never.clone(), rank0.clone()]);
    let opts = DdpOptions {
        find_unused_parameters: find,
        ..DdpOptions::default()
    };
    let ddp = Ddp::new(pg, params, opts)?;
    let rows = step_rows(&data, 0, BATCH);
    for step in 0..2 {
        let mut l = loss(&model, &data, &shard(&rows, rank, world))?;
        if rank == 0 {
            l = add_tensor(&l, &sum(&mul_tensor(&rank0, &rank0)?, None)?, 1.0)?;
        }
        ddp.backward(&l)?;
        if never.grad().is_some() {
            return Err("a parameter no rank used got a gradient".into());
        }
        // d/de sum(e*e) = 2e on rank 0, nothing on rank 1: the average is e, per step.
        let expected: Vec<f64> = [0.5, -1.0, 2.0]
            .iter()
            .map(|x| x * (step + 1) as f64)
            .collect();
        if grad_of(&rank0) != expected {
            return Err(format!("rank 0's parameter has gradient {:?}", grad_of(&rank0)).into());
        }
    }
    ok(
        pg,
        "find_unused_parameters: unused everywhere keeps no gradient, used on rank 0 only is averaged",
    );
    Ok(())
}

/// Rank 1's backward fails at step 2 (a hook on its loss): rank 0 must fail too.
fn rank_fails(pg: &ProcessGroup) -> Res {
    let (rank, world) = (pg.rank(), pg.size());
    let data = iris();
    let model: Mlp<T> = Mlp::new(&WIDTHS, &Generator::new(1));
    let ddp = Ddp::new(pg, model.parameters(), DdpOptions::default())?;
    let mut opt = Adam::new(model.parameters(), 0.01);
    for step in 0..5 {
        let l = loss(
            &model,
            &data,
            &shard(&step_rows(&data, step, BATCH), rank, world),
        )?;
        if rank == 1 && step == 2 {
            l.register_hook(|_| Err(AutogradError::Other("injected failure".into())))?;
        }
        opt.zero_grad();
        ddp.backward(&l)?;
        opt.step()?;
    }
    ok(pg, "all steps done");
    Ok(())
}

/// Rank 1 ends its program at step 2 (drops the group): rank 0 must fail, not hang.
fn rank_leaves(pg: &ProcessGroup) -> Res {
    let (rank, world) = (pg.rank(), pg.size());
    let data = iris();
    let model: Mlp<T> = Mlp::new(&WIDTHS, &Generator::new(1));
    let ddp = Ddp::new(pg, model.parameters(), DdpOptions::default())?;
    for step in 0..5 {
        if rank == 1 && step == 2 {
            ok(pg, "leaving at step 2");
            return Ok(());
        }
        ddp.backward(&loss(
            &model,
            &data,
            &shard(&step_rows(&data, step, BATCH), rank, world),
        )?)?;
    }
    ok(pg, "all steps done");
    Ok(())
}

/// Rank 1 is 3 s late at step 1 with a timeout of 1 s: rank 0 times out, and rank 1 hears
/// of it.
fn timeout_case(pg: &ProcessGroup) -> Res {
    let (rank, world) = (pg.rank(), pg.size());
    let data = iris();
    let model: Mlp<T> = Mlp::new(&WIDTHS, &Generator::new(1));
    let ddp = Ddp::new(pg, model.parameters(), DdpOptions::default())?;
    for step in 0..3 {
        if rank == 1 && step == 1 {
            std::thread::sleep(Duration::from_secs(3));
        }
        ddp.backward(&loss(
            &model,
            &data,
            &shard(&step_rows(&data, step, BATCH), rank, world),
        )?)?;
    }
    ok(pg, "all steps done");
    Ok(())
}
