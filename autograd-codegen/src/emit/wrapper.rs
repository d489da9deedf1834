//! Differentiable wrappers on `Variable<T>`: run the kernel, and when some input needs a
//! gradient, build the node (saving what its formulas use) and record it.

use super::Settings;
use super::backend::tuple;
use super::plan::{DiffInput, FieldSource, FunctionPlan, NodePlan, Property, TensorKind};
use super::types::{Conversion, RustTy};
use crate::model::schema::SchemaKind;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

/// The wrapper and, for ops on `self`, its `VariableOps` method.
pub(crate) fn wrapper(
    p: &FunctionPlan<'_>,
    node: Option<&NodePlan<'_>>,
    s: &Settings,
) -> (TokenStream, Option<TokenStream>) {
    let params: Vec<TokenStream> = p.params.iter().map(|q| wrapper_param(q, false)).collect();
    let public: Vec<TokenStream> = p.params.iter().map(|q| wrapper_param(q, true)).collect();
    let (ret, body) = match (&p.composite, p.kind) {
        (Some(k), _) => composite_body(p, k, s),
        (None, SchemaKind::Inplace) => inplace_body(p, node, s),
        (None, SchemaKind::Out | SchemaKind::Scratch) => out_body(p, s),
        (None, _) => functional_body(p, node, s),
    };
    let checks = no_requires_grad(p, s);
    let fw = super::forward::function(p, &params, s);
    let body = quote!(#fw #checks #body);
    let body = super::view::view_body(p, &params, &ret, body, s);
    let intos = p.params.iter().filter_map(|q| match &q.ty {
        RustTy::Value(v) if v.into => {
            let (n, t) = (&q.ident, &v.param);
            Some(quote!(let #n: #t = __ag::Into::into(#n);))
        }
        _ => None,
    });
    let body = quote!(#(#intos)* #body);
    let name = &p.name;
    let doc = format!("Differentiable `{}`.", p.entry);
    let wrapper = quote! {
        #[doc = #doc]
        #[allow(clippy::all, unused_mut, non_snake_case)]
        pub fn #name<T: Backend>(#(#public),*) -> #ret {
            #body
        }
    };
    let method = p.method.then(|| {
        let rest = &public[1..];
        let names = p.params[1..].iter().map(|q| &q.ident);
        // A parameter named as the function (`pad(Tensor self, SymInt[] pad, ...)`) shadows
        // it: the call names the module's function by path then.
        let shadowed = p.params[1..].iter().any(|q| q.ident == *name);
        let callee = match shadowed {
            true => quote!(self::#name),
            false => quote!(#name),
        };
        quote!(#[doc = #doc] #[allow(clippy::too_many_arguments)] fn #name(&self, #(#rest),*) -> #ret {
            #callee::<T>(__ag::Borrow::borrow(self), #(#names),*)
        })
    });
    (wrapper, method)
}

/// PyTorch's `check_no_requires_grad` on the inputs without a formula; an infallible
/// functional wrapper cannot return the error, so it panics with it.
fn no_requires_grad(p: &FunctionPlan<'_>, s: &Settings) -> TokenStream {
    let function = p.nf.func.name.name.to_string();
    let checks = p.no_requires_grad.iter().map(|d| {
        let (n, name) = (&d.arg.name, crate::names::ident(&d.arg.name));
        let inputs = match d.kind {
            TensorKind::One => quote!([#name]),
            TensorKind::Opt => quote!(#name),
            TensorKind::List => quote!(#name.iter()),
            TensorKind::OptList => quote!(#name.iter().flatten()),
        };
        let check = quote!(__ag::check_no_requires_grad(#inputs, #n, #function));
        match s.fallible || p.kind == SchemaKind::Inplace {
            true => quote!(#check?;),
            false => quote!(if let Err(e) = #check { panic!("{e}") }),
        }
    });
    quote!(#(#checks)*)
}

/// A CompositeImplicitAutograd function: the helpers' kernel, built from differentiable ops,
/// records their nodes (as PyTorch's decompositions do).
fn composite_body(
    p: &FunctionPlan<'_>,
    kernel: &Ident,
    s: &Settings,
) -> (TokenStream, TokenStream) {
    let ret = s.wrapper_result(tuple(p.returns.iter().map(var_type).collect()));
    let names = p.params.iter().map(|q| &q.ident);
    let helpers = &s.helpers;
    (ret, quote!(#helpers::#kernel(#(#names),*)))
}

/// A wrapper's parameter; `public`: as the signature has it (`impl Into<Scalar>`).
fn wrapper_param(q: &super::plan::Param<'_>, public: bool) -> TokenStream {
    let n = &q.ident;
    match &q.ty {
        RustTy::Tensor => quote!(#n: &__ag::Variable<T>),
        RustTy::OptTensor => quote!(#n: __ag::Option<&__ag::Variable<T>>),
        RustTy::TensorList => quote!(#n: &[__ag::Variable<T>]),
        RustTy::OptTensorList => quote!(#n: &[__ag::Option<__ag::Variable<T>>]),
        RustTy::Value(v) if public && v.into => {
            let t = &v.param;
            quote!(#n: impl __ag::Into<#t>)
        }
        RustTy::Value(v) => {
            let t = &v.param;
            quote!(#n: #t)
        }
    }
}

/// The raw data of each tensor argument (`__d_x`) and the kernel's arguments. With
/// `borrow`, the last read-only tensor is not cloned: the kernel runs inside its `with_data`.
struct Prep {
    lets: Vec<TokenStream>,
    args: Vec<TokenStream>,
    borrowed: Option<(Ident, Ident)>,
}

fn prep(p: &FunctionPlan<'_>, borrow: bool) -> Prep {
    let mut r = Prep {
        lets: Vec::new(),
        args: Vec::new(),
        borrowed: None,
    };
    let last_read = p
        .params
        .iter()
        .rposition(|q| matches!(q.ty, RustTy::Tensor) && !q.arg.is_write())
        .filter(|_| borrow);
    for (i, q) in p.params.iter().enumerate() {
        let n = &q.ident;
        let d = format_ident!("__d_{}", n);
        let (bind, arg) = match &q.ty {
            RustTy::Tensor if q.arg.is_write() => {
                (Some(quote!(let mut #d = #n.data();)), quote!(&mut #d))
            }
            RustTy::Tensor if Some(i) == last_read => {
                r.borrowed = Some((n.clone(), d.clone()));
                (None, quote!(&#d))
            }
            RustTy::Tensor => (Some(quote!(let #d = #n.data();)), quote!(&#d)),
            RustTy::OptTensor => (
                Some(quote!(let #d = #n.map(|v| v.data());)),
                quote!(#d.as_ref()),
            ),
            RustTy::TensorList => (
                Some(quote!(let #d: __ag::Vec<T> = #n.iter().map(|v| v.data()).collect();)),
                quote!(&#d),
            ),
            RustTy::OptTensorList => (
                Some(
                    quote!(let #d: __ag::Vec<__ag::Option<T>> = #n.iter().map(|v| v.as_ref().map(|v| v.data())).collect();),
                ),
                quote!(&#d),
            ),
            RustTy::Value(_) => (None, quote!(#n)),
        };
        r.lets.extend(bind);
        r.args.push(arg);
    }
    r
}

fn var_type(t: &RustTy) -> TokenStream {
    match t {
        RustTy::Tensor => quote!(__ag::Variable<T>),
        RustTy::TensorList => quote!(__ag::Vec<__ag::Variable<T>>),
        RustTy::Value(v) => v.owned.clone(),
        _ => quote!(()),
    }
}

/// Return `i` as a variable without history.
fn plain(t: &RustTy, raw: &Ident) -> TokenStream {
    match t {
        RustTy::Tensor => quote!(__ag::Variable::from_data(#raw)),
        RustTy::TensorList => {
            quote!(#raw.into_iter().map(__ag::Variable::from_data).collect::<__ag::Vec<_>>())
        }
        _ => quote!(#raw),
    }
}

// One quote! template of the generated wrapper's body (kernel, node, record), kept whole so
// that it reads as the code it emits.
fn functional_body(
    p: &FunctionPlan<'_>,
    node: Option<&NodePlan<'_>>,
    s: &Settings,
) -> (TokenStream, TokenStream) {
    let ret = s.wrapper_result(tuple(p.returns.iter().map(var_type).collect()));
    let pr = prep(p, true);
    let (name, args, lets) = (&p.name, &pr.args, &pr.lets);
    let call = match &pr.borrowed {
        Some((v, d)) => quote!(#v.with_data(|#d| <T as Backend>::#name(#(#args),*))),
        None => quote!(<T as Backend>::#name(#(#args),*)),
    };
    let call = s.kernel_call(call);
    let raw: Vec<Ident> = (0..p.returns.len())
        .map(|i| format_ident!("__r{}", i))
        .collect();
    let bind_raw = match &raw[..] {
        [] => quote!(let () = #call;),
        [r] => quote!(let #r = #call;),
        _ => quote!(let (#(#raw),*) = #call;),
    };
    let plain_all: Vec<TokenStream> = p
        .returns
        .iter()
        .zip(&raw)
        .map(|(t, r)| plain(t, r))
        .collect();
    let outs: Vec<Ident> = (0..raw.len()).map(|i| format_ident!("__o{}", i)).collect();
    // A mutable function's `Tensor(a!)` arguments take the values its kernel wrote, without
    // a version bump: PyTorch's kernels write them through the data pointer
    // (`_native_batch_norm_legit`'s running statistics keep `_version` 0).
    let written = p
        .params
        .iter()
        .filter(|q| matches!(q.ty, RustTy::Tensor) && q.arg.is_write())
        .map(|q| {
            let (n, d) = (&q.ident, format_ident!("__d_{}", q.ident));
            quote!(#n.set_data(#d);)
        });
    let bind_raw = quote!(#bind_raw #(#written)*);
    let fw = super::forward::call(p, s);
    let no_record = {
        let ok = s.ok(tuple(outs.iter().map(|o| quote!(#o)).collect()));
        let binds = outs
            .iter()
            .zip(plain_all)
            .map(|(o, v)| quote!(let #o = #v;));
        quote!({ #(#binds)* #fw #ok })
    };
    let Some(n) = node else {
        let ni = not_implemented_functional(p, &raw, s, &fw);
        return (ret, quote! { #(#lets)* #bind_raw #ni #no_record });
    };
    let needs = needs(&n.inputs);
    let dims = saved_dims_checked(n, s, &needs);
    let (offsets, edges) = edges(&n.inputs);
    let init = node_init(n, false);
    let (record, saving) = record_outputs(p, n, &raw, &outs);
    let save = save_outputs(n, &outs.iter().map(|o| quote!(#o)).collect::<Vec<_>>());
    let save = match saving {
        true if save.is_empty() => quote!(),
        true => quote!(if let __ag::Some(__handle) = __handle { #save }),
        false => save,
    };
    let result = s.ok(tuple(outs.iter().map(|o| quote!(#o)).collect()));
    let gate = record_gate(p, n, &raw);
    let body = quote! {
        #(#lets)*
        #dims
        #bind_raw
        let __needs = [#(#needs),*];
        if !#gate {
            return #no_record;
        }
        #offsets
        let __edges = #edges;
        let __node = #init;
        #record
        #fw
        #save
        #result
    };
    (ret, body)
}

/// The dimensions of saved `x.sym_size(d)` values, checked before the kernel runs when the
/// wrapper may record: PyTorch's autograd wrapper reads them before it calls the kernel, so
/// a tensor without dimension `d` fails there, with its `IndexError` (the last saved size
/// first, as PyTorch's generated code reads them). Nothing for an infallible wrapper.
fn saved_dims_checked(n: &NodePlan<'_>, s: &Settings, needs: &[TokenStream]) -> TokenStream {
    let checks: Vec<TokenStream> = n
        .fields
        .iter()
        .rev()
        .filter_map(|f| match &f.source {
            FieldSource::Property {
                var,
                prop: Property::Size(d),
            } => Some(quote!(__ag::check_size_dim(&#var.shape(), (#d) as i64)?;)),
            _ => None,
        })
        .collect();
    if checks.is_empty() || !s.fallible {
        return quote!();
    }
    quote!(if __ag::should_record_any(&[#(#needs),*]) { #(#checks)* })
}

/// Whether the functional wrapper records a node: an input requires grad (and grad mode is
/// on); with `output_differentiability` conditions (PyTorch's `_to_copy`: `!dtype ||
/// isDifferentiableType(*dtype)`, a condition on the result's dtype), also every tensor
/// result's dtype can carry gradients, so a copy to `long` gets no history.
fn record_gate(p: &FunctionPlan<'_>, n: &NodePlan<'_>, raw: &[Ident]) -> TokenStream {
    if n.info.output_differentiability_conditions.is_none() {
        return quote!(__ag::should_record_any(&__needs));
    }
    let tensors = raw
        .iter()
        .zip(&p.returns)
        .filter(|(_, t)| matches!(t, RustTy::Tensor))
        .map(|(r, _)| quote!(&#r));
    quote!(__ag::should_record_differentiable(&__needs, &[#(#tensors),*]))
}

/// A function without a derivatives entry: when an input requires grad and the result can
/// carry gradients, the outputs get a `NotImplemented` history (backward through them fails,
/// as in PyTorch).
fn not_implemented_functional(
    p: &FunctionPlan<'_>,
    raw: &[Ident],
    s: &Settings,
    fw: &TokenStream,
) -> TokenStream {
    if p.not_implemented.is_empty() {
        return quote!();
    }
    let needs = needs(&p.not_implemented);
    let (offsets, edges) = edges(&p.not_implemented);
    let op = p.nf.func.name.name.to_string();
    let first = &raw[0];
    let (record, result) = match p.returns[..] {
        [RustTy::TensorList] => (
            quote!(let (__o0, _) = __ag::record_vec(__ag::NotImplementedNode::new(#op), &__edges, #first);),
            quote!(__o0),
        ),
        _ => {
            let outs: Vec<Ident> = (0..raw.len()).map(|i| format_ident!("__o{}", i)).collect();
            (
                quote!(let ([#(#outs),*], _) = __ag::record(__ag::NotImplementedNode::new(#op), &__edges, [#(#raw),*]);),
                tuple(outs.iter().map(|o| quote!(#o)).collect()),
            )
        }
    };
    let first_data = match p.returns[..] {
        [RustTy::TensorList] => quote!(#first.first()),
        _ => quote!(__ag::Some(&#first)),
    };
    let result = s.ok(result);
    quote! {
        let __needs = [#(#needs),*];
        if #first_data.is_some_and(|d| __ag::should_record_not_implemented(&__needs, d)) {
            #offsets
            let __edges = #edges;
            #record
            #fw
            return #result;
        }
    }
}

/// Differentiable outputs go through `record` (`record_vec` for a `Tensor[]`); the others
/// become plain variables. Returns whether the node went through `record_saving` (its
/// handle is then an `Option`).
fn record_outputs(
    p: &FunctionPlan<'_>,
    n: &NodePlan<'_>,
    raw: &[Ident],
    outs: &[Ident],
) -> (TokenStream, bool) {
    let d = &p.diff_outputs;
    let (recorded, saving) = match &d[..] {
        [i] if matches!(p.returns[*i], RustTy::TensorList) => {
            let (r, o) = (&raw[*i], &outs[*i]);
            (
                quote!(let (#o, __handle) = __ag::record_vec(__node, &__edges, #r);),
                false,
            )
        }
        _ => {
            let rs = d.iter().map(|i| &raw[*i]);
            let os = d.iter().map(|i| &outs[*i]);
            match saves_in_place(n, d) {
                Some(saves) => (
                    quote!(let ([#(#os),*], __handle) = __ag::record_saving(__node, &__edges, [#(#rs),*], |__n, __s| { #(#saves)* });),
                    true,
                ),
                None => (
                    quote!(let ([#(#os),*], __handle) = __ag::record(__node, &__edges, [#(#rs),*]);),
                    false,
                ),
            }
        }
    };
    let others = (0..raw.len()).filter(|i| !d.contains(i)).map(|i| {
        let (o, v) = (&outs[i], plain(&p.returns[i], &raw[i]));
        quote!(let #o = #v;)
    });
    (quote!(#recorded #(#others)*), saving)
}

/// The saves `record_saving` can make before the node is in the graph (`__n.result =
/// __s.save(0);`): every saved output is a differentiable one (a saved non-differentiable
/// output, such as `max`'s indices, is a plain variable, saved after recording).
fn saves_in_place(n: &NodePlan<'_>, diff_outputs: &[usize]) -> Option<Vec<TokenStream>> {
    n.fields
        .iter()
        .filter_map(|f| match f.source {
            FieldSource::Output { index, list } => Some((&f.ident, index, list)),
            _ => None,
        })
        .map(|(id, index, list)| {
            let k = diff_outputs.iter().position(|&i| i == index)?;
            (!list).then(|| quote!(__n.#id = __s.save(#k);))
        })
        .collect()
}

fn needs(inputs: &[DiffInput<'_>]) -> Vec<TokenStream> {
    inputs
        .iter()
        .map(|i| {
            let n = crate::names::ident(&i.arg.name);
            match i.kind {
                TensorKind::One => quote!(#n.requires_grad()),
                TensorKind::Opt => quote!(#n.is_some_and(|v| v.requires_grad())),
                TensorKind::List => quote!(#n.iter().any(|v| v.requires_grad())),
                TensorKind::OptList => {
                    quote!(#n.iter().any(|v| v.as_ref().is_some_and(|v| v.requires_grad())))
                }
            }
        })
        .collect()
}

/// Edges: one per differentiable input, flattened for lists (with the offset of each
/// input's first edge).
fn edges(inputs: &[DiffInput<'_>]) -> (Option<TokenStream>, TokenStream) {
    let name = |i: &DiffInput<'_>| crate::names::ident(&i.arg.name);
    if !inputs.iter().any(|i| i.kind.is_list()) {
        let es = inputs.iter().map(|i| {
            let n = name(i);
            match i.kind {
                TensorKind::Opt => quote!(#n),
                _ => quote!(__ag::Some(#n)),
            }
        });
        return (None, quote!([#(#es),*]));
    }
    let pushes = inputs.iter().map(|i| {
        let n = name(i);
        let push = match i.kind {
            TensorKind::One => quote!(__edges.push(__ag::Some(#n));),
            TensorKind::Opt => quote!(__edges.push(#n);),
            TensorKind::List => quote!(__edges.extend(#n.iter().map(__ag::Some));),
            TensorKind::OptList => quote!(__edges.extend(#n.iter().map(|v| v.as_ref()));),
        };
        quote!(#push __offsets.push(__edges.len());)
    });
    (
        Some(quote!(let mut __offsets: __ag::Vec<usize> = __ag::Vec::from([0]);)),
        quote!({
            let mut __edges: __ag::Vec<__ag::Option<&__ag::Variable<T>>> = __ag::Vec::new();
            #(#pushes)*
            __edges
        }),
    )
}

/// The node's initialiser: each saved value is captured only when an input whose formula
/// uses it needs a gradient.
fn node_init(n: &NodePlan<'_>, inplace: bool) -> TokenStream {
    let inits = n.fields.iter().map(|f| {
        let id = &f.ident;
        let cond = match &f.users[..] {
            [] => quote!(true),
            users => {
                let c = users.iter().map(|u| quote!(__needs[#u]));
                quote!(#(#c)||*)
            }
        };
        let value = match &f.source {
            FieldSource::Output { .. } => quote!(__ag::Default::default()),
            FieldSource::Property { var, prop } => capture(var, prop, &cond),
            FieldSource::Tensor(TensorKind::One) if inplace && f.name == "self" => {
                quote!(if #cond { __ag::SavedVariable::new(&__ag::clone_var(self_), false) } else { __ag::Default::default() })
            }
            FieldSource::Tensor(TensorKind::One) => quote!(__ag::save_if(#cond, #id)),
            FieldSource::Tensor(TensorKind::Opt) => quote!(__ag::save_opt_if(#cond, #id)),
            FieldSource::Tensor(TensorKind::List) => {
                quote!(if #cond { #id.iter().map(|v| __ag::SavedVariable::new(v, false)).collect() } else { __ag::Vec::new() })
            }
            FieldSource::Tensor(TensorKind::OptList) => {
                quote!(if #cond { #id.iter().map(|v| __ag::SavedVariable::new_opt(v.as_ref(), false)).collect() } else { __ag::Vec::new() })
            }
            FieldSource::Value(v) if v.to_owned == Conversion::Copy => return quote!(#id,),
            FieldSource::Value(v) => v.owned_expr(&quote!(#id)),
        };
        quote!(#id: #value,)
    });
    let name = &n.name;
    let offsets = n.lists.then(|| quote!(__offsets,));
    quote!(#name::<T> { #(#inits)* __needs, #offsets __marker: __ag::PhantomData })
}

/// The capture of a property at record time.
fn capture(var: &Ident, prop: &Property, cond: &TokenStream) -> TokenStream {
    match prop {
        Property::Sizes => {
            quote!(if #cond { #var.shape().iter().map(|&d| d as i64).collect() } else { __ag::Vec::new() })
        }
        Property::Shape => quote!(if #cond { #var.shape() } else { __ag::Vec::new() }),
        Property::Numel => quote!(#var.shape().iter().product::<usize>() as i64),
        Property::Dim => quote!(#var.shape().len() as i64),
        Property::Dtype => quote!(#var.with_data(|t| __ag::Tensor::dtype(t))),
        Property::ArgsSizes => quote!(if #cond {
            #var.iter().map(|v| v.shape().iter().map(|&d| d as i64).collect()).collect()
        } else {
            __ag::Vec::new()
        }),
        Property::Size(d) => quote!(__ag::size_at(&#var.shape(), (#d) as i64) as i64),
        Property::ArgsScalarTypes => quote!(if #cond {
            #var.iter().map(|v| v.with_data(|t| __ag::Tensor::dtype(t))).collect()
        } else {
            __ag::Vec::new()
        }),
        Property::Options => {
            quote!(__ag::types::TensorOptions::of(#var.with_data(|t| __ag::Tensor::dtype(t))))
        }
        Property::Layout => quote!(__ag::types::Layout::Strided),
        Property::Strides => {
            quote!(if #cond { __ag::contiguous_strides(&#var.shape()) } else { __ag::Vec::new() })
        }
        Property::Geometry => quote!(if #cond {
            #var.with_data(__ag::types::TensorGeometry::of)
        } else {
            __ag::types::TensorGeometry::default()
        }),
    }
}

/// Saved outputs, filled in once the outputs exist. Each is saved before the node is
/// locked: saving may run a user's saved-tensor pack hook, and no user code runs under a
/// runtime lock.
fn save_outputs(n: &NodePlan<'_>, outs: &[TokenStream]) -> TokenStream {
    let (lets, saves): (Vec<TokenStream>, Vec<TokenStream>) = n
        .fields
        .iter()
        .filter_map(|f| {
            let FieldSource::Output { index, list } = f.source else {
                return None;
            };
            let id = &f.ident;
            let tmp = quote::format_ident!("__saved_{}", id);
            let o = outs.get(index).cloned().unwrap_or_else(|| quote!(__o0));
            let value = match list {
                true => quote!(#o.iter().map(|v| __ag::SavedVariable::new(v, true)).collect()),
                false => quote!(__ag::SavedVariable::new(&#o, true)),
            };
            Some((quote!(let #tmp = #value;), quote!(__n.#id = #tmp;)))
        })
        .unzip();
    if saves.is_empty() {
        quote!()
    } else {
        quote!(#(#lets)* __handle.with(|__n| { #(#saves)* });)
    }
}

fn inplace_body(
    p: &FunctionPlan<'_>,
    node: Option<&NodePlan<'_>>,
    s: &Settings,
) -> (TokenStream, TokenStream) {
    let ret = quote!(__ag::Result<__ag::Variable<T>, __ag::AutogradError>);
    let pr = prep(p, false);
    let (name, args, lets) = (&p.name, &pr.args, &pr.lets);
    let kernel = s.kernel_call(quote!(<T as Backend>::#name(#(#args),*)));
    let call = quote!(#kernel; __ag::check_inplace_shape(self_, &__d_self_)?);
    let fw = super::forward::call(p, s);
    let plain = quote! {
        self_.check_inplace()?;
        #(#lets)*
        #call;
        self_.set_data(__d_self_);
        self_.bump_version();
        #fw
        Ok(self_.clone())
    };
    let on_view = super::view::inplace_on_view(p);
    let orig = super::forward::original_self(p);
    let on_view = quote!(#on_view #orig);
    let Some(n) = node else {
        let body = not_implemented_inplace(p, plain, &lets[..], &call, &fw);
        return (ret, quote!(#on_view #body));
    };
    let needs = needs(&n.inputs);
    let (offsets, edges) = edges(&n.inputs);
    let init = node_init(n, true);
    let save = save_outputs(n, &[quote!(self_)]);
    let body = quote! {
        #on_view
        let __needs = [#(#needs),*];
        if !__ag::should_record_into(&__needs, self_) {
            #plain
        } else {
            self_.check_inplace()?;
            #(#lets)*
            #offsets
            let __node = #init;
            #call;
            let __edges = #edges;
            let __handle = __ag::record_inplace(__node, &__edges, self_, __ag::Some(__d_self_))?;
            #fw
            #save
            Ok(self_.clone())
        }
    };
    (ret, body)
}

/// An in-place function without a derivatives entry rebases `self` onto a `NotImplemented`
/// node when an input requires grad.
fn not_implemented_inplace(
    p: &FunctionPlan<'_>,
    plain: TokenStream,
    lets: &[TokenStream],
    call: &TokenStream,
    fw: &TokenStream,
) -> TokenStream {
    if p.not_implemented.is_empty() {
        return plain;
    }
    let needs = needs(&p.not_implemented);
    let (offsets, edges) = edges(&p.not_implemented);
    let op = p.nf.func.name.name.to_string();
    quote! {
        let __needs = [#(#needs),*];
        if !__ag::should_record_into(&__needs, self_) {
            #plain
        } else {
            self_.check_inplace()?;
            #(#lets)*
            #call;
            #offsets
            let __edges = #edges;
            __ag::record_inplace(__ag::NotImplementedNode::new(#op), &__edges, self_, __ag::Some(__d_self_))?;
            #fw
            Ok(self_.clone())
        }
    }
}

fn out_body(p: &FunctionPlan<'_>, s: &Settings) -> (TokenStream, TokenStream) {
    let tensors = p.params.iter().filter_map(|q| {
        let n = &q.ident;
        match q.ty {
            RustTy::Tensor => Some(quote!(__args.push(#n);)),
            RustTy::OptTensor => Some(quote!(__args.extend(#n);)),
            RustTy::TensorList => Some(quote!(__args.extend(#n.iter());)),
            RustTy::OptTensorList => Some(quote!(__args.extend(#n.iter().flatten());)),
            RustTy::Value(_) => None,
        }
    });
    let out_args = &p.nf.func.arguments.out;
    let outs: Vec<Ident> = out_args
        .iter()
        .map(|a| crate::names::ident(&a.name))
        .collect();
    let ds: Vec<Ident> = outs.iter().map(|o| format_ident!("__d_{}", o)).collect();
    let ret_ty = tuple(outs.iter().map(|_| quote!(__ag::Variable<T>)).collect());
    let ret = tuple(outs.iter().map(|o| quote!(#o.clone())).collect());
    let opname = p.nf.func.name.name.to_string();
    let pr = prep(p, false);
    let (name, args, lets) = (&p.name, &pr.args, &pr.lets);
    let call = s.kernel_call(quote!(<T as Backend>::#name(#(#args),*)));
    let fw = super::forward::call(p, s);
    // An out that is a view: the write reaches its base (PyTorch's out= writes the storage),
    // as an in-place op's does.
    let on_view = match outs.as_slice() {
        [o] => {
            let call_args = p.params.iter().map(|q| match &q.ident {
                n if n == o => quote!(__c),
                n => quote!(#n),
            });
            quote! {
                if #o.is_view() {
                    return __ag::inplace_on_view(#o, false, |__c| {
                        #name::<T>(#(#call_args),*).map(|_| ())
                    });
                }
            }
        }
        _ => quote!(),
    };
    let body = quote! {
        {
            let mut __args: __ag::Vec<&__ag::Variable<T>> = __ag::Vec::new();
            #(#tensors)*
            __ag::check_out(#opname, &__args)?;
        }
        #fw
        #on_view
        #(#lets)*
        #call;
        #( #outs.set_data(#ds); #outs.bump_version(); )*
        Ok(#ret)
    };
    (quote!(__ag::Result<#ret_ty, __ag::AutogradError>), body)
}
