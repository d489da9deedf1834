//! Generated autograd (ndtensor and candletensor, built with `autograd_ops!`) against a
//! hand-written tape, candle-core and burn: the same workloads, the same machine, one interleaved run.
//!
//! ```sh
//! cd benches/peers && CARGO_TARGET_DIR=/work/target-peers cargo run --release -- [w1] [w2] [w3]
//!     [w1f] [--reps N] [--threads N] [--only tape,ours,candle,ours-candle,burn]
//!     [--torch ~/.cache/torch/bin/python]
//! ```
//!
//! Backends: `tape` (hand-written, the reference), `ours` (ndtensor), `candle` (candle-core's
//! own `backward()`), `ours-candle` (candletensor: candle-core's kernels under the generated
//! autograd) and `burn`; with `--torch PYTHON` also `torch`, PyTorch eager from Python (float32,
//! `torch_peer.py` run by that Python, which must import torch), in W1, W2 and W3.
//!
//! * W1 overhead: one-element tensor, 20,000 steps of `y = tanh(y * 0.999 + 0.001)`, backward;
//!   ns per op = total / 60,000. Run twice: as is (the gradient goes through subnormal floats)
//!   and with flush-to-zero/denormals-are-zero set on the running thread (MXCSR). Each timed
//!   run in its own process (re-exec), the processes interleaved.
//! * W1f (not in the default set): W1's forward chain without autograd, for ours (`no_grad`),
//!   candle (plain tensors) and ours-candle (`no_grad`, and candletensor's kernels called
//!   directly): the kernels' share of W1.
//! * W2 MLP step: batch 64, 784 -> 128 -> 10, relu, mean squared error; µs per forward+backward
//!   step and per forward without autograd (median of 200 after 20 warm-up; each backend in
//!   processes of its own, four rounds of them interleaved).
//! * W3 memory: 2,000 steps of `y = exp(y * 0.5 - 1.0)` on 10,000 elements, `sum`, backward;
//!   peak resident memory above the baseline, each backend in its own process (re-exec);
//!   `ours-ckpt` is ours with activation checkpointing every sqrt(2,000) = 45 steps.

mod burn_b;
mod candle_b;
mod ours;
mod ours_candle;
mod tape;
mod tape_b;
mod torch;

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

/// Result of W1: the final value and the gradient of x.
#[derive(Clone, Copy, Debug)]
pub struct W1Out {
    pub value: f32,
    pub grad: f32,
}

/// Result of a W2 step: the loss and the sum of all parameter gradients.
#[derive(Clone, Copy, Debug)]
pub struct W2Out {
    pub loss: f32,
    pub grad_sum: f64,
}

/// The MLP's data, identical for every backend.
pub struct Mlp {
    pub batch: usize,
    pub input: usize,
    pub hidden: usize,
    pub out: usize,
    pub x: Vec<f32>,
    pub w1: Vec<f32>,
    pub b1: Vec<f32>,
    pub w2: Vec<f32>,
    pub b2: Vec<f32>,
    pub target: Vec<f32>,
}

/// Deterministic uniform values in `[-scale, scale)` (xorshift).
fn uniform(n: usize, scale: f32, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

impl Mlp {
    fn new() -> Self {
        let (batch, input, hidden, out) = (64, 784, 128, 10);
        Mlp {
            batch,
            input,
            hidden,
            out,
            x: uniform(batch * input, 1.0, 1),
            w1: uniform(input * hidden, 1.0 / (input as f32).sqrt(), 2),
            b1: uniform(hidden, 1.0 / (input as f32).sqrt(), 3),
            w2: uniform(hidden * out, 1.0 / (hidden as f32).sqrt(), 4),
            b2: uniform(out, 1.0 / (hidden as f32).sqrt(), 5),
            target: uniform(batch * out, 1.0, 6),
        }
    }
}

const W1_STEPS: usize = 20_000;
const W3_STEPS: usize = 2_000;
const W3_LEN: usize = 10_000;

const ALL: [&str; 5] = ["tape", "ours", "candle", "ours-candle", "burn"];

fn w1_of(name: &str) -> fn(usize) -> W1Out {
    match name {
        "tape" => tape_b::w1,
        "ours" => ours::w1,
        "candle" => candle_b::w1,
        "ours-candle" => ours_candle::w1,
        "burn" => burn_b::w1,
        // W1's forward chain without autograd (workload `w1f`).
        "ours/no_grad" => ours::w1_no_grad,
        "candle/plain" => candle_b::w1_plain,
        "ours-candle/no_grad" => ours_candle::w1_no_grad,
        "ours-candle/kernels" => ours_candle::w1_kernels,
        _ => unreachable!(),
    }
}

/// W1 of `steps` steps on `backend`, in this process (PyTorch's in a process of its own).
fn w1_check(backend: &str, steps: usize) -> W1Out {
    match backend {
        "torch" => torch::w1_check(steps),
        b => w1_of(b)(steps),
    }
}

/// W3's gradient sum after `steps` steps on `backend`, as [`w1_check`].
fn w3_check(backend: &str, init: &[f32], steps: usize) -> f32 {
    match backend {
        "torch" => torch::w3_check(steps),
        b => w3_of(b)(init, steps),
    }
}

fn w3_of(name: &str) -> fn(&[f32], usize) -> f32 {
    match name {
        "tape" => tape_b::w3,
        "ours" => ours::w3,
        "ours-ckpt" => ours::w3_checkpointed,
        "candle" => candle_b::w3,
        "ours-candle" => ours_candle::w3,
        "burn" => burn_b::w3,
        _ => unreachable!(),
    }
}

trait Step {
    fn step(&mut self, grad: bool) -> W2Out;
}
impl Step for tape_b::W2<'_> {
    fn step(&mut self, grad: bool) -> W2Out {
        tape_b::W2::step(self, grad)
    }
}
impl Step for ours::W2 {
    fn step(&mut self, grad: bool) -> W2Out {
        ours::W2::step(self, grad)
    }
}
impl Step for candle_b::W2 {
    fn step(&mut self, grad: bool) -> W2Out {
        candle_b::W2::step(self, grad)
    }
}
impl Step for ours_candle::W2 {
    fn step(&mut self, grad: bool) -> W2Out {
        ours_candle::W2::step(self, grad)
    }
}
impl Step for burn_b::W2 {
    fn step(&mut self, grad: bool) -> W2Out {
        burn_b::W2::step(self, grad)
    }
}

fn w2_of<'a>(name: &str, m: &'a Mlp) -> Box<dyn Step + 'a> {
    match name {
        "tape" => Box::new(tape_b::W2::new(m)),
        "ours" => Box::new(ours::W2::new(m)),
        "candle" => Box::new(candle_b::W2::new(m)),
        "ours-candle" => Box::new(ours_candle::W2::new(m)),
        "burn" => Box::new(burn_b::W2::new(m)),
        _ => unreachable!(),
    }
}

struct Stats {
    median: f64,
    min: f64,
    max: f64,
}

fn stats(v: &[f64]) -> Stats {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    Stats {
        median: v[v.len() / 2],
        min: v[0],
        max: v[v.len() - 1],
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()) || (a == 0.0 && b == 0.0)
}

/// Flush-to-zero and denormals-are-zero on this thread (x86-64 MXCSR bits 15 and 6).
#[allow(deprecated)]
fn set_ftz(on: bool) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: only changes how this thread's SSE unit treats subnormal floats.
    unsafe {
        use std::arch::x86_64::{_mm_getcsr, _mm_setcsr};
        let bits = (1 << 15) | (1 << 6);
        let csr = _mm_getcsr();
        _mm_setcsr(if on { csr | bits } else { csr & !bits });
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = on;
}

fn w1(backends: &[&str], reps: usize) {
    println!(
        "W1 overhead: one-element tensor, {W1_STEPS} steps of y = tanh(y * 0.999 + 0.001), backward"
    );
    // Same numbers everywhere: a short chain (gradient still a normal float) and the full one.
    for steps in [1_000, W1_STEPS] {
        let reference = tape_b::w1(steps);
        for b in backends {
            let o = w1_check(b, steps);
            println!(
                "  check {steps:>5} steps  {b:<11} y = {:.7}  dy/dx = {:e}",
                o.value, o.grad
            );
            assert!(
                close(o.value as f64, reference.value as f64, 1e-5),
                "{b}: value {} vs tape {}",
                o.value,
                reference.value
            );
            assert!(
                close(o.grad as f64, reference.grad as f64, 1e-3),
                "{b}: gradient {} vs tape {}",
                o.grad,
                reference.grad
            );
        }
    }
    for ftz in [false, true] {
        // Each timed run in a process of its own (two warm-up runs first),
        // the processes interleaved: a backend that ran before in the same
        // process changes the next one's time (measured: the tape's 140-160
        // ns/op became 290-400 when it followed candle in one process, with
        // or without a pause in between; heap state, not CPU).
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); backends.len()];
        for _ in 0..reps {
            for (i, b) in backends.iter().enumerate() {
                times[i].push(w1_in_child(b, ftz));
            }
        }
        println!(
            "  {} (median of {reps} interleaved runs, one process each, ns/op = total / {}):",
            if ftz {
                "flush-to-zero + denormals-are-zero (MXCSR) on the running thread"
            } else {
                "as is (IEEE subnormals)"
            },
            W1_STEPS * 3
        );
        let tape = stats(&times[0]).median;
        for (i, b) in backends.iter().enumerate() {
            let s = stats(&times[i]);
            println!(
                "    {b:<11} {:>9.1} ns/op   min-max {:>8.1}-{:<8.1}  {:>6.2}x tape",
                s.median,
                s.min,
                s.max,
                s.median / tape
            );
        }
    }
}

/// The no-autograd variants of W1's forward chain that belong to `backend` (workload `w1f`).
fn w1f_variants(backend: &str) -> &'static [&'static str] {
    match backend {
        "ours" => &["ours/no_grad"],
        "candle" => &["candle/plain"],
        "ours-candle" => &["ours-candle/no_grad", "ours-candle/kernels"],
        _ => &[],
    }
}

/// W1's forward chain without autograd: what the kernels (and the generated wrappers under
/// `no_grad`) cost per op, to set beside W1's forward+backward.
fn w1f(backends: &[&str], reps: usize) {
    println!(
        "W1 forward without autograd: {W1_STEPS} steps of y = tanh(y * 0.999 + 0.001), no backward"
    );
    let names: Vec<&str> = backends
        .iter()
        .flat_map(|b| w1f_variants(b))
        .copied()
        .collect();
    let reference = tape_b::w1(W1_STEPS);
    for b in &names {
        let o = w1_of(b)(W1_STEPS);
        println!("  check {b:<20} y = {:.7}", o.value);
        assert!(
            close(o.value as f64, reference.value as f64, 1e-5),
            "{b}: value {} vs tape {}",
            o.value,
            reference.value
        );
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for _ in 0..reps {
        for (i, b) in names.iter().enumerate() {
            times[i].push(w1_in_child(b, false));
        }
    }
    println!(
        "  median of {reps} interleaved runs, one process each, ns/op = total / {}:",
        W1_STEPS * 3
    );
    for (i, b) in names.iter().enumerate() {
        let s = stats(&times[i]);
        println!(
            "    {b:<20} {:>9.1} ns/op   min-max {:>8.1}-{:<8.1}",
            s.median, s.min, s.max
        );
    }
}

fn w2(backends: &[&str], reps: usize) {
    let m = Mlp::new();
    println!(
        "W2 MLP step: batch {}, {} -> {} -> {}, relu, mean squared error",
        m.batch, m.input, m.hidden, m.out
    );
    // A step with autograd and the loss without, each backend in this process but PyTorch.
    let check = |b: &str| match b {
        "torch" => torch::w2_check(),
        b => {
            let mut s = w2_of(b, &m);
            let o = s.step(true);
            (o, s.step(false).loss)
        }
    };
    let reference = check(backends[0]).0;
    for b in backends {
        let (o, f_loss) = check(b);
        println!(
            "  check {b:<11} loss = {:.6} (no autograd {f_loss:.6})  sum of gradients = {:.6}",
            o.loss, o.grad_sum
        );
        assert!(
            close(o.loss as f64, reference.loss as f64, 1e-4),
            "{b}: loss"
        );
        assert!(
            close(f_loss as f64, reference.loss as f64, 1e-4),
            "{b}: loss"
        );
        assert!(
            close(o.grad_sum, reference.grad_sum, 1e-3),
            "{b}: gradients"
        );
    }
    // Timed in child processes, one backend each (as W1: a backend that ran
    // before in the same process changes the next one's time), in four
    // rounds of interleaved processes of reps / 4 steps each.
    let warm = 20;
    let rounds = 4;
    let mut fb: Vec<Vec<f64>> = vec![Vec::new(); backends.len()];
    let mut fw: Vec<Vec<f64>> = vec![Vec::new(); backends.len()];
    for r in 0..rounds {
        let n = reps / rounds + usize::from(r < reps % rounds);
        for (i, b) in backends.iter().enumerate() {
            let (a, f) = w2_in_child(b, warm, n);
            fb[i].extend(a);
            fw[i].extend(f);
        }
    }
    println!(
        "  median of {reps} steps after {warm} warm-up, in {rounds} rounds of interleaved processes (one backend each):"
    );
    let tape_ratio = stats(&fb[0]).median / stats(&fw[0]).median;
    for (i, b) in backends.iter().enumerate() {
        let (a, f) = (stats(&fb[i]), stats(&fw[i]));
        let ratio = a.median / f.median;
        println!(
            "    {b:<11} fwd+bwd {:>8.1} us (min-max {:>7.1}-{:<7.1})  fwd {:>7.1} us (min-max {:>7.1}-{:<7.1})  (fwd+bwd)/fwd {:>5.2}  ({:.2}x tape's ratio)",
            a.median,
            a.min,
            a.max,
            f.median,
            f.min,
            f.max,
            ratio,
            ratio / tape_ratio
        );
    }
}

/// `n` timed W2 steps of `backend` (after `warm` untimed ones) in a child
/// process: µs per forward+backward step and per forward step.
fn w2_in_child(backend: &str, warm: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let (warm, n_arg) = (warm.to_string(), n.to_string());
    let out = child(backend, &["w2-child", &warm, &n_arg]);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines().map(|l| {
        l.split_whitespace()
            .map(|v| v.parse::<f64>().expect("w2 child output"))
            .collect::<Vec<_>>()
    });
    let a = lines.next().unwrap_or_default();
    let f = lines.next().unwrap_or_default();
    assert_eq!((a.len(), f.len()), (n, n), "w2 child {backend} output");
    (a, f)
}

/// Child process: W2 steps of one backend; prints the forward+backward
/// times, then the forward times (µs, one line each).
fn w2_child(backend: &str, warm: usize, n: usize) {
    let m = Mlp::new();
    let mut s = w2_of(backend, &m);
    let (mut a, mut f) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for r in 0..warm + n {
        let t = Instant::now();
        black_box(s.step(true));
        let x = t.elapsed();
        let t = Instant::now();
        black_box(s.step(false));
        let y = t.elapsed();
        if r >= warm {
            a.push(x.as_nanos() as f64 / 1e3);
            f.push(y.as_nanos() as f64 / 1e3);
        }
    }
    let line = |v: &[f64]| v.iter().map(f64::to_string).collect::<Vec<_>>().join(" ");
    println!("{}\n{}", line(&a), line(&f));
}

/// One timed W1 run of `backend` in a child process (after two warm-up
/// runs there); ns per op.
fn w1_in_child(backend: &str, ftz: bool) -> f64 {
    let out = child(backend, &["w1-child", if ftz { "1" } else { "0" }]);
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("w1 child output")
}

/// Runs `command` (`w1-child`, `w2-child` or `w3-child`) with `args` for `backend` in a
/// process of its own: this binary again, or PyTorch's script. Panics when it fails.
fn child(backend: &str, args: &[&str]) -> std::process::Output {
    if backend == "torch" {
        return torch::run(args);
    }
    let exe = std::env::current_exe().expect("current exe");
    let out = Command::new(exe)
        .arg(args[0])
        .arg(backend)
        .args(&args[1..])
        .output()
        .expect("spawn child");
    assert!(
        out.status.success(),
        "{} {backend} failed: {}",
        args[0],
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Child process: two warm-up runs and one timed W1 run of one backend;
/// prints ns per op.
fn w1_child(backend: &str, ftz: bool) {
    set_ftz(ftz);
    let f = w1_of(backend);
    for _ in 0..2 {
        black_box(f(W1_STEPS));
    }
    let t = Instant::now();
    black_box(f(W1_STEPS));
    println!("{}", t.elapsed().as_nanos() as f64 / (W1_STEPS * 3) as f64);
}

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn w3_init() -> Vec<f32> {
    (0..W3_LEN).map(|i| i as f32 / W3_LEN as f32).collect()
}

/// Child process: one W3 run of one backend; prints `peak_kib millis grad_sum`.
fn w3_child(backend: &str) {
    let init = w3_init();
    let f = w3_of(backend);
    // Initialise the backend's statics (thread pools, caches) before the baseline.
    black_box(f(&init[..16], 2));
    let _ = std::fs::write("/proc/self/clear_refs", "5"); // reset VmHWM to VmRSS
    let base = status_kib("VmRSS:");
    let t = Instant::now();
    let g = f(&init, W3_STEPS);
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let peak = status_kib("VmHWM:");
    println!("{} {ms:.1} {g}", peak.saturating_sub(base));
}

fn w3(backends: &[&str], rounds: usize) {
    // Ours again with activation checkpointing every sqrt(steps) steps, beside ours.
    let mut with_ckpt: Vec<&str> = Vec::new();
    for b in backends {
        with_ckpt.push(b);
        if *b == "ours" {
            with_ckpt.push("ours-ckpt");
        }
    }
    let backends = &with_ckpt[..];
    println!(
        "W3 memory: {W3_STEPS} steps of y = exp(y * 0.5 - 1.0) on {W3_LEN} f32, sum, backward; each backend in its own process"
    );
    // Same numbers everywhere: after 2,000 steps the gradient is 0 (it shrinks by about 0.2 a
    // step), so compare a 20-step chain first.
    let init = w3_init();
    let reference = tape_b::w3(&init, 20);
    for b in backends {
        let g = w3_check(b, &init, 20);
        println!("  check 20 steps  {b:<11} sum(dx) = {g:e}");
        assert!(
            close(g as f64, reference as f64, 1e-3),
            "{b}: {g} vs {reference}"
        );
    }
    let floor = (W3_STEPS * W3_LEN * 4) as f64 / (1 << 20) as f64;
    let mut peaks: Vec<Vec<f64>> = vec![Vec::new(); backends.len()];
    let mut millis: Vec<Vec<f64>> = vec![Vec::new(); backends.len()];
    let mut grads: Vec<f64> = vec![0.0; backends.len()];
    for _ in 0..rounds {
        for (i, b) in backends.iter().enumerate() {
            let out = child(b, &["w3-child"]);
            let s = String::from_utf8_lossy(&out.stdout);
            let v: Vec<f64> = s
                .split_whitespace()
                .map(|x| x.parse().expect("number"))
                .collect();
            peaks[i].push(v[0] / 1024.0);
            millis[i].push(v[1]);
            grads[i] = v[2];
        }
    }
    println!(
        "  peak RSS above baseline (VmHWM - VmRSS before the run), median of {rounds} processes; floor (saved exp outputs) {floor:.1} MiB:"
    );
    let tape = stats(&peaks[0]).median;
    for (i, b) in backends.iter().enumerate() {
        let (p, t) = (stats(&peaks[i]), stats(&millis[i]));
        println!(
            "    {b:<11} {:>7.1} MiB (min-max {:>6.1}-{:<6.1})  {:>5.2}x tape   time {:>7.1} ms   sum(dx) = {:.4}",
            p.median,
            p.min,
            p.max,
            p.median / tape,
            t.median,
            grads[i]
        );
        assert!(close(grads[i], grads[0], 1e-3), "{b}: gradient");
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores")
}

/// Runs a child's command (`w1-child`, `w2-child`, `w3-child`) if `args` is one; whether it was.
fn run_child(args: &[String]) -> bool {
    match args.first().map(String::as_str) {
        Some("w3-child") => w3_child(&args[1]),
        Some("w2-child") => {
            let parse = |i: usize| args[i].parse().expect("w2-child count");
            w2_child(&args[1], parse(2), parse(3));
        }
        Some("w1-child") => {
            // A big stack: candle's backward walks the graph recursively.
            let (b, ftz) = (args[1].clone(), args[2] == "1");
            std::thread::Builder::new()
                .stack_size(1 << 30)
                .spawn(move || w1_child(&b, ftz))
                .expect("thread")
                .join()
                .expect("w1 child");
        }
        _ => return false,
    }
    true
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if run_child(&args) {
        return;
    }
    let mut workloads = Vec::new();
    let mut reps = None;
    let mut threads = 1usize;
    let mut only: Vec<String> = ALL.iter().map(|s| s.to_string()).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--reps" => reps = it.next().and_then(|v| v.parse().ok()),
            "--threads" => threads = it.next().and_then(|v| v.parse().ok()).unwrap_or(1),
            "--torch" => torch::enable(it.next().expect("--torch PYTHON").clone()),
            "--only" => {
                only = it
                    .next()
                    .map(|v| v.split(',').map(str::to_string).collect())
                    .unwrap_or_default()
            }
            w @ ("w1" | "w1f" | "w2" | "w3") => workloads.push(w.to_string()),
            other => panic!("unknown argument {other}"),
        }
    }
    if workloads.is_empty() {
        workloads = vec!["w1".into(), "w2".into(), "w3".into()];
    }
    // The tape is the reference: always first.
    only.retain(|b| b != "tape" && ALL.contains(&b.as_str()));
    only.insert(0, "tape".into());
    if torch::enabled() {
        only.push("torch".into());
    }
    // Thread pools of candle (rayon), burn-ndarray (rayon) and matrixmultiply (ndarray, the
    // tape): the same count for everyone, set before any pool starts. Children inherit it.
    let n = threads.to_string();
    // SAFETY: no other thread exists yet.
    unsafe {
        std::env::set_var("RAYON_NUM_THREADS", &n);
        std::env::set_var("MATMUL_NUM_THREADS", &n);
    }
    println!(
        "machine: {}; compute threads per backend: {threads}; backends: {}",
        machine(),
        only.join(", ")
    );
    // A big stack: candle's backward walks the graph recursively (60,000 nodes deep in W1).
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || {
            let names: Vec<&str> = only.iter().map(String::as_str).collect();
            for w in &workloads {
                let t = Instant::now();
                match w.as_str() {
                    "w1" => w1(&names, reps.unwrap_or(15)),
                    "w1f" => w1f(&names, reps.unwrap_or(15)),
                    "w2" => w2(&names, reps.unwrap_or(200)),
                    "w3" => w3(&names, reps.unwrap_or(3)),
                    _ => unreachable!(),
                }
                println!("  ({:.1} s)", Duration::as_secs_f64(&t.elapsed()));
            }
        })
        .expect("thread")
        .join()
        .expect("bench");
}
