//! The `Backend` trait: one kernel per function, implemented by the tensor library.

use super::Settings;
use super::plan::{FunctionPlan, Param};
use super::types::RustTy;
use crate::model::schema::SchemaKind;
use crate::names::ident;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The trait method of one function; in-place and out= kernels default to their functional
/// variant's.
pub(crate) fn backend_method(p: &FunctionPlan<'_>, s: &Settings) -> TokenStream {
    let me = quote!(Self);
    let params = p.params.iter().map(|q| {
        let n = &q.ident;
        let ty = raw_param(q, &me);
        quote!(#n: #ty)
    });
    let ret = match p.kind {
        SchemaKind::Inplace | SchemaKind::Out => quote!(),
        _ => raw_returns(p, &me),
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
        None if s.fallible => {
            // A fallible backend may leave the kernel out: PyTorch's "Could not run" error.
            let op = format!("aten::{}", p.nf.func.name);
            quote!(
                #[doc = #doc]
                #[allow(unused_variables, non_snake_case)]
                fn #name(#(#params),*) #ret {
                    __ag::Err(<Self::Error as ::std::convert::From<__ag::KernelNotImplemented>>::from(
                        __ag::KernelNotImplemented::new(#op, <Self as Backend>::backend_name()),
                    ))
                }
            )
        }
        None => quote!(#[doc = #doc] fn #name(#(#params),*) #ret;),
    }
}

/// A parameter's type on raw tensors of type `me` (`Self` in the trait, `T` in `raw`).
pub(crate) fn raw_param(q: &Param<'_>, me: &TokenStream) -> TokenStream {
    match &q.ty {
        RustTy::Tensor if q.arg.is_write() => quote!(&mut #me),
        RustTy::Tensor => quote!(&#me),
        RustTy::OptTensor => quote!(__ag::Option<&#me>),
        RustTy::TensorList => quote!(&[#me]),
        RustTy::OptTensorList => quote!(&[__ag::Option<#me>]),
        RustTy::Value(v) => v.param.clone(),
    }
}

/// The returns on raw tensors of type `me` (empty when there are none).
pub(crate) fn raw_returns(p: &FunctionPlan<'_>, me: &TokenStream) -> TokenStream {
    if p.returns.is_empty() {
        return quote!();
    }
    let types = p.returns.iter().map(|t| match t {
        RustTy::TensorList => quote!(__ag::Vec<#me>),
        RustTy::Value(v) => v.owned.clone(),
        _ => quote!(#me),
    });
    tuple(types.collect())
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
