//! The whole kit in one call ([`check_backend`]): what a backend's one conformance test
//! runs. [`check_backend_with`] takes [`KitOptions`] (a subset of operators, the dtypes, the
//! time limit per case, the no-panic rounds, the report file) and returns every check's
//! record besides the failures.
//!
//! The kit runs its kinds of cases one after the other (in f64 the gradcheck, in-place,
//! out= and view cases; the gradcheck cases in f32 against f64; the fixtures; the no-panic
//! calls), each case on a worker thread under `catch_unwind` and a time limit
//! ([`runner`](super::runner); [`DEFAULT_TIMEOUT`], or `OPSET_KIT_TIMEOUT_SECS` seconds):
//! a kernel that returns an error, panics or hangs fails its checks (status `fail`, or
//! `timeout`) and the kit goes on. It prints a line per kind (`[kit] gradcheck cases (f64):
//! 111/111 in 1.1 s, 444 checks: pass 444, ...`), then the five slowest cases and a summary
//! per operator, and appends its records to the report file (`OPSET_KIT_REPORT`).

use super::fixtures::{fixtures, replay_with};
use super::no_panic::no_panic_calls;
use super::report::{Record, Status, append_report, not_implemented, per_op};
use super::{ConformanceTensor, gradcheck_cases, missing_cases};
use std::collections::BTreeSet;
use std::time::Duration;

pub use super::runner::{DEFAULT_TIMEOUT, Kit, KitOptions, ROUNDS};

/// The fixtures where the op set itself differs from PyTorch (every backend's replay
/// differs there, on purpose): `(fixture name, reason)`.
#[rustfmt::skip]
pub const OP_SET_DIFFERENCES: &[(&str, &str)] = &[
    ("shape_errors/mse_loss_mismatch_broadcast", "documented PyTorch difference: with a target that broadcasts, PyTorch's mse_loss_backward normalizes the target's gradient by the target's numel (PyTorch warns this 'will likely lead to incorrect results'); the op set gives the true derivative, half of it here"),
    ("jvp/native_dropout_backward/0", "PyTorch 2.15 has no forward formula for native_dropout_backward and raises; the op set's (auto_linear: the op is linear in grad_output) gives the tangent"),
    ("jvp/native_dropout_backward/1", "as jvp/native_dropout_backward/0"),
    ("layout/resize/view", "the runtime's views are functional (docs/views.md): a view cannot take other sizes than its replay gives, so resize_ refuses a view, where PyTorch resizes it over its base's storage"),
    ("select/topk_ties_largest", "topk among equal values: PyTorch's CPU kernel (std::partial_sort / std::nth_element) picks the indices in libstdc++'s selection order, the op set the first in a stable sort; the values agree (select/topk_ties_values_largest), the index of a tie and so where its gradient goes differ"),
    ("select/topk_ties_smallest", "as select/topk_ties_largest"),
    ("jvp/grid_sampler_2d_backward/0", "PyTorch 2.15 has no forward formula for grid_sampler_2d_backward and raises; the op set's (the op at grad_output's tangent plus grid_sampler_2d_double_backward at the input's and grid's tangents) gives the tangent"),
    ("jvp/grid_sampler_2d_backward/1", "as jvp/grid_sampler_2d_backward/0"),
    // ---- distances (issue 30)
    ("dist/pdist_backward_ties_p2_0", "third derivatives through _pdist_backward at coinciding rows (a zero distance, where the distance is not differentiable): PyTorch 2.15's double backward gives NaN there, the op set's _pdist_backward_backward (a differentiable composition whose first and second derivatives agree with 2.15's) finite values"),
    ("dist/pdist_backward_ties_p0_5", "as dist/pdist_backward_ties_p2_0"),
    ("dist/pdist_backward_ties_pneg1_0", "as dist/pdist_backward_ties_p2_0"),
    ("dist/pdist_backward_own_distances_p1_5", "as dist/pdist_backward_ties_p2_0"),
    ("random/_pdist_backward/0", "as dist/pdist_backward_ties_p2_0"),
    ("random/_pdist_backward/4", "as dist/pdist_backward_ties_p2_0"),
    ("dist/pdist_forward_rank3", "a 3-d input to _pdist_forward (which PyTorch's kernel reads as its first n * m elements): PyTorch 2.15's double backward fails with an internal shape error (\"The size of tensor a (3) must match the size of tensor b (2)\"), the op set computes it"),
    ("dist/pdist_backward_rank3", "as dist/pdist_forward_rank3, in the backward"),
    ("dist/error/pdist_backward_pdist_noncontiguous", "_pdist_backward of a non-contiguous pdist: PyTorch 2.15's backward fails with an internal shape error (\"shape mismatch: value tensor of shape [1, 1] cannot be broadcast\"), the op set computes it"),
    ("sweep/grad/_cdist_backward/empty_2d/all", "_cdist_backward of rows without values: PyTorch 2.15's double backward fails with an internal shape error (\"The size of tensor a (2) must match the size of tensor b (0)\"), the op set gives zeros"),
];

/// What [`check_backend_with`] found.
#[derive(Debug, Clone)]
pub struct KitRun {
    /// The backend's name (`Backend::backend_name()`), as the report names it.
    pub backend: String,
    /// One line per failure, not-implemented operators aside.
    pub failures: Vec<String>,
    /// Every check's record.
    pub records: Vec<Record>,
}

/// Runs every check of the kit on `B` (every kind of case, in f64 and f32) and returns one
/// line per failure (empty: `B` conforms):
///
/// * every function has a case of its kind ([`missing_cases`]);
/// * every gradcheck case passes gradcheck, gradgradcheck, the forward-mode check and the
///   raw-form check in f64, and gives in f32 the values, gradients and jvps it gives in f64
///   (within f32's tolerance);
/// * every in-place case, out= case and view case passes its checks
///   ([`inplace_cases`](super::inplace_cases), [`out_cases`](super::out_cases),
///   [`view_cases`](super::view_cases));
/// * every PyTorch fixture replays ([`replay_with`]), but the op set's own
///   [`OP_SET_DIFFERENCES`] and the backend's `known_differences` (`(fixture name,
///   reason)`), which must name fixtures, once each, and must still differ;
/// * [`ROUNDS`] random calls of every function give `Ok` or `Err`, never a panic.
///
/// A check that errs, panics or runs past the time limit fails; an operator whose checks
/// need a kernel the backend has not written is one line (`sin: needs aten::sin`). The kit
/// prints its progress and summary (`cargo test -- --nocapture` shows them) and appends its
/// records to `OPSET_KIT_REPORT`'s file when that is set.
pub fn check_backend<B: ConformanceTensor>(known_differences: &[(&str, &str)]) -> Vec<String> {
    let run = check_backend_with::<B>(&KitOptions::default(), known_differences);
    let mut failures = run.failures;
    failures.extend(
        not_implemented(&run.records)
            .into_iter()
            .map(|(op, needs)| format!("{op}: needs {}", needs.join(", "))),
    );
    failures
}

/// [`check_backend`] for a backend that is still growing: the operators whose kernels it
/// has not written (their checks fail with PyTorch's "Could not run 'aten::op' with
/// arguments from the 'X' backend" error) are listed, one line each, not counted as
/// failures; everything else must pass.
pub fn check_partial_backend<B: ConformanceTensor>(
    known_differences: &[(&str, &str)],
) -> Vec<String> {
    let run = check_backend_with::<B>(&KitOptions::default(), known_differences);
    let cases: Vec<Record> = run
        .records
        .iter()
        .filter(|r| r.check != "fixture")
        .cloned()
        .collect();
    for (op, needs) in not_implemented(&cases) {
        println!(
            "not implemented by this backend: {op} (needs {})",
            needs.join(", ")
        );
    }
    run.failures
}

/// The kit with `options`: the failures other than not-implemented operators, and every
/// check's record (appended to `options.report`'s file when it is set).
pub fn check_backend_with<B: ConformanceTensor>(
    options: &KitOptions,
    known_differences: &[(&str, &str)],
) -> KitRun {
    let mut kit = Kit::new(options.clone());
    let mut failures = Vec::new();
    let whole = options.ops.is_none();
    if whole {
        // The case lists are built here, on this thread: a panic (in the backend's
        // constructors) is a failure, as everywhere in the kit.
        let missing = super::args::guarded(|| Ok(missing_cases::<B>()))
            .unwrap_or_else(|e| vec![format!("building the case lists: {e}")]);
        kit.records.extend(
            missing
                .iter()
                .map(|m| Record::of("(all)", "has a case", "the case lists", Err(m.clone()))),
        );
    }
    if options.runs("f64") {
        gradcheck_cases::<B>(&mut kit);
        super::inplace_cases::run_inplace_cases::<B>(&mut kit);
        super::out_cases::run_out_cases::<B>(&mut kit);
        super::view_cases::run_view_cases::<B>(&mut kit);
    }
    if options.runs("f32") {
        B::f32_checks(&mut kit);
    }
    let known = [OP_SET_DIFFERENCES, known_differences].concat();
    if options.runs("f64") {
        failures.extend(check_known(&known));
        let r = replay_with::<B>(&mut kit, &known);
        println!(
            "[kit] pytorch fixtures: {} passed, {} known differences, {} failed, {} need \
             kernels the backend does not have, {} known differences now pass",
            r.passed,
            r.known_failing,
            r.failures.len() - r.not_implemented(),
            r.not_implemented(),
            r.fixed.len()
        );
        failures.extend(r.failure_lines());
        no_panic_calls::<B>(&mut kit);
        if whole && (kit.calls.0 == 0 || kit.calls.1 == 0) {
            failures.push(format!(
                "random calls: {} Ok and {} Err (both must occur)",
                kit.calls.0, kit.calls.1
            ));
        }
    }
    let fixture = |r: &&Record| r.check == "fixture";
    failures.splice(
        0..0,
        kit.records
            .iter()
            .filter(|r| matches!(r.status, Status::Fail | Status::Timeout) && !fixture(r))
            .map(failure_line),
    );
    print_end(&kit);
    let backend = B::backend_name().to_string();
    if let Some(path) = &options.report
        && let Err(e) = append_report(path, &backend, &kit.records)
    {
        failures.push(e);
    }
    KitRun {
        backend,
        failures,
        records: kit.records,
    }
}

/// A failed check as a line: `gradcheck: mm (non-contiguous): ...`, with its dtype when
/// that is not f64 (`value (f32): ...`).
fn failure_line(r: &Record) -> String {
    let timeout = if r.status == Status::Timeout {
        "timeout: "
    } else {
        ""
    };
    match r.dtype {
        "f64" => format!("{}: {timeout}{}", r.check, r.detail),
        d => format!("{} ({d}): {timeout}{}", r.check, r.detail),
    }
}

/// Prints the five slowest cases and, per operator, how many of its checks passed, failed,
/// need a kernel and timed out (several operators a line).
fn print_end(kit: &Kit) {
    let mut slow: Vec<&(String, Duration)> = kit.timings.iter().collect();
    slow.sort_by_key(|(_, t)| std::cmp::Reverse(*t));
    println!("[kit] the slowest cases:");
    for (what, t) in slow.iter().take(5) {
        println!("  {:7.2} s  {what}", t.as_secs_f64());
    }
    println!("[kit] per operator: pass/fail/not implemented/timeout");
    let mut line = String::from(" ");
    for (op, n) in per_op(&kit.records) {
        let item = format!(" {op} {}/{}/{}/{}", n[0], n[1], n[2], n[3]);
        if line.len() + item.len() > 100 {
            println!("{line}");
            line = String::from(" ");
        }
        line += &item;
    }
    println!("{line}");
}

/// The list of known differences names fixtures, once each.
fn check_known(known: &[(&str, &str)]) -> Vec<String> {
    let all = fixtures();
    let names: BTreeSet<&str> = all.iter().filter_map(|f| f["name"].as_str()).collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (name, _) in known {
        if !seen.insert(*name) {
            out.push(format!("duplicate known difference {name}"));
        }
        if !names.contains(name) {
            out.push(format!("known difference {name} names no fixture"));
        }
    }
    out
}

/// The kernels of the generated `Backend` trait, by name.
#[derive(Debug, Clone)]
pub struct Kernels {
    /// The kernels a backend writes to compute their ops: until it does, each returns
    /// PyTorch's "Could not run 'aten::op' with arguments from the 'X' backend" error.
    pub required: Vec<String>,
    /// With a default (an in-place or out= kernel calls its functional one).
    pub defaulted: Vec<String>,
}

/// The kernels of the `Backend` trait `autograd_ops!` generates for the op set (composite
/// functions have none: the op set computes them with other ops).
pub fn backend_kernels() -> Kernels {
    let mut c = super::config();
    c.helpers = Some(syn::parse_quote!(crate::helpers));
    c.fallible = true;
    let code = autograd_codegen::emit::generate(&c).expect("the op set's code generates");
    let file: syn::File = syn::parse2(code).expect("the generated code parses");
    let mut k = Kernels {
        required: Vec::new(),
        defaulted: Vec::new(),
    };
    let backend = file.items.iter().find_map(|i| match i {
        syn::Item::Trait(t) if t.ident == "Backend" => Some(t),
        _ => None,
    });
    for item in backend.into_iter().flat_map(|t| &t.items) {
        if let syn::TraitItem::Fn(f) = item {
            let name = f.sig.ident.to_string();
            if name == "backend_name" {
                continue;
            }
            // The generated default of a kernel a backend has not written.
            let not_implemented = f
                .default
                .as_ref()
                .is_none_or(|b| format!("{b:?}").contains("KernelNotImplemented"));
            match not_implemented {
                true => k.required.push(name),
                false => k.defaulted.push(name),
            }
        }
    }
    k
}
