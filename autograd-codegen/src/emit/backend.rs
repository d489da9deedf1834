//! The `Backend` trait: one kernel per function, implemented by the tensor library.

use super::Settings;
use super::names::ident;
use super::plan::FunctionPlan;
use super::types::RustTy;
use crate::model::schema::SchemaKind;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The trait method of one function; in-place and out= kernels default to their functional
/// variant's.
pub(crate) fn backend_method(p: &FunctionPlan<'_>, s: &Settings) -> TokenStream {
    let params = p.params.iter().map(|q| {
        let n = &q.ident;
        let ty = match &q.ty {
            RustTy::Tensor if q.arg.is_write() => quote!(&mut Self),
            RustTy::Tensor => quote!(&Self),
            RustTy::OptTensor => quote!(__ag::Option<&Self>),
            RustTy::TensorList => quote!(&[Self]),
            RustTy::OptTensorList => quote!(&[__ag::Option<Self>]),
            RustTy::Value(v) => v.param.clone(),
        };
        quote!(#n: #ty)
    });
    let ret = match p.kind {
        SchemaKind::Inplace | SchemaKind::Out => quote!(),
        _ if p.returns.is_empty() => quote!(),
        _ => tuple(p.returns.iter().map(raw_type).collect()),
    };
    let ret = match (s.fallible, ret.is_empty()) {
        (false, true) => quote!(),
        _ => {
            let r = s.kernel_result(if ret.is_empty() { quote!(()) } else { ret });
            quote!(-> #r)
        }
    };
    let (name, doc) = (&p.name, format!("`{}`", p.entry));
    match default_body(p, s) {
        Some(body) => quote!(#[doc = #doc] fn #name(#(#params),*) #ret { #body }),
        None => quote!(#[doc = #doc] fn #name(#(#params),*) #ret;),
    }
}

fn raw_type(t: &RustTy) -> TokenStream {
    match t {
        RustTy::TensorList => quote!(__ag::Vec<Self>),
        RustTy::Value(v) => v.owned.clone(),
        _ => quote!(Self),
    }
}

/// `()`, the one element, or a tuple.
pub(crate) fn tuple(v: Vec<TokenStream>) -> TokenStream {
    match v.len() {
        0 => quote!(()),
        1 => v.into_iter().next().unwrap_or_default(),
        _ => quote!((#(#v),*)),
    }
}

/// An in-place or out= kernel written with the functional one; a functional kernel with a
/// decomposition (`CompositeExplicitAutograd`) calls it.
fn default_body(p: &FunctionPlan<'_>, s: &Settings) -> Option<TokenStream> {
    if let (Some(k), Some(h)) = (&p.decomposition, &s.helpers) {
        let args = p.params.iter().map(|q| &q.ident);
        return Some(quote!(#h::#k::<Self>(#(#args),*)));
    }
    let (fname, g) = p.functional.as_ref()?;
    let args = g.func.arguments.flat_non_out().map(|a| {
        let n = ident(&a.name);
        if p.kind == SchemaKind::Inplace && a.name == "self" {
            quote!(&*#n)
        } else {
            quote!(#n)
        }
    });
    let call = s.kernel_value(quote!(<Self as Backend>::#fname(#(#args),*)));
    let outs: Vec<_> = match p.kind {
        SchemaKind::Inplace => vec![format_ident!("self_")],
        _ => {
            p.nf.func
                .arguments
                .out
                .iter()
                .map(|a| ident(&a.name))
                .collect()
        }
    };
    let assign = if let [o] = &outs[..] {
        quote!(*#o = #call;)
    } else {
        let tmp: Vec<_> = (0..outs.len()).map(|i| format_ident!("__r{}", i)).collect();
        quote!(let (#(#tmp),*) = #call; #(*#outs = #tmp;)*)
    };
    Some(match s.fallible {
        true => quote!(#assign __ag::Ok(())),
        false => assign,
    })
}
