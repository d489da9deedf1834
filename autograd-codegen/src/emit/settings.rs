//! What the emitters need of the configuration: the helpers' paths, fallibility, and where
//! formulas go (in place, or as placeholders for the generated file).

use super::{Config, node, plan};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::cell::RefCell;

/// How the emitters write what depends on the configuration.
pub(crate) struct Settings {
    pub(super) helpers: Option<syn::Path>,
    pub(super) raw_helpers: Option<syn::Path>,
    pub(super) fallible: bool,
    /// Write each formula as a placeholder and collect `(formula, location)` for the
    /// generated file (see [`generate_pretty`]); else the formula's tokens in place.
    pub(super) placeholders: Option<RefCell<Vec<(String, String)>>>,
}

impl Settings {
    pub(super) fn new(config: &Config, placeholders: bool) -> Self {
        Settings {
            helpers: config.helpers.clone(),
            raw_helpers: config.raw_helpers.clone(),
            fallible: config.fallible,
            placeholders: placeholders.then(|| RefCell::new(Vec::new())),
        }
    }

    /// A kernel's return type.
    pub(super) fn kernel_result(&self, ret: TokenStream) -> TokenStream {
        match self.fallible {
            true => quote!(__ag::Result<#ret, Self::Error>),
            false => ret,
        }
    }

    /// A kernel's value inside the trait (its own error type).
    pub(super) fn kernel_value(&self, call: TokenStream) -> TokenStream {
        match self.fallible {
            true => quote!(#call?),
            false => call,
        }
    }

    /// A kernel's value inside a wrapper (its error becomes an `AutogradError`).
    pub(super) fn kernel_call(&self, call: TokenStream) -> TokenStream {
        match self.fallible {
            true => quote!(#call.map_err(__ag::AutogradError::backend)?),
            false => call,
        }
    }

    /// A functional wrapper's return type.
    pub(super) fn wrapper_result(&self, ty: TokenStream) -> TokenStream {
        match self.fallible {
            true => quote!(__ag::Result<#ty, __ag::AutogradError>),
            false => ty,
        }
    }

    /// A wrapper's value as a `Result` (fallible wrappers return one already).
    pub(super) fn as_result(&self, v: TokenStream) -> TokenStream {
        match self.fallible {
            true => v,
            false => quote!(__ag::Ok(#v)),
        }
    }

    /// A functional wrapper's returned value.
    pub(super) fn ok(&self, v: TokenStream) -> TokenStream {
        match self.fallible {
            true => quote!(__ag::Ok(#v)),
            false => v,
        }
    }

    /// A formula as an expression.
    pub(super) fn formula_expr(&self, f: &plan::FormulaPlan, form: node::Form) -> TokenStream {
        match form {
            node::Form::Var => self.placeholder(&f.expr, &f.line, &f.location),
            node::Form::Raw => self.placeholder(&f.raw_expr, &f.raw_line, &f.location),
        }
    }

    /// `expr` as a block, or (for the generated file) a placeholder that becomes the formula
    /// on one line (`line`) with its location; the caller binds it with `let __r = ...;`.
    pub(super) fn placeholder(
        &self,
        expr: &TokenStream,
        line: &str,
        location: &str,
    ) -> TokenStream {
        let Some(cell) = &self.placeholders else {
            return quote!({ #expr });
        };
        let mut v = cell.borrow_mut();
        let id = format_ident!("__ag_formula_{}", v.len());
        v.push((line.to_string(), location.to_string()));
        quote!(#id)
    }
}
