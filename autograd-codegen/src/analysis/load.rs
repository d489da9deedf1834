//! Loading: each `derivatives.yaml` entry becomes one info per dispatch key, keyed by the
//! canonical function's schema (torchgen's `load_derivatives`), plus the `{view}_copy` infos.

use super::check::{self, PreparedEntry};
use super::cpp::cpp_name;
use super::derivative::Setup;
use super::{AnalysisOptions, DifferentiabilityInfo, InfoMap, InfoSet};
use crate::diagnostics::{Ctxt, Location};
use crate::formula::Formula;
use crate::model::derivatives::{DerivativeEntry, OutputDifferentiability};
use crate::model::native::NativeFunction;
use crate::model::schema::{FunctionSchema, OperatorName, SchemaKind, SignatureKey};
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

/// The native functions by schema text and by signature, for finding an entry's function.
struct Lookup<'f> {
    functions: &'f [NativeFunction],
    by_schema: HashMap<&'f str, usize>,
    by_signature: HashMap<SignatureKey<'f>, Vec<usize>>,
}

impl<'f> Lookup<'f> {
    fn new(functions: &'f [NativeFunction]) -> Self {
        let mut by_schema: HashMap<&str, usize> = HashMap::default();
        let mut by_signature: HashMap<SignatureKey<'_>, Vec<usize>> = HashMap::default();
        for (i, f) in functions.iter().enumerate() {
            by_schema.insert(f.schema.as_str(), i);
            by_signature
                .entry(f.func.signature_key(false, false))
                .or_default()
                .push(i);
        }
        Lookup {
            functions,
            by_schema,
            by_signature,
        }
    }

    /// torchgen's `canonical_function`: among the variants of the entry's function, the one
    /// named `defn` (or the in-place one, for functions that only have that).
    fn canonical(&self, entry: &DerivativeEntry, defn: &str, cx: &mut Ctxt) -> Option<usize> {
        let functions = self.functions;
        let spec = entry.name.as_str();
        let Some(&fidx) = self.by_schema.get(spec) else {
            cx.error(&entry.loc, Some(spec), self.not_found(spec, defn));
            return None;
        };
        let group = &self.by_signature[&functions[fidx].func.signature_key(false, false)];
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
        if canonical.is_none() {
            let msg = format!(
                "no canonical function named `{defn}` among the variants of {}",
                functions[fidx].func.signature(false)
            );
            cx.error(&entry.loc, Some(spec), msg);
        }
        canonical
    }

    fn not_found(&self, spec: &str, defn: &str) -> String {
        let avail: Vec<&str> = self
            .functions
            .iter()
            .filter(|f| cpp_name(&f.func) == defn)
            .map(|f| f.schema.as_str())
            .collect();
        match FunctionSchema::parse(spec) {
            Err(err) => format!("invalid schema: {err}"),
            Ok(_) if avail.is_empty() => {
                format!("could not find a native function for schema: {spec}")
            }
            Ok(_) => format!(
                "could not find a native function for schema: {spec}. Available signatures:\n{}",
                avail.join("\n")
            ),
        }
    }
}

/// `output_differentiability` as flags and conditions.
type OutputFlags = (Option<Vec<bool>>, Option<Vec<String>>);

fn output_flags(entry: &DerivativeEntry, cx: &mut Ctxt) -> Option<OutputFlags> {
    match &entry.output_differentiability {
        None => Some((None, None)),
        Some(OutputDifferentiability::Flags(v)) => Some((Some(v.clone()), None)),
        Some(OutputDifferentiability::Conditions(c)) if c.len() == 1 => {
            Some((Some(vec![true]), Some(c.clone())))
        }
        Some(OutputDifferentiability::Conditions(_)) => {
            cx.error(&entry.loc, Some(&entry.name), "output_differentiability must either be a list of booleans or one condition string (conditions are supported for single-output functions only)");
            None
        }
    }
}

/// The per-entry part of [`load_infos`], independent of every other entry.
fn prepare_entry<'a>(
    lookup: &Lookup<'_>,
    entry: &'a DerivativeEntry,
    options: &AnalysisOptions,
    cx: &mut Ctxt,
) -> Option<PreparedEntry<'a>> {
    let spec = entry.name.as_str();
    let Some(defn) = defn_name(spec) else {
        let msg = format!("Unsupported function schema: {spec}");
        cx.error(&entry.loc, Some(spec), msg);
        return None;
    };
    let (od, od_conditions) = output_flags(entry, cx)?;
    let canonical = lookup.canonical(entry, defn, cx)?;
    let cf = &lookup.functions[canonical];
    if !check::check_argument_names(cf, defn, entry, cx) {
        return None;
    }
    let setup = Setup::new(cf, defn, spec, od.as_deref(), options);
    let mut infos = Vec::new();
    for d in &entry.dispatch {
        if check::check_dispatch_key(d, spec, cx)
            && let Some(mut info) = setup.info(canonical, d, cx)
        {
            info.view_inverse = view_inverse(entry, cx);
            infos.push((d, info));
        }
    }
    Some(PreparedEntry {
        canonical,
        infos,
        od,
        od_conditions,
    })
}

/// The entry's `view_inverse:` as tokens.
fn view_inverse(entry: &DerivativeEntry, cx: &mut Ctxt) -> Option<(Formula, Location)> {
    let fe = entry.view_inverse.as_ref()?;
    match Formula::parse(&fe.formula) {
        Ok(f) => Some((f, fe.formula_loc.clone())),
        Err(e) => {
            let msg = format!("`view_inverse` is not valid tokens: {e}");
            cx.error(&fe.loc, Some(&entry.name), msg);
            None
        }
    }
}

/// Prepare every entry: on two threads for a large file (each with its own error list,
/// appended in entry order, so messages are those of one pass).
fn prepare_all<'e>(
    lookup: &Lookup<'_>,
    entries: &'e [DerivativeEntry],
    options: &AnalysisOptions,
    cx: &mut Ctxt,
) -> Vec<Option<PreparedEntry<'e>>> {
    let prepare = |entries: &'e [DerivativeEntry], cx: &mut Ctxt| -> Vec<_> {
        entries
            .iter()
            .map(|entry| prepare_entry(lookup, entry, options, cx))
            .collect()
    };
    if entries.len() < 64 {
        return prepare(entries, cx);
    }
    let (first, second) = entries.split_at(entries.len() / 2);
    let (mut a, (b, cx_b)) = std::thread::scope(|s| {
        let b = s.spawn(|| {
            let mut cx = Ctxt::new();
            let b = prepare(second, &mut cx);
            (b, cx)
        });
        let a = prepare(first, cx);
        let b = b
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (a, b)
    });
    cx.append(cx_b);
    a.extend(b);
    a
}

/// torchgen's `load_derivatives`: one info set per entry, keyed by the canonical function's
/// schema, plus the derived `{view}_copy` infos. Errors go to `cx`.
pub fn load_infos(
    functions: &[NativeFunction],
    entries: &[DerivativeEntry],
    options: &AnalysisOptions,
    cx: &mut Ctxt,
) -> InfoMap {
    let lookup = Lookup::new(functions);
    let mut prepared = prepare_all(&lookup, entries, options, cx);
    check::check_entries(functions, entries, &mut prepared, cx);
    let mut op_counter: HashMap<String, usize> = HashMap::default();
    let mut infos = InfoMap::default();
    for (entry, prepared) in entries.iter().zip(prepared) {
        let (Some(p), Some(defn)) = (prepared, defn_name(&entry.name)) else {
            continue;
        };
        let mut set: InfoSet = Vec::new();
        for (d, mut info) in p.infos {
            if info.has_derivatives() {
                let mut prefix = op_prefix(defn);
                if d.key != "Default" {
                    prefix.push_str(&d.key);
                }
                let n = op_counter.entry(prefix.clone()).or_insert(0);
                info.op = Some(format!("{prefix}{n}"));
                *n += 1;
            }
            info.output_differentiability = p.od.clone();
            info.output_differentiability_conditions = p.od_conditions.clone();
            info.loc = entry.loc.clone();
            set.push((d.key.clone(), Arc::new(info)));
        }
        if !set.is_empty() {
            infos.insert(functions[p.canonical].func.clone(), set);
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
        let slot = match f.view_kind() {
            Some(false) => 0,
            None if f.func.kind() == SchemaKind::Functional => 1,
            _ => continue,
        };
        let g = groups.entry(f.func.signature_key(false, true)).or_default();
        if slot == 0 {
            g.0 = Some(i);
        } else {
            g.1 = Some(i);
        }
    }
    let view_copy_of: HashMap<&OperatorName, usize> = groups
        .values()
        .filter_map(|&(view, copy)| Some((&functions[view?].func.name, copy?)))
        .collect();
    let mut added: Vec<(FunctionSchema, InfoSet)> = Vec::new();
    for (_, set) in infos.iter() {
        let mut copies: InfoSet = Vec::new();
        let mut copy_schema = None;
        for (key, info) in set {
            let Some(&c) = view_copy_of.get(&functions[info.func].func.name) else {
                break;
            };
            copy_schema = Some(c);
            copies.push((key.clone(), Arc::new(view_copy_info(info, c))));
        }
        if let Some(c) = copy_schema
            && !copies.is_empty()
            && infos.get(&functions[c].func).is_none()
        {
            added.push((functions[c].func.clone(), copies));
        }
    }
    for (s, set) in added {
        infos.insert(s, set);
    }
}

/// torchgen's `create_view_copy_from_view_derivative`: the view's info, renamed, for function
/// `copy`.
fn view_copy_info(info: &DifferentiabilityInfo, copy: usize) -> DifferentiabilityInfo {
    let mut ci = info.clone();
    let mut parts = info.name.splitn(3, '.');
    let first = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    ci.name = format!("{first}_copy.{}", rest.join("."));
    ci.func = copy;
    ci.op = info.op.as_ref().map(|o| format!("{o}_copy"));
    ci
}
