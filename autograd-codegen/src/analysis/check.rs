//! The checks of `derivatives.yaml` entries against their functions and each other, each a
//! short function (as serde_derive's `internals/check.rs`): two preconditions of setting an
//! entry up, called from `load::prepare_entry`, and the checks across a prepared entry and
//! its function or across entries, all called from [`check_entries`].

use super::DifferentiabilityInfo;
use super::cpp::cpp_arguments;
use crate::diagnostics::{Ctxt, Location};
use crate::model::derivatives::{DerivativeEntry, DispatchFormulas};
use crate::model::native::NativeFunction;
use rustc_hash::FxHashMap as HashMap;

/// What one entry yields before its backward nodes are named.
pub(super) struct PreparedEntry<'a> {
    /// The function the entry is for (index into the functions).
    pub canonical: usize,
    /// The info of each dispatch key that has no errors.
    pub infos: Vec<(&'a DispatchFormulas, DifferentiabilityInfo)>,
    /// `output_differentiability` as flags (a condition counts as `true`).
    pub od: Option<Vec<bool>>,
    /// The condition, when `output_differentiability` gives one.
    pub od_conditions: Option<Vec<String>>,
}

const AUTOGRAD_KEYS: &[&str] = &[
    "AutogradNestedTensor",
    "AutogradCPU",
    "AutogradCUDA",
    "AutogradHIP",
    "AutogradXLA",
    "AutogradMTIA",
    "AutogradMPS",
    "AutogradIPU",
    "AutogradXPU",
    "AutogradHPU",
    "AutogradVE",
    "AutogradLazy",
    "AutogradMeta",
    "AutogradPrivateUse1",
    "AutogradPrivateUse2",
    "AutogradPrivateUse3",
];

/// torchgen rejects argument names its generated code would shadow.
pub(super) fn check_argument_names(
    f: &NativeFunction,
    defn: &str,
    entry: &DerivativeEntry,
    cx: &mut Ctxt,
) -> bool {
    let arg_names: Vec<&str> = cpp_arguments(&f.func).iter().map(|a| a.name).collect();
    let msg = if arg_names.contains(&"grad_input_mask") {
        format!(
            "Schema for {defn} has an argument named grad_input_mask, but this name would be shadowed by our codegen. Please use a different name in native_functions.yaml."
        )
    } else if arg_names.contains(&"result") {
        format!(
            "Schema for {defn} has an argument named result, but this is only allowed for outputs. Please use a different name in native_functions.yaml."
        )
    } else {
        return true;
    };
    cx.error(&entry.loc, Some(&entry.name), msg);
    false
}

pub(super) fn check_dispatch_key(d: &DispatchFormulas, spec: &str, cx: &mut Ctxt) -> bool {
    if d.key == "Default" || AUTOGRAD_KEYS.contains(&d.key.as_str()) {
        return true;
    }
    let msg = format!(
        "Invalid dispatch key {} in derivatives.yaml for {spec}, expected key to be one of Default, {}",
        d.key,
        AUTOGRAD_KEYS.join(", ")
    );
    cx.error(&d.loc, Some(spec), msg);
    false
}

/// Run every check on the prepared entries (`prepared[i]` is `entries[i]`'s, `None` where it
/// had errors already). An entry that must not be used any further is set to `None`.
pub(super) fn check_entries(
    functions: &[NativeFunction],
    entries: &[DerivativeEntry],
    prepared: &mut [Option<PreparedEntry<'_>>],
    cx: &mut Ctxt,
) {
    check_duplicate_entries(functions, entries, prepared, cx);
    check_output_differentiability_length(functions, entries, prepared, cx);
    check_some_output_differentiable(functions, entries, prepared, cx);
}

/// Two entries for one function: torchgen would let the later one replace the earlier one
/// (and number its node as if both existed). The later one is dropped.
fn check_duplicate_entries(
    functions: &[NativeFunction],
    entries: &[DerivativeEntry],
    prepared: &mut [Option<PreparedEntry<'_>>],
    cx: &mut Ctxt,
) {
    let mut first: HashMap<usize, &Location> = HashMap::default();
    for (entry, slot) in entries.iter().zip(prepared.iter_mut()) {
        let Some(p) = slot else { continue };
        if let Some(loc) = first.get(&p.canonical) {
            let msg = format!(
                "duplicate entry for `{}`; the first is at {loc}",
                functions[p.canonical].schema
            );
            cx.error(&entry.loc, Some(&entry.name), msg);
            *slot = None;
        } else {
            first.insert(p.canonical, &entry.loc);
        }
    }
}

/// One `output_differentiability` flag per output, neither fewer nor more (torchgen's
/// `gen_differentiable_outputs` raises otherwise, and a generated node would record nothing).
fn check_output_differentiability_length(
    functions: &[NativeFunction],
    entries: &[DerivativeEntry],
    prepared: &[Option<PreparedEntry<'_>>],
    cx: &mut Ctxt,
) {
    for (entry, p) in entries.iter().zip(prepared) {
        let Some((p, od)) = p.as_ref().and_then(|p| Some((p, p.od.as_ref()?))) else {
            continue;
        };
        let f = &functions[p.canonical].func;
        if od.len() != f.returns.len() {
            let msg = format!(
                "output_differentiability has {} value{} but `{}` has {} output{}: give one True or False per output",
                od.len(),
                plural(od.len()),
                f.name,
                f.returns.len(),
                plural(f.returns.len()),
            );
            cx.error(&entry.loc, Some(&entry.name), msg);
        }
    }
}

/// Backward formulas for a function none of whose outputs is differentiable would never run
/// (torchgen: "derivative ignored ... specified an autograd function without derivative").
fn check_some_output_differentiable(
    functions: &[NativeFunction],
    entries: &[DerivativeEntry],
    prepared: &[Option<PreparedEntry<'_>>],
    cx: &mut Ctxt,
) {
    for (entry, p) in entries.iter().zip(prepared) {
        let Some(p) = p else { continue };
        let f = &functions[p.canonical].func;
        let none_differentiable = p.od.as_ref().is_some_and(|od| !od.contains(&true));
        let with_formulas = p.infos.iter().find(|(_, i)| i.has_derivatives());
        if let (true, Some((_, info))) =
            (none_differentiable && !f.returns.is_empty(), with_formulas)
        {
            let msg = format!(
                "output_differentiability marks no output of `{}` differentiable, but the entry has backward formulas for {}: they would never run; mark an output True, or make the inputs `non_differentiable`",
                f.name,
                info.args_with_derivatives.join(", ")
            );
            cx.error(&entry.loc, Some(&entry.name), msg);
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
