//! PyTorch eager (`--torch PYTHON`): `torch_peer.py` run by the given Python, as child
//! processes interleaved with the Rust backends' own. The script prints what the binary's
//! children print; here are its checks, read back into the Rust types.

use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::{W1Out, W2Out};

/// The script, beside this crate's manifest.
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/torch_peer.py");

/// The Python that runs the script, when `--torch` named one.
static PYTHON: OnceLock<String> = OnceLock::new();

/// Takes PyTorch on as a backend: `python` must import torch.
pub fn enable(python: String) {
    let _ = PYTHON.set(python);
}

/// Runs `torch_peer.py args...`; panics with its standard error when it fails.
pub fn run(args: &[&str]) -> Output {
    let python = PYTHON.get().expect("torch: --torch PYTHON not given");
    let out = Command::new(python)
        .arg("-W")
        .arg("ignore")
        .arg(SCRIPT)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("torch: cannot run {python}: {e}"));
    assert!(
        out.status.success(),
        "torch_peer.py {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The numbers one line of the script's output holds.
fn numbers(args: &[&str]) -> Vec<f64> {
    String::from_utf8_lossy(&run(args).stdout)
        .split_whitespace()
        .map(|v| v.parse().expect("torch_peer.py prints numbers"))
        .collect()
}

/// W1's value and gradient after `steps` steps.
pub fn w1_check(steps: usize) -> W1Out {
    let v = numbers(&["w1-check", &steps.to_string()]);
    W1Out {
        value: v[0] as f32,
        grad: v[1] as f32,
    }
}

/// W2's step with autograd, and the loss without it.
pub fn w2_check() -> (W2Out, f32) {
    let v = numbers(&["w2-check"]);
    let step = W2Out {
        loss: v[0] as f32,
        grad_sum: v[2],
    };
    (step, v[1] as f32)
}

/// The sum of W3's gradient after `steps` steps.
pub fn w3_check(steps: usize) -> f32 {
    numbers(&["w3-check", &steps.to_string()])[0] as f32
}

/// Whether `--torch` named a Python.
pub fn enabled() -> bool {
    PYTHON.get().is_some()
}
