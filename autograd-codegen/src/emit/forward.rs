//! Forward-mode AD in the wrappers (torchgen's `emit_fw_derivatives`, its emitting half):
//! the `__fw` function every wrapper calls on its outputs when a dual level is live, from
//! each function's forward plan ([`super::plan::ForwardPlan`]).
//!
//! * A formula (`result: ...`, or `auto_element_wise` / `auto_linear` as torchgen expands
//!   them) runs at each level where an input it reads the tangent of has one, with `x_t` (the
//!   tangent, zeros when undefined), `x_p` (the primal) and `result` bound; its value becomes
//!   the output's tangent ([`autograd_runtime::forward::propagate`]).
//! * In-place functions run their functional formula with `self_p` / `self_t` the value and
//!   tangent `self` had before the op and `result` the value after it; the tangent of `self`
//!   is replaced.
//! * Functions without a formula, and out= functions, fail under forward AD with PyTorch's
//!   "Trying to use forward AD with `op` that does not support it" error.

use super::Settings;
use super::plan::{DiffInput, ForwardFormula, ForwardPlan, FunctionPlan, TensorKind};
use super::types::RustTy;
use crate::model::schema::SchemaKind;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

/// The tensor outputs `__fw` receives: `(index, ident, type)`.
fn tensor_outputs(p: &FunctionPlan<'_>) -> Vec<(usize, Ident, TokenStream)> {
    // A mutable function (`Tensor(a!)` arguments that are not `self` nor out=, such as
    // `_native_batch_norm_legit`'s running statistics) returns new outputs as a functional one.
    if !matches!(p.kind, SchemaKind::Functional | SchemaKind::Mutable) {
        return Vec::new();
    }
    p.returns
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let ty = match t {
                RustTy::Tensor => quote!(&__ag::Variable<T>),
                RustTy::TensorList => quote!(&__ag::Vec<__ag::Variable<T>>),
                _ => return None,
            };
            Some((i, format_ident!("__o{}", i), ty))
        })
        .collect()
}

/// The statement a wrapper runs once its outputs (`__o0`, ...) exist; for an in-place
/// function, once `self_` was modified (with `__fw_orig`, see [`original_self`]).
pub(crate) fn call(p: &FunctionPlan<'_>, s: &Settings) -> TokenStream {
    if matches!(p.forward, ForwardPlan::Nothing) {
        return quote!();
    }
    let call = match &p.forward {
        ForwardPlan::Forbid {
            op,
            out_fn,
            inputs,
            fallback,
        } => forbid(p, inputs, op, *out_fn, *fallback),
        _ => {
            let names = p.params.iter().map(|q| &q.ident);
            let outs = tensor_outputs(p).into_iter().map(|(_, o, _)| quote!(&#o));
            let orig = (p.kind == SchemaKind::Inplace).then(|| quote!(__fw_orig.as_ref(),));
            quote!(__fw::<T>(#(#names,)* #orig #(#outs),*))
        }
    };
    let call = match s.fallible || !matches!(p.kind, SchemaKind::Functional) {
        true => quote!(#call?;),
        false => quote!(let _ = #call;),
    };
    quote!(if __ag::is_forward_ad_enabled() { #call })
}

/// For an in-place function with formulas: `self` before the op, with its tangents.
pub(crate) fn original_self(p: &FunctionPlan<'_>) -> TokenStream {
    match &p.forward {
        ForwardPlan::Formulas(_) if p.kind == SchemaKind::Inplace => {
            quote!(let __fw_orig = __ag::fw_original(self_);)
        }
        _ => quote!(),
    }
}

/// The function `__fw` (defined inside the wrapper): sets the outputs' tangents.
pub(crate) fn function(p: &FunctionPlan<'_>, params: &[TokenStream], s: &Settings) -> TokenStream {
    let inplace = p.kind == SchemaKind::Inplace;
    let outs = tensor_outputs(p);
    let out_params = outs.iter().map(|(_, o, ty)| quote!(#o: #ty));
    let orig = inplace.then(|| quote!(__fw_orig: __ag::Option<&__ag::Variable<T>>,));
    let ForwardPlan::Formulas(fs) = &p.forward else {
        return quote!();
    };
    let each = fs.iter().map(|f| propagate(f, &outs, inplace, s));
    let body = quote!(#(#each)* __ag::Ok(()));
    // Forward formulas call the helpers module like backward formulas do.
    // Forward formulas see the helpers module as backward formulas do. A block's glob import
    // shadows the function's parameters (the helper `dims` over `dims: &[i64]`), so the
    // parameters are read outside the block and bound again inside it.
    let body = match &s.helpers {
        Some(h) => {
            let names: Vec<&Ident> = p.params.iter().map(|q| &q.ident).collect();
            quote!(let __args = (#(#names,)*); { use #h::*; let (#(#names,)*) = __args; #body })
        }
        None => body,
    };
    quote! {
        #[allow(clippy::all, unused_variables, unused_mut, unused_imports, unused_parens, non_snake_case)]
        fn __fw<T: Backend>(#(#params,)* #orig #(#out_params),*) -> __ag::Result<(), __ag::AutogradError> {
            use __ag::Conj as _;
            #body
        }
    }
}

/// An op without a forward formula: PyTorch's error when an input has a tangent (kept as
/// the outputs' tangent too, for infallible wrappers that cannot return it).
fn forbid(
    p: &FunctionPlan<'_>,
    inputs: &[DiffInput<'_>],
    op: &str,
    out_fn: bool,
    fallback: bool,
) -> TokenStream {
    let list = input_list(inputs, None);
    let mut poison: Vec<TokenStream> = tensor_outputs(p)
        .iter()
        .map(|(_, o, _)| quote!(__ag::fw_poison(&#o, &__e);))
        .collect();
    if p.kind == SchemaKind::Inplace {
        poison.push(quote!(__ag::fw_poison(self_, &__e);));
    }
    let check = match fallback {
        true => quote!(__ag::fw_forbid_fallback(&#list, #op)),
        false => quote!(__ag::fw_forbid(&#list, #op, #out_fn)),
    };
    quote!(#check.map_err(|__e| { #(#poison)* __e }))
}

/// The inputs whose tangents are looked at, flattened (`self_` read as `__fw_orig` when
/// given).
fn input_list(inputs: &[DiffInput<'_>], orig: Option<&TokenStream>) -> TokenStream {
    if inputs.iter().all(|i| i.kind == TensorKind::One) {
        let each = inputs.iter().map(|i| match (i.arg.name.as_str(), orig) {
            ("self", Some(o)) => o.clone(),
            (n, _) => {
                let n = crate::names::ident(n);
                quote!(#n)
            }
        });
        return quote!([#(#each),*]);
    }
    let pushes = inputs.iter().map(|i| {
        let n = crate::names::ident(&i.arg.name);
        match i.kind {
            TensorKind::One if i.arg.name == "self" && orig.is_some() => {
                let o = orig.into_iter();
                quote!(__v.push(#(#o)*);)
            }
            TensorKind::One => quote!(__v.push(#n);),
            TensorKind::Opt => quote!(__v.extend(#n);),
            TensorKind::List => quote!(__v.extend(#n.iter());),
            TensorKind::OptList => quote!(__v.extend(#n.iter().flatten());),
        }
    });
    quote!({
        let mut __v: __ag::Vec<&__ag::Variable<T>> = __ag::Vec::new();
        #(#pushes)*
        __v
    })
}

fn propagate(
    f: &ForwardFormula<'_>,
    outs: &[(usize, Ident, TokenStream)],
    inplace: bool,
    s: &Settings,
) -> TokenStream {
    let orig = quote!(__orig);
    let list = input_list(&f.checked, inplace.then_some(&orig));
    let source = |i: &DiffInput<'_>| -> TokenStream {
        match inplace && i.arg.name == "self" {
            true => quote!(__orig),
            false => {
                let n = crate::names::ident(&i.arg.name);
                quote!(#n)
            }
        }
    };
    let tangents = f.tangents.iter().map(|i| {
        let (src, t) = (source(i), format_ident!("{}_t", i.arg.name));
        match i.kind {
            TensorKind::One => quote!(let #t = __ag::tangent_or_zeros(#src, __lvl)?;),
            TensorKind::Opt => {
                quote!(let #t = #src.map(|v| __ag::tangent_or_zeros(v, __lvl)).transpose()?;)
            }
            TensorKind::List => quote!(let #t = __ag::tangents_or_zeros(#src, __lvl)?;),
            TensorKind::OptList => quote!(let #t: __ag::Vec<__ag::Option<__ag::Variable<T>>> = #src
                .iter()
                .map(|v| v.as_ref().map(|v| __ag::tangent_or_zeros(v, __lvl)).transpose())
                .collect::<__ag::Result<_, _>>()?;),
        }
    });
    let primals = f.primals.iter().map(|i| {
        let (src, pn) = (source(i), format_ident!("{}_p", i.arg.name));
        match i.kind {
            TensorKind::One => quote!(let #pn = #src.clone();),
            TensorKind::Opt => quote!(let #pn = #src.cloned();),
            TensorKind::List | TensorKind::OptList => quote!(let #pn = #src.to_vec();),
        }
    });
    let out = match inplace {
        true => quote!(self_),
        false => {
            let o = outs
                .iter()
                .find(|(i, _, _)| *i == f.output)
                .map(|(_, o, _)| o.clone())
                .unwrap_or_else(|| format_ident!("__o0"));
            quote!(#o)
        }
    };
    let result = f.result.then(|| quote!(let result = #out.clone();));
    let named = f.named.iter().map(|(n, i)| {
        let o = format_ident!("__o{}", i);
        quote!(let #n = #o.clone();)
    });
    let expr = s.placeholder(&f.expr, &f.line, &f.location);
    let self_orig = inplace.then(|| {
        quote!(let __orig = match __fw_orig { __ag::Some(o) => o, __ag::None => return __ag::Ok(()) };)
    });
    quote! {
        #self_orig
        __ag::fw_propagate(#out, &#list, |__lvl| {
            #(#tangents)*
            #(#primals)*
            #result
            #(#named)*
            let __r = #expr;
            __ag::IntoTangent::into_tangent(__r)
        })?;
    }
}
