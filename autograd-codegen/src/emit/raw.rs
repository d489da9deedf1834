//! The `raw` module: every functional kernel as a free function of raw tensors, under its
//! differentiable function's name. A node's raw form (`Node::apply_raw`, run by a backward
//! pass without `create_graph`) is its formulas' tokens in a scope that imports this module,
//! so `mul_tensor(&grad, &other)?` calls the kernel instead of recording an op.

use super::Settings;
use super::backend::{raw_param, raw_returns};
use super::plan::{FunctionPlan, Plan, has_raw_fn};
use super::types::RustTy;
use proc_macro2::TokenStream;
use quote::quote;

/// `pub mod raw { ... }`.
pub(crate) fn raw_module(p: &Plan<'_>, s: &Settings) -> TokenStream {
    let fns = p
        .functions
        .iter()
        .filter(|f| has_raw_fn(f))
        .map(|f| raw_fn(f, s));
    quote! {
        /// The kernels as free functions of raw tensors, named as the differentiable
        /// functions (generated): the raw form of the backward formulas calls them.
        #[allow(clippy::all, unused_imports, non_snake_case)]
        pub mod raw {
            use super::*;
            #(#fns)*
        }
    }
}

fn raw_fn(f: &FunctionPlan<'_>, s: &Settings) -> TokenStream {
    let me = quote!(T);
    // A `Scalar` is `impl Into<Scalar>`, as in the differentiable function.
    let params = f.params.iter().map(|q| {
        let (n, ty) = (&q.ident, raw_param(q, &me));
        match &q.ty {
            RustTy::Value(v) if v.into => quote!(#n: impl __ag::Into<#ty>),
            _ => quote!(#n: #ty),
        }
    });
    let args = f.params.iter().map(|q| {
        let n = &q.ident;
        match &q.ty {
            RustTy::Value(v) if v.into => quote!(__ag::Into::into(#n)),
            _ => quote!(#n),
        }
    });
    // No returns: `()`.
    let ret = match raw_returns(f, &me) {
        r if r.is_empty() => quote!(()),
        r => r,
    };
    let name = &f.name;
    let call = quote!(<T as Backend>::#name(#(#args),*));
    let (ret, body) = match s.fallible {
        true => (
            quote!(__ag::Result<#ret, __ag::AutogradError>),
            quote!(#call.map_err(__ag::AutogradError::backend)),
        ),
        false => (ret, call),
    };
    let doc = format!("`{}` on raw tensors: the kernel.", f.entry);
    quote! {
        #[doc = #doc]
        #[inline]
        pub fn #name<T: Backend>(#(#params),*) -> #ret {
            #body
        }
    }
}
