//! Emission: the analysis as Rust code.
//!
//! For a `derivatives.yaml` with Rust formulas (and optionally a `native_functions.yaml`),
//! [`generate`] emits, into the module that calls `autograd_ops!`:
//!
//! * `pub trait Backend`: one associated function per native function, implemented by the
//!   tensor library for its raw tensor type (schema types mapped as in [`types`]); in-place
//!   and out= variants get default bodies calling their functional variant;
//! * one backward-node struct per differentiable function (`MulBackward0<T>`), with typed
//!   saved fields, implementing the runtime's `Node`;
//! * one differentiable wrapper per function (`mul_tensor`, `mul_tensor_`, `mul_out`) on the
//!   runtime's `Variable<T>`, and the same as methods through `pub trait VariableOps`.
//!
//! Names: `{base}_{overload}` in snake case (`mul.Tensor` -> `mul_tensor`, `sum.dim_IntList`
//! -> `sum_dim_intlist`, `max.dim` -> `max_dim`), the base alone without overload; in-place
//! variants end in `_` (`mul_.Tensor` -> `mul_tensor_`); out= overloads keep their overload
//! name (`mul.out` -> `mul_out`). `self` is `self_` everywhere, Rust keywords get a `_`.

pub mod build;
pub mod types;

use crate::analysis::{
    self, Analysis, AnalysisOptions, Derivative, DifferentiabilityInfo, FunctionAnalysis,
    PropertyRules, SavedAttribute,
};
use crate::diagnostics::{Ctxt, Diagnostic, Diagnostics, Location};
use crate::formula::TokKind;
use crate::model::derivatives::{DerivativeEntry, parse_derivatives};
use crate::model::native::{NativeFunction, Variant, parse_native_functions};
use crate::model::schema::{Argument, FunctionSchema, OperatorName, SchemaKind};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use types::{RustTy, TypeMap, ValueTy, rust_ty};

/// What to generate from.
#[derive(Debug, Clone)]
pub struct Config {
    /// `derivatives.yaml`, as the user wrote it (messages show this).
    pub derivatives: PathBuf,
    /// An optional `native_functions.yaml`.
    pub native: Option<PathBuf>,
    /// Directory relative paths resolve against (`CARGO_MANIFEST_DIR` in the macro).
    pub base_dir: PathBuf,
    /// A module whose items formulas may use (`helpers = crate::helpers`).
    pub helpers: Option<syn::Path>,
    /// Path of the facade crate (`::autograd`).
    pub krate: syn::Path,
    /// Emit `include_str!` of the inputs, so that editing them rebuilds the crate.
    pub track_files: bool,
    /// The derivatives YAML itself, instead of reading `derivatives` (inline YAML in the macro).
    pub derivatives_text: Option<String>,
    /// Rust types for value schema types (`("Scalar", f32)`), instead of the defaults.
    pub type_overrides: Vec<(String, syn::Type)>,
}

impl Config {
    /// A config for `derivatives` with defaults.
    pub fn new(derivatives: impl Into<PathBuf>) -> Self {
        Config {
            derivatives: derivatives.into(),
            native: None,
            base_dir: PathBuf::from("."),
            helpers: None,
            krate: syn::parse_quote!(::autograd),
            track_files: true,
            derivatives_text: None,
            type_overrides: Vec::new(),
        }
    }

    fn resolve(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base_dir.join(p)
        }
    }
}

/// The analysis options for Rust formulas: torchgen's property rules that have a Rust
/// counterpart, plus `sizes()`, `shape()`, `dtype()`, `size(d)`.
pub fn rust_analysis_options() -> AnalysisOptions {
    let mut rules = PropertyRules::rust();
    rules
        .rules
        .retain(|r| RUST_PROPERTIES.contains(&r.kind.as_str()));
    AnalysisOptions { rules }
}

const RUST_PROPERTIES: &[&str] = &[
    "sym_sizes",
    "sizes",
    "shape",
    "numel",
    "sym_numel",
    "dim",
    "sym_size",
    "size",
    "scalar_type",
    "dtype",
];

fn read(path: &Path, shown: &Path) -> Result<String, Diagnostics> {
    std::fs::read_to_string(path).map_err(|e| {
        Diagnostics(vec![Diagnostic {
            location: Location {
                file: Arc::from(shown.display().to_string()),
                line: 0,
                column: 0,
            },
            entry: None,
            message: format!(
                "cannot read `{}` (paths are relative to CARGO_MANIFEST_DIR): {e}",
                shown.display()
            ),
        }])
    })
}

/// Read and analyse the inputs of `config` with Rust rules. Without a native file, the
/// entries' `name:` schemas declare the functions. Errors go to `cx`; the analysis of what
/// could be read is returned either way, so that one run reports every mistake.
pub fn analyze_config_into(config: &Config, cx: &mut Ctxt) -> Result<Analysis, Diagnostics> {
    let dtext = match &config.derivatives_text {
        Some(t) => t.clone(),
        None => read(&config.resolve(&config.derivatives), &config.derivatives)?,
    };
    let dfile: Arc<str> = Arc::from(config.derivatives.display().to_string());
    let mut entries = parse_derivatives(&dfile, &dtext, cx);
    let functions = match &config.native {
        Some(n) => {
            let text = read(&config.resolve(n), n)?;
            let nfile: Arc<str> = Arc::from(n.display().to_string());
            let mut fns = parse_native_functions(&nfile, &text, &BTreeSet::new(), cx);
            crate::model::autogen::add_generated_native_functions(&mut fns, cx);
            fns
        }
        None => {
            let fns = functions_from_entries(&entries, cx);
            // Entries whose schema is invalid were reported already.
            entries.retain(|e| fns.iter().any(|f| f.schema == e.name));
            fns
        }
    };
    let options = rust_analysis_options();
    let mut infos = analysis::load_infos(&functions, &entries, &options, cx);
    let results = analysis::match_infos(&functions, &mut infos, cx);
    Ok(Analysis { functions, results })
}

/// [`analyze_config_into`] with its own error accumulator.
pub fn analyze_config(config: &Config) -> Result<Analysis, Diagnostics> {
    let mut cx = Ctxt::new();
    let a = analyze_config_into(config, &mut cx)?;
    cx.check(a)
}

fn functions_from_entries(entries: &[DerivativeEntry], cx: &mut Ctxt) -> Vec<NativeFunction> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for e in entries {
        match FunctionSchema::parse(&e.name) {
            Err(err) => cx.error(&e.loc, Some(&e.name), format!("invalid schema: {err}")),
            Ok(func) => {
                if !seen.insert(e.name.clone()) {
                    cx.error(&e.loc, Some(&e.name), "duplicate entry for this schema");
                    continue;
                }
                out.push(NativeFunction {
                    func,
                    schema: e.name.clone(),
                    loc: e.loc.clone(),
                    variants: [Variant::Function, Variant::Method].into_iter().collect(),
                    tags: BTreeSet::new(),
                    dispatch_keys: ["CPU".to_string()].into_iter().collect(),
                    structured: false,
                    structured_delegate: None,
                    autogen: Vec::new(),
                    manual_cpp_binding: false,
                    is_abstract: true,
                });
            }
        }
    }
    out
}

/// Generate the code, or every error.
pub fn generate(config: &Config) -> Result<TokenStream, Diagnostics> {
    let mut cx = Ctxt::new();
    let analysis = analyze_config_into(config, &mut cx)?;
    let mut emitter = Emitter::new(config, &analysis);
    emitter.cx = cx;
    emitter.emit()
}

/// Generate and format with prettyplease (for `autograd-gen expand` and build scripts).
pub fn generate_pretty(config: &Config) -> Result<String, Diagnostics> {
    let tokens = generate(config)?;
    let file: syn::File = syn::parse2(tokens).map_err(|e| {
        Diagnostics(vec![Diagnostic {
            location: Location::default(),
            entry: None,
            message: format!("internal error: generated code does not parse: {e}"),
        }])
    })?;
    Ok(prettyplease::unparse(&file))
}

/// Errors as `compile_error!` invocations, one per error.
pub fn compile_errors(d: &Diagnostics) -> TokenStream {
    let errs = d.0.iter().map(|e| {
        let msg = e.to_string();
        quote!(::core::compile_error!(#msg);)
    });
    quote!(#(#errs)*)
}

/// Methods of traits in the prelude (and `Variable`'s own `Clone`); a `VariableOps` method of
/// the same name would make every call ambiguous, so those ops are free functions only.
const PRELUDE_METHODS: &[&str] = &[
    "clone",
    "clone_from",
    "to_owned",
    "to_string",
    "into",
    "try_into",
    "eq",
    "ne",
];

const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// A schema name as a Rust identifier: `self` -> `self_`, keywords get a trailing `_`.
pub fn rust_name(name: &str) -> String {
    if KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

fn ident(name: &str) -> Ident {
    Ident::new(&rust_name(name), Span::call_site())
}

/// The wrapper name of an operator (see the module docs).
pub fn op_fn_name(name: &OperatorName) -> String {
    let mut s = name.name.base.clone();
    if name.name.functional_overload {
        s.push_str("_functional");
    }
    if !name.overload_name.is_empty() {
        s.push('_');
        s.push_str(&name.overload_name.to_lowercase());
    }
    if name.name.inplace {
        s.push('_');
    }
    rust_name(&s)
}

struct Emitter<'a> {
    config: &'a Config,
    a: &'a Analysis,
    krate: TypeMap,
    cx: Ctxt,
    /// Wrapper name of each function.
    names: Vec<String>,
    /// The functional function of each signature, for default in-place / out= bodies.
    functional_by_signature: HashMap<crate::model::schema::SignatureKey<'a>, usize>,
}

/// One input with a derivative, as the node sees it.
struct DiffInput<'a> {
    arg: &'a Argument,
    ty: RustTy,
}

impl<'a> Emitter<'a> {
    fn new(config: &'a Config, a: &'a Analysis) -> Self {
        // Generated code names everything through one alias, `__ag` (see `emit`).
        // Unknown names are reported by `emit`.
        let overrides = config
            .type_overrides
            .iter()
            .filter_map(|(name, ty)| {
                let b = crate::model::schema::BaseTy::from_name(name)
                    .filter(|b| types::OVERRIDABLE.contains(b))?;
                Some((b, quote!(#ty)))
            })
            .collect();
        let krate = TypeMap {
            krate: quote!(__ag),
            overrides,
        };
        Emitter {
            config,
            a,
            krate,
            cx: Ctxt::new(),
            names: a
                .functions
                .iter()
                .map(|f| op_fn_name(&f.func.name))
                .collect(),
            functional_by_signature: a
                .functions
                .iter()
                .enumerate()
                .rev() // the first one wins, as a linear search would
                .filter(|(_, f)| f.func.kind() == SchemaKind::Functional)
                .map(|(i, f)| (f.func.signature_key(true, false), i))
                .collect(),
        }
    }

    fn err(&mut self, loc: &Location, entry: &str, msg: impl Into<String>) {
        self.cx.error(loc, Some(entry), msg);
    }

    fn emit(mut self) -> Result<TokenStream, Diagnostics> {
        for (name, _) in &self.config.type_overrides {
            let ok = crate::model::schema::BaseTy::from_name(name)
                .is_some_and(|b| types::OVERRIDABLE.contains(&b));
            if !ok {
                let allowed: Vec<&str> = types::OVERRIDABLE.iter().map(|b| b.as_str()).collect();
                let loc = Location {
                    file: Arc::from(self.config.derivatives.display().to_string()),
                    line: 0,
                    column: 0,
                };
                self.cx.error(
                    &loc,
                    None,
                    format!(
                        "`types`: `{name}` cannot be mapped; the value types that can are {}",
                        allowed.join(", ")
                    ),
                );
            }
        }
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, n) in self.names.iter().enumerate() {
            if let Some(prev) = seen.insert(n, i) {
                let (f, p) = (&self.a.functions[i], &self.a.functions[prev]);
                let msg = format!(
                    "`{}` and `{}` both become the Rust name `{n}`",
                    p.func.name, f.func.name
                );
                self.cx.error(&f.loc, Some(&f.func.to_string()), msg);
            }
        }
        let mut nodes = Vec::new();
        let mut emitted_nodes: BTreeSet<String> = BTreeSet::new();
        for fa in &self.a.results {
            if let Some(info) = fa.main_info() {
                if let Some(op) = &info.op {
                    if emitted_nodes.insert(op.clone()) {
                        self.check_totality(info);
                        nodes.push(self.node(info));
                    }
                } else {
                    self.check_totality(info);
                }
            }
        }
        let mut backend_methods = Vec::new();
        let mut wrappers = Vec::new();
        let mut methods_decl = Vec::new();
        for fa in &self.a.results {
            let Some((bm, w, m)) = self.function(fa) else {
                continue;
            };
            backend_methods.push(bm);
            wrappers.push(w);
            methods_decl.extend(m);
        }
        let track = if self.config.track_files {
            let mut files = Vec::new();
            if self.config.derivatives_text.is_none() {
                files.push(self.config.resolve(&self.config.derivatives));
            }
            files.extend(self.config.native.iter().map(|n| self.config.resolve(n)));
            let incs = files.iter().map(|f| {
                let s = f.display().to_string();
                quote!(
                    const _: &str = include_str!(#s);
                )
            });
            quote!(#(#incs)*)
        } else {
            quote!()
        };
        let facade = &self.config.krate;
        let out = quote! {
            #track

            #[allow(unused_imports)]
            use #facade::support::__prelude as __ag;

            /// The raw operations of the tensor library, one per native function: implement it
            /// for the raw tensor type (`autograd_ops!` generated this trait).
            pub trait Backend: __ag::Tensor {
                #(#backend_methods)*
            }

            #(#nodes)*

            #(#wrappers)*

            /// The differentiable operations as methods on `Variable` (generated).
            pub trait VariableOps<T: Backend>: __ag::Borrow<__ag::Variable<T>> {
                #(#methods_decl)*
            }

            impl<T: Backend> VariableOps<T> for __ag::Variable<T> {}
        };
        self.cx.check(out)
    }

    fn entry_text(&self, info: &DifferentiabilityInfo) -> String {
        self.a.functions[info.func].func.to_string()
    }

    /// Every tensor argument needs a formula, `not_implemented(...)` or `non_differentiable`.
    fn check_totality(&mut self, info: &DifferentiabilityInfo) {
        let f = &self.a.functions[info.func].func;
        let entry = f.to_string();
        for arg in f.arguments.flat_non_out() {
            if !arg.ty.is_tensor_like() {
                continue;
            }
            let covered = info.args_with_derivatives.contains(&arg.name)
                || info.non_differentiable_arg_names.contains(&arg.name);
            if !covered {
                let n = &arg.name;
                let msg = format!(
                    "tensor argument `{n}` has no formula: add `{n}: <formula>`, `{n}: not_implemented(\"...\")` or `{n}: non_differentiable`"
                );
                self.err(&info.loc, &entry, msg);
            }
        }
    }

    fn diff_inputs(&mut self, info: &'a DifferentiabilityInfo) -> Vec<DiffInput<'a>> {
        let f = &self.a.functions[info.func].func;
        let entry = f.to_string();
        let mut v = Vec::new();
        for name in &info.args_with_derivatives {
            let Some(arg) = f.arguments.flat_all().find(|a| &a.name == name) else {
                continue;
            };
            match rust_ty(&arg.ty, &self.krate) {
                Ok(
                    ty @ (RustTy::Tensor
                    | RustTy::OptTensor
                    | RustTy::TensorList
                    | RustTy::OptTensorList),
                ) => v.push(DiffInput { arg, ty }),
                _ => self.err(
                    &info.loc,
                    &entry,
                    format!("`{name}` has a formula but is not a tensor"),
                ),
            }
        }
        v
    }

    fn has_lists(inputs: &[DiffInput<'_>]) -> bool {
        inputs
            .iter()
            .any(|i| matches!(i.ty, RustTy::TensorList | RustTy::OptTensorList))
    }

    /// The field type of a saved attribute; `None` (with an error) when it cannot be saved.
    fn saved_field(
        &mut self,
        info: &DifferentiabilityInfo,
        s: &SavedAttribute,
        is_output: bool,
    ) -> Option<SavedField> {
        let f = &self.a.functions[info.func].func;
        let entry = f.to_string();
        if let Some(prop) = &s.property {
            let (ty, bind) = match prop.as_str() {
                "sym_sizes" | "sizes" | "shape" => (quote!(__ag::Vec<usize>), BindKind::Slice),
                "numel" | "sym_numel" | "dim" | "sym_size" | "size" => {
                    (quote!(usize), BindKind::Copy)
                }
                "scalar_type" | "dtype" => (quote!(&'static str), BindKind::Copy),
                other => {
                    self.err(
                        &info.loc,
                        &entry,
                        format!("property `{other}` of `{}` has no Rust capture", s.var),
                    );
                    return None;
                }
            };
            return Some(SavedField {
                name: s.name.clone(),
                ty,
                kind: FieldKind::Property(prop.clone()),
                bind,
            });
        }
        if is_output {
            let names = crate::analysis::cpp::return_names(f);
            let idx = names
                .iter()
                .position(|n| *n == s.name || (n == "self" && s.name == "result"));
            let ret = idx.map(|i| &f.returns[i]);
            let list = ret.is_some_and(|r| matches!(r.ty, crate::model::schema::Type::List { .. }));
            return Some(SavedField {
                name: s.name.clone(),
                ty: if list {
                    quote!(__ag::Vec<__ag::SavedVariable<T>>)
                } else {
                    quote!(__ag::SavedVariable<T>)
                },
                kind: FieldKind::Output(idx.unwrap_or(0), list),
                bind: BindKind::Copy,
            });
        }
        let Some(arg) = f.arguments.flat_all().find(|a| a.name == s.name) else {
            self.err(
                &info.loc,
                &entry,
                format!("saved `{}` is not an argument", s.name),
            );
            return None;
        };
        match rust_ty(&arg.ty, &self.krate) {
            Err(e) => {
                self.err(&info.loc, &entry, format!("argument `{}`: {e}", arg.name));
                None
            }
            Ok(RustTy::Tensor) | Ok(RustTy::OptTensor) => Some(SavedField {
                name: s.name.clone(),
                ty: quote!(__ag::SavedVariable<T>),
                kind: FieldKind::Input(arg.ty.clone()),
                bind: BindKind::Copy,
            }),
            Ok(RustTy::TensorList) | Ok(RustTy::OptTensorList) => Some(SavedField {
                name: s.name.clone(),
                ty: quote!(__ag::Vec<__ag::SavedVariable<T>>),
                kind: FieldKind::Input(arg.ty.clone()),
                bind: BindKind::Copy,
            }),
            Ok(RustTy::Value(v)) => {
                if !v.savable {
                    self.err(
                        &info.loc,
                        &entry,
                        format!("`{}` ({}) cannot be saved for backward", arg.name, arg.ty),
                    );
                    return None;
                }
                Some(SavedField {
                    name: s.name.clone(),
                    ty: v.owned.clone(),
                    kind: FieldKind::Input(arg.ty.clone()),
                    bind: BindKind::Value(v),
                })
            }
        }
    }

    fn saved_fields(&mut self, info: &DifferentiabilityInfo) -> Vec<SavedField> {
        let mut out: Vec<SavedField> = Vec::new();
        for s in &info.all_saved_inputs {
            if let Some(f) = self.saved_field(info, s, false) {
                out.push(f);
            }
        }
        for s in &info.all_saved_outputs {
            if let Some(f) = self.saved_field(info, s, true) {
                out.push(f);
            }
        }
        out
    }

    fn node(&mut self, info: &'a DifferentiabilityInfo) -> TokenStream {
        let op = info.op.clone().unwrap_or_default();
        let node = format_ident!("{}", op);
        let inputs = self.diff_inputs(info);
        let n_inputs = inputs.len();
        let lists = Self::has_lists(&inputs);
        let fields = self.saved_fields(info);
        let field_decls = fields.iter().map(|f| {
            let (n, t) = (ident(&f.name), &f.ty);
            quote!(pub #n: #t,)
        });
        let offsets_decl = lists.then(|| quote!(pub __offsets: __ag::Vec<usize>,));
        let releases = fields.iter().filter_map(|f| {
            let n = ident(&f.name);
            match &f.kind {
                FieldKind::Output(_, true) => {
                    Some(quote!(for s in self.#n.iter_mut() { s.reset(); }))
                }
                FieldKind::Output(..) => Some(quote!(self.#n.reset();)),
                FieldKind::Input(t) if t.is_tensor_like() => {
                    Some(if matches!(t, crate::model::schema::Type::List { .. }) {
                        quote!(for s in self.#n.iter_mut() { s.reset(); })
                    } else {
                        quote!(self.#n.reset();)
                    })
                }
                _ => None,
            }
        });
        let visits = fields.iter().filter_map(|f| {
            let n = ident(&f.name);
            let label = &f.name;
            match &f.kind {
                FieldKind::Output(_, true) => {
                    Some(quote!(for s in self.#n.iter() { f(#label, s); }))
                }
                FieldKind::Output(..) => Some(quote!(f(#label, &self.#n);)),
                FieldKind::Input(t) if t.is_tensor_like() => {
                    Some(if matches!(t, crate::model::schema::Type::List { .. }) {
                        quote!(for s in self.#n.iter() { f(#label, s); })
                    } else {
                        quote!(f(#label, &self.#n);)
                    })
                }
                _ => None,
            }
        });
        let total = if lists {
            quote!(self.__offsets[#n_inputs])
        } else {
            quote!(#n_inputs)
        };
        let derivs: Vec<TokenStream> = info
            .derivatives
            .iter()
            .map(|d| self.derivative_block(info, d, &inputs, &fields, lists))
            .collect();
        let helpers = self
            .config
            .helpers
            .as_ref()
            .map(|h| quote!(#[allow(unused_imports)] use #h::*;));
        let doc = format!(
            "Backward of `{}` (generated from derivatives.yaml).",
            self.entry_text(info)
        );
        let name_str = &op;
        let not_impl_prefix = info.name.to_string();
        // Only what some formula uses: fewer tokens make the macro expand faster.
        let not_impl = info.uses_ident("not_implemented").then(|| {
            quote!(
                fn not_implemented(what: &str) -> __ag::NotImplemented {
                    __ag::NotImplemented(__ag::format!("{}: {}", #not_impl_prefix, what))
                }
            )
        });
        // `grad` is the same for every formula: bound once; no gradient, nothing to do.
        let grad = info
            .uses_ident("grad")
            .then(|| quote!(let __ag::Some(grad) = grads[0].clone() else { return Ok(__out) };));
        quote! {
            #[doc = #doc]
            #[allow(non_camel_case_types)]
            pub struct #node<T: Backend> {
                #(#field_decls)*
                /// Which differentiable inputs needed a gradient when the op ran.
                pub __needs: [bool; #n_inputs],
                #offsets_decl
                #[doc(hidden)]
                pub __marker: __ag::PhantomData<fn() -> T>,
            }

            impl<T: Backend> __ag::Node<T> for #node<T> {
                fn name(&self) -> &str {
                    #name_str
                }

                #[allow(unused_variables, unused_mut, non_snake_case, clippy::all)]
                fn apply(
                    &mut self,
                    grads: __ag::VariableList<T>,
                ) -> __ag::Result<__ag::VariableList<T>, __ag::AutogradError> {
                    #helpers
                    #not_impl
                    let mut __out = __ag::VariableList::<T>::with_len(#total);
                    if grads.iter().all(__ag::Option::is_none) {
                        return Ok(__out);
                    }
                    #grad
                    #(#derivs)*
                    Ok(__out)
                }

                fn release_variables(&mut self) {
                    #(#releases)*
                }

                #[allow(unused_variables)]
                fn visit_saved(&self, f: &mut dyn FnMut(&str, &__ag::SavedVariable<T>)) {
                    #(#visits)*
                }
            }
        }
    }

    fn derivative_block(
        &mut self,
        info: &DifferentiabilityInfo,
        d: &Derivative,
        inputs: &[DiffInput<'_>],
        fields: &[SavedField],
        lists: bool,
    ) -> TokenStream {
        let k = self.krate.clone();
        let entry = self.entry_text(info);
        let f = &self.a.functions[info.func].func;
        // Rewrite: `self` and keywords become legal identifiers.
        let mut toks = d.tokens.clone();
        let renames: BTreeSet<String> = f
            .arguments
            .flat_all()
            .map(|a| a.name.clone())
            .chain(crate::analysis::cpp::return_names(f))
            .chain(fields.iter().map(|x| x.name.clone()))
            .chain(["result".to_string()])
            .filter(|n| rust_name(n) != *n)
            .collect();
        for t in toks.toks.iter_mut() {
            if t.kind == TokKind::Ident && renames.contains(&t.text) {
                t.text = rust_name(&t.text);
            }
        }
        let text = toks.render();
        let expr: syn::Expr = match syn::parse_str(&text) {
            Ok(e) => e,
            Err(e) => {
                self.cx.error(
                    &d.loc,
                    Some(&entry),
                    format!(
                        "the formula for `{}` is not a Rust expression: {e}",
                        d.var_names.join(", ")
                    ),
                );
                return quote!();
            }
        };
        // Bindings for what the formula uses.
        let used = |name: &str| toks.has_ident(&rust_name(name));
        let mut binds = Vec::new();
        for fld in fields {
            if !used(&fld.name) {
                continue;
            }
            let n = ident(&fld.name);
            binds.push(match (&fld.kind, &fld.bind) {
                (FieldKind::Property(_), BindKind::Slice) => quote!(let #n: &[usize] = &self.#n[..];),
                (FieldKind::Property(_), _) => quote!(let #n = self.#n;),
                (FieldKind::Output(_, true), _) => {
                    quote!(let #n = self.#n.iter().map(|s| s.unpack()).collect::<__ag::Result<__ag::Vec<_>, _>>()?;)
                }
                (FieldKind::Output(..), _) => quote!(let #n = self.#n.unpack()?;),
                (FieldKind::Input(t), _) if t.is_tensor_like() => match rust_ty(t, &k) {
                    Ok(RustTy::Tensor) => quote!(let #n = self.#n.unpack()?;),
                    Ok(RustTy::OptTensor) => quote!(let #n = self.#n.unpack_opt()?;),
                    Ok(RustTy::TensorList) => {
                        quote!(let #n = self.#n.iter().map(|s| s.unpack()).collect::<__ag::Result<__ag::Vec<_>, _>>()?;)
                    }
                    _ => quote!(let #n = self.#n.iter().map(|s| s.unpack_opt()).collect::<__ag::Result<__ag::Vec<_>, _>>()?;),
                },
                (_, BindKind::Value(v)) => {
                    let b = v.bind_expr(&quote!(self.#n));
                    quote!(let #n = #b;)
                }
                _ => quote!(let #n = &self.#n;),
            });
        }
        // `grad` is bound once per node; a formula may move it, so each of several uses
        // gets its own handle.
        if toks.has_ident("grad")
            && info
                .derivatives
                .iter()
                .filter(|d| d.tokens.has_ident("grad"))
                .count()
                > 1
        {
            binds.push(quote!(let grad = grad.clone();));
        }
        if toks.has_ident("grads") {
            binds.push(quote!(let grads: &[__ag::Option<__ag::Variable<T>>] = &grads[..];));
        }
        // Named gradients index the differentiable outputs.
        // One result per function, in function order.
        let diff_outs = self.a.results[info.func]
            .differentiable_outputs
            .clone()
            .unwrap_or_default();
        for g in &d.named_gradients {
            let out_name = g.trim_start_matches("grad_");
            let idx = diff_outs.iter().position(|o| o == out_name).unwrap_or(0);
            let n = format_ident!("{}", g);
            binds.push(quote!(let #n: __ag::Option<__ag::Variable<T>> = grads.get(#idx).cloned().flatten();));
        }
        let positions: Vec<usize> = d
            .var_names
            .iter()
            .filter_map(|v| inputs.iter().position(|i| &i.arg.name == v))
            .collect();
        if toks.has_ident("grad_input_mask") {
            let m = positions.iter().map(|p| quote!(self.__needs[#p]));
            binds.push(quote!(let grad_input_mask = [#(#m),*];));
        }
        if toks.has_ident("retain_variables") {
            binds.push(quote!(let retain_variables = __ag::is_retaining_graph();));
        }
        if toks.has_ident("wrap_opt_if") {
            binds.push(quote!(
                use __ag::wrap_opt_if;
            ));
        }
        let cond = positions.iter().map(|p| quote!(self.__needs[#p]));
        let pos_expr = |p: usize| {
            if lists {
                quote!(self.__offsets[#p])
            } else {
                quote!(#p)
            }
        };
        let place = if positions.len() == 1 {
            let p = positions[0];
            let at = pos_expr(p);
            match inputs[p].ty {
                RustTy::TensorList | RustTy::OptTensorList => {
                    let end = pos_expr(p + 1);
                    quote! {
                        let __g = __ag::IntoGradList::<T>::into_grad_list(__r)?;
                        for (__i, __x) in (#at..#end).zip(__g) {
                            __out[__i] = __x;
                        }
                    }
                }
                _ => quote!(__out[#at] = __ag::IntoGrad::<T>::into_grad(__r)?;),
            }
        } else {
            let n = positions.len();
            let sets = positions.iter().enumerate().map(|(j, p)| {
                let at = pos_expr(*p);
                quote!(if self.__needs[#p] { __out[#at] = __g[#j].take(); })
            });
            if positions
                .iter()
                .any(|p| matches!(inputs[*p].ty, RustTy::TensorList | RustTy::OptTensorList))
            {
                self.cx.error(
                    &d.loc,
                    Some(&entry),
                    "a joint formula cannot include a `Tensor[]` argument",
                );
            }
            quote! {
                let mut __g = __ag::IntoGrads::<T, #n>::into_grads(__r)?;
                #(#sets)*
            }
        };
        quote! {
            if #(#cond)||* {
                #(#binds)*
                let __r = { #expr };
                #place
            }
        }
    }

    /// Backend method, wrapper and `VariableOps` method of one function.
    fn function(&mut self, fa: &'a FunctionAnalysis) -> Option<FunctionCode> {
        let k = self.krate.clone();
        let nf = &self.a.functions[fa.func];
        let f = &nf.func;
        let entry = f.to_string();
        let name = format_ident!("{}", self.names[fa.func]);
        let kind = f.kind();
        // Parameters.
        let mut wparams = Vec::new();
        let mut bparams = Vec::new();
        let mut prep = Vec::new();
        // The last read-only tensor argument: (index of its `prep` line, variable, binding).
        // Functional wrappers read it in place with `with_data` instead of cloning it.
        let mut borrowed: Option<(usize, Ident, Ident)> = None;
        let mut call_args = Vec::new();
        let mut tys: BTreeMap<String, RustTy> = BTreeMap::new();
        for a in f.arguments.flat_all() {
            let ty = match rust_ty(&a.ty, &k) {
                Ok(t) => t,
                Err(e) => {
                    self.cx
                        .error(&nf.loc, Some(&entry), format!("argument `{}`: {e}", a.name));
                    return None;
                }
            };
            let n = ident(&a.name);
            let d = format_ident!("__d_{}", rust_name(&a.name));
            let mutable = a.is_write();
            match &ty {
                RustTy::Tensor => {
                    wparams.push(quote!(#n: &__ag::Variable<T>));
                    if mutable {
                        bparams.push(quote!(#n: &mut Self));
                        prep.push(quote!(let mut #d = #n.data();));
                        call_args.push(quote!(&mut #d));
                    } else {
                        bparams.push(quote!(#n: &Self));
                        borrowed = Some((prep.len(), n.clone(), d.clone()));
                        prep.push(quote!(let #d = #n.data();));
                        call_args.push(quote!(&#d));
                    }
                }
                RustTy::OptTensor => {
                    wparams.push(quote!(#n: __ag::Option<&__ag::Variable<T>>));
                    bparams.push(quote!(#n: __ag::Option<&Self>));
                    prep.push(quote!(let #d = #n.map(|v| v.data());));
                    call_args.push(quote!(#d.as_ref()));
                }
                RustTy::TensorList => {
                    wparams.push(quote!(#n: &[__ag::Variable<T>]));
                    bparams.push(quote!(#n: &[Self]));
                    prep.push(
                        quote!(let #d: __ag::Vec<T> = #n.iter().map(|v| v.data()).collect();),
                    );
                    call_args.push(quote!(&#d));
                }
                RustTy::OptTensorList => {
                    wparams.push(quote!(#n: &[__ag::Option<__ag::Variable<T>>]));
                    bparams.push(quote!(#n: &[__ag::Option<Self>]));
                    prep.push(quote!(let #d: __ag::Vec<__ag::Option<T>> = #n.iter().map(|v| v.as_ref().map(|v| v.data())).collect();));
                    call_args.push(quote!(&#d));
                }
                RustTy::Value(v) => {
                    let p = &v.param;
                    wparams.push(quote!(#n: #p));
                    bparams.push(quote!(#n: #p));
                    call_args.push(quote!(#n));
                }
            }
            tys.insert(a.name.clone(), ty);
        }
        // Returns.
        let mut raw_rets = Vec::new();
        let mut var_rets = Vec::new();
        for r in &f.returns {
            match rust_ty(&r.ty, &k) {
                Ok(RustTy::Tensor) => {
                    raw_rets.push(quote!(Self));
                    var_rets.push(quote!(__ag::Variable<T>));
                }
                Ok(RustTy::TensorList) => {
                    raw_rets.push(quote!(__ag::Vec<Self>));
                    var_rets.push(quote!(__ag::Vec<__ag::Variable<T>>));
                }
                Ok(RustTy::Value(v)) if v.to_owned == types::Conversion::Copy => {
                    let t = &v.owned;
                    raw_rets.push(quote!(#t));
                    var_rets.push(quote!(#t));
                }
                _ => {
                    self.cx.error(
                        &nf.loc,
                        Some(&entry),
                        format!("return type `{}` has no Rust mapping", r.ty),
                    );
                    return None;
                }
            }
        }
        let tuple = |v: &[TokenStream]| match v.len() {
            0 => quote!(()),
            1 => v[0].clone(),
            _ => quote!((#(#v),*)),
        };
        let doc = format!("`{entry}`");
        let writes_returns = matches!(kind, SchemaKind::Inplace | SchemaKind::Out);
        let backend_ret = if writes_returns {
            quote!(())
        } else {
            tuple(&raw_rets)
        };
        let default_body = self.default_backend_body(fa);
        let backend = match default_body {
            Some(body) => quote!(#[doc = #doc] fn #name(#(#bparams),*) -> #backend_ret { #body }),
            None => quote!(#[doc = #doc] fn #name(#(#bparams),*) -> #backend_ret;),
        };
        let (wrapper_ret, body) = match kind {
            SchemaKind::Inplace => self.inplace_body(fa, &prep, &call_args, &tys),
            SchemaKind::Out | SchemaKind::Scratch => self.out_body(fa, &prep, &call_args),
            _ => {
                // `x.data()` clones the raw tensor (a refcount and the shape); the last
                // read-only tensor is borrowed for the call instead (`&&T` coerces to `&T`).
                let mut prep = prep;
                let with = borrowed.map(|(i, n, d)| {
                    prep.remove(i);
                    (n, d)
                });
                self.functional_body(fa, &prep, &call_args, &var_rets, &tys, with)
            }
        };
        let wdoc = format!("Differentiable `{entry}`.");
        let wrapper = quote! {
            #[doc = #wdoc]
            #[allow(clippy::too_many_arguments, clippy::let_and_return, clippy::needless_borrow, unused_mut, non_snake_case)]
            pub fn #name<T: Backend>(#(#wparams),*) -> #wrapper_ret {
                #body
            }
        };
        // Method form when the first argument is `self: Tensor`, unless the name would make
        // calls ambiguous with a prelude trait's method (`x.clone()`).
        let method = match f.arguments.flat_positional().next() {
            Some(first)
                if first.name == "self"
                    && first.ty.is_tensor()
                    && f.arguments.pre_self_positional.is_empty()
                    && !PRELUDE_METHODS.contains(&self.names[fa.func].as_str()) =>
            {
                let rest: Vec<&TokenStream> = wparams.iter().skip(1).collect();
                let rest_names: Vec<Ident> = f
                    .arguments
                    .flat_all()
                    .skip(1)
                    .map(|a| ident(&a.name))
                    .collect();
                Some(
                    quote!(#[doc = #wdoc] #[allow(clippy::too_many_arguments)] fn #name(&self, #(#rest),*) -> #wrapper_ret {
                        #name::<T>(__ag::Borrow::borrow(self), #(#rest_names),*)
                    }),
                )
            }
            _ => None,
        };
        Some((backend, wrapper, method))
    }

    /// The functional variant with the same signature, for default in-place / out= bodies.
    fn default_backend_body(&self, fa: &FunctionAnalysis) -> Option<TokenStream> {
        let f = &self.a.functions[fa.func].func;
        let kind = f.kind();
        if !matches!(kind, SchemaKind::Inplace | SchemaKind::Out) {
            return None;
        }
        let fi = *self
            .functional_by_signature
            .get(&f.signature_key(true, false))?;
        let func = &self.a.functions[fi];
        let fname = format_ident!("{}", self.names[fi]);
        let args: Vec<TokenStream> = func
            .func
            .arguments
            .flat_non_out()
            .map(|a| {
                let n = ident(&a.name);
                if kind == SchemaKind::Inplace && a.name == "self" {
                    quote!(&*#n)
                } else {
                    quote!(#n)
                }
            })
            .collect();
        if kind == SchemaKind::Inplace {
            return Some(quote!(*self_ = <Self as Backend>::#fname(#(#args),*);));
        }
        let outs: Vec<Ident> = f.arguments.out.iter().map(|a| ident(&a.name)).collect();
        if outs.len() == 1 {
            let o = &outs[0];
            Some(quote!(*#o = <Self as Backend>::#fname(#(#args),*);))
        } else {
            let tmp: Vec<Ident> = (0..outs.len()).map(|i| format_ident!("__r{}", i)).collect();
            Some(
                quote!(let (#(#tmp),*) = <Self as Backend>::#fname(#(#args),*); #(*#outs = #tmp;)*),
            )
        }
    }

    /// Edges: one per differentiable input, flattened for lists.
    fn edges_and_offsets(&self, inputs: &[DiffInput<'_>]) -> (TokenStream, Option<TokenStream>) {
        if !Self::has_lists(inputs) {
            let es = inputs.iter().map(|i| {
                let n = ident(&i.arg.name);
                match i.ty {
                    RustTy::OptTensor => quote!(#n),
                    _ => quote!(__ag::Some(#n)),
                }
            });
            return (quote!([#(#es),*]), None);
        }
        let pushes = inputs.iter().map(|i| {
            let n = ident(&i.arg.name);
            match i.ty {
                RustTy::Tensor => quote!(__edges.push(__ag::Some(#n)); __offsets.push(__edges.len());),
                RustTy::OptTensor => quote!(__edges.push(#n); __offsets.push(__edges.len());),
                RustTy::TensorList => quote!(__edges.extend(#n.iter().map(__ag::Some)); __offsets.push(__edges.len());),
                _ => quote!(__edges.extend(#n.iter().map(|v| v.as_ref())); __offsets.push(__edges.len());),
            }
        });
        (
            quote!({
                let mut __edges: __ag::Vec<__ag::Option<&__ag::Variable<T>>> = __ag::Vec::new();
                #(#pushes)*
                __edges
            }),
            Some(quote!(__offsets)),
        )
    }

    fn needs_exprs(inputs: &[DiffInput<'_>]) -> Vec<TokenStream> {
        inputs
            .iter()
            .map(|i| {
                let n = ident(&i.arg.name);
                match i.ty {
                    RustTy::Tensor => quote!(#n.requires_grad()),
                    RustTy::OptTensor => quote!(#n.is_some_and(|v| v.requires_grad())),
                    RustTy::TensorList => quote!(#n.iter().any(|v| v.requires_grad())),
                    _ => quote!(#n.iter().any(|v| v.as_ref().is_some_and(|v| v.requires_grad()))),
                }
            })
            .collect()
    }

    /// The node's initialiser: each saved input is captured only when an input whose formula
    /// uses it needs a gradient.
    fn node_init(
        &mut self,
        info: &'a DifferentiabilityInfo,
        inputs: &[DiffInput<'_>],
        inplace_self: bool,
    ) -> (TokenStream, Vec<SavedField>) {
        let k = self.krate.clone();
        let node = format_ident!("{}", info.op.clone().unwrap_or_default());
        let fields = self.saved_fields(info);
        let mut inits = Vec::new();
        for fld in &fields {
            let n = ident(&fld.name);
            // Which inputs' formulas use this attribute?
            let users: Vec<usize> = info
                .derivatives
                .iter()
                .filter(|d| {
                    d.saved_inputs
                        .iter()
                        .chain(d.saved_outputs.iter())
                        .any(|s| s.name == fld.name)
                })
                .flat_map(|d| {
                    d.var_names
                        .iter()
                        .filter_map(|v| inputs.iter().position(|i| &i.arg.name == v))
                })
                .collect();
            let cond = if users.is_empty() {
                quote!(true)
            } else {
                let c = users.iter().map(|u| quote!(__needs[#u]));
                quote!(#(#c)||*)
            };
            let value = match &fld.kind {
                FieldKind::Output(..) => quote!(__ag::Default::default()),
                FieldKind::Property(p) => {
                    let var = info
                        .all_saved_inputs
                        .iter()
                        .find(|s| s.name == fld.name)
                        .map(|s| s.var.clone())
                        .unwrap_or_default();
                    let v = ident(&var);
                    let expr = info
                        .all_saved_inputs
                        .iter()
                        .find(|s| s.name == fld.name)
                        .map(|s| s.expr.clone())
                        .unwrap_or_default();
                    match p.as_str() {
                        "sym_sizes" | "sizes" | "shape" => {
                            quote!(if #cond { #v.shape() } else { __ag::Vec::new() })
                        }
                        "numel" | "sym_numel" => quote!(#v.shape().iter().product::<usize>()),
                        "dim" => quote!(#v.shape().len()),
                        "scalar_type" | "dtype" => {
                            quote!(#v.with_data(|t| __ag::Tensor::dtype(t)))
                        }
                        _ => {
                            // `x.size(d)`: the argument between the parentheses.
                            let arg = expr
                                .split_once('(')
                                .and_then(|(_, r)| r.rsplit_once(')'))
                                .map(|(a, _)| a.trim().to_string())
                                .unwrap_or_default();
                            let arg: TokenStream = arg
                                .replace("self", "self_")
                                .parse()
                                .unwrap_or_else(|_| quote!(0));
                            quote!(__ag::size_at(&#v.shape(), (#arg) as i64))
                        }
                    }
                }
                FieldKind::Input(t) => match rust_ty(t, &k) {
                    Ok(RustTy::Tensor) => {
                        if inplace_self && fld.name == "self" {
                            quote!(if #cond { __ag::SavedVariable::new(&__ag::clone_var(self_), false) } else { __ag::Default::default() })
                        } else {
                            quote!(__ag::save_if(#cond, #n))
                        }
                    }
                    Ok(RustTy::OptTensor) => {
                        quote!(__ag::save_opt_if(#cond, #n))
                    }
                    Ok(RustTy::TensorList) => {
                        quote!(if #cond { #n.iter().map(|v| __ag::SavedVariable::new(v, false)).collect() } else { __ag::Vec::new() })
                    }
                    Ok(RustTy::OptTensorList) => {
                        quote!(if #cond { #n.iter().map(|v| __ag::SavedVariable::new_opt(v.as_ref(), false)).collect() } else { __ag::Vec::new() })
                    }
                    Ok(RustTy::Value(v)) => v.owned_expr(&quote!(#n)),
                    Err(_) => quote!(__ag::Default::default()),
                },
            };
            inits.push(quote!(#n: #value,));
        }
        let offsets = Self::has_lists(inputs).then(|| quote!(__offsets,));
        (
            quote!(#node::<T> { #(#inits)* __needs, #offsets __marker: __ag::PhantomData }),
            fields,
        )
    }

    fn save_outputs(&self, fields: &[SavedField], outs: &[TokenStream]) -> TokenStream {
        let saves: Vec<TokenStream> = fields
            .iter()
            .filter_map(|f| match f.kind {
                FieldKind::Output(i, list) => {
                    let n = ident(&f.name);
                    let o = outs.get(i).cloned().unwrap_or_else(|| quote!(__o0));
                    Some(if list {
                        quote!(__n.#n = #o.iter().map(|v| __ag::SavedVariable::new(v, true)).collect();)
                    } else {
                        quote!(__n.#n = __ag::SavedVariable::new(&#o, true);)
                    })
                }
                _ => None,
            })
            .collect();
        if saves.is_empty() {
            quote!()
        } else {
            quote!(__handle.with(|__n| { #(#saves)* });)
        }
    }

    fn functional_body(
        &mut self,
        fa: &'a FunctionAnalysis,
        prep: &[TokenStream],
        call: &[TokenStream],
        var_rets: &[TokenStream],
        tys: &BTreeMap<String, RustTy>,
        with: Option<(Ident, Ident)>,
    ) -> (TokenStream, TokenStream) {
        let k = self.krate.clone();
        let nf = &self.a.functions[fa.func];
        let f = &nf.func;
        let name = format_ident!("{}", self.names[fa.func]);
        let ret_ty = match var_rets.len() {
            0 => quote!(()),
            1 => var_rets[0].clone(),
            _ => quote!((#(#var_rets),*)),
        };
        let n = f.returns.len();
        let raw: Vec<Ident> = (0..n).map(|i| format_ident!("__r{}", i)).collect();
        let outs: Vec<Ident> = (0..n).map(|i| format_ident!("__o{}", i)).collect();
        let call = match &with {
            Some((v, d)) => quote!(#v.with_data(|#d| <T as Backend>::#name(#(#call),*))),
            None => quote!(<T as Backend>::#name(#(#call),*)),
        };
        let bind_raw = match n {
            0 => quote!(let () = #call;),
            1 => {
                let r = &raw[0];
                quote!(let #r = #call;)
            }
            _ => quote!(let (#(#raw),*) = #call;),
        };
        let ret_names = crate::analysis::cpp::return_names(f);
        let diff_outs: Vec<String> = fa.differentiable_outputs.clone().unwrap_or_default();
        let is_tensor = |i: usize| {
            f.returns[i].ty.is_tensor()
                || matches!(rust_ty(&f.returns[i].ty, &k), Ok(RustTy::TensorList))
        };
        let plain: Vec<TokenStream> = (0..n)
            .map(|i| {
                let r = &raw[i];
                match rust_ty(&f.returns[i].ty, &k) {
                    Ok(RustTy::Tensor) => quote!(__ag::Variable::from_data(#r)),
                    Ok(RustTy::TensorList) => quote!(#r.into_iter().map(__ag::Variable::from_data).collect::<__ag::Vec<_>>()),
                    _ => quote!(#r),
                }
            })
            .collect();
        let tuple = |v: &[TokenStream]| match v.len() {
            0 => quote!(()),
            1 => v[0].clone(),
            _ => quote!((#(#v),*)),
        };
        let no_record = tuple(&plain);
        let _ = tys;
        let info: &'a DifferentiabilityInfo = match fa.main_info() {
            Some(i) if i.op.is_some() => i,
            _ => {
                return (ret_ty, quote! { #(#prep)* #bind_raw #no_record });
            }
        };
        let inputs = self.diff_inputs(info);
        let needs = Self::needs_exprs(&inputs);
        let (edges, offsets) = self.edges_and_offsets(&inputs);
        let (init, fields) = self.node_init(info, &inputs, false);
        // Differentiable outputs go through `record`; the others are plain.
        let diff_idx: Vec<usize> = (0..n)
            .filter(|i| is_tensor(*i) && diff_outs.contains(&ret_names[*i]))
            .collect();
        let list_out = diff_idx.len() == 1
            && matches!(
                rust_ty(&f.returns[diff_idx[0]].ty, &k),
                Ok(RustTy::TensorList)
            );
        let record = if list_out {
            let r = &raw[diff_idx[0]];
            let o = &outs[diff_idx[0]];
            quote!(let (#o, __handle) = __ag::record_vec(__node, &__edges, #r);)
        } else if diff_idx.iter().any(|i| !f.returns[*i].ty.is_tensor()) {
            self.cx.error(
                &nf.loc,
                Some(&f.to_string()),
                "a `Tensor[]` output next to other outputs is not supported",
            );
            quote!()
        } else {
            let rs = diff_idx.iter().map(|i| &raw[*i]);
            let os = diff_idx.iter().map(|i| &outs[*i]);
            quote!(let ([#(#os),*], __handle) = __ag::record(__node, &__edges, [#(#rs),*]);)
        };
        let others = (0..n).filter(|i| !diff_idx.contains(i)).map(|i| {
            let o = &outs[i];
            let p = &plain[i];
            quote!(let #o = #p;)
        });
        let out_refs: Vec<TokenStream> = outs.iter().map(|o| quote!(#o)).collect();
        let save = self.save_outputs(&fields, &out_refs);
        let result = tuple(&out_refs);
        let offsets_decl =
            offsets.map(|_| quote!(let mut __offsets: __ag::Vec<usize> = __ag::Vec::from([0]);));
        let edges_stmt = if Self::has_lists(&inputs) {
            let e = edges;
            quote!(let __edges = #e;)
        } else {
            quote!(let __edges = #edges;)
        };
        let body = quote! {
            #(#prep)*
            #bind_raw
            let __needs = [#(#needs),*];
            if !__ag::should_record_any(&__needs) {
                return #no_record;
            }
            #offsets_decl
            #edges_stmt
            let __node = #init;
            #record
            #(#others)*
            #save
            #result
        };
        (ret_ty, body)
    }

    fn inplace_body(
        &mut self,
        fa: &'a FunctionAnalysis,
        prep: &[TokenStream],
        call: &[TokenStream],
        _tys: &BTreeMap<String, RustTy>,
    ) -> (TokenStream, TokenStream) {
        let name = format_ident!("{}", self.names[fa.func]);
        let ret_ty = quote!(__ag::Result<__ag::Variable<T>, __ag::AutogradError>);
        let plain = quote! {
            self_.check_inplace()?;
            #(#prep)*
            <T as Backend>::#name(#(#call),*);
            self_.set_data(__d_self_);
            self_.bump_version();
            Ok(self_.clone())
        };
        let info: &'a DifferentiabilityInfo = match fa.main_info() {
            Some(i) if i.op.is_some() => i,
            _ => return (ret_ty, plain),
        };
        let inputs = self.diff_inputs(info);
        let needs = Self::needs_exprs(&inputs);
        let (edges, offsets) = self.edges_and_offsets(&inputs);
        let (init, fields) = self.node_init(info, &inputs, true);
        let save = self.save_outputs(&fields, &[quote!(self_)]);
        let offsets_decl =
            offsets.map(|_| quote!(let mut __offsets: __ag::Vec<usize> = __ag::Vec::from([0]);));
        let body = quote! {
            let __needs = [#(#needs),*];
            if !__ag::should_record_any(&__needs) {
                #plain
            } else {
                self_.check_inplace()?;
                #(#prep)*
                #offsets_decl
                let __node = #init;
                <T as Backend>::#name(#(#call),*);
                let __edges = #edges;
                let __handle = __ag::record_inplace(__node, &__edges, self_, __ag::Some(__d_self_))?;
                #save
                Ok(self_.clone())
            }
        };
        (ret_ty, body)
    }

    fn out_body(
        &mut self,
        fa: &'a FunctionAnalysis,
        prep: &[TokenStream],
        call: &[TokenStream],
    ) -> (TokenStream, TokenStream) {
        let k = self.krate.clone();
        let f = &self.a.functions[fa.func].func;
        let name = format_ident!("{}", self.names[fa.func]);
        let opname = f.name.name.to_string();
        let tensors: Vec<TokenStream> = f
            .arguments
            .flat_all()
            .filter_map(|a| {
                let n = ident(&a.name);
                match rust_ty(&a.ty, &k) {
                    Ok(RustTy::Tensor) => Some(quote!(__args.push(#n);)),
                    Ok(RustTy::OptTensor) => Some(quote!(__args.extend(#n);)),
                    Ok(RustTy::TensorList) => Some(quote!(__args.extend(#n.iter());)),
                    Ok(RustTy::OptTensorList) => Some(quote!(__args.extend(#n.iter().flatten());)),
                    _ => None,
                }
            })
            .collect();
        let outs: Vec<Ident> = f.arguments.out.iter().map(|a| ident(&a.name)).collect();
        let ds: Vec<Ident> = f
            .arguments
            .out
            .iter()
            .map(|a| format_ident!("__d_{}", rust_name(&a.name)))
            .collect();
        let ret_vals: Vec<TokenStream> = outs.iter().map(|o| quote!(#o.clone())).collect();
        let (ret_ty, ret) = match outs.len() {
            1 => (quote!(__ag::Variable<T>), ret_vals[0].clone()),
            n => {
                let ts = (0..n).map(|_| quote!(__ag::Variable<T>));
                (quote!((#(#ts),*)), quote!((#(#ret_vals),*)))
            }
        };
        let body = quote! {
            {
                let mut __args: __ag::Vec<&__ag::Variable<T>> = __ag::Vec::new();
                #(#tensors)*
                __ag::check_out(#opname, &__args)?;
            }
            #(#prep)*
            <T as Backend>::#name(#(#call),*);
            #( #outs.set_data(#ds); #outs.bump_version(); )*
            Ok(#ret)
        };
        (quote!(__ag::Result<#ret_ty, __ag::AutogradError>), body)
    }
}

/// Backend method, wrapper, and `VariableOps` method (when it is a method).
type FunctionCode = (TokenStream, TokenStream, Option<TokenStream>);

#[derive(Debug, Clone)]
enum FieldKind {
    Input(crate::model::schema::Type),
    Output(usize, bool),
    Property(String),
}

#[derive(Debug, Clone)]
enum BindKind {
    Copy,
    Slice,
    Value(ValueTy),
}

#[derive(Debug, Clone)]
struct SavedField {
    name: String,
    ty: TokenStream,
    kind: FieldKind,
    bind: BindKind,
}

/// The arguments of `autograd_ops!(...)`.
pub struct MacroArgs {
    /// The derivatives file, or `None` with inline `yaml = "..."`.
    pub derivatives: Option<syn::LitStr>,
    /// `yaml = "..."`: the derivatives YAML inline.
    pub yaml: Option<syn::LitStr>,
    /// `native = "..."`.
    pub native: Option<syn::LitStr>,
    /// `helpers = path`.
    pub helpers: Option<syn::Path>,
    /// `crate = path`.
    pub krate: Option<syn::Path>,
    /// `types = { Scalar = f32, ... }`.
    pub types: Vec<(String, syn::Type)>,
}

impl syn::parse::Parse for MacroArgs {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let mut args = MacroArgs {
            derivatives: None,
            yaml: None,
            native: None,
            helpers: None,
            krate: None,
            types: Vec::new(),
        };
        if input.peek(syn::LitStr) {
            args.derivatives = Some(input.parse()?);
        }
        let mut first = args.derivatives.is_none();
        while !input.is_empty() {
            if !first {
                input.parse::<syn::Token![,]>()?;
            }
            first = false;
            if input.is_empty() {
                break;
            }
            let key: syn::Ident = if input.peek(syn::Token![crate]) {
                input.parse::<syn::Token![crate]>()?;
                syn::Ident::new("crate", Span::call_site())
            } else {
                input.parse()?
            };
            input.parse::<syn::Token![=]>()?;
            match key.to_string().as_str() {
                "native" => args.native = Some(input.parse()?),
                "yaml" => args.yaml = Some(input.parse()?),
                "helpers" => args.helpers = Some(input.parse()?),
                "crate" => args.krate = Some(input.parse()?),
                "types" => {
                    let content;
                    syn::braced!(content in input);
                    while !content.is_empty() {
                        let name: syn::Ident = content.parse()?;
                        content.parse::<syn::Token![=]>()?;
                        let ty: syn::Type = content.parse()?;
                        args.types.push((name.to_string(), ty));
                        if !content.is_empty() {
                            content.parse::<syn::Token![,]>()?;
                        }
                    }
                }
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "unknown argument `{other}`: expected `native = \"...\"`, `yaml = \"...\"`, `helpers = path`, `crate = path` or `types = {{ Scalar = f32 }}`"
                        ),
                    ));
                }
            }
        }
        if args.derivatives.is_some() == args.yaml.is_some() {
            return Err(input.error(
                "expected the derivatives.yaml path as a string, or `yaml = \"...\"` (not both)",
            ));
        }
        Ok(args)
    }
}

/// The whole macro: parse the arguments, read the files relative to `CARGO_MANIFEST_DIR`,
/// generate; errors become `compile_error!`s.
pub fn expand_macro(input: TokenStream) -> TokenStream {
    let args: MacroArgs = match syn::parse2(input) {
        Ok(a) => a,
        Err(e) => return e.to_compile_error(),
    };
    let base = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut config = Config::new(
        args.derivatives
            .as_ref()
            .map_or_else(|| "<inline yaml>".to_string(), |d| d.value()),
    );
    config.derivatives_text = args.yaml.map(|y| y.value());
    config.base_dir = base;
    config.native = args.native.map(|n| PathBuf::from(n.value()));
    config.helpers = args.helpers;
    if let Some(k) = args.krate {
        config.krate = k;
    }
    config.type_overrides = args.types;
    // Formulas are tokenized with proc-macro2's own lexer, whose spans know byte offsets
    // into the formula; the code is then built with the compiler's tokens directly (no
    // string round trip).
    proc_macro2::fallback::force();
    let mut cx = Ctxt::new();
    let analysis = analyze_config_into(&config, &mut cx);
    proc_macro2::fallback::unforce();
    let result = analysis.and_then(|a| {
        let mut emitter = Emitter::new(&config, &a);
        emitter.cx = cx;
        emitter.emit()
    });
    match result {
        Ok(ts) => ts,
        Err(d) => compile_errors(&d),
    }
}

#[cfg(test)]
mod tests;
