//! How the kit runs its checks: case by case on a worker thread, each case under
//! `catch_unwind` and a time limit. A case whose checks have not ended when the limit
//! passes is recorded as a timeout and the kit goes on with the next case on a new worker
//! thread; the stuck thread is left running (Rust cannot stop a thread), detached, until
//! the process ends. A panic becomes a failed check with the panic's message (the default
//! panic hook stays silent on the kit's threads).

use super::args::guarded;
use super::report::{Record, summary};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Random calls per function in [`check_backend`](super::kit::check_backend)'s no-panic test.
pub const ROUNDS: usize = 250;

/// The time limit per case when `OPSET_KIT_TIMEOUT_SECS` is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What [`check_backend_with`](super::kit::check_backend_with) runs.
#[derive(Debug, Clone)]
pub struct KitOptions {
    /// Only the checks of these operators, as native_functions.yaml names them (`exp`,
    /// `mul.Tensor`, `exp_`, `exp.out`; a fixture counts under the operator it tests, a
    /// no-panic test under its function); `None` (the default): all. With a subset, the
    /// checks of the whole op set (a case for every function, both `Ok` and `Err` among the
    /// random calls) are left out.
    pub ops: Option<Vec<String>>,
    /// `"f64"`: every kind of case (gradcheck, in-place, out=, views, fixtures, no-panic);
    /// `"f32"`: the gradcheck cases in f32 against f64 ([`ConformanceTensor::f32_checks`]).
    /// Both by default.
    pub dtypes: Vec<&'static str>,
    /// The time limit per case: `OPSET_KIT_TIMEOUT_SECS` seconds, [`DEFAULT_TIMEOUT`]
    /// without it.
    pub timeout: Duration,
    /// Random calls per function in the no-panic test ([`ROUNDS`]).
    pub rounds: usize,
    /// The file the report is appended to: `OPSET_KIT_REPORT`, none without it.
    pub report: Option<PathBuf>,
}

impl Default for KitOptions {
    fn default() -> Self {
        let secs = std::env::var("OPSET_KIT_TIMEOUT_SECS")
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|s| *s > 0.0);
        KitOptions {
            ops: None,
            dtypes: vec!["f64", "f32"],
            timeout: secs.map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64),
            rounds: ROUNDS,
            report: std::env::var_os("OPSET_KIT_REPORT").map(PathBuf::from),
        }
    }
}

impl KitOptions {
    /// Whether the checks of `op` run.
    pub fn wants(&self, op: &str) -> bool {
        self.ops
            .as_ref()
            .is_none_or(|ops| ops.iter().any(|o| o == op))
    }
    /// Whether the checks in `dtype` run.
    pub fn runs(&self, dtype: &str) -> bool {
        self.dtypes.contains(&dtype)
    }
}

/// The kit while it runs: its options, the records so far, each case's time.
pub struct Kit {
    /// What runs.
    pub options: KitOptions,
    /// Every check's record so far.
    pub records: Vec<Record>,
    /// `(kind: case, time)` of every case so far.
    pub timings: Vec<(String, Duration)>,
    /// No-panic calls that returned `Ok` and `Err`.
    pub calls: (usize, usize),
}

impl Kit {
    /// A kit with no records yet.
    pub fn new(options: KitOptions) -> Self {
        Kit {
            options,
            records: Vec::new(),
            timings: Vec::new(),
            calls: (0, 0),
        }
    }
}

/// One case of a kind: the operator its records are under, a label for messages, and its
/// position in the list the worker builds.
#[derive(Debug, Clone)]
pub struct Job {
    /// The operator (overload name), or the function for a no-panic job.
    pub op: String,
    /// The case (`mul.Tensor (broadcast)`), a fixture's name, ...
    pub label: String,
    /// Its index in the worker's list.
    pub index: usize,
}

/// What a running job has done so far: read by the kit when the job runs out of time.
#[derive(Default)]
struct Partial {
    records: Vec<Record>,
    /// The check that is running and its dtype (a timeout is recorded under them).
    current: Option<(String, &'static str)>,
    /// No-panic calls that returned `Ok` and `Err`.
    calls: (usize, usize),
}

impl Partial {
    /// The running check and its dtype; `case` in f64 before the first check.
    fn current(&self) -> (&str, &'static str) {
        self.current
            .as_ref()
            .map_or(("case", "f64"), |(c, d)| (c.as_str(), *d))
    }
}

/// A job's handle on its records: [`Ctx::check`] runs one check and records it.
pub struct Ctx {
    partial: Arc<Mutex<Partial>>,
}

impl Ctx {
    fn lock(&self) -> MutexGuard<'_, Partial> {
        self.partial.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` as the check `check` of `op` on `case` in `dtype` and records its result;
    /// a panic fails the check with its message.
    pub fn check(
        &self,
        (op, check, dtype): (&str, &str, &'static str),
        case: &str,
        f: impl FnOnce() -> Result<(), String>,
    ) {
        self.lock().current = Some((check.to_string(), dtype));
        let r = guarded(f).map_err(panic_text);
        self.push(Record::of(op, check, case, r).in_dtype(dtype));
    }

    /// Records `r` as it is.
    pub fn push(&self, r: Record) {
        self.lock().records.push(r);
    }

    /// Counts no-panic calls that returned `Ok` and `Err`.
    pub fn calls(&self, ok: usize, err: usize) {
        let mut p = self.lock();
        p.calls.0 += ok;
        p.calls.1 += err;
    }
}

/// `panicked: message` for the error of a guarded call that panicked; other errors as
/// they are.
fn panic_text(e: String) -> String {
    match e.strip_prefix("(a panic) ") {
        Some(m) => format!("panicked: {m}"),
        None => e,
    }
}

/// Builds a worker's state (its case list), on the worker thread.
pub type Setup<S> = Arc<dyn Fn() -> S + Send + Sync>;
/// Runs the job at an index of the worker's list.
pub type Run<S> = Arc<dyn Fn(&S, usize, &Ctx) + Send + Sync>;

/// A finished job, sent by the worker.
struct Done {
    records: Vec<Record>,
    calls: (usize, usize),
    took: Duration,
}

/// A worker thread: it runs `jobs[start..]` in order and sends each one's records.
struct Worker {
    rx: Receiver<Done>,
    partial: Arc<Mutex<Partial>>,
    cancel: Arc<AtomicBool>,
}

fn spawn<S: 'static>(
    kind: &str,
    jobs: Arc<Vec<Job>>,
    start: usize,
    (setup, run): (Setup<S>, Run<S>),
) -> Worker {
    let (tx, rx) = channel();
    let partial = Arc::new(Mutex::new(Partial::default()));
    let cancel = Arc::new(AtomicBool::new(false));
    let (p, c) = (partial.clone(), cancel.clone());
    let body = move || {
        let ctx = Ctx { partial: p };
        let state = guarded(|| Ok(setup())).map_err(panic_text);
        for job in &jobs[start..] {
            if c.load(Ordering::Relaxed) {
                return;
            }
            *ctx.lock() = Partial::default();
            let t0 = Instant::now();
            let r = match &state {
                Ok(s) => guarded(|| {
                    run(s, job.index, &ctx);
                    Ok(())
                })
                .map_err(panic_text),
                Err(e) => Err(format!("building the cases: {e}")),
            };
            let mut p = std::mem::take(&mut *ctx.lock());
            if let Err(e) = r {
                let (check, dtype) = p.current();
                let rec = Record::of(&job.op, check, &job.label, Err(e)).in_dtype(dtype);
                p.records.push(rec);
            }
            let done = Done {
                records: p.records,
                calls: p.calls,
                took: t0.elapsed(),
            };
            if tx.send(done).is_err() {
                return;
            }
        }
    };
    let spawned = std::thread::Builder::new()
        .name(format!("kit: {kind}"))
        .stack_size(16 << 20)
        .spawn(body);
    if let Err(e) = spawned {
        // No thread: every job of the kind is recorded as ending without a result.
        eprintln!("the kit could not start a thread: {e}");
    }
    Worker {
        rx,
        partial,
        cancel,
    }
}

/// Runs `jobs` (one kind of case) on worker threads, each under the kit's time limit, and
/// adds their records to `kit`; prints the kind's progress and summary. Returns each job's
/// records, in order.
pub fn run_jobs<S: 'static>(
    kit: &mut Kit,
    kind: &str,
    jobs: &[Job],
    setup: Setup<S>,
    run: Run<S>,
) -> Vec<Vec<Record>> {
    let limit = kit.options.timeout;
    let shared: Arc<Vec<Job>> = Arc::new(jobs.to_vec());
    let started = Instant::now();
    let mut last_print = Instant::now();
    let mut worker: Option<Worker> = None;
    let mut out = Vec::with_capacity(jobs.len());
    for (n, job) in jobs.iter().enumerate() {
        let w = worker
            .get_or_insert_with(|| spawn(kind, shared.clone(), n, (setup.clone(), run.clone())));
        let (records, took) = match w.rx.recv_timeout(limit) {
            Ok(done) => {
                kit.calls.0 += done.calls.0;
                kit.calls.1 += done.calls.1;
                (done.records, done.took)
            }
            Err(e) => {
                let w = worker.take().expect("a worker");
                (abandon(w, job, limit, e), limit)
            }
        };
        kit.timings.push((format!("{kind}: {}", job.label), took));
        kit.records.extend(records.iter().cloned());
        out.push(records);
        if last_print.elapsed() > Duration::from_secs(5) && n + 1 < jobs.len() {
            println!("[kit] {kind}: {}/{} ...", n + 1, jobs.len());
            last_print = Instant::now();
        }
    }
    let all: Vec<Record> = out.iter().flatten().cloned().collect();
    if jobs.is_empty() {
        return out;
    }
    println!(
        "[kit] {kind}: {n}/{n} in {:.1} s, {} checks: {}",
        started.elapsed().as_secs_f64(),
        all.len(),
        summary(&all),
        n = jobs.len(),
    );
    out
}

/// The records of a job that ran out of time or whose thread ended without a result: what
/// it finished, then the check it was in, as a timeout or a failure. The worker is told to
/// stop after it (a stuck one never does: it is left running).
fn abandon(w: Worker, job: &Job, limit: Duration, e: RecvTimeoutError) -> Vec<Record> {
    w.cancel.store(true, Ordering::Relaxed);
    let p = std::mem::take(&mut *w.partial.lock().unwrap_or_else(|e| e.into_inner()));
    let (check, dtype) = p.current();
    let last = match e {
        RecvTimeoutError::Timeout => Record::timeout(&job.op, check, &job.label, limit),
        RecvTimeoutError::Disconnected => Record::of(
            &job.op,
            check,
            &job.label,
            Err("the kit's worker thread ended without a result".to_string()),
        ),
    };
    let mut records = p.records.clone();
    records.push(last.in_dtype(dtype));
    records
}
