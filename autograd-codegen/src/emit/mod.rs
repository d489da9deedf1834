//! Emission: the analysis as Rust code.
//!
//! For a `derivatives.yaml` with Rust or C++ formulas (and optionally a `native_functions.yaml`),
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
//! The data flow, one way: [`crate::api::analyze_into`] (the analysis every entry point
//! shares) -> `plan` (pure data: one plan per node and per function, with every check) ->
//! the emitters `backend`, `node`, `wrapper`, `forward`, `view`, `raw` (tokens from plans,
//! as `Settings` says) -> this module's [`generate`], which wires them. Around it:
//! `config` (the [`Config`] every entry point fills, its inputs read), `output` (the code as
//! text, [`generate_pretty`]), `expand` (the macro: [`expand_macro`]), `args` (the macro's
//! arguments), [`build`] (the build-script API). Names: see [`crate::names`].

pub mod build;
pub mod types;

mod args;
mod backend;
mod config;
mod expand;
mod forward;
mod node;
mod output;
mod plan;
mod raw;
mod settings;
mod tokens;
mod view;
mod wrapper;

pub use crate::names::{op_fn_name, rust_name};
pub use args::MacroArgs;
pub use config::{Config, analyze_config, rust_analysis_options};
pub use expand::{compile_errors, expand_macro};
pub use output::generate_pretty;
pub(crate) use settings::Settings;

use crate::api::analyze_into;
use crate::diagnostics::{Ctxt, Diagnostics};
use config::{tracking, type_map};
use proc_macro2::TokenStream;
use quote::quote;

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
    plan::check_composites(&p, s.helpers.is_some(), &mut cx);
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

#[cfg(test)]
mod tests;
