//! torchgen's autograd analysis, in Rust.
//!
//! [`load_infos`] turns each `derivatives.yaml` entry into a [`DifferentiabilityInfo`] per
//! dispatch key (torchgen's `load_derivatives` / `create_differentiability_info`), adding the
//! `{view}_copy` infos torchgen derives. [`match_infos`] gives every native function its info
//! (exact schema match, else the functional variant's through `signature(strip_default)`, the
//! generated and `_foreach_*` rules) and works out differentiable outputs and the dispatch
//! strategy (`match_differentiability_info`, `gen_differentiable_outputs`).
//!
//! Results live in their own types; the model is never written to.

pub mod cpp;
mod foreach;
pub mod json;
pub mod saved;

use crate::diagnostics::{Ctxt, Diagnostics, Location};
use crate::formula::Formula;
use crate::model::derivatives::{
    DerivativeEntry, DispatchFormulas, FormulaEntry, OutputDifferentiability,
};
use crate::model::native::{NativeFunction, Variant};
use crate::model::schema::{FunctionSchema, SchemaKind, SignatureKey};
use cpp::{cpp_arguments, cpp_name, return_names};
use rustc_hash::FxHashMap as HashMap;
pub use saved::{PropertyRule, PropertyRules, SavedAttribute};
use std::collections::BTreeSet;
use std::sync::Arc;

/// A backward formula for one or more inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Derivative {
    /// The inputs it computes gradients for (`self`, or `self, other` for a joint formula).
    pub var_names: Vec<String>,
    /// The formula after the saved-attribute rewrite.
    pub formula: String,
    /// The formula's tokens after the rewrite.
    pub tokens: Formula,
    /// The formula as written.
    pub original_formula: String,
    /// Inputs (or derived properties) it saves, in order of discovery, duplicates kept.
    pub saved_inputs: Vec<SavedAttribute>,
    /// Outputs it saves.
    pub saved_outputs: Vec<SavedAttribute>,
    /// The `grad_{name}` gradients it uses.
    pub named_gradients: BTreeSet<String>,
    /// Where it is written.
    pub loc: Location,
}

/// A forward-mode formula for one or more outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct ForwardDerivative {
    /// The outputs it defines.
    pub var_names: Vec<String>,
    /// The formula (after `auto_linear` / `auto_element_wise` expansion).
    pub formula: String,
    /// Inputs whose primal value it reads (`x_p`), sorted.
    pub required_inputs_primal: Vec<String>,
    /// Inputs whose tangent it reads (`x_t`), sorted.
    pub required_inputs_fw_grad: Vec<String>,
    /// An in-place function reusing its functional variant's formula.
    pub is_reusing_outplace_formula: bool,
    /// Where it is written.
    pub loc: Location,
}

/// Everything derivatives.yaml says about one function, for one dispatch key.
#[derive(Debug, Clone, PartialEq)]
pub struct DifferentiabilityInfo {
    /// The entry's base name (`mul` for `mul.Tensor`; `expand_copy.` for a derived view copy).
    pub name: String,
    /// The function the entry is for (index into the analysed functions).
    pub func: usize,
    /// The backward node's name (`MulBackward0`), `None` when no input has a formula.
    pub op: Option<String>,
    /// Backward formulas, sorted by key text.
    pub derivatives: Vec<Derivative>,
    /// Forward formulas, sorted by key text.
    pub forward_derivatives: Vec<ForwardDerivative>,
    /// Every saved input, de-duplicated by name in first-seen order.
    pub all_saved_inputs: Vec<SavedAttribute>,
    /// Every saved output, de-duplicated.
    pub all_saved_outputs: Vec<SavedAttribute>,
    /// `grad_{name}` for each named, differentiable, tensor-like return.
    pub available_named_gradients: Vec<String>,
    /// Those the formulas use.
    pub used_named_gradients: BTreeSet<String>,
    /// Inputs with a backward formula, in argument order.
    pub args_with_derivatives: Vec<String>,
    /// Inputs marked `non_differentiable`.
    pub non_differentiable_arg_names: Vec<String>,
    /// `output_differentiability` flags (conditions count as `true`).
    pub output_differentiability: Option<Vec<bool>>,
    /// The condition string, when `output_differentiability` gives one.
    pub output_differentiability_conditions: Option<Vec<String>>,
    /// The entry's location.
    pub loc: Location,
}

impl DifferentiabilityInfo {
    /// Some input has a backward formula.
    pub fn has_derivatives(&self) -> bool {
        !self.args_with_derivatives.is_empty()
    }

    /// Some backward formula uses identifier `ident`.
    pub fn uses_ident(&self, ident: &str) -> bool {
        self.derivatives.iter().any(|d| d.tokens.has_ident(ident))
    }
}

/// The infos of one entry: per dispatch key, in file order.
pub type InfoSet = Vec<(String, Arc<DifferentiabilityInfo>)>;

/// How the generated wrapper calls the kernel (torchgen's `dispatch_strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchStrategy {
    /// Call the backend kernel on unwrapped tensors and record a node.
    UseDerived,
    /// Call the composite implementation, which is differentiable through its parts.
    UseType,
}

impl DispatchStrategy {
    /// `use_derived` / `use_type`.
    pub fn as_str(self) -> &'static str {
        match self {
            DispatchStrategy::UseDerived => "use_derived",
            DispatchStrategy::UseType => "use_type",
        }
    }
}

/// The analysis of one native function.
#[derive(Debug, Clone)]
pub struct FunctionAnalysis {
    /// Index into [`Analysis::functions`].
    pub func: usize,
    /// Its derivative information, if any.
    pub infos: Option<InfoSet>,
    /// The function's own schema has the entry (not inherited through its signature).
    pub exact_match: bool,
    /// Forward formulas per dispatch key, adapted to this function (in-place rewrite).
    pub fw_derivatives: Vec<(String, Vec<ForwardDerivative>)>,
    /// Differentiable output names, or torchgen's error.
    pub differentiable_outputs: Result<Vec<String>, String>,
    /// The dispatch strategy.
    pub dispatch_strategy: DispatchStrategy,
}

impl FunctionAnalysis {
    /// The key whose info is reported: `Default`, else the only one.
    pub fn main_key(&self) -> Option<&str> {
        let infos = self.infos.as_ref()?;
        infos
            .iter()
            .find(|(k, _)| k == "Default")
            .or_else(|| infos.first())
            .map(|(k, _)| k.as_str())
    }

    /// The info of [`FunctionAnalysis::main_key`].
    pub fn main_info(&self) -> Option<&Arc<DifferentiabilityInfo>> {
        let key = self.main_key()?;
        self.infos
            .as_ref()?
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, i)| i)
    }
}

/// Options of the analysis.
#[derive(Debug, Clone)]
pub struct AnalysisOptions {
    /// The saved-property rules.
    pub rules: PropertyRules,
}

impl AnalysisOptions {
    /// torchgen's behaviour, for PyTorch's own C++ formulas.
    pub fn torchgen() -> Self {
        AnalysisOptions {
            rules: PropertyRules::torchgen(),
        }
    }

    /// For Rust formulas.
    pub fn rust() -> Self {
        AnalysisOptions {
            rules: PropertyRules::rust(),
        }
    }
}

/// The whole analysis.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The native functions, file order then generated ones.
    pub functions: Vec<NativeFunction>,
    /// One result per function, same order.
    pub results: Vec<FunctionAnalysis>,
}

/// Infos keyed by the function schema they are for, in insertion order (as a Python dict).
#[derive(Debug, Clone, Default)]
pub struct InfoMap {
    entries: Vec<(FunctionSchema, InfoSet)>,
    index: HashMap<FunctionSchema, usize>,
}

impl InfoMap {
    /// Insert or replace (keeping the first position, as a Python dict does).
    pub fn insert(&mut self, schema: FunctionSchema, infos: InfoSet) {
        match self.index.get(&schema) {
            Some(&i) => self.entries[i].1 = infos,
            None => {
                self.index.insert(schema.clone(), self.entries.len());
                self.entries.push((schema, infos));
            }
        }
    }

    /// The infos for `schema`.
    pub fn get(&self, schema: &FunctionSchema) -> Option<&InfoSet> {
        self.index.get(schema).map(|&i| &self.entries[i].1)
    }

    /// In insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &(FunctionSchema, InfoSet)> {
        self.entries.iter()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Run the whole analysis: load infos, then match every function.
pub fn analyze(
    functions: Vec<NativeFunction>,
    entries: &[DerivativeEntry],
    options: &AnalysisOptions,
) -> Result<Analysis, Diagnostics> {
    let mut cx = Ctxt::new();
    let mut infos = load_infos(&functions, entries, options, &mut cx);
    let results = match_infos(&functions, &mut infos, &mut cx);
    cx.check(Analysis { functions, results })
}

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

#[allow(clippy::too_many_arguments)]
fn set_up_derivatives(
    f: &NativeFunction,
    fidx: usize,
    defn: &str,
    d: &DispatchFormulas,
    output_differentiability: Option<&[bool]>,
    options: &AnalysisOptions,
    spec: &str,
    cx: &mut Ctxt,
) -> Option<DifferentiabilityInfo> {
    let e = Some(spec);
    let cpp_args = cpp_arguments(&f.func);
    let all_arg_names: Vec<&str> = cpp_args.iter().map(|a| a.name).collect();
    let all_ret_names: Vec<&str> = f
        .func
        .returns
        .iter()
        .filter_map(|r| r.name.as_deref())
        .collect();
    let n_returns = f.func.returns.len();
    let differentiability: Vec<bool> =
        output_differentiability.map_or_else(|| vec![true; n_returns], <[bool]>::to_vec);
    let available_named_gradients: Vec<String> = f
        .func
        .returns
        .iter()
        .zip(differentiability.iter())
        .filter(|(r, d)| **d && r.name.is_some() && r.ty.is_tensor_like())
        .map(|(r, _)| format!("grad_{}", r.name.as_deref().unwrap_or_default()))
        .collect();
    let ret_names: Vec<String> = return_names(&f.func)
        .into_iter()
        .map(|n| if n == "self" { "result".to_string() } else { n })
        .collect();

    let mut derivatives = Vec::new();
    let mut forward = Vec::new();
    let mut non_differentiable: Vec<String> = Vec::new();
    let mut with_derivatives: BTreeSet<String> = BTreeSet::new();
    let mut ok = true;
    let mut sorted: Vec<&FormulaEntry> = d.formulas.iter().collect();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    for fe in sorted {
        let names = &fe.var_names;
        for name in names {
            if all_arg_names.contains(&name.as_str()) && all_ret_names.contains(&name.as_str()) {
                cx.error(
                    &fe.loc,
                    e,
                    format!(
                        "`{name}` is both an input argument and a named return of `{}`",
                        f.func.name
                    ),
                );
                ok = false;
            }
        }
        if !all_arg_names.contains(&names[0].as_str()) {
            match create_forward_derivative(f, fe) {
                Ok(fw) => forward.push(fw),
                Err(msg) => {
                    cx.error(&fe.loc, e, msg);
                    ok = false;
                }
            }
            continue;
        }
        if let Some(bad) = names.iter().find(|n| !all_arg_names.contains(&n.as_str())) {
            cx.error(
                &fe.loc,
                e,
                format!(
                    "`{bad}` in `{}` is not an argument of `{}`",
                    fe.key, f.func.name
                ),
            );
            ok = false;
            continue;
        }
        if fe.formula.trim().to_lowercase() == "non_differentiable" {
            non_differentiable.extend(names.iter().cloned());
            continue;
        }
        match create_derivative(
            f,
            fe,
            &cpp_args,
            &ret_names,
            &available_named_gradients,
            options,
        ) {
            Ok(der) => {
                with_derivatives.extend(names.iter().cloned());
                derivatives.push(der);
            }
            Err(msg) => {
                cx.error(&fe.loc, e, msg);
                ok = false;
            }
        }
    }
    let overlap: Vec<&String> = non_differentiable
        .iter()
        .filter(|n| with_derivatives.contains(*n))
        .collect();
    if !overlap.is_empty() {
        cx.error(&d.loc, e, format!("derivatives definition for `{spec}` have overlapped non_differentiable and differentiable variables: {overlap:?}"));
        ok = false;
    }
    let args_with_derivatives: Vec<String> = cpp_args
        .iter()
        .filter(|a| with_derivatives.contains(a.name))
        .map(|a| a.name.to_string())
        .collect();
    let forward = match postprocess_forward(
        f,
        defn,
        &all_arg_names,
        &derivatives,
        forward,
        &args_with_derivatives,
    ) {
        Ok(fw) => fw,
        Err((loc, msg)) => {
            cx.error(&loc, e, msg);
            ok = false;
            Vec::new()
        }
    };
    if let Err((loc, msg)) = check_grad_usage(defn, &derivatives, &d.loc) {
        cx.error(&loc, e, msg);
        ok = false;
    }
    if !ok {
        return None;
    }
    let mut used_named_gradients = BTreeSet::new();
    for der in &derivatives {
        used_named_gradients.extend(der.named_gradients.iter().cloned());
    }
    let all_saved_inputs = dedup(derivatives.iter().flat_map(|d| d.saved_inputs.iter()));
    let all_saved_outputs = dedup(derivatives.iter().flat_map(|d| d.saved_outputs.iter()));
    Some(DifferentiabilityInfo {
        name: defn.to_string(),
        func: fidx,
        op: None,
        derivatives,
        forward_derivatives: forward,
        all_saved_inputs,
        all_saved_outputs,
        available_named_gradients,
        used_named_gradients,
        args_with_derivatives,
        non_differentiable_arg_names: non_differentiable,
        output_differentiability: None,
        output_differentiability_conditions: None,
        loc: d.loc.clone(),
    })
}

fn dedup<'a>(it: impl Iterator<Item = &'a SavedAttribute>) -> Vec<SavedAttribute> {
    let mut seen = BTreeSet::new();
    it.filter(|s| seen.insert(s.name.clone()))
        .cloned()
        .collect()
}

fn create_derivative(
    f: &NativeFunction,
    fe: &FormulaEntry,
    cpp_args: &[cpp::CppArg<'_>],
    ret_names: &[String],
    available_named_gradients: &[String],
    options: &AnalysisOptions,
) -> Result<Derivative, String> {
    let mut tokens = Formula::parse(&fe.formula)
        .map_err(|err| format!("the formula for `{}` is not valid tokens: {err}", fe.key))?;
    let arg_names: Vec<&str> = cpp_args.iter().map(|a| a.name).collect();
    let mut saved_inputs = Vec::new();
    saved::saved_variables(
        &mut tokens,
        &arg_names,
        &fe.var_names,
        &options.rules,
        &mut saved_inputs,
    )
    .map_err(|e| e.0)?;
    let ret_refs: Vec<&str> = ret_names.iter().map(String::as_str).collect();
    let mut saved_outputs = Vec::new();
    saved::saved_variables(
        &mut tokens,
        &ret_refs,
        &fe.var_names,
        &options.rules,
        &mut saved_outputs,
    )
    .map_err(|e| e.0)?;
    let named_gradients: BTreeSet<String> = available_named_gradients
        .iter()
        .filter(|n| tokens.has_ident(n))
        .cloned()
        .collect();
    let n = f.func.returns.len();
    if let Some(i) = tokens.grads_indices().into_iter().find(|&i| i >= n) {
        return Err(format!(
            "Out of bounds grads access: derivative formula for {} used grads[{i}], but the forward only returns {n} outputs.",
            cpp_name(&f.func)
        ));
    }
    Ok(Derivative {
        var_names: fe.var_names.clone(),
        formula: tokens.render(),
        tokens,
        original_formula: fe.formula.clone(),
        saved_inputs,
        saved_outputs,
        named_gradients,
        loc: fe.loc.clone(),
    })
}

fn create_forward_derivative(
    f: &NativeFunction,
    fe: &FormulaEntry,
) -> Result<ForwardDerivative, String> {
    let names = &fe.var_names;
    let returns = &f.func.returns;
    let by_name = returns
        .iter()
        .any(|r| r.name.as_ref().is_some_and(|n| names.contains(n)));
    let matched = by_name
        || (names.len() == 1 && names[0] == "result" && returns.len() == 1)
        || names.iter().any(|n| {
            n.strip_prefix("result")
                .and_then(|i| i.parse::<usize>().ok())
                .is_some_and(|i| i < returns.len())
        });
    if !matched {
        let mut outputs = return_names(&f.func);
        if outputs.len() > 1 {
            outputs.extend((0..returns.len()).map(|i| format!("result{i}")));
        }
        return Err(format!(
            "`{}` names neither an argument of `{}` nor one of its outputs ({})",
            fe.key,
            f.func.name,
            outputs.join(", ")
        ));
    }
    Ok(ForwardDerivative {
        var_names: names.clone(),
        formula: fe.formula.clone(),
        required_inputs_primal: Vec::new(),
        required_inputs_fw_grad: Vec::new(),
        is_reusing_outplace_formula: false,
        loc: fe.loc.clone(),
    })
}

fn postprocess_forward(
    f: &NativeFunction,
    defn: &str,
    all_arg_names: &[&str],
    derivatives: &[Derivative],
    forward: Vec<ForwardDerivative>,
    args_with_derivatives: &[String],
) -> Result<Vec<ForwardDerivative>, (Location, String)> {
    let is_foreach = f.func.name.name.base.starts_with("_foreach_");
    let cpp_args = cpp_arguments(&f.func);
    let is_list = |name: &str| {
        cpp_args
            .iter()
            .any(|a| a.name == name && a.is_tensor_list())
    };
    let find_required = |formula: &Formula,
                         postfix: &str,
                         loc: &Location|
     -> Result<Vec<String>, (Location, String)> {
        let mut req = BTreeSet::new();
        for arg in args_with_derivatives {
            if is_list(arg) && !is_foreach {
                continue;
            }
            if formula.has_ident(arg) {
                return Err((
                    loc.clone(),
                    format!(
                        "The forward formula for {defn} is using the base name of the {arg} argument which is ambiguous. You should use {arg}_p to access the primal value and {arg}_t to access the tangent."
                    ),
                ));
            }
            if formula.has_ident(&format!("{arg}{postfix}")) {
                req.insert(arg.clone());
            }
        }
        Ok(req.into_iter().collect())
    };
    let n = forward.len();
    let first_var_count = forward.first().map_or(0, |d| d.var_names.len());
    let mut out = Vec::with_capacity(n);
    for mut fw in forward {
        let loc = fw.loc.clone();
        let tokens = Formula::parse(&fw.formula).map_err(|err| {
            (
                loc.clone(),
                format!("the forward formula is not valid tokens: {err}"),
            )
        })?;
        let mut required_tangent = find_required(&tokens, "_t", &loc)?;
        let mut tokens = tokens;
        match fw.formula.trim() {
            "auto_element_wise" => {
                if f.func.kind() == SchemaKind::Inplace {
                    return Err((
                        loc,
                        format!(
                            "Cannot use auto_element_wise with {} because it is an in-place variant",
                            f.func.name
                        ),
                    ));
                }
                if args_with_derivatives.len() != 1 || n > 1 || first_var_count > 1 {
                    return Err((
                        loc,
                        format!(
                            "Derivative definition of {defn} in derivatives.yaml defines the forward definition of gradient as element_wise but this only works for functions with a single differentiable input and a single differentiable output."
                        ),
                    ));
                }
                if derivatives.len() != 1 {
                    return Err((
                        loc,
                        format!(
                            "Derivative definition of {defn} in derivatives.yaml defines the forward definition of gradient as element_wise but it does not defines the gradient formula for its argument which is required."
                        ),
                    ));
                }
                let input = &args_with_derivatives[0];
                let mut t = Formula::parse(&derivatives[0].original_formula).unwrap_or_default();
                t.replace_ident("grad", &format!("{input}_t.conj()"));
                for arg in args_with_derivatives {
                    t.replace_ident(arg, &format!("{arg}_p"));
                }
                let text = format!("({}).conj()", t.render());
                tokens = Formula::parse(&text).unwrap_or_default();
                fw.formula = text;
                let mut all: Vec<String> = all_arg_names.iter().map(|s| s.to_string()).collect();
                all.sort();
                all.dedup();
                required_tangent = all;
            }
            "auto_linear" => {
                if n > 1 || first_var_count > 1 {
                    return Err((
                        loc,
                        format!(
                            "Derivative definition of {defn} in derivatives.yaml defines the forward definition of gradient as linear but this only works for functions with a single differentiable output."
                        ),
                    ));
                }
                if args_with_derivatives.is_empty() {
                    return Err((
                        loc,
                        format!(
                            "auto_linear for {defn} needs at least one differentiable argument"
                        ),
                    ));
                }
                let new_args: Vec<String> = all_arg_names
                    .iter()
                    .map(|a| {
                        if args_with_derivatives.iter().any(|d| d == a) {
                            format!("{a}_t")
                        } else {
                            a.to_string()
                        }
                    })
                    .collect();
                let mut name = defn.to_string();
                if f.func.has_symint() {
                    name.push_str("_symint");
                }
                let text = if f.variants.contains(&Variant::Function) {
                    format!("at::{name}({})", new_args.join(", "))
                } else {
                    format!("{}.{name}({})", new_args[0], new_args[1..].join(", "))
                };
                tokens = Formula::parse(&text).unwrap_or_default();
                fw.formula = text;
                required_tangent = args_with_derivatives.to_vec();
                required_tangent.sort();
            }
            _ => {}
        }
        fw.required_inputs_primal = find_required(&tokens, "_p", &loc)?;
        fw.required_inputs_fw_grad = required_tangent;
        out.push(fw);
    }
    Ok(out)
}

fn check_grad_usage(
    defn: &str,
    derivatives: &[Derivative],
    entry_loc: &Location,
) -> Result<(), (Location, String)> {
    let mut uses_grad = None;
    let mut num_grads_uses = 0;
    let mut uses_named = None;
    let mut indices = Vec::new();
    let mut grads_loc = None;
    for d in derivatives {
        if d.tokens.has_ident("grad") {
            uses_grad.get_or_insert(&d.loc);
        }
        let c = d.tokens.count_ident("grads");
        if c > 0 {
            grads_loc.get_or_insert(&d.loc);
        }
        num_grads_uses += c;
        if !d.named_gradients.is_empty() {
            uses_named.get_or_insert(&d.loc);
        }
        indices.extend(d.tokens.grads_indices());
    }
    let only_indices = num_grads_uses == indices.len();
    if let (Some(_), Some(loc)) = (uses_grad, grads_loc) {
        return Err((
            loc.clone(),
            format!(
                "Derivative definition of {defn} in derivatives.yaml illegally mixes use of 'grad' and 'grads'. Consider replacing occurrences of 'grad' with 'grads[0]'"
            ),
        ));
    }
    if only_indices && !indices.is_empty() && indices.iter().all(|&i| i == 0) {
        return Err((
            grads_loc.unwrap_or(entry_loc).clone(),
            format!(
                "Derivative definition of {defn} in derivatives.yaml solely refers to 'grads[0]'.  If the first output is indeed the only differentiable output, replace 'grads[0]' with 'grad'; otherwise, there is a likely error in your derivatives declaration."
            ),
        ));
    }
    if let Some(loc) = uses_named
        && (uses_grad.is_some() || num_grads_uses > 0)
    {
        return Err((
            loc.clone(),
            format!(
                "Derivative definition of {defn} in derivatives.yaml illegally mixes use of \"grad_RETURN_NAME\" and \"grad\" or \"grads[x]\". Use only one method for identifying gradients."
            ),
        ));
    }
    Ok(())
}

/// torchgen's `match_differentiability_info` plus differentiable outputs and dispatch
/// strategy, for every function.
pub fn match_infos(
    functions: &[NativeFunction],
    infos: &mut InfoMap,
    cx: &mut Ctxt,
) -> Vec<FunctionAnalysis> {
    // By `signature(strip_default=True)`, later entries replacing earlier ones in place.
    let (functional_by_sig, non_functional_by_sig) = {
        let mut functional: Vec<(&FunctionSchema, InfoSet)> = Vec::new();
        let mut non_functional: Vec<(&FunctionSchema, InfoSet)> = Vec::new();
        let mut index: HashMap<(bool, SignatureKey<'_>), usize> = HashMap::default();
        for (schema, set) in infos.iter() {
            let is_functional = schema.kind() == SchemaKind::Functional;
            let list = if is_functional {
                &mut functional
            } else {
                &mut non_functional
            };
            match index.get(&(is_functional, schema.signature_key(true, false))) {
                Some(&i) => list[i].1 = set.clone(),
                None => {
                    index.insert(
                        (is_functional, schema.signature_key(true, false)),
                        list.len(),
                    );
                    list.push((schema, set.clone()));
                }
            }
        }
        let sigs = |l: Vec<(&FunctionSchema, InfoSet)>| -> Vec<(FunctionSchema, InfoSet)> {
            l.into_iter()
                .map(|(s, set)| (s.signature(true), set))
                .collect()
        };
        (sigs(functional), sigs(non_functional))
    };
    // The key of a signature equals the key of the schema it came from.
    let functional_index: HashMap<SignatureKey<'_>, usize> = functional_by_sig
        .iter()
        .enumerate()
        .map(|(i, (s, _))| (s.signature_key(false, false), i))
        .collect();
    let mut results = Vec::with_capacity(functions.len());
    for (i, f) in functions.iter().enumerate() {
        let (set, exact) = find_info(
            functions,
            i,
            infos,
            &functional_by_sig,
            &functional_index,
            &non_functional_by_sig,
            cx,
        );
        let fw_derivatives = match &set {
            Some(set) => set
                .iter()
                .map(|(k, info)| (k.clone(), forward_for_function(f, info, exact, cx)))
                .collect(),
            None => Vec::new(),
        };
        let mut fa = FunctionAnalysis {
            func: i,
            infos: set,
            exact_match: exact,
            fw_derivatives,
            differentiable_outputs: Ok(Vec::new()),
            dispatch_strategy: DispatchStrategy::UseType,
        };
        fa.differentiable_outputs = differentiable_outputs(f, fa.main_info().map(|a| &**a));
        let has_derivs = fa
            .infos
            .as_ref()
            .is_some_and(|s| s.iter().any(|(_, i)| i.has_derivatives()));
        fa.dispatch_strategy = if f.is_abstract || has_derivs {
            DispatchStrategy::UseDerived
        } else {
            DispatchStrategy::UseType
        };
        results.push(fa);
    }
    results
}

fn find_info(
    functions: &[NativeFunction],
    i: usize,
    infos: &mut InfoMap,
    functional_by_sig: &[(FunctionSchema, InfoSet)],
    functional_index: &HashMap<SignatureKey<'_>, usize>,
    non_functional_by_sig: &[(FunctionSchema, InfoSet)],
    cx: &mut Ctxt,
) -> (Option<InfoSet>, bool) {
    let f = &functions[i];
    let kind = f.func.kind();
    if f.has_tag("generated") && kind == SchemaKind::Out {
        return (None, false);
    }
    if let Some(set) = infos.get(&f.func) {
        return (Some(set.clone()), true);
    }
    let is_foreach = f.func.name.name.base.starts_with("_foreach_");
    let sig = f.func.signature_key(true, false);
    if !is_foreach && let Some(&k) = functional_index.get(&sig) {
        return (Some(functional_by_sig[k].1.clone()), false);
    }
    if f.has_tag("generated")
        && let Some((_, set)) = non_functional_by_sig
            .iter()
            .find(|(s, _)| s.signature_key(false, false) == sig)
    {
        if set.iter().any(|(_, info)| {
            info.all_saved_inputs
                .iter()
                .any(|s| s.name.contains("self"))
        }) {
            cx.error(&f.loc, Some(&f.schema), "Attempted to convert a derivative formula for a mutable operator to be used automatically by its functional variant. This is not currently supported.");
            return (None, false);
        }
        return (Some(set.clone()), false);
    }
    if is_foreach {
        return match foreach::gen_foreach_info(
            functions,
            i,
            functional_by_sig,
            non_functional_by_sig,
        ) {
            None => (None, false),
            Some((info, generated)) => {
                let set: InfoSet = vec![("Default".to_string(), Arc::new(info))];
                if generated {
                    infos.insert(f.func.clone(), set.clone());
                }
                (Some(set), generated)
            }
        };
    }
    (None, false)
}

/// The forward formulas as this function uses them: in-place functions rewrite the
/// functional formula (`result` becomes `self_p`, the tangent is updated in place).
fn forward_for_function(
    f: &NativeFunction,
    info: &DifferentiabilityInfo,
    exact: bool,
    cx: &mut Ctxt,
) -> Vec<ForwardDerivative> {
    if info.forward_derivatives.is_empty() || f.func.kind() != SchemaKind::Inplace {
        return info.forward_derivatives.clone();
    }
    if info.forward_derivatives.len() != 1 {
        cx.error(
            &f.loc,
            Some(&f.schema),
            "only single-output in-place functions can have forward formulas",
        );
        return Vec::new();
    }
    let fw = &info.forward_derivatives[0];
    let mut t = Formula::parse(&fw.formula).unwrap_or_default();
    if t.has_ident("self_p") {
        if exact {
            cx.error(&fw.loc, Some(&f.schema), format!("The formula for \"{}\" is using the original value of self that is being modified inplace. This would lead to wrong forward gradients. Please use \"result\" in the formula only.", f.func.name));
            return Vec::new();
        }
        t.replace_ident("self_p", "original_self_p");
        t.replace_ident("self_t", "original_self_t");
    }
    t.replace_ident("result", "self_p");
    let mut primal = fw.required_inputs_primal.clone();
    if t.has_ident("self_p") {
        // torchgen appends `self` even when it is already there.
        primal.push("self".into());
        primal.sort();
    }
    let mut formula = t.render();
    if !exact {
        // NOTE [In-place forward AD formula Optimization]: `self_t.op(args)` becomes `self_t_raw.op_(args)`.
        let direct = formula.strip_prefix("self_t.").and_then(|rest| {
            let open = rest.find('(')?;
            let (op, args) = (&rest[..open], &rest[open + 1..]);
            let args = args.strip_suffix(')')?;
            let mut level = 1i32;
            for ch in args.chars() {
                if ch == ')' {
                    level -= 1;
                    if level == 0 {
                        return None;
                    }
                }
                if ch == '(' {
                    level += 1;
                }
            }
            (op.chars().all(|c| c.is_alphanumeric() || c == '_') && op == info.name)
                .then(|| (op.to_string(), args.to_string()))
        });
        formula = match direct {
            Some((op, args)) => {
                format!("self_t_raw.defined() ? self_t_raw.{op}_({args}) : {formula}")
            }
            None => format!("self_t_raw.defined() ? self_t_raw.copy_({formula}) : {formula}"),
        };
    }
    vec![ForwardDerivative {
        var_names: vec!["self".into()],
        formula,
        required_inputs_primal: primal,
        required_inputs_fw_grad: fw.required_inputs_fw_grad.clone(),
        is_reusing_outplace_formula: !exact,
        loc: fw.loc.clone(),
    }]
}

/// torchgen's `gen_differentiable_outputs`.
pub fn differentiable_outputs(
    f: &NativeFunction,
    info: Option<&DifferentiabilityInfo>,
) -> Result<Vec<String>, String> {
    let names = return_names(&f.func);
    let outputs: Vec<(String, &crate::model::schema::Type)> = names
        .into_iter()
        .zip(f.func.returns.iter().map(|r| &r.ty))
        .collect();
    if let Some(od) = info.and_then(|i| i.output_differentiability.as_ref()) {
        if od.len() != outputs.len() {
            return Err(format!(
                "The length of output_differentiability ({}), does not match the number of outputs ({}).",
                od.len(),
                outputs.len()
            ));
        }
        if od.contains(&false) && f.func.kind() == SchemaKind::Inplace {
            return Err("output_differentiability=False for inplace operation (version_counter won't get updated)".into());
        }
        return Ok(outputs
            .into_iter()
            .zip(od)
            .filter(|(_, d)| **d)
            .map(|((n, _), _)| n)
            .collect());
    }
    let candidates: Vec<String> = outputs
        .into_iter()
        .filter(|(n, t)| {
            t.is_tensor_like() && info.is_none_or(|i| !i.non_differentiable_arg_names.contains(n))
        })
        .map(|(n, _)| n)
        .collect();
    if info.is_some_and(|i| i.uses_ident("grad")) {
        Ok(candidates.into_iter().take(1).collect())
    } else {
        Ok(candidates)
    }
}

#[cfg(test)]
mod tests;
