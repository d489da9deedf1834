//! Loading: each `derivatives.yaml` entry becomes one info per dispatch key, keyed by the
//! canonical function's schema (torchgen's `load_derivatives`), plus the `{view}_copy` infos.

use super::cpp::{cpp_arguments, cpp_name};
use super::derivative::set_up_derivatives;
use super::{AnalysisOptions, DifferentiabilityInfo, InfoMap, InfoSet};
use crate::diagnostics::Ctxt;
use crate::model::derivatives::{DerivativeEntry, DispatchFormulas, OutputDifferentiability};
use crate::model::native::NativeFunction;
use crate::model::schema::{FunctionSchema, SchemaKind, SignatureKey};
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

/// Python's `str.title()`: upper-case the first letter of each run of letters.
fn title(s: &str) -> String {
    let mut out = String::new();
    let mut prev_letter = false;
    for c in s.chars() {
        if c.is_alphabetic() {
            if prev_letter {
                out.extend(c.to_lowercase());
            } else {
                out.extend(c.to_uppercase());
            }
            prev_letter = true;
        } else {
            out.push(c);
            prev_letter = false;
        }
    }
    out
}

/// torchgen's `_create_op_prefix`: `add` -> `AddBackward`, `conv2d` -> `Conv2DBackward`.
pub fn op_prefix(name: &str) -> String {
    let camel: String = name.split('_').map(title).collect();
    format!("{camel}Backward").replace("ForwardBackward", "Backward")
}

/// torchgen's `split_name_params`: `mul` from `mul.Tensor(...)`.
fn defn_name(spec: &str) -> Option<&str> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let end = spec.find(|c: char| !is_word(c))?;
    let mut rest = &spec[end..];
    if let Some(r) = rest.strip_prefix('.') {
        let overload_end = r.find(|c: char| !is_word(c))?;
        if overload_end == 0 {
            return None;
        }
        rest = &r[overload_end..];
    }
    (end > 0 && rest.starts_with('(') && rest.contains(')')).then(|| &spec[..end])
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

/// What one entry yields before its backward nodes are named: the canonical function, the
/// infos per dispatch key and the output differentiability.
type PreparedEntry<'a> = (
    usize,
    Vec<(&'a DispatchFormulas, DifferentiabilityInfo)>,
    Option<Vec<bool>>,
    Option<Vec<String>>,
);

/// The per-entry part of [`load_infos`], independent of every other entry.
fn prepare_entry<'a>(
    functions: &[NativeFunction],
    by_schema: &HashMap<&str, usize>,
    by_signature: &HashMap<SignatureKey<'_>, Vec<usize>>,
    entry: &'a DerivativeEntry,
    options: &AnalysisOptions,
    cx: &mut Ctxt,
) -> Option<PreparedEntry<'a>> {
    let spec = entry.name.as_str();
    let e = Some(spec);
    let Some(defn) = defn_name(spec) else {
        cx.error(
            &entry.loc,
            e,
            format!("Unsupported function schema: {spec}"),
        );
        return None;
    };
    let (od, od_conditions) = match &entry.output_differentiability {
        None => (None, None),
        Some(OutputDifferentiability::Flags(v)) => (Some(v.clone()), None),
        Some(OutputDifferentiability::Conditions(c)) => {
            if c.len() != 1 {
                cx.error(&entry.loc, e, "output_differentiability must either be a list of booleans or one condition string (conditions are supported for single-output functions only)");
                return None;
            }
            (Some(vec![true]), Some(c.clone()))
        }
    };
    let Some(&fidx) = by_schema.get(spec) else {
        let avail: Vec<String> = functions
            .iter()
            .filter(|f| cpp_name(&f.func) == defn)
            .map(|f| f.schema.clone())
            .collect();
        let msg = match FunctionSchema::parse(spec) {
            Err(err) => format!("invalid schema: {err}"),
            Ok(_) if avail.is_empty() => {
                format!("could not find a native function for schema: {spec}")
            }
            Ok(_) => format!(
                "could not find a native function for schema: {spec}. Available signatures:\n{}",
                avail.join("\n")
            ),
        };
        cx.error(&entry.loc, e, msg);
        return None;
    };
    let group = &by_signature[&functions[fidx].func.signature_key(false, false)];
    let canonical = group
        .iter()
        .copied()
        .find(|&i| {
            let f = &functions[i].func;
            !f.is_functional_fn() && !f.is_out_fn() && f.name.name.is(defn)
        })
        .or_else(|| {
            (cpp_name(&functions[group[0]].func) == format!("{defn}_")).then_some(group[0])
        });
    let Some(canonical) = canonical else {
        cx.error(
            &entry.loc,
            e,
            format!(
                "no canonical function named `{defn}` among the variants of {}",
                functions[fidx].func.signature(false)
            ),
        );
        return None;
    };
    let cf = &functions[canonical];
    let arg_names: Vec<&str> = cpp_arguments(&cf.func).iter().map(|a| a.name).collect();
    if arg_names.contains(&"grad_input_mask") {
        cx.error(&entry.loc, e, format!("Schema for {defn} has an argument named grad_input_mask, but this name would be shadowed by our codegen. Please use a different name in native_functions.yaml."));
        return None;
    }
    if arg_names.contains(&"result") {
        cx.error(&entry.loc, e, format!("Schema for {defn} has an argument named result, but this is only allowed for outputs. Please use a different name in native_functions.yaml."));
        return None;
    }
    let mut set = Vec::new();
    for d in &entry.dispatch {
        if d.key != "Default" && !AUTOGRAD_KEYS.contains(&d.key.as_str()) {
            cx.error(
                &d.loc,
                e,
                format!("Invalid dispatch key {} in derivatives.yaml for {spec}, expected key to be one of Default, {}", d.key, AUTOGRAD_KEYS.join(", ")),
            );
            continue;
        }
        if let Some(info) =
            set_up_derivatives(cf, canonical, defn, d, od.as_deref(), options, spec, cx)
        {
            set.push((d, info));
        }
    }
    Some((canonical, set, od, od_conditions))
}

/// torchgen's `load_derivatives`: one info set per entry, keyed by the canonical function's
/// schema, plus the derived `{view}_copy` infos. Errors go to `cx`.
pub fn load_infos<'e>(
    functions: &[NativeFunction],
    entries: &'e [DerivativeEntry],
    options: &AnalysisOptions,
    cx: &mut Ctxt,
) -> InfoMap {
    let mut by_schema: HashMap<&str, usize> = HashMap::default();
    let mut by_signature: HashMap<SignatureKey<'_>, Vec<usize>> = HashMap::default();
    for (i, f) in functions.iter().enumerate() {
        by_schema.insert(f.schema.as_str(), i);
        by_signature
            .entry(f.func.signature_key(false, false))
            .or_default()
            .push(i);
    }
    // Entries are independent until their nodes are named: prepare them on two threads
    // (each with its own error list, appended in entry order), then name and insert in order.
    let prepare = |entries: &'e [DerivativeEntry],
                   cx: &mut Ctxt|
     -> Vec<Option<PreparedEntry<'e>>> {
        entries
            .iter()
            .map(|entry| prepare_entry(functions, &by_schema, &by_signature, entry, options, cx))
            .collect()
    };
    let prepared: Vec<Option<PreparedEntry<'e>>> = if entries.len() < 64 {
        prepare(entries, cx)
    } else {
        let (first, second) = entries.split_at(entries.len() / 2);
        let (mut a, (b, cx_b)) = std::thread::scope(|s| {
            let b = s.spawn(|| {
                let mut cx = Ctxt::new();
                let b = prepare(second, &mut cx);
                (b, cx)
            });
            let a = prepare(first, cx);
            (
                a,
                b.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            )
        });
        cx.append(cx_b);
        a.extend(b);
        a
    };
    let mut op_counter: HashMap<String, usize> = HashMap::default();
    let mut infos = InfoMap::default();
    for (entry, prepared) in entries.iter().zip(prepared) {
        let Some((canonical, infos_by_key, od, od_conditions)) = prepared else {
            continue;
        };
        let Some(defn) = defn_name(&entry.name) else {
            continue;
        };
        let mut set: InfoSet = Vec::new();
        for (d, mut info) in infos_by_key {
            if info.has_derivatives() {
                let mut prefix = op_prefix(defn);
                if d.key != "Default" {
                    prefix.push_str(&d.key);
                }
                let n = op_counter.entry(prefix.clone()).or_insert(0);
                info.op = Some(format!("{prefix}{n}"));
                *n += 1;
            }
            info.output_differentiability = od.clone();
            info.output_differentiability_conditions = od_conditions.clone();
            info.loc = entry.loc.clone();
            set.push((d.key.clone(), Arc::new(info)));
        }
        if !set.is_empty() {
            infos.insert(functions[canonical].func.clone(), set);
        }
    }
    add_view_copy_infos(functions, &mut infos);
    infos
}

/// torchgen's `add_view_copy_derivatives`: a `{view}_copy` function inherits its view's info.
fn add_view_copy_infos(functions: &[NativeFunction], infos: &mut InfoMap) {
    // Pair each aliasing view with the functional non-aliasing function of the same view
    // signature (torchgen's `NativeFunctionsViewGroup`).
    let mut groups: HashMap<SignatureKey<'_>, (Option<usize>, Option<usize>)> = HashMap::default();
    for (i, f) in functions.iter().enumerate() {
        let g = groups.entry(f.func.signature_key(false, true)).or_default();
        match f.view_kind() {
            Some(false) => g.0 = Some(i),
            Some(true) => {}
            None if f.func.kind() == SchemaKind::Functional => g.1 = Some(i),
            None => {}
        }
    }
    let mut view_copy_of: HashMap<String, usize> = HashMap::default();
    for (view, copy) in groups.values() {
        if let (Some(v), Some(c)) = (view, copy) {
            view_copy_of.insert(functions[*v].func.name.to_string(), *c);
        }
    }
    let mut added: Vec<(FunctionSchema, InfoSet)> = Vec::new();
    for (_, set) in infos.iter() {
        let mut copies: InfoSet = Vec::new();
        let mut copy_schema = None;
        for (key, info) in set {
            let Some(&c) = view_copy_of.get(&functions[info.func].func.name.to_string()) else {
                break;
            };
            let mut ci = (**info).clone();
            let mut parts = info.name.splitn(3, '.');
            let first = parts.next().unwrap_or_default();
            let rest: Vec<&str> = parts.collect();
            ci.name = format!("{first}_copy.{}", rest.join("."));
            ci.func = c;
            ci.op = info.op.as_ref().map(|o| format!("{o}_copy"));
            copy_schema = Some(functions[c].func.clone());
            copies.push((key.clone(), Arc::new(ci)));
        }
        if let Some(s) = copy_schema
            && !copies.is_empty()
            && infos.get(&s).is_none()
        {
            added.push((s, copies));
        }
    }
    for (s, set) in added {
        infos.insert(s, set);
    }
}
