//! The whole kit in one call ([`check_backend`]): what a backend's one conformance test runs.

use super::fixtures::{fixtures, replay_all};
use super::no_panic::random_calls;
use super::{ConformanceTensor, check_every_case, missing_cases};
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
    let mut failures = missing_cases::<B>();
    let cases = check_every_case::<B>();
    println!("conformance cases: {} failed", cases.len());
    failures.extend(cases);
    let known = [OP_SET_DIFFERENCES, known_differences].concat();
    failures.extend(check_known(&known));
    let r = replay_all::<B>(&known);
    println!(
        "pytorch fixtures: {} passed, {} known differences, {} failed, {} known differences now pass",
        r.passed,
        r.known_failing,
        r.failures.len(),
        r.fixed.len()
    );
    failures.extend(r.failures);
    failures.extend(
        r.fixed
            .into_iter()
            .map(|f| format!("known difference now passes (remove it from the list): {f}")),
    );
    let r = random_calls::<B>(ROUNDS);
    println!("no-panic property test: {} calls Ok, {} Err", r.ok, r.err);
    failures.extend(r.panics);
    if r.ok == 0 || r.err == 0 {
        failures.push(format!(
            "random calls: {} Ok and {} Err (both must occur)",
            r.ok, r.err
        ));
    }
    failures
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
