//! The configuration every entry point shares ([`Config`]: the macro's arguments, the CLI's
//! `expand`, the build script's [`super::build::Builder`]), its inputs read, and the
//! analysis it asks for.

use super::plan;
use super::types::{self, TypeMap};
use crate::analysis::{Analysis, AnalysisOptions, PropertyRules};
use crate::api::{Sources, analyze_into};
use crate::diagnostics::{Ctxt, Diagnostics, Location};
use crate::model::schema::BaseTy;
use crate::translate::CppFormulas;
use proc_macro2::TokenStream;
use quote::quote;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What to generate from, and how: the one configuration of the macro, the CLI's `expand`
/// and the build-script [`super::build::Builder`].
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
    pub(super) fn resolve(&self, p: &Path) -> PathBuf {
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
                    scalar_number: self.type_overrides.iter().any(|(n, _)| n == "Scalar"),
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

/// `include_str!` of the input files, so that editing them rebuilds the crate.
pub(super) fn tracking(config: &Config) -> TokenStream {
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
pub(super) fn type_map(config: &Config, cx: &mut Ctxt) -> TypeMap {
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
