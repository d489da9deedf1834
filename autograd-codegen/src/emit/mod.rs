//! Emission: the analysis as Rust code.
//!
//! For a `derivatives.yaml` with Rust formulas (and optionally a `native_functions.yaml`),
//! [`generate`] emits, into the module that calls `autograd_ops!`:
//!
//! * `pub trait Backend`: one associated function per native function, implemented by the
//!   tensor library for its raw tensor type (schema types mapped as in [`types`]); in-place
//!   and out= variants get default bodies calling their functional variant. With
//!   `fallible = true`, every kernel returns `Result<_, Self::Error>` and every wrapper
//!   returns `Result<_, AutogradError>`;
//! * one backward-node struct per differentiable function (`MulBackward0<T>`), with typed
//!   saved fields, implementing the runtime's `Node`;
//! * one differentiable wrapper per function (`mul_tensor`, `mul_tensor_`, `mul_out`) on the
//!   runtime's `Variable<T>`, and the same as methods through `pub trait VariableOps`.
//!
//! The data flow: [`crate::api::analyze_into`] (the analysis every entry point shares) ->
//! `plan` (one plan per node and per function, with every check) -> `backend`, `node`,
//! `wrapper` (tokens from plans). Names: see [`names`].

pub mod build;
pub mod types;

mod args;
mod backend;
mod forward;
pub mod names;
mod node;
mod plan;
mod raw;
mod tokens;
mod view;
mod wrapper;

pub use args::MacroArgs;
pub use names::{op_fn_name, rust_name};

use crate::analysis::{Analysis, AnalysisOptions, PropertyRules};
use crate::api::{Sources, analyze_into};
use crate::diagnostics::{Ctxt, Diagnostic, Diagnostics, Location};
use crate::model::schema::{BaseTy, SchemaKind};
use crate::translate::CppFormulas;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use types::TypeMap;

/// What to generate from, and how: the one configuration of the macro, the CLI's `expand`
/// and the build-script [`build::Builder`].
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
    /// The same helpers over raw tensors (`raw_helpers = crate::helpers::raw`): backward
    /// formulas that call helpers get a raw form (`Node::apply_raw`, used without
    /// `create_graph`) only when this is given; every helper such a formula calls must then
    /// exist there with the same name.
    pub raw_helpers: Option<syn::Path>,
    /// Path of the facade crate (`::autograd`).
    pub krate: syn::Path,
    /// Emit `include_str!` of the inputs, so that editing them rebuilds the crate.
    pub track_files: bool,
    /// The derivatives YAML itself, instead of reading `derivatives` (inline YAML in the macro).
    pub derivatives_text: Option<String>,
    /// The native_functions.yaml text itself, instead of reading `native` (which then only
    /// names it in messages).
    pub native_text: Option<String>,
    /// Rust types for value schema types (`("Scalar", f32)`), instead of the defaults.
    pub type_overrides: Vec<(String, syn::Type)>,
    /// Kernels return `Result<_, Self::Error>`; wrappers return `Result`.
    pub fallible: bool,
    /// With `fallible`: `Backend::Error` must convert from this type (`error_from =
    /// crate::Error`), so that default kernels (decompositions) can report their checks.
    pub error_from: Option<syn::Path>,
    /// The formulas are PyTorch's C++ (`formulas = "cpp"`), lowered to Rust by
    /// [`crate::translate`] before the analysis.
    pub cpp: bool,
    /// With `cpp`: the C++ header declaring the helpers the formulas call (`header =
    /// "functions.h"`, PyTorch's `FunctionsManual.h` or a part of it).
    pub header: Option<PathBuf>,
    /// The folder of the source file that invokes the macro: a relative path not found
    /// under `base_dir` is looked up there (so a test compiled elsewhere, as trybuild's
    /// are, can name the files beside it).
    pub caller_dir: Option<PathBuf>,
}

impl Config {
    /// A config for `derivatives` with defaults.
    pub fn new(derivatives: impl Into<PathBuf>) -> Self {
        Config {
            derivatives: derivatives.into(),
            native: None,
            base_dir: PathBuf::from("."),
            helpers: None,
            raw_helpers: None,
            krate: syn::parse_quote!(::autograd),
            track_files: true,
            derivatives_text: None,
            native_text: None,
            type_overrides: Vec::new(),
            fallible: false,
            error_from: None,
            cpp: false,
            header: None,
            caller_dir: None,
        }
    }

    /// A path as given: absolute, or relative to [`Config::base_dir`]; when no such file
    /// exists there, relative to [`Config::caller_dir`] if it exists there.
    fn resolve(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            return p.to_path_buf();
        }
        let at_base = self.base_dir.join(p);
        match &self.caller_dir {
            Some(dir) if !at_base.exists() && dir.join(p).exists() => dir.join(p),
            _ => at_base,
        }
    }

    /// The file at `p` (see [`Config::resolve`]), named `p` in messages.
    fn read(&self, p: &Path) -> Result<(String, String), Diagnostics> {
        std::fs::read_to_string(self.resolve(p))
            .map(|t| (p.display().to_string(), t))
            .map_err(|e| crate::api::unreadable(p, &e))
    }

    /// The input files, read (paths relative to [`Config::base_dir`]).
    pub fn sources(&self) -> Result<Sources, Diagnostics> {
        let derivatives = match &self.derivatives_text {
            Some(t) => Ok((self.derivatives.display().to_string(), t.clone())),
            None => self.read(&self.derivatives),
        };
        let native = self.native.as_ref().map(|n| match &self.native_text {
            Some(t) => Ok((n.display().to_string(), t.clone())),
            None => self.read(n),
        });
        let header = self.header.as_ref().map(|h| self.read(h));
        match (derivatives, native.transpose(), header.transpose()) {
            (Ok(derivatives), Ok(native), Ok(header)) => Ok(Sources {
                native,
                derivatives,
                tags: None,
                cpp: self.cpp.then_some(CppFormulas {
                    header,
                    fallible: self.fallible,
                }),
            }),
            (d, n, h) => Err(Diagnostics(
                d.err()
                    .into_iter()
                    .chain(n.err())
                    .chain(h.err())
                    .flat_map(|e| e.0)
                    .collect(),
            )),
        }
    }
}

/// The analysis options for Rust formulas: torchgen's property rules that have a Rust
/// capture, plus `sizes()`, `shape()`, `dtype()`, `size(d)`.
pub fn rust_analysis_options() -> AnalysisOptions {
    let mut rules = PropertyRules::rust();
    rules
        .rules
        .retain(|r| plan::Property::has_rust_capture(&r.kind));
    AnalysisOptions { rules }
}

/// Read and analyse the inputs of `config` with Rust rules (what the macro generates from).
pub fn analyze_config(config: &Config) -> Result<Analysis, Diagnostics> {
    let src = config.sources()?;
    let mut cx = Ctxt::new();
    let a = analyze_into(&src, &rust_analysis_options(), &mut cx);
    cx.check(a)
}

/// How the emitters write what depends on the configuration.
pub(crate) struct Settings {
    helpers: Option<syn::Path>,
    raw_helpers: Option<syn::Path>,
    fallible: bool,
    /// Write each formula as a placeholder and collect `(formula, location)` for the
    /// generated file (see [`generate_pretty`]); else the formula's tokens in place.
    placeholders: Option<RefCell<Vec<(String, String)>>>,
}

impl Settings {
    fn new(config: &Config, placeholders: bool) -> Self {
        Settings {
            helpers: config.helpers.clone(),
            raw_helpers: config.raw_helpers.clone(),
            fallible: config.fallible,
            placeholders: placeholders.then(|| RefCell::new(Vec::new())),
        }
    }

    /// A kernel's return type.
    fn kernel_result(&self, ret: TokenStream) -> TokenStream {
        match self.fallible {
            true => quote!(__ag::Result<#ret, Self::Error>),
            false => ret,
        }
    }

    /// A kernel's value inside the trait (its own error type).
    fn kernel_value(&self, call: TokenStream) -> TokenStream {
        match self.fallible {
            true => quote!(#call?),
            false => call,
        }
    }

    /// A kernel's value inside a wrapper (its error becomes an `AutogradError`).
    fn kernel_call(&self, call: TokenStream) -> TokenStream {
        match self.fallible {
            true => quote!(#call.map_err(__ag::AutogradError::backend)?),
            false => call,
        }
    }

    /// A functional wrapper's return type.
    fn wrapper_result(&self, ty: TokenStream) -> TokenStream {
        match self.fallible {
            true => quote!(__ag::Result<#ty, __ag::AutogradError>),
            false => ty,
        }
    }

    /// A wrapper's value as a `Result` (fallible wrappers return one already).
    fn as_result(&self, v: TokenStream) -> TokenStream {
        match self.fallible {
            true => v,
            false => quote!(__ag::Ok(#v)),
        }
    }

    /// A functional wrapper's returned value.
    fn ok(&self, v: TokenStream) -> TokenStream {
        match self.fallible {
            true => quote!(__ag::Ok(#v)),
            false => v,
        }
    }

    /// A formula as an expression.
    fn formula_expr(&self, f: &plan::FormulaPlan, form: node::Form) -> TokenStream {
        match form {
            node::Form::Var => self.placeholder(&f.expr, &f.line, &f.location),
            node::Form::Raw => self.placeholder(&f.raw_expr, &f.raw_line, &f.location),
        }
    }

    /// `expr` as a block, or (for the generated file) a placeholder that becomes the formula
    /// on one line (`line`) with its location; the caller binds it with `let __r = ...;`.
    fn placeholder(&self, expr: &TokenStream, line: &str, location: &str) -> TokenStream {
        let Some(cell) = &self.placeholders else {
            return quote!({ #expr });
        };
        let mut v = cell.borrow_mut();
        let id = format_ident!("__ag_formula_{}", v.len());
        v.push((line.to_string(), location.to_string()));
        quote!(#id)
    }
}

/// Generate the code, or every error.
pub fn generate(config: &Config) -> Result<TokenStream, Diagnostics> {
    emit(config, &Settings::new(config, false))
}

/// The whole pipeline: one analysis, one plan, tokens.
fn emit(config: &Config, s: &Settings) -> Result<TokenStream, Diagnostics> {
    let src = config.sources()?;
    let mut cx = Ctxt::new();
    let a = analyze_into(&src, &rust_analysis_options(), &mut cx);
    let map = type_map(config, &mut cx);
    let mut p = plan::plan(&a, &map, &mut cx);
    plan::mark_raw(&mut p, s.raw_helpers.is_some());
    check_composites(&p, s, &mut cx);
    let nodes = p.nodes.iter().map(|n| node::node(n, s));
    let mut methods = Vec::new();
    let mut wrappers = Vec::new();
    for f in &p.functions {
        let (w, m) = wrapper::wrapper(f, f.node.map(|i| &p.nodes[i]), s);
        wrappers.push(w);
        methods.extend(m);
    }
    let backend = p
        .functions
        .iter()
        .filter(|f| f.composite.is_none())
        .map(|f| backend::backend_method(f, s));
    let from = config
        .error_from
        .as_ref()
        .map(|p| quote!(+ ::std::convert::From<#p>));
    let error_ty = s.fallible.then(|| {
        quote!(
            /// The kernels' error; wrappers return it inside `AutogradError::Backend`. A
            /// kernel the backend does not write returns `KernelNotImplemented` in it.
            type Error: ::std::error::Error + ::std::marker::Send + ::std::marker::Sync + 'static
                + ::std::convert::From<__ag::KernelNotImplemented> #from;

            /// The backend's name in "Could not run 'aten::op' with arguments from the
            /// 'NAME' backend" (a kernel the backend does not write); its type's name by default.
            fn backend_name() -> &'static str {
                ::std::any::type_name::<Self>()
            }
        )
    });
    let raw_ops = raw::raw_module(&p, s);
    let track = tracking(config);
    let facade = &config.krate;
    let out = quote! {
        #track

        #[allow(unused_imports)]
        use #facade::support::__prelude as __ag;

        /// The raw operations of the tensor library, one per native function: implement it
        /// for the raw tensor type (`autograd_ops!` generated this trait).
        #[allow(clippy::all)]
        pub trait Backend: __ag::Tensor {
            #error_ty
            #(#backend)*
        }

        #(#nodes)*

        #(#wrappers)*

        /// The differentiable operations as methods on `Variable` (generated).
        #[allow(clippy::all)]
        pub trait VariableOps<T: Backend>: __ag::Borrow<__ag::Variable<T>> {
            #(#methods)*
        }

        impl<T: Backend> VariableOps<T> for __ag::Variable<T> {}

        #raw_ops
    };
    cx.check(out)
}

/// A composite function's kernel lives in the helpers module, and only functional
/// composites are supported (an in-place or out= one would need a kernel to write into).
/// The same for a decomposition (`CompositeExplicitAutograd`), which also cannot be a
/// `CompositeImplicitAutograd` function (that has no kernel to give a default).
fn check_composites(p: &plan::Plan<'_>, s: &Settings, cx: &mut Ctxt) {
    for f in p.functions.iter().filter(|f| f.decomposition.is_some()) {
        let problem = if f.kind != SchemaKind::Functional {
            "only functional functions can name a CompositeExplicitAutograd kernel here (an \
             in-place or out= kernel defaults to its functional one)"
        } else if f.nf.composite_kernel.is_some() {
            "`dispatch:` names both a CompositeImplicitAutograd and a CompositeExplicitAutograd \
             kernel; keep one"
        } else if s.helpers.is_none() {
            "a CompositeExplicitAutograd kernel (the backend kernel's default) is a function \
             of the helpers module: set `helpers = path::to::module`"
        } else {
            continue;
        };
        cx.error(&f.nf.loc, Some(&f.nf.schema), problem);
    }
    for f in p.functions.iter().filter(|f| f.composite.is_some()) {
        let problem = if f.kind != SchemaKind::Functional {
            "only functional functions can be CompositeImplicitAutograd here (an in-place or \
             out= one needs a kernel to write into)"
        } else if s.helpers.is_none() {
            "a CompositeImplicitAutograd function's kernel is a function of the helpers \
             module: set `helpers = path::to::module`"
        } else {
            continue;
        };
        cx.error(&f.nf.loc, Some(&f.nf.schema), problem);
    }
}

/// `include_str!` of the input files, so that editing them rebuilds the crate.
fn tracking(config: &Config) -> TokenStream {
    if !config.track_files {
        return quote!();
    }
    let mut files = Vec::new();
    if config.derivatives_text.is_none() {
        files.push(config.resolve(&config.derivatives));
    }
    if config.native_text.is_none() {
        files.extend(config.native.iter().map(|n| config.resolve(n)));
    }
    files.extend(config.header.iter().map(|h| config.resolve(h)));
    let incs = files.iter().map(|f| {
        let s = f.display().to_string();
        quote!(
            const _: &str = include_str!(#s);
        )
    });
    quote!(#(#incs)*)
}

/// The type map, after checking the user's overrides.
fn type_map(config: &Config, cx: &mut Ctxt) -> TypeMap {
    let mut overrides = Vec::new();
    for (name, ty) in &config.type_overrides {
        match BaseTy::from_name(name).filter(|b| types::OVERRIDABLE.contains(b)) {
            Some(b) => overrides.push((b, quote!(#ty))),
            None => {
                let allowed: Vec<&str> = types::OVERRIDABLE.iter().map(|b| b.as_str()).collect();
                let loc = Location {
                    file: Arc::from(config.derivatives.display().to_string()),
                    line: 0,
                    column: 0,
                };
                let msg = format!(
                    "`types`: `{name}` cannot be mapped; the value types that can are {}",
                    allowed.join(", ")
                );
                cx.error(&loc, None, msg);
            }
        }
    }
    // Generated code names everything through one alias, `__ag`.
    TypeMap {
        krate: quote!(__ag),
        overrides,
    }
}

/// Generate and format with prettyplease: what `autograd-gen expand`, build scripts and the
/// macro's generated file contain. Each formula stands on one line with its location in
/// derivatives.yaml beside it, so that rustc's errors inside a formula show
/// `derivatives.yaml:LINE` and the entry.
pub fn generate_pretty(config: &Config) -> Result<String, Diagnostics> {
    let (tokens, formulas) = generate_with_placeholders(config)?;
    let file: syn::File = syn::parse2(tokens).map_err(|e| internal(&e))?;
    let text = prettyplease::unparse(&file);
    Ok(place_formulas(&text, &formulas))
}

/// The code with each formula a placeholder `__ag_formula_N`, and `(formula, location)` of
/// each.
fn generate_with_placeholders(config: &Config) -> Result<Formulas, Diagnostics> {
    let settings = Settings::new(config, true);
    let tokens = emit(config, &settings)?;
    let formulas = settings
        .placeholders
        .map(RefCell::into_inner)
        .unwrap_or_default();
    Ok((tokens, formulas))
}

type Formulas = (TokenStream, Vec<(String, String)>);

/// What the macro's file holds: the code as rustc reads it, not formatted (formatting costs
/// more than the rest of the expansion), but each formula on a line of its own with its
/// location, as in [`generate_pretty`].
fn generate_compact(config: &Config) -> Result<String, Diagnostics> {
    let (tokens, formulas) = generate_with_placeholders(config)?;
    let text = tokens.to_string();
    let mut out = String::with_capacity(text.len() + formulas.len() * 160);
    let mut rest = text.as_str();
    while let Some(at) = rest.find("__ag_formula_") {
        let after = &rest[at + "__ag_formula_".len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let (formula, location) = after[..digits]
            .parse::<usize>()
            .ok()
            .and_then(|i| formulas.get(i))
            .ok_or_else(|| internal(&"formula placeholder without a formula"))?;
        out.push_str(&rest[..at]);
        out.push_str(&format!("\n{{ {formula} }} // {location}\n"));
        rest = &after[digits..];
    }
    out.push_str(rest);
    Ok(out)
}

fn internal(e: &dyn std::fmt::Display) -> Diagnostics {
    Diagnostics(vec![Diagnostic {
        location: Location::default(),
        entry: None,
        message: format!("internal error: generated code does not parse: {e}"),
    }])
}

/// Replace each `let __r = __ag_formula_N;` line with the formula and its location.
fn place_formulas(text: &str, formulas: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len() + formulas.len() * 120);
    for line in text.lines() {
        let t = line.trim_start();
        let id = t
            .strip_prefix("let __r = __ag_formula_")
            .and_then(|r| r.strip_suffix(';'))
            .and_then(|n| n.parse::<usize>().ok());
        match id.and_then(|i| formulas.get(i)) {
            Some((formula, at)) => {
                let indent = &line[..line.len() - t.len()];
                out.push_str(&format!("{indent}let __r = {{ {formula} }}; // {at}\n"));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// Errors as `compile_error!` invocations, one per error.
pub fn compile_errors(d: &Diagnostics) -> TokenStream {
    let errs = d.0.iter().map(|e| {
        let msg = e.to_string();
        quote!(::core::compile_error!(#msg);)
    });
    quote!(#(#errs)*)
}

/// The whole macro: parse the arguments, read the files relative to `CARGO_MANIFEST_DIR`,
/// generate; errors become `compile_error!`s.
///
/// The code is written to a file (named by a hash of its text, under `autograd-ops/` of the
/// calling crate's `OUT_DIR` when it has a build script, else of `own_out_dir`: the macro
/// crate's own `OUT_DIR`, inside the same target directory; never a shared folder) and
/// `include!`d: rustc's errors inside a formula then point at a line of real code that names
/// the formula's `derivatives.yaml:LINE`. Where no file can be written, the tokens are
/// returned directly.
pub fn expand_macro(
    input: TokenStream,
    own_out_dir: Option<&Path>,
    caller_dir: Option<&Path>,
) -> TokenStream {
    let args: MacroArgs = match syn::parse2(input) {
        Ok(a) => a,
        Err(e) => return e.to_compile_error(),
    };
    let mut config = macro_config(args);
    config.caller_dir = caller_dir.map(Path::to_path_buf);
    // Formulas are tokenized with proc-macro2's own lexer (faster, and its spans know byte
    // offsets into the formula).
    proc_macro2::fallback::force();
    let compact = {
        let mut c = config.clone();
        c.track_files = false;
        generate_compact(&c)
    };
    proc_macro2::fallback::unforce();
    let text = match compact {
        Ok(t) => t,
        Err(d) => return compile_errors(&d),
    };
    let track = tracking(&config);
    match write_generated(&text, own_out_dir) {
        Some(path) => {
            let p = path.display().to_string();
            quote!(#track include!(#p);)
        }
        // No file: the tokens themselves (errors in formulas then point at the macro call).
        None => generate(&config).unwrap_or_else(|d| compile_errors(&d)),
    }
}

fn macro_config(args: MacroArgs) -> Config {
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
    config.raw_helpers = args.raw_helpers;
    if let Some(k) = args.krate {
        config.krate = k;
    }
    config.type_overrides = args.types;
    config.fallible = args.fallible;
    config.error_from = args.error_from;
    config.cpp = args.cpp;
    config.header = args.header.map(|h| PathBuf::from(h.value()));
    config
}

/// Write `text` to a file named by its hash (once; concurrent builds write the same bytes
/// through a rename) under the calling crate's `OUT_DIR`, else `fallback`; `None` when there
/// is neither or writing fails.
fn write_generated(text: &str, fallback: Option<&Path>) -> Option<PathBuf> {
    let dir = std::env::var_os("OUT_DIR")
        .map(PathBuf::from)
        .or_else(|| fallback.map(Path::to_path_buf))?
        .join("autograd-ops");
    // FNV-1a: the same name for the same text on every toolchain and machine.
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let pkg = std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| "crate".into());
    let path = dir.join(format!("{pkg}-{hash:016x}.rs"));
    if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
        return Some(path);
    }
    std::fs::create_dir_all(&dir).ok()?;
    let tmp = dir.join(format!(
        ".{}-{:?}.tmp",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&tmp, text).ok()?;
    std::fs::rename(&tmp, &path).ok()?;
    Some(path)
}

#[cfg(test)]
mod tests;
