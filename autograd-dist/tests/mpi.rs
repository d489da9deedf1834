//! The MPI tests (`cargo test -p autograd-dist --features mpi`). This binary has no test
//! harness: run by cargo, it starts itself under `mpirun -n 2` once per scenario
//! (`--scenario NAME`), with a time limit, and checks what the ranks print and the exit
//! status. Without `mpirun` on the `PATH` it prints one line and passes.
//!
//! Scenarios: the gradients after one step equal the single-process gradients of the
//! concatenated batch; 20 training steps match the single-process loss curve to 1e-6
//! relative; buckets' all-reduces start (and finish) while backward still runs; `no_sync`
//! accumulates without communication; `find_unused_parameters`; and failures — a
//! parameter without a gradient, a rank whose backward errors, a rank that leaves, a
//! timeout — end every rank with a clear error instead of a hang.

#[path = "../examples/mlp/mod.rs"]
mod mlp;
#[path = "mpi/scenarios.rs"]
mod scenarios;

use std::io::Write;
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The longest a scenario may take (mpirun's start included) before it counts as a hang.
const LIMIT: Duration = Duration::from_secs(120);

/// What `mpirun` gave back.
struct Outcome {
    success: bool,
    output: String,
    elapsed: Duration,
}

/// A scenario and the check of its outcome (an error message when it fails).
struct Case {
    name: &'static str,
    check: fn(&Outcome) -> Result<(), String>,
}

fn has(o: &Outcome, text: &str) -> Result<(), String> {
    if o.output.contains(text) {
        Ok(())
    } else {
        Err(format!("the output lacks {text:?}"))
    }
}

fn passes(o: &Outcome) -> Result<(), String> {
    if !o.success {
        return Err("mpirun failed".to_string());
    }
    has(o, "rank 0: ok")?;
    has(o, "rank 1: ok")
}

fn fails(o: &Outcome, texts: &[&str]) -> Result<(), String> {
    if o.success {
        return Err("mpirun succeeded where a rank must fail".to_string());
    }
    if o.elapsed > Duration::from_secs(60) {
        return Err(format!("the failure took {:.1} s", o.elapsed.as_secs_f64()));
    }
    texts.iter().try_for_each(|t| has(o, t))
}

const CASES: &[Case] = &[
    Case {
        name: "grads",
        check: passes,
    },
    Case {
        name: "curve",
        check: passes,
    },
    Case {
        name: "overlap",
        check: passes,
    },
    Case {
        name: "no_sync",
        check: passes,
    },
    Case {
        name: "unused",
        check: passes,
    },
    Case {
        name: "unused_error",
        check: |o| {
            fails(
                o,
                &[
                    "rank 0: error: Expected to have finished reduction",
                    "Parameter indices which did not receive grad for rank 1: 4",
                ],
            )
        },
    },
    Case {
        name: "rank_fails",
        check: |o| {
            fails(
                o,
                &[
                    "rank 1: error: injected failure",
                    "rank 0: error: rank 1 failed: injected failure",
                ],
            )
        },
    },
    Case {
        name: "rank_leaves",
        check: |o| {
            fails(
                o,
                &[
                    "rank 1: ok: leaving at step 2",
                    "rank 0: error: rank 1 left the process group while this rank waited for \
                     the all-reduce of gradient bucket 0",
                ],
            )
        },
    },
    Case {
        name: "timeout",
        check: |o| {
            fails(
                o,
                &[
                    "rank 0: error: the all-reduce of gradient bucket 0 did not complete within 1.0 s",
                    "rank 1: error: rank 0 failed: the all-reduce of gradient bucket 0 did not complete",
                ],
            )
        },
    },
];

fn mpirun(scenario: &str) -> Result<Outcome, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let start = Instant::now();
    let child = Command::new("mpirun")
        .args(["-n", "2", "--allow-run-as-root", "--oversubscribe"])
        .args(["--timeout", &LIMIT.as_secs().to_string()])
        .arg(exe)
        .args(["--scenario", scenario])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start mpirun: {e}"))?;
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(LIMIT + Duration::from_secs(10)) {
        Ok(out) => out.map_err(|e| e.to_string())?,
        Err(_) => {
            // mpirun passes SIGTERM on to the ranks.
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
            return Err(format!("hung: killed after {} s", LIMIT.as_secs() + 10));
        }
    };
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok(Outcome {
        success: out.status.success(),
        output,
        elapsed: start.elapsed(),
    })
}

fn launcher() -> ExitCode {
    if Command::new("mpirun").arg("--version").output().is_err() {
        println!(
            "mpirun is not installed: the MPI tests are skipped \
             (apt-get install libopenmpi-dev openmpi-bin libclang-dev)"
        );
        return ExitCode::SUCCESS;
    }
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut failed = Vec::new();
    for case in CASES {
        if !filter.is_empty() && !filter.iter().any(|f| case.name.contains(f.as_str())) {
            continue;
        }
        let result = mpirun(case.name).and_then(|o| {
            let r = (case.check)(&o);
            let lines: Vec<&str> = o
                .output
                .lines()
                .filter(|l| l.starts_with("rank "))
                .collect();
            (r.map(|()| (o.elapsed, lines.join("\n"))))
                .map_err(|e| format!("{e}\n--- output ---\n{}", o.output))
        });
        match result {
            Ok((t, lines)) => {
                println!(
                    "test {} (mpirun -n 2, {:.1} s) ... ok",
                    case.name,
                    t.as_secs_f64()
                );
                println!("{lines}");
            }
            Err(e) => {
                println!("test {} (mpirun -n 2) ... FAILED: {e}", case.name);
                failed.push(case.name);
            }
        }
        let _ = std::io::stdout().flush();
    }
    if failed.is_empty() {
        println!("MPI tests: all passed");
        ExitCode::SUCCESS
    } else {
        println!("MPI tests failed: {failed:?}");
        ExitCode::FAILURE
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--scenario") {
        Some(i) => scenarios::run(args.get(i + 1).map_or("", String::as_str)),
        None => launcher(),
    }
}
