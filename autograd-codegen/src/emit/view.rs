//! Views: a function returning a view of `self` wraps its wrapper's body so that the output
//! becomes a view ([`autograd_runtime::view`]: it follows its base and writes through to
//! it); an in-place function on a view goes through `inplace_on_view`.

use super::Settings;
use super::plan::{FunctionPlan, Inverse, ViewPlan};
use super::types::RustTy;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use std::collections::BTreeSet;

/// The wrapper's body for a view function: the plain body as an inner function, then the
/// output made a view of `self`.
pub(crate) fn view_body(
    p: &FunctionPlan<'_>,
    params: &[TokenStream],
    ret: &TokenStream,
    body: TokenStream,
    s: &Settings,
) -> TokenStream {
    let Some(view) = &p.view else {
        return body;
    };
    let names: Vec<&Ident> = p.params.iter().map(|q| &q.ident).collect();
    let attach = match view {
        ViewPlan::Single(inv) => single(p, inv, s),
        ViewPlan::Multi { op } => multi(p, op, s),
    };
    let get = match s.fallible {
        true => quote!(__inner::<T>(#(#names),*)?),
        false => quote!(__inner::<T>(#(#names),*)),
    };
    let result = s.ok(quote!(__o0));
    quote! {
        #[allow(clippy::all, unused_mut, non_snake_case)]
        fn __inner<T: Backend>(#(#params),*) -> #ret {
            #body
        }
        let __o0 = #get;
        #attach
        #result
    }
}

/// Owned copies of the arguments other than `self` (those in `only`, when given), and their
/// bindings inside a closure (as a formula sees them).
fn captures(
    p: &FunctionPlan<'_>,
    only: Option<&BTreeSet<String>>,
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let mut take = Vec::new();
    let mut bind = Vec::new();
    let wanted = |n: &Ident| only.is_none_or(|o| o.contains(&n.to_string()));
    for q in p.params.iter().skip(1).filter(|q| wanted(&q.ident)) {
        let n = &q.ident;
        let c = format_ident!("__c_{}", n);
        let (owned, binding) = match &q.ty {
            RustTy::Value(v) => (v.owned_expr(&quote!(#n)), v.bind_expr(&quote!(#c))),
            RustTy::Tensor => (quote!(#n.clone()), quote!(&#c)),
            RustTy::OptTensor => (quote!(#n.cloned()), quote!(#c.as_ref())),
            _ => (quote!(#n.to_vec()), quote!(&#c[..])),
        };
        take.push(quote!(let #c = #owned;));
        // A name may also be a method (`base.shape()` with an argument named `shape`).
        bind.push(quote!(#[allow(unused_variables)] let #n = #binding;));
    }
    (take, bind)
}

/// `#name(base, args...)`, the view replayed on a base.
fn replay(p: &FunctionPlan<'_>, s: &Settings) -> TokenStream {
    let name = &p.name;
    let rest = p.params.iter().skip(1).map(|q| &q.ident);
    s.as_result(quote!(#name::<T>(__b, #(#rest),*)))
}

fn single(p: &FunctionPlan<'_>, inv: &Inverse, s: &Settings) -> TokenStream {
    let (take, bind) = captures(p, None);
    let replay = replay(p, s);
    let helpers = s
        .helpers
        .as_ref()
        .map(|h| quote!(#[allow(unused_imports)] use #h::*;));
    let inverse = match inv {
        Inverse::Overlapping => quote!(__ag::ViewInverse::Overlapping),
        Inverse::Formula(f, uses) => {
            let (take, bind) = captures(p, Some(uses));
            let value = s.as_result(f.clone());
            let scatter = quote!(__ag::ViewInverse::Scatter(__ag::Arc::new(
                move |base: &__ag::Variable<T>, mutated_view: &__ag::Variable<T>| {
                    let _ = (base, mutated_view);
                    #helpers
                    #(#bind)*
                    #value
                },
            )));
            block(&take, scatter)
        }
    };
    let view_fn = block(
        &take,
        quote!(__ag::Arc::new(move |__b: &__ag::Variable<T>| {
            #(#bind)*
            #replay
        })),
    );
    quote! {
        {
            let __view_fn: __ag::ViewFn<T> = #view_fn;
            let __inverse = #inverse;
            __ag::make_view(&__o0, self_, __view_fn, __inverse);
        }
    }
}

/// `{ lets; value }`, or `value` alone when there are no `lets`.
fn block(lets: &[TokenStream], value: TokenStream) -> TokenStream {
    if lets.is_empty() {
        value
    } else {
        quote!({ #(#lets)* #value })
    }
}

fn multi(p: &FunctionPlan<'_>, op: &str, s: &Settings) -> TokenStream {
    let (take, bind) = captures(p, None);
    let replay = replay(p, s);
    let view_fn = block(
        &take,
        quote!(__ag::Arc::new(move |__b: &__ag::Variable<T>| {
            #(#bind)*
            let __all: __ag::Result<__ag::Vec<__ag::Variable<T>>, __ag::AutogradError> = #replay;
            __ag::Ok(__all?[__i].clone())
        })),
    );
    quote! {
        for (__i, __v) in __o0.iter().enumerate() {
            let __view_fn: __ag::ViewFn<T> = #view_fn;
            let __inverse = __ag::ViewInverse::MultiOutput { op: #op.into(), index: __i };
            __ag::make_view(__v, self_, __view_fn, __inverse);
        }
    }
}

/// The start of an in-place wrapper: on a view, run the op on a copy and write it through.
pub(crate) fn inplace_on_view(p: &FunctionPlan<'_>) -> TokenStream {
    let name = &p.name;
    let rest: Vec<&Ident> = p.params.iter().skip(1).map(|q| &q.ident).collect();
    let requires = p.params.iter().filter_map(|q| {
        let n = &q.ident;
        match q.ty {
            RustTy::Tensor => Some(quote!(#n.requires_grad())),
            RustTy::OptTensor => Some(quote!(#n.is_some_and(|v| v.requires_grad()))),
            RustTy::TensorList => Some(quote!(#n.iter().any(|v| v.requires_grad()))),
            RustTy::OptTensorList => {
                Some(quote!(#n.iter().any(|v| v.as_ref().is_some_and(|v| v.requires_grad()))))
            }
            RustTy::Value(_) => None,
        }
    });
    quote! {
        if self_.is_view() {
            let __requires_grad = false #(|| #requires)*;
            return __ag::inplace_on_view(self_, __requires_grad, |__c| {
                #name::<T>(__c, #(#rest),*).map(|_| ())
            });
        }
    }
}
