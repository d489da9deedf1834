//! One plan per backward node and per function, built once from the analysis; the emitters
//! (`node`, `wrapper`, `backend`) only turn plans into tokens. Every check that needs the
//! analysis happens here, so each mistake is reported once.

use super::tokens::{formula_line, formula_tokens};
use super::types::{Conversion, RustTy, TypeMap, ValueTy, rust_ty};
use crate::analysis::cpp::return_names;
use crate::analysis::{
    Analysis, Derivative, DifferentiabilityInfo, FunctionAnalysis, SavedAttribute,
};
use crate::diagnostics::Ctxt;
use crate::model::native::NativeFunction;
use crate::model::schema::{Argument, SchemaKind, SignatureKey, Type};
use crate::names::{PRELUDE_METHODS, ident, op_fn_name, rust_name};
use proc_macro2::{Ident, TokenStream};
use quote::format_ident;
use std::collections::{BTreeSet, HashMap};

mod composites;
mod forward;

pub(crate) use composites::check_composites;
pub(crate) use forward::{ForwardFormula, ForwardPlan};

/// Whether `f` has a raw free function: a functional kernel (composites have none; in-place
/// and out= kernels write into their arguments).
pub(crate) fn has_raw_fn(f: &FunctionPlan<'_>) -> bool {
    f.kind == SchemaKind::Functional && f.composite.is_none()
}

/// How a tensor argument is passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TensorKind {
    /// `Tensor`.
    One,
    /// `Tensor?`.
    Opt,
    /// `Tensor[]`.
    List,
    /// `Tensor?[]`.
    OptList,
}

impl TensorKind {
    fn of(ty: &RustTy) -> Option<TensorKind> {
        match ty {
            RustTy::Tensor => Some(TensorKind::One),
            RustTy::OptTensor => Some(TensorKind::Opt),
            RustTy::TensorList => Some(TensorKind::List),
            RustTy::OptTensorList => Some(TensorKind::OptList),
            RustTy::Value(_) => None,
        }
    }

    /// A list: one edge (and gradient) per element.
    pub(crate) fn is_list(self) -> bool {
        matches!(self, TensorKind::List | TensorKind::OptList)
    }
}

/// A derived property saved instead of a whole tensor (torchgen's saved-attribute rules that
/// have a Rust capture), with the type a formula sees.
#[derive(Debug, Clone)]
pub(crate) enum Property {
    /// `x.sizes()`, `x.sym_sizes()`: `&[i64]`, like an `int[]` argument.
    Sizes,
    /// `x.shape()`: `&[usize]`.
    Shape,
    /// `x.numel()`, `x.sym_numel()`: `i64`.
    Numel,
    /// `x.dim()`: `i64`.
    Dim,
    /// `x.size(d)`, `x.sym_size(d)`: `i64`; the tokens of `d`.
    Size(TokenStream),
    /// `x.dtype()`, `x.scalar_type()`: `&'static str`.
    Dtype,
    /// `to_args_sizes(xs)` of a `Tensor[]`: each element's sizes, `&[Vec<i64>]` (what `cat`'s
    /// backward needs instead of the tensors themselves).
    ArgsSizes,
    /// `to_args_scalartypes(xs)` of a `Tensor[]`: each element's dtype name,
    /// `&[&'static str]`.
    ArgsScalarTypes,
    /// `x.options()`: `autograd::types::TensorOptions`.
    Options,
    /// `x.layout()`: `autograd::types::Layout` (strided).
    Layout,
    /// `x.sym_strides()`: the strides of a contiguous tensor of `x`'s shape, `&[i64]`.
    Strides,
    /// `TensorGeometry(x)`: `x`'s sizes, strides and storage offset as its library reports
    /// them, `&autograd::types::TensorGeometry`.
    Geometry,
}

impl Property {
    /// The property of a rule's `kind`, `None` when it has no Rust capture: the one place
    /// rule kinds are read. `dim` gives the argument of `size(d)`.
    fn from_kind(
        kind: &str,
        dim: impl FnOnce() -> Result<TokenStream, String>,
    ) -> Option<Result<Property, String>> {
        Some(Ok(match kind {
            "sym_sizes" | "sizes" => Property::Sizes,
            "shape" => Property::Shape,
            "numel" | "sym_numel" => Property::Numel,
            "dim" => Property::Dim,
            "scalar_type" | "dtype" => Property::Dtype,
            "to_args_sizes" | "to_args_sizes_symint" => Property::ArgsSizes,
            "to_args_scalartypes" => Property::ArgsScalarTypes,
            "options" => Property::Options,
            "layout" => Property::Layout,
            "sym_strides" => Property::Strides,
            "TensorGeometry" => Property::Geometry,
            "sym_size" | "size" => return Some(dim().map(Property::Size)),
            _ => return None,
        }))
    }

    /// Rules of this kind are kept in the Rust analysis ([`super::rust_analysis_options`]).
    pub(crate) fn has_rust_capture(kind: &str) -> bool {
        Property::from_kind(kind, || Ok(TokenStream::new())).is_some()
    }

    /// The property of a saved attribute.
    fn of(s: &SavedAttribute, rename: &dyn Fn(&str) -> Option<String>) -> Result<Property, String> {
        let kind = s.property.as_deref().unwrap_or_default();
        let dim = || {
            let arg = call_argument(&s.capture)
                .ok_or_else(|| format!("cannot read the dimension of `{}`", s.expr))?;
            formula_tokens(&arg, rename)
        };
        Property::from_kind(kind, dim).unwrap_or_else(|| {
            Err(format!(
                "property `{kind}` of `{}` has no Rust capture",
                s.var
            ))
        })
    }
}

/// The tokens between the parentheses of `x.size(ARG)`.
fn call_argument(f: &crate::formula::Formula) -> Option<crate::formula::Formula> {
    let open = f.toks.iter().position(|t| t.is_punct("("))?;
    let close = f.toks.iter().rposition(|t| t.is_punct(")"))?;
    (open < close).then(|| crate::formula::Formula {
        toks: f.toks[open + 1..close].to_vec(),
    })
}

/// Where a saved field's value comes from.
#[derive(Debug, Clone)]
pub(crate) enum FieldSource {
    /// A tensor argument, saved whole.
    Tensor(TensorKind),
    /// A non-tensor argument.
    Value(ValueTy),
    /// Output `index` (a `Tensor[]` output when `list`).
    Output { index: usize, list: bool },
    /// A property of argument `var`.
    Property { var: Ident, prop: Property },
}

/// One field of a backward node.
#[derive(Debug, Clone)]
pub(crate) struct SavedField {
    /// The saved name (`self`, `self_sizes`, `result`).
    pub name: String,
    /// As an identifier.
    pub ident: Ident,
    pub source: FieldSource,
    /// Positions (in the node's inputs) whose formulas use it: it is captured only when one
    /// of them needs a gradient.
    pub users: Vec<usize>,
}

impl SavedField {
    /// One saved tensor (an input or an output, not a list nor an optional one).
    pub(crate) fn single_tensor(&self) -> bool {
        matches!(
            self.source,
            FieldSource::Tensor(TensorKind::One) | FieldSource::Output { list: false, .. }
        )
    }

    /// Holds `SavedVariable`s (released after backward, visited by `visit_saved`).
    pub(crate) fn saved_variables(&self) -> Option<bool> {
        match &self.source {
            FieldSource::Tensor(k) => Some(k.is_list()),
            FieldSource::Output { list, .. } => Some(*list),
            _ => None,
        }
    }
}

/// One input with a derivative, as the node sees it.
pub(crate) struct DiffInput<'a> {
    pub arg: &'a Argument,
    pub kind: TensorKind,
}

/// One backward formula, ready to emit.
pub(crate) struct FormulaPlan {
    /// `derivatives.yaml:12: `mul.Tensor(...)`: formula for `self``.
    pub location: String,
    /// The formula's tokens, identifiers renamed.
    pub expr: TokenStream,
    /// The same on one line, for the generated file.
    pub line: String,
    /// `expr` and `line` for `apply_raw`: without the `&` before the fields in `borrowed`,
    /// which the raw form binds as references to the saved data (no clone of a tensor
    /// handle: two atomic operations for an `Arc`-backed tensor).
    pub raw_expr: TokenStream,
    pub raw_line: String,
    /// Fields (indices into the node's fields) the raw form borrows.
    pub borrowed: Vec<usize>,
    /// The inputs it computes, as positions in the node's inputs.
    pub positions: Vec<usize>,
    /// Fields it reads (indices into the node's fields).
    pub fields: Vec<usize>,
    /// It needs its own handle of `grad` (another formula uses `grad` too).
    pub clone_grad: bool,
    /// Uses `grads`, `grad_input_mask`, `retain_variables`, `wrap_opt_if`.
    pub grads: bool,
    pub grad_input_mask: bool,
    pub retain_variables: bool,
    pub wrap_opt_if: bool,
    /// `grad_{name}` and the index of output `name` among the differentiable outputs.
    pub named: Vec<(Ident, usize)>,
}

/// A backward node.
pub(crate) struct NodePlan<'a> {
    pub info: &'a DifferentiabilityInfo,
    pub name: Ident,
    /// The schema it is the backward of.
    pub entry: String,
    pub inputs: Vec<DiffInput<'a>>,
    /// Some input is a list: gradient slots are found through offsets.
    pub lists: bool,
    pub fields: Vec<SavedField>,
    pub formulas: Vec<FormulaPlan>,
    /// A formula uses `grad`.
    pub uses_grad: bool,
    /// A formula calls `not_implemented(...)`.
    pub not_implemented: bool,
    /// It gets a raw form (`Node::apply_raw`): see [`mark_raw`].
    pub raw: bool,
}

/// One parameter of a wrapper.
pub(crate) struct Param<'a> {
    pub arg: &'a Argument,
    pub ident: Ident,
    pub ty: RustTy,
}

/// One function: its backend method, wrapper and method.
pub(crate) struct FunctionPlan<'a> {
    pub nf: &'a NativeFunction,
    pub name: Ident,
    pub entry: String,
    pub kind: SchemaKind,
    pub params: Vec<Param<'a>>,
    pub returns: Vec<RustTy>,
    /// The node it records (index into [`Plan::nodes`]).
    pub node: Option<usize>,
    /// Returns that are differentiable tensors.
    pub diff_outputs: Vec<usize>,
    /// The functional variant whose kernel default in-place / out= kernels call.
    pub functional: Option<(Ident, &'a NativeFunction)>,
    /// Also a `VariableOps` method.
    pub method: bool,
    /// No derivatives entry: the tensor inputs a `NotImplemented` node gets edges to (empty
    /// when the function has an entry, or no tensor result to give a history).
    pub not_implemented: Vec<DiffInput<'a>>,
    /// A view of `self`.
    pub view: Option<ViewPlan>,
    /// `dispatch: {CompositeImplicitAutograd: NAME}` without an entry: the wrapper calls the
    /// helpers' `NAME`, built from differentiable ops (no kernel, no node of its own).
    pub composite: Option<Ident>,
    /// `dispatch: {CompositeExplicitAutograd: NAME}`: the backend kernel's default body
    /// calls the helpers' `NAME`, built from other kernels (PyTorch's decompositions).
    pub decomposition: Option<Ident>,
    /// Tensor inputs the entry gives no formula and does not mark `non_differentiable`:
    /// PyTorch's `check_no_requires_grad` refuses them when they require grad.
    pub no_requires_grad: Vec<DiffInput<'a>>,
    /// What it does under forward-mode AD.
    pub forward: forward::ForwardPlan<'a>,
}

/// A function returning a view of `self` (its schema's return aliases `self` without `!`).
pub(crate) enum ViewPlan {
    /// One view, written back through the entry's `view_inverse:`.
    Single(Inverse),
    /// One of several views (`unbind`): in-place changes are refused, as in PyTorch, under
    /// the op's name as PyTorch prints it (`Unbind`).
    Multi { op: String },
}

/// How a view's new value reaches its base.
pub(crate) enum Inverse {
    /// The entry's formula, over `base`, `mutated_view` and the op's arguments (the names
    /// of those it uses).
    Formula(TokenStream, BTreeSet<String>),
    /// `overlapping`: in-place changes are refused (several elements share one location).
    Overlapping,
}

/// Everything to emit.
pub(crate) struct Plan<'a> {
    pub nodes: Vec<NodePlan<'a>>,
    pub functions: Vec<FunctionPlan<'a>>,
}

/// Build the plan; problems go to `cx`, and what cannot be planned is left out.
pub(crate) fn plan<'a>(a: &'a Analysis, types: &TypeMap, cx: &mut Ctxt) -> Plan<'a> {
    let mut b = Builder {
        a,
        types,
        cx,
        node_by_op: HashMap::new(),
    };
    let mut nodes = Vec::new();
    for fa in &a.results {
        let Some(info) = fa.main_info() else { continue };
        if let Some(op) = &info.op
            && !b.node_by_op.contains_key(op)
            && let Some(n) = b.node(info)
        {
            b.node_by_op.insert(op.clone(), nodes.len());
            nodes.push(n);
        }
    }
    check_unique_names(a, b.cx);
    let functional = functional_by_signature(a);
    let functions = a
        .results
        .iter()
        .filter_map(|fa| b.function(fa, &functional))
        .collect();
    Plan { nodes, functions }
}

/// Which nodes get a raw form (`Node::apply_raw`, for backward without `create_graph`):
/// those whose every formula calls only functional kernels (the `raw` module), prelude
/// constructors, and, when a raw helpers module is given, helpers (any other name). A call
/// of an in-place, out= or composite function, `not_implemented` or `wrap_opt_if` keeps a
/// node on its `Variable` form.
pub(crate) fn mark_raw(p: &mut Plan<'_>, raw_helpers: bool) {
    let kernels: BTreeSet<String> = p
        .functions
        .iter()
        .filter(|f| has_raw_fn(f))
        .map(|f| f.name.to_string())
        .collect();
    let functions: BTreeSet<String> = p.functions.iter().map(|f| f.name.to_string()).collect();
    let callable = |name: &str| {
        kernels.contains(name)
            || matches!(name, "Some" | "Ok" | "Err")
            || (raw_helpers && !functions.contains(name))
    };
    for n in &mut p.nodes {
        n.raw = !n.not_implemented
            && n.formulas
                .iter()
                .all(|f| !f.wrap_opt_if && calls_only(&f.expr, &callable));
    }
}

/// Every name called in `ts` (`name(...)`; not a method) passes `ok`, and no function is
/// called through a path (`helpers::f(...)` would get variables).
fn calls_only(ts: &TokenStream, ok: &impl Fn(&str) -> bool) -> bool {
    use proc_macro2::{Delimiter, TokenTree};
    let toks: Vec<TokenTree> = ts.clone().into_iter().collect();
    toks.iter().enumerate().all(|(i, t)| match t {
        TokenTree::Group(g) => calls_only(&g.stream(), ok),
        TokenTree::Ident(id) => {
            let called = matches!(toks.get(i + 1),
                Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
            let prev = match i.checked_sub(1).map(|j| &toks[j]) {
                Some(TokenTree::Punct(p)) => p.as_char(),
                _ => ' ',
            };
            !called || prev == '.' || (prev != ':' && ok(&id.to_string()))
        }
        _ => true,
    })
}

fn check_unique_names(a: &Analysis, cx: &mut Ctxt) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, f) in a.functions.iter().enumerate() {
        let n = op_fn_name(&f.func.name);
        if let Some(prev) = seen.insert(n.clone(), i) {
            let p = &a.functions[prev];
            let msg = format!(
                "`{}` and `{}` both become the Rust name `{n}`",
                p.func.name, f.func.name
            );
            cx.error(&f.loc, Some(&f.schema), msg);
        }
    }
}

/// The first functional function of each signature.
fn functional_by_signature(a: &Analysis) -> HashMap<SignatureKey<'_>, usize> {
    a.functions
        .iter()
        .enumerate()
        .rev() // the first one wins, as a linear search would
        .filter(|(_, f)| f.func.kind() == SchemaKind::Functional)
        .map(|(i, f)| (f.func.signature_key(true, false), i))
        .collect()
}

struct Builder<'a, 'c> {
    a: &'a Analysis,
    types: &'c TypeMap,
    cx: &'c mut Ctxt,
    node_by_op: HashMap<String, usize>,
}

impl<'a> Builder<'a, '_> {
    fn func(&self, info: &DifferentiabilityInfo) -> &'a NativeFunction {
        &self.a.functions[info.func]
    }

    fn node(&mut self, info: &'a DifferentiabilityInfo) -> Option<NodePlan<'a>> {
        let f = self.func(info);
        let inputs = self.diff_inputs(info);
        let mut fields = self.saved_fields(info, &inputs);
        let rename = renamer(info, f, &fields);
        let formulas: Vec<FormulaPlan> = info
            .derivatives
            .iter()
            .filter_map(|d| self.formula(info, d, &inputs, &mut fields, &rename))
            .collect();
        Some(NodePlan {
            info,
            name: format_ident!("{}", info.op.as_deref()?),
            entry: f.schema.clone(),
            lists: inputs.iter().any(|i| i.kind.is_list()),
            inputs,
            fields,
            formulas,
            uses_grad: info.uses_ident("grad"),
            not_implemented: info.uses_ident("not_implemented")
                || info.uses_ident("not_implemented_named"),
            raw: false,
        })
    }

    fn diff_inputs(&mut self, info: &DifferentiabilityInfo) -> Vec<DiffInput<'a>> {
        let f = self.func(info);
        let mut v = Vec::new();
        for name in &info.args_with_derivatives {
            let Some(arg) = f.func.arguments.flat_all().find(|a| &a.name == name) else {
                continue;
            };
            match rust_ty(&arg.ty, self.types)
                .ok()
                .as_ref()
                .and_then(TensorKind::of)
            {
                Some(kind) => v.push(DiffInput { arg, kind }),
                None => self.cx.error(
                    &info.loc,
                    Some(&f.schema),
                    format!("`{name}` has a formula but is not a tensor"),
                ),
            }
        }
        v
    }
}

/// Renames of a node's formulas: names that are Rust keywords (`self` -> `self_`).
fn renamer(
    info: &DifferentiabilityInfo,
    f: &NativeFunction,
    fields: &[SavedField],
) -> impl Fn(&str) -> Option<String> + use<> {
    let renames: BTreeSet<String> = f
        .func
        .arguments
        .flat_all()
        .map(|a| a.name.clone())
        .chain(return_names(&f.func))
        .chain(fields.iter().map(|x| x.name.clone()))
        .chain(info.all_saved_inputs.iter().map(|s| s.var.clone()))
        .chain(["result".to_string()])
        .filter(|n| rust_name(n) != *n)
        .collect();
    move |n: &str| renames.contains(n).then(|| rust_name(n))
}

impl<'a> Builder<'a, '_> {
    /// The node's fields: saved inputs, then saved outputs, each analysed once.
    fn saved_fields(
        &mut self,
        info: &DifferentiabilityInfo,
        inputs: &[DiffInput<'_>],
    ) -> Vec<SavedField> {
        let f = self.func(info);
        let rename = renamer(info, f, &[]);
        let mut out = Vec::new();
        let all = info.all_saved_inputs.iter().map(|s| (s, false));
        for (s, is_output) in all.chain(info.all_saved_outputs.iter().map(|s| (s, true))) {
            match self.field_source(info, s, is_output, &rename) {
                Ok(source) => out.push(SavedField {
                    name: s.name.clone(),
                    ident: ident(&s.name),
                    source,
                    users: users_of(info, &s.name, inputs),
                }),
                Err(msg) => self.cx.error(&info.loc, Some(&f.schema), msg),
            }
        }
        out
    }

    fn field_source(
        &self,
        info: &DifferentiabilityInfo,
        s: &SavedAttribute,
        is_output: bool,
        rename: &dyn Fn(&str) -> Option<String>,
    ) -> Result<FieldSource, String> {
        let f = &self.func(info).func;
        if s.property.is_some() {
            let prop = Property::of(s, rename)?;
            return Ok(FieldSource::Property {
                var: ident(&s.var),
                prop,
            });
        }
        if is_output {
            let names = return_names(f);
            let index = names
                .iter()
                .position(|n| *n == s.name || (n == "self" && s.name == "result"))
                .ok_or_else(|| format!("saved output `{}` is not an output", s.name))?;
            let list = matches!(f.returns[index].ty, Type::List { .. });
            return Ok(FieldSource::Output { index, list });
        }
        let arg = f
            .arguments
            .flat_all()
            .find(|a| a.name == s.name)
            .ok_or_else(|| format!("saved `{}` is not an argument", s.name))?;
        match rust_ty(&arg.ty, self.types).map_err(|e| format!("argument `{}`: {e}", arg.name))? {
            RustTy::Value(v) if !v.savable => Err(format!(
                "`{}` ({}) cannot be saved for backward",
                arg.name, arg.ty
            )),
            RustTy::Value(v) => Ok(FieldSource::Value(v)),
            t => Ok(FieldSource::Tensor(
                TensorKind::of(&t).unwrap_or(TensorKind::One),
            )),
        }
    }
}

/// The inputs whose formulas use saved value `name`.
fn users_of(info: &DifferentiabilityInfo, name: &str, inputs: &[DiffInput<'_>]) -> Vec<usize> {
    info.derivatives
        .iter()
        .filter(|d| {
            d.saved_inputs
                .iter()
                .chain(&d.saved_outputs)
                .any(|s| s.name == name)
        })
        .flat_map(|d| positions(d, inputs))
        .collect()
}

fn positions(d: &Derivative, inputs: &[DiffInput<'_>]) -> Vec<usize> {
    d.var_names
        .iter()
        .filter_map(|v| inputs.iter().position(|i| &i.arg.name == v))
        .collect()
}

impl<'a> Builder<'a, '_> {
    fn formula(
        &mut self,
        info: &DifferentiabilityInfo,
        d: &Derivative,
        inputs: &[DiffInput<'_>],
        fields: &mut [SavedField],
        rename: &dyn Fn(&str) -> Option<String>,
    ) -> Option<FormulaPlan> {
        let f = self.func(info);
        let what = d.var_names.join(", ");
        let location = format!("{}: `{}`: formula for `{what}`", d.loc, f.schema);
        let checked = formula_tokens(&d.tokens, rename).and_then(|ts| {
            syn::parse2::<syn::Expr>(ts.clone())
                .map(|_| ts)
                .map_err(|e| e.to_string())
        });
        let expr = match checked {
            Ok(ts) => ts,
            Err(e) => {
                let msg = format!("the formula for `{what}` is not a Rust expression: {e}");
                self.cx.error(&d.loc, Some(&f.schema), msg);
                return None;
            }
        };
        let positions = positions(d, inputs);
        if positions.len() > 1 && positions.iter().any(|p| inputs[*p].kind.is_list()) {
            let msg = "a joint formula cannot include a `Tensor[]` argument";
            self.cx.error(&d.loc, Some(&f.schema), msg);
        }
        let uses = |n: &str| d.tokens.has_ident(n);
        let grad_users = info
            .derivatives
            .iter()
            .filter(|d| d.tokens.has_ident("grad"))
            .count();
        let used: Vec<usize> = (0..fields.len())
            .filter(|i| uses(&fields[*i].name))
            .collect();
        let mut borrowed: Vec<usize> = used
            .iter()
            .copied()
            .filter(|i| fields[*i].single_tensor() && d.tokens.only_borrowed(&fields[*i].name))
            .collect();
        let names: Vec<&str> = borrowed.iter().map(|i| fields[*i].name.as_str()).collect();
        let mut raw = d.tokens.unborrowed(&names);
        // Dropping a `&` before a name leaves an expression; should it not, clone instead.
        let raw_expr = formula_tokens(&raw, rename).unwrap_or_else(|_| {
            borrowed.clear();
            raw = d.tokens.clone();
            expr.clone()
        });
        Some(FormulaPlan {
            location,
            line: formula_line(&d.tokens, rename),
            raw_line: formula_line(&raw, rename),
            raw_expr,
            borrowed,
            expr,
            fields: used,
            // A formula that only borrows `grad` reads the one binding (a clone is two
            // atomic operations for an `Arc`-backed tensor).
            clone_grad: d.tokens.has_ident("grad")
                && grad_users > 1
                && !d.tokens.only_borrowed("grad"),
            grads: d.tokens.has_ident("grads"),
            grad_input_mask: d.tokens.has_ident("grad_input_mask"),
            retain_variables: d.tokens.has_ident("retain_variables"),
            wrap_opt_if: d.tokens.has_ident("wrap_opt_if"),
            named: self.named_gradients(info, d),
            positions,
        })
    }

    /// `grad_x` indexes the differentiable outputs.
    fn named_gradients(&self, info: &DifferentiabilityInfo, d: &Derivative) -> Vec<(Ident, usize)> {
        let outs = self.a.results[info.func]
            .differentiable_outputs
            .as_deref()
            .unwrap_or_default();
        d.named_gradients
            .iter()
            .map(|g| {
                let out = g.trim_start_matches("grad_");
                let idx = outs.iter().position(|o| o == out).unwrap_or(0);
                (format_ident!("{}", g), idx)
            })
            .collect()
    }
}

impl<'a> Builder<'a, '_> {
    fn function(
        &mut self,
        fa: &'a FunctionAnalysis,
        functional: &HashMap<SignatureKey<'a>, usize>,
    ) -> Option<FunctionPlan<'a>> {
        let nf = &self.a.functions[fa.func];
        let f = &nf.func;
        let mut params = Vec::new();
        for arg in f.arguments.flat_all() {
            match rust_ty(&arg.ty, self.types) {
                Ok(ty) => params.push(Param {
                    arg,
                    ident: ident(&arg.name),
                    ty,
                }),
                Err(e) => {
                    let msg = format!("argument `{}`: {e}", arg.name);
                    self.cx.error(&nf.loc, Some(&nf.schema), msg);
                    return None;
                }
            }
        }
        let returns = self.returns(nf)?;
        let name = op_fn_name(&f.name);
        let kind = f.kind();
        let node = fa
            .main_info()
            .and_then(|i| i.op.as_ref())
            .and_then(|op| self.node_by_op.get(op).copied());
        let diff_outputs = self.diff_outputs(fa, nf, &returns, node.is_some());
        let first = f.arguments.flat_positional().next();
        let method = first.is_some_and(|a| a.name == "self" && a.ty.is_tensor())
            && f.arguments.pre_self_positional.is_empty()
            && !PRELUDE_METHODS.contains(&name.as_str());
        let functional = matches!(kind, SchemaKind::Inplace | SchemaKind::Out)
            .then(|| functional.get(&f.signature_key(true, false)))
            .flatten()
            .map(|&i| {
                let g = &self.a.functions[i];
                (format_ident!("{}", op_fn_name(&g.func.name)), g)
            });
        let composite = self.composite(fa, nf);
        let decomposition = nf.explicit_kernel.as_deref().map(ident);
        let not_implemented = match fa.main_info() {
            None if composite.is_none() && self.can_carry_history(kind, &returns) => {
                self.tensor_inputs(nf)
            }
            _ => Vec::new(),
        };
        let view = match composite {
            Some(_) => None,
            None => self.view_plan(fa, nf, &returns),
        };
        let no_requires_grad = self.no_requires_grad(fa, nf, kind, &diff_outputs);
        let forward = self.forward_plan(fa, nf, &diff_outputs);
        Some(FunctionPlan {
            no_requires_grad,
            composite,
            decomposition,
            view,
            forward,
            not_implemented,
            nf,
            name: format_ident!("{}", name),
            entry: nf.schema.clone(),
            kind,
            params,
            returns,
            node,
            diff_outputs,
            functional,
            method,
        })
    }

    /// torchgen's `emit_check_no_requires_grad`, for a function that records a node.
    fn no_requires_grad(
        &self,
        fa: &FunctionAnalysis,
        nf: &'a NativeFunction,
        kind: SchemaKind,
        diff_outputs: &[usize],
    ) -> Vec<DiffInput<'a>> {
        let Some(info) = fa.main_info().filter(|i| i.has_derivatives()) else {
            return Vec::new();
        };
        if diff_outputs.is_empty()
            || !matches!(
                kind,
                SchemaKind::Functional | SchemaKind::Inplace | SchemaKind::Mutable
            )
        {
            return Vec::new();
        }
        self.tensor_inputs(nf)
            .into_iter()
            .filter(|d| {
                let n = &d.arg.name;
                !info.args_with_derivatives.contains(n)
                    && !info.non_differentiable_arg_names.contains(n)
                    && n != "output"
            })
            .collect()
    }

    /// The composite kernel a function's `dispatch:` names. PyTorch would let a derivatives
    /// entry override it; here that is an error, as the entry would silently make the
    /// composite kernel dead code.
    fn composite(&mut self, fa: &FunctionAnalysis, nf: &NativeFunction) -> Option<Ident> {
        let k = nf.composite_kernel.as_ref()?;
        if fa.main_info().is_some() {
            let msg = format!(
                "`dispatch:` makes this function CompositeImplicitAutograd (kernel `{k}`, built \
                 from differentiable ops), but it also has a derivatives.yaml entry; keep one"
            );
            self.cx.error(&nf.loc, Some(&nf.schema), msg);
            return None;
        }
        Some(ident(k))
    }

    /// A function without an entry gives its result a `NotImplemented` history: in-place
    /// ones their `self`, functional ones a `Tensor` result (or one `Tensor[]`).
    fn can_carry_history(&self, kind: SchemaKind, returns: &[RustTy]) -> bool {
        match kind {
            SchemaKind::Inplace => true,
            SchemaKind::Functional => match returns {
                [RustTy::TensorList] => true,
                r => !r.is_empty() && r.iter().all(|t| matches!(t, RustTy::Tensor)),
            },
            _ => false,
        }
    }

    /// Whether the function returns a view of `self`, and how writes reach the base.
    fn view_plan(
        &mut self,
        fa: &FunctionAnalysis,
        nf: &NativeFunction,
        returns: &[RustTy],
    ) -> Option<ViewPlan> {
        let f = &nf.func;
        let self_alias = f
            .arguments
            .flat_non_out()
            .find(|a| a.name == "self")?
            .annotation
            .as_ref()
            .filter(|a| !a.is_write)?
            .alias_set
            .clone();
        let ret = f.returns.first()?.annotation.as_ref()?;
        if f.kind() != SchemaKind::Functional || ret.is_write || ret.alias_set != self_alias {
            return None;
        }
        let info = fa.main_info();
        if matches!(returns, [RustTy::TensorList]) {
            let op = info.and_then(|i| i.op.as_deref()).map_or_else(
                || f.name.name.base.clone(),
                |op| {
                    op.trim_end_matches(|c: char| c.is_ascii_digit())
                        .trim_end_matches("Backward")
                        .to_string()
                },
            );
            return Some(ViewPlan::Multi { op });
        }
        if !matches!(returns, [RustTy::Tensor]) {
            return None;
        }
        let Some((formula, _)) = info.and_then(|i| i.view_inverse.as_ref()) else {
            let msg = format!(
                "`{}` returns a view of `self`: give the entry `view_inverse: <formula>` (how a new value `mutated_view` is written into `base`), or `view_inverse: overlapping`",
                f.name
            );
            // At the derivatives.yaml entry, where `view_inverse:` goes.
            let loc = info.map_or(&nf.loc, |i| &i.loc);
            self.cx.error(loc, Some(&nf.schema), msg);
            return None;
        };
        if let [t] = &formula.toks[..]
            && t.is_ident("overlapping")
        {
            return Some(ViewPlan::Single(Inverse::Overlapping));
        }
        let rename = |n: &str| (rust_name(n) != n).then(|| rust_name(n));
        match formula_tokens(formula, rename) {
            Ok(ts) => {
                let uses = formula
                    .toks
                    .iter()
                    .filter(|t| t.kind == crate::formula::TokKind::Ident)
                    .map(|t| rust_name(&t.text))
                    .collect();
                Some(ViewPlan::Single(Inverse::Formula(ts, uses)))
            }
            Err(e) => {
                let msg = format!("`view_inverse` is not a Rust expression: {e}");
                self.cx.error(&nf.loc, Some(&nf.schema), msg);
                None
            }
        }
    }

    /// The forward plan (errors reported here).
    fn forward_plan(
        &mut self,
        fa: &'a FunctionAnalysis,
        nf: &'a NativeFunction,
        diff_outputs: &[usize],
    ) -> forward::ForwardPlan<'a> {
        let inputs = match fa.main_info() {
            _ if matches!(nf.func.kind(), SchemaKind::Out | SchemaKind::Scratch) => {
                let mut v = self.tensor_inputs(nf);
                v.extend(nf.func.arguments.out.iter().filter_map(|arg| {
                    let ty = rust_ty(&arg.ty, self.types).ok()?;
                    Some(DiffInput {
                        arg,
                        kind: TensorKind::of(&ty)?,
                    })
                }));
                v
            }
            Some(info) => self
                .tensor_inputs(nf)
                .into_iter()
                .filter(|i| info.args_with_derivatives.contains(&i.arg.name))
                .collect(),
            None => self.tensor_inputs(nf),
        };
        // Arguments named like Rust keywords (`self` -> `self_`), nothing else.
        let args: BTreeSet<String> = nf
            .func
            .arguments
            .flat_all()
            .map(|a| a.name.clone())
            .filter(|n| rust_name(n) != *n)
            .collect();
        let rename = |n: &str| args.contains(n).then(|| rust_name(n));
        match forward::plan_forward(fa, nf, inputs, diff_outputs, &rename) {
            Ok(p) => p,
            Err(msg) => {
                self.cx.error(&nf.loc, Some(&nf.schema), msg);
                forward::ForwardPlan::Nothing
            }
        }
    }

    /// Every tensor argument but the out= ones.
    fn tensor_inputs(&self, nf: &'a NativeFunction) -> Vec<DiffInput<'a>> {
        nf.func
            .arguments
            .flat_non_out()
            .filter_map(|arg| {
                let ty = rust_ty(&arg.ty, self.types).ok()?;
                Some(DiffInput {
                    arg,
                    kind: TensorKind::of(&ty)?,
                })
            })
            .collect()
    }

    /// Return types: tensors, tensor lists and `Copy` values.
    fn returns(&mut self, nf: &NativeFunction) -> Option<Vec<RustTy>> {
        let mut out = Vec::new();
        for r in &nf.func.returns {
            match rust_ty(&r.ty, self.types) {
                Ok(t @ (RustTy::Tensor | RustTy::TensorList)) => out.push(t),
                Ok(RustTy::Value(v)) if v.to_owned == Conversion::Copy => {
                    out.push(RustTy::Value(v))
                }
                _ => {
                    let msg = format!("return type `{}` has no Rust mapping", r.ty);
                    self.cx.error(&nf.loc, Some(&nf.schema), msg);
                    return None;
                }
            }
        }
        Some(out)
    }

    /// Differentiable tensor outputs of a recording functional wrapper; a node must record
    /// at least one, and a `Tensor[]` output only alone.
    fn diff_outputs(
        &mut self,
        fa: &FunctionAnalysis,
        nf: &NativeFunction,
        returns: &[RustTy],
        records: bool,
    ) -> Vec<usize> {
        let names = return_names(&nf.func);
        // An error here was reported by the analysis (output_differentiability's length).
        let Ok(diff) = fa.differentiable_outputs.as_deref() else {
            return Vec::new();
        };
        let idx: Vec<usize> = (0..returns.len())
            .filter(|i| !matches!(returns[*i], RustTy::Value(_)) && diff.contains(&names[*i]))
            .collect();
        let functional = !matches!(
            nf.func.kind(),
            SchemaKind::Inplace | SchemaKind::Out | SchemaKind::Scratch
        );
        if !(records && functional) {
            return idx;
        }
        let lists = idx
            .iter()
            .filter(|i| matches!(returns[**i], RustTy::TensorList))
            .count();
        let all_false = fa
            .main_info()
            .and_then(|i| i.output_differentiability.as_ref())
            .is_some_and(|o| o.iter().all(|d| !d));
        if idx.is_empty() && !all_false {
            // (All `False` with formulas is reported by the analysis' checks.)
            let msg = "the backward node would record no output: no output is differentiable";
            self.cx.error(&nf.loc, Some(&nf.schema), msg);
        } else if lists > 0 && idx.len() > 1 {
            let msg = "a `Tensor[]` output next to other outputs is not supported";
            self.cx.error(&nf.loc, Some(&nf.schema), msg);
        }
        idx
    }
}
