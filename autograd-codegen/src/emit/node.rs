//! Backward nodes: a struct with typed saved fields implementing the runtime's `Node`.

use super::Settings;
use super::plan::{FieldSource, FormulaPlan, NodePlan, Property, SavedField, TensorKind};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The node's struct and its `Node` impl.
pub(crate) fn node(n: &NodePlan<'_>, s: &Settings) -> TokenStream {
    let name = &n.name;
    let n_inputs = n.inputs.len();
    let field_decls = n.fields.iter().map(|f| {
        let (id, ty) = (&f.ident, field_type(f));
        quote!(pub #id: #ty,)
    });
    let offsets_decl = n.lists.then(|| quote!(pub __offsets: __ag::Vec<usize>,));
    let releases = n.fields.iter().filter_map(|f| {
        let id = &f.ident;
        Some(match f.saved_variables()? {
            true => quote!(for s in self.#id.iter_mut() { s.reset(); }),
            false => quote!(self.#id.reset();),
        })
    });
    let visits = n.fields.iter().filter_map(|f| {
        let (id, label) = (&f.ident, &f.name);
        Some(match f.saved_variables()? {
            true => quote!(for s in self.#id.iter() { f(#label, s); }),
            false => quote!(f(#label, &self.#id);),
        })
    });
    let visits_mut = n.fields.iter().filter_map(|f| {
        let (id, label) = (&f.ident, &f.name);
        Some(match f.saved_variables()? {
            true => quote!(for s in self.#id.iter_mut() { f(#label, s); }),
            false => quote!(f(#label, &mut self.#id);),
        })
    });
    let doc = format!(
        "Backward of `{}` (generated from derivatives.yaml).",
        n.entry
    );
    let op_name = name.to_string();
    let apply = apply_body(n, s, Form::Var);
    let apply_raw = n.raw.then(|| apply_raw(n, s));
    quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types, non_snake_case, clippy::all)]
        pub struct #name<T: Backend> {
            #(#field_decls)*
            /// Which differentiable inputs needed a gradient when the op ran.
            pub __needs: [bool; #n_inputs],
            #offsets_decl
            #[doc(hidden)]
            pub __marker: __ag::PhantomData<fn() -> T>,
        }

        #[allow(clippy::all)]
        impl<T: Backend> __ag::Node<T> for #name<T> {
            fn name(&self) -> &str {
                #op_name
            }

            #[allow(unused_variables, unused_mut, non_snake_case, clippy::all)]
            fn apply(
                &mut self,
                grads: __ag::VariableList<T>,
            ) -> __ag::Result<__ag::VariableList<T>, __ag::AutogradError> {
                #apply
            }

            #apply_raw

            fn release_variables(&mut self) {
                #(#releases)*
            }

            #[allow(unused_variables)]
            fn visit_saved(&self, f: &mut dyn FnMut(&str, &__ag::SavedVariable<T>)) {
                #(#visits)*
            }

            #[allow(unused_variables)]
            fn visit_saved_mut(&mut self, f: &mut dyn FnMut(&str, &mut __ag::SavedVariable<T>)) {
                #(#visits_mut)*
            }
        }
    }
}

/// `Node::apply_raw`: the formulas on raw tensors.
fn apply_raw(n: &NodePlan<'_>, s: &Settings) -> TokenStream {
    let body = apply_body(n, s, Form::Raw);
    quote! {
        #[allow(unused_variables, unused_mut, non_snake_case, clippy::all)]
        fn apply_raw(
            &mut self,
            grads: &mut __ag::RawList<T>,
            __out: &mut __ag::RawList<T>,
        ) -> __ag::Result<(), __ag::AutogradError> {
            #body
        }
    }
}

/// The Rust type of a saved field.
fn field_type(f: &SavedField) -> TokenStream {
    match &f.source {
        FieldSource::Tensor(k) if k.is_list() => quote!(__ag::Vec<__ag::SavedVariable<T>>),
        FieldSource::Tensor(_) => quote!(__ag::SavedVariable<T>),
        FieldSource::Output { list: true, .. } => quote!(__ag::Vec<__ag::SavedVariable<T>>),
        FieldSource::Output { .. } => quote!(__ag::SavedVariable<T>),
        FieldSource::Value(v) => v.owned.clone(),
        FieldSource::Property { prop, .. } => match prop {
            Property::Sizes => quote!(__ag::Vec<i64>),
            Property::Shape => quote!(__ag::Vec<usize>),
            Property::Numel | Property::Dim | Property::Size(_) => quote!(i64),
            Property::Dtype => quote!(&'static str),
            Property::ArgsSizes => quote!(__ag::Vec<__ag::Vec<i64>>),
            Property::ArgsScalarTypes => quote!(__ag::Vec<&'static str>),
            Property::Options => quote!(__ag::types::TensorOptions),
            Property::Layout => quote!(__ag::types::Layout),
            Property::Strides => quote!(__ag::Vec<i64>),
            Property::Geometry => quote!(__ag::types::TensorGeometry),
        },
    }
}

/// Which form of the formulas a body is: on variables (`apply`, recording under
/// `create_graph`) or on raw tensors (`apply_raw`: the `raw` module's kernels and the raw
/// helpers).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    Var,
    Raw,
}

fn apply_body(n: &NodePlan<'_>, s: &Settings, form: Form) -> TokenStream {
    let total = match n.lists {
        true => {
            let k = n.inputs.len();
            quote!(self.__offsets[#k])
        }
        false => {
            let k = n.inputs.len();
            quote!(#k)
        }
    };
    let helpers = match form {
        Form::Var => s
            .helpers
            .as_ref()
            .map(|h| quote!(#[allow(unused_imports)] use #h::*;)),
        Form::Raw => {
            let h = s
                .raw_helpers
                .as_ref()
                .map(|h| quote!(#[allow(unused_imports)] use #h::*;));
            Some(quote!(#[allow(unused_imports)] use self::raw::*; #h))
        }
    };
    // Only what some formula uses: fewer tokens make the macro expand faster.
    let not_impl = n.not_implemented.then(|| {
        let op = &n.info.name;
        quote!(
            #[allow(dead_code)]
            fn not_implemented(reason: &str) -> __ag::NotImplemented {
                __ag::NotImplemented::new(#op, reason)
            }
            #[allow(dead_code)]
            fn not_implemented_named(name: &str, reason: &str) -> __ag::NotImplemented {
                __ag::NotImplemented::new(name, reason)
            }
        )
    });
    // `grad` is the same for every formula: bound once; no gradient, nothing to do.
    let grad = n.uses_grad.then(|| match form {
        Form::Var => quote!(let __ag::Some(grad) = grads[0].clone() else { return Ok(__out) };),
        // `grad` and `grads` are never both used: the raw form takes it.
        Form::Raw => quote!(let __ag::Some(grad) = grads[0].take() else { return Ok(()) };),
    });
    let blocks = n.formulas.iter().map(|f| formula_block(n, f, s, form));
    // `apply` returns its list; `apply_raw` fills the one it is given.
    let (init, done) = match form {
        Form::Var => (
            quote!(let mut __out = __ag::VariableList::<T>::with_len(#total);),
            quote!(__out),
        ),
        Form::Raw => (quote!(__out.reset(#total);), quote!(())),
    };
    quote! {
        #helpers
        #not_impl
        #init
        if grads.iter().all(__ag::Option::is_none) {
            return Ok(#done);
        }
        #grad
        #(#blocks)*
        Ok(#done)
    }
}

/// `if` some input of the formula needs a gradient: bind what it reads, run it, place the
/// gradients.
fn formula_block(n: &NodePlan<'_>, f: &FormulaPlan, s: &Settings, form: Form) -> TokenStream {
    let binds = f.fields.iter().map(|i| match form {
        Form::Raw if f.borrowed.contains(i) => bind_borrowed(&n.fields[*i]),
        _ => bind(&n.fields[*i], form),
    });
    let grad_ty = match form {
        Form::Var => quote!(__ag::Variable<T>),
        Form::Raw => quote!(T),
    };
    let mut extra = Vec::new();
    if f.clone_grad {
        // A formula may move `grad`; each of several uses gets its own handle.
        extra.push(quote!(let grad = grad.clone();));
    }
    if f.grads {
        extra.push(quote!(let grads: &[__ag::Option<#grad_ty>] = &grads[..];));
    }
    for (g, idx) in &f.named {
        extra.push(quote!(let #g: __ag::Option<#grad_ty> = grads.get(#idx).cloned().flatten();));
    }
    if f.grad_input_mask {
        let m = f.positions.iter().map(|p| quote!(self.__needs[#p]));
        extra.push(quote!(let grad_input_mask = [#(#m),*];));
    }
    if f.retain_variables {
        extra.push(quote!(let retain_variables = __ag::is_retaining_graph();));
    }
    if f.wrap_opt_if {
        extra.push(quote!(
            use __ag::wrap_opt_if;
        ));
    }
    let cond = f.positions.iter().map(|p| quote!(self.__needs[#p]));
    let value = s.formula_expr(f, form);
    let place = place(n, f, form);
    quote! {
        if #(#cond)||* {
            #(#binds)*
            #(#extra)*
            let __r = #value;
            #place
        }
    }
}

/// A saved tensor the raw form's formula only borrows: a reference to the saved data
/// (`FormulaPlan::borrowed`), held for the formula.
fn bind_borrowed(f: &SavedField) -> TokenStream {
    let id = &f.ident;
    let guard = format_ident!("__{}_data", id);
    quote!(let #guard = self.#id.data_ref()?; let #id: &T = &#guard;)
}

/// A saved field as the formula sees it.
fn bind(f: &SavedField, form: Form) -> TokenStream {
    let id = &f.ident;
    let (unpack, unpack_opt) = match form {
        Form::Var => (quote!(unpack), quote!(unpack_opt)),
        Form::Raw => (quote!(unpack_data), quote!(unpack_opt_data)),
    };
    let unpack_all = |m: TokenStream| quote!(let #id = self.#id.iter().map(|s| s.#m()).collect::<__ag::Result<__ag::Vec<_>, _>>()?;);
    match &f.source {
        FieldSource::Property {
            prop:
                Property::Sizes
                | Property::Shape
                | Property::ArgsSizes
                | Property::ArgsScalarTypes
                | Property::Strides,
            ..
        } => {
            quote!(let #id = &self.#id[..];)
        }
        FieldSource::Property {
            prop: Property::Geometry,
            ..
        } => quote!(let #id = &self.#id;),
        FieldSource::Property { .. } => quote!(let #id = self.#id;),
        FieldSource::Output { list: true, .. } => unpack_all(unpack),
        FieldSource::Output { .. } | FieldSource::Tensor(TensorKind::One) => {
            quote!(let #id = self.#id.#unpack()?;)
        }
        FieldSource::Tensor(TensorKind::Opt) => quote!(let #id = self.#id.#unpack_opt()?;),
        FieldSource::Tensor(TensorKind::List) => unpack_all(unpack),
        FieldSource::Tensor(TensorKind::OptList) => unpack_all(unpack_opt),
        FieldSource::Value(v) => {
            let b = v.bind_expr(&quote!(self.#id));
            quote!(let #id = #b;)
        }
    }
}

/// Where the formula's result goes in the gradient list.
fn place(n: &NodePlan<'_>, f: &FormulaPlan, form: Form) -> TokenStream {
    let k = f.positions.len();
    let (one, list, several) = match form {
        Form::Var => (
            quote!(__ag::IntoGrad::<T>::into_grad),
            quote!(__ag::IntoGradList::<T>::into_grad_list),
            quote!(IntoGrads::<T, #k>::into_grads),
        ),
        Form::Raw => (
            quote!(__ag::IntoRawGrad::<T>::into_raw_grad),
            quote!(__ag::IntoRawGradList::<T>::into_raw_grad_list),
            quote!(IntoRawGrads::<T, #k>::into_raw_grads),
        ),
    };
    let at = |p: usize| match n.lists {
        true => quote!(self.__offsets[#p]),
        false => quote!(#p),
    };
    if let [p] = f.positions[..] {
        let start = at(p);
        if n.inputs[p].kind.is_list() {
            let end = at(p + 1);
            return quote! {
                let __g = #list(__r)?;
                for (__i, __x) in (#start..#end).zip(__g) {
                    __out[__i] = __x;
                }
            };
        }
        return quote!(__out[#start] = #one(__r)?;);
    }
    let sets = f.positions.iter().enumerate().map(|(j, p)| {
        let slot = at(*p);
        quote!(if self.__needs[#p] { __out[#slot] = __g[#j].take(); })
    });
    quote! {
        let mut __g = __ag::#several(__r)?;
        #(#sets)*
    }
}
