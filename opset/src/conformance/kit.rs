//! The whole kit in one call ([`check_backend`]): what a backend's one conformance test runs.

use super::fixtures::{fixtures, replay_all};
use super::no_panic::random_calls;
use super::report::{Record, Status, classify, not_implemented, summary, write_report};
use super::{ConformanceTensor, case_records, missing_cases};
use std::collections::BTreeSet;

/// Random calls per function in [`check_backend`]'s no-panic test.
pub const ROUNDS: usize = 250;

/// The fixtures where the op set itself differs from PyTorch (every backend's replay
/// differs there, on purpose): `(fixture name, reason)`.
#[rustfmt::skip]
pub const OP_SET_DIFFERENCES: &[(&str, &str)] = &[
    ("shape_errors/mse_loss_mismatch_broadcast", "documented PyTorch difference: with a target that broadcasts, PyTorch's mse_loss_backward normalizes the target's gradient by the target's numel (PyTorch warns this 'will likely lead to incorrect results'); the op set gives the true derivative, half of it here"),
    ("jvp/native_dropout_backward/0", "PyTorch 2.15 has no forward formula for native_dropout_backward and raises; the op set's (auto_linear: the op is linear in grad_output) gives the tangent"),
    ("jvp/native_dropout_backward/1", "as jvp/native_dropout_backward/0"),
    ("forward_nested/jvp_jvp/layer_norm_weight", "PyTorch bug: native_layer_norm has no tangent for its mean and rstd outputs, which its layer_norm_jvp reads, so a jvp of a jvp through layer_norm treats them as constants (central differences disagree with PyTorch by 0.4 and agree with the op set to 1e-10)"),
    ("kernel_edges/grad/embedding_scale_grad_by_freq_second_order", "PyTorch bug: its embedding_dense_double_backward leaves out scale_grad_by_freq's 1/count (its comment: 'since first backward takes care of scaling by frequency, we don't need to worry about it here'), so with a repeated index the second derivatives through the embedding's gradient are off (for the 0-d input: central differences 0.0471498, the op set 0.0471498, PyTorch 0.0875800); the op set's embedding backward is made of differentiable ops"),
    ("forward_nested/grad_of_jvp/layer_norm_weight", "PyTorch bug: the gradient of a layer_norm tangent misses the paths through native_layer_norm's mean and rstd, whose gradients its backward formula ignores (as forward_nested/jvp_jvp/layer_norm_weight)"),
];

/// Runs every check of the kit on `B` and returns one line per failure (empty: `B`
/// conforms):
///
/// * every differentiable function has a case ([`missing_cases`]), and every case passes
///   gradcheck, gradgradcheck and the forward-mode check ([`check_every_case`]);
/// * every PyTorch fixture replays ([`replay_all`]), but the op set's own
///   [`OP_SET_DIFFERENCES`] and the backend's `known_differences` (`(fixture name,
///   reason)`), which must name fixtures, once each, and must still differ;
/// * [`ROUNDS`] random calls of every function give `Ok` or `Err`, never a panic
///   ([`random_calls`]).
///
/// It prints a summary line per part (`cargo test -- --nocapture` shows them).
pub fn check_backend<B: ConformanceTensor>(known_differences: &[(&str, &str)]) -> Vec<String> {
    let (failures, records) = run_kit::<B>(known_differences);
    let mut failures = failures;
    failures.extend(
        not_implemented(&records)
            .into_iter()
            .map(|(op, needs)| format!("{op}: needs {}", needs.join(", "))),
    );
    failures
}

/// [`check_backend`] for a backend that is still growing: the operators whose kernels it
/// has not written (their checks fail with PyTorch's "Could not run 'aten::op' with
/// arguments from the 'X' backend" error) are listed, one line each, not counted as
/// failures; everything else must pass. The missing-case and no-panic parts run too.
pub fn check_partial_backend<B: ConformanceTensor>(
    known_differences: &[(&str, &str)],
) -> Vec<String> {
    let (failures, records) = run_kit::<B>(known_differences);
    // Fixtures are named `category/...`; the replay's line counts them.
    for (op, needs) in not_implemented(&records)
        .iter()
        .filter(|(op, _)| !op.contains('/'))
    {
        println!(
            "not implemented by this backend: {op} (needs {})",
            needs.join(", ")
        );
    }
    failures
}

/// The kit's parts: failures other than not-implemented operators, and every check's
/// record (written to `OPSET_KIT_REPORT` when it is set).
fn run_kit<B: ConformanceTensor>(known_differences: &[(&str, &str)]) -> (Vec<String>, Vec<Record>) {
    let mut failures = missing_cases::<B>();
    let mut records = case_records::<B>();
    let cases: Vec<String> = records
        .iter()
        .filter(|r| r.status == Status::Fail)
        .map(|r| format!("{}: {}", r.check, r.detail))
        .collect();
    println!(
        "conformance cases: {} ({} checks)",
        summary(&records),
        records.len()
    );
    failures.extend(cases);
    let known = [OP_SET_DIFFERENCES, known_differences].concat();
    failures.extend(check_known(&known));
    let r = replay_all::<B>(&known);
    let (missing, failed): (Vec<String>, Vec<String>) = r
        .failures
        .into_iter()
        .partition(|f| classify(f) == Status::NotImplemented);
    println!(
        "pytorch fixtures: {} passed, {} known differences, {} failed, {} need kernels the \
         backend does not have, {} known differences now pass",
        r.passed,
        r.known_failing,
        failed.len(),
        missing.len(),
        r.fixed.len()
    );
    failures.extend(failed);
    failures.extend(
        r.fixed
            .into_iter()
            .map(|f| format!("known difference now passes (remove it from the list): {f}")),
    );
    records.extend(r.records);
    let r = random_calls::<B>(ROUNDS);
    println!("no-panic property test: {} calls Ok, {} Err", r.ok, r.err);
    failures.extend(r.panics);
    if r.ok == 0 || r.err == 0 {
        failures.push(format!(
            "random calls: {} Ok and {} Err (both must occur)",
            r.ok, r.err
        ));
    }
    let backend = std::any::type_name::<B>();
    if let Err(e) = write_report(backend, &records) {
        failures.push(e);
    }
    (failures, records)
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
