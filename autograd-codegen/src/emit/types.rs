//! Schema types as Rust types: the documented map behind the generated backend trait.
//!
//! | schema | wrapper / backend parameter | saved field | in a formula |
//! |---|---|---|---|
//! | `Tensor` | `&Variable<T>` / `&T` | `SavedVariable<T>` | `Variable<T>` |
//! | `Tensor?` | `Option<&Variable<T>>` / `Option<&T>` | `SavedVariable<T>` | `Option<Variable<T>>` |
//! | `Tensor[]` | `&[Variable<T>]` / `&[T]` | `Vec<SavedVariable<T>>` | `Vec<Variable<T>>` |
//! | `Tensor?[]` | `&[Option<Variable<T>>]` / `&[Option<T>]` | `Vec<SavedVariable<T>>` | `Vec<Option<Variable<T>>>` |
//! | `int`, `SymInt` | `i64` | `i64` | `i64` |
//! | `int[]`, `int[N]`, `SymInt[]` | `&[i64]` | `Vec<i64>` | `&[i64]` |
//! | `float` / `float[]` | `f64` / `&[f64]` | `f64` / `Vec<f64>` | `f64` / `&[f64]` |
//! | `bool` / `bool[N]` / `bool[]` | `bool` / `[bool; N]` / `&[bool]` | same, owned | same |
//! | `str` | `&str` | `String` | `&str` |
//! | `Scalar` | `impl Into<types::Scalar>` / `types::Scalar` | `types::Scalar` | `types::Scalar` |
//! | `Scalar[]` | `&[f64]` | `Vec<f64>` | `&[f64]` |
//! | `ScalarType`, `Layout`, `Device`, `MemoryFormat` | `autograd::types::*` | same | same |
//! | `Generator` | `&autograd::types::Generator` | not saved | — |
//! | `T?` (non-tensor) | `Option<..>` of the above | `Option<owned>` | `Option<..>` |
//!
//! Returns: `Tensor` is `T` (backend) / `Variable<T>` (wrapper), `Tensor[]` a `Vec`, tuples
//! tuples, numbers as above, `()` nothing.

use crate::model::schema::{BaseTy, Type};
use proc_macro2::TokenStream;
use quote::quote;

/// How one schema type appears in generated code.
#[derive(Debug, Clone)]
pub enum RustTy {
    /// `Tensor`.
    Tensor,
    /// `Tensor?`.
    OptTensor,
    /// `Tensor[]`.
    TensorList,
    /// `Tensor?[]`.
    OptTensorList,
    /// Any non-tensor value.
    Value(ValueTy),
}

/// A non-tensor value type.
#[derive(Debug, Clone)]
pub struct ValueTy {
    /// As a parameter (borrowed form).
    pub param: TokenStream,
    /// As a saved field (owned form).
    pub owned: TokenStream,
    /// How a parameter becomes the owned form (`{}` is the parameter).
    pub to_owned: Conversion,
    /// Can the value be saved at all (a `Generator` cannot).
    pub savable: bool,
    /// Wrappers take `impl Into<param>` (a `Scalar`: Rust numbers pass as they are).
    pub into: bool,
}

/// Conversions between borrowed and owned forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    /// `Copy` types: the same value.
    Copy,
    /// `&[X]` <-> `Vec<X>`.
    Slice,
    /// `&str` <-> `String`.
    Str,
    /// `Option<&[X]>` <-> `Option<Vec<X>>`.
    OptSlice,
    /// `Option<&str>` <-> `Option<String>`.
    OptStr,
}

impl ValueTy {
    fn copy(t: TokenStream) -> Self {
        ValueTy {
            param: t.clone(),
            owned: t,
            to_owned: Conversion::Copy,
            savable: true,
            into: false,
        }
    }

    /// `param` -> owned field value.
    pub fn owned_expr(&self, param: &TokenStream) -> TokenStream {
        match self.to_owned {
            Conversion::Copy => quote!(#param),
            Conversion::Slice => quote!(#param.to_vec()),
            Conversion::Str => quote!(#param.to_string()),
            Conversion::OptSlice => quote!(#param.map(|v| v.to_vec())),
            Conversion::OptStr => quote!(#param.map(|v| v.to_string())),
        }
    }

    /// Owned field -> the borrowed form a formula sees.
    pub fn bind_expr(&self, field: &TokenStream) -> TokenStream {
        match self.to_owned {
            Conversion::Copy => quote!(#field),
            Conversion::Slice => quote!(&#field[..]),
            Conversion::Str => quote!(#field.as_str()),
            Conversion::OptSlice | Conversion::OptStr => quote!(#field.as_deref()),
        }
    }
}

/// How schema types become Rust types: the path generated code names its support items by,
/// and the user's overrides of value types (`types = { Scalar = f32 }` in the macro).
#[derive(Debug, Clone)]
pub struct TypeMap {
    /// The path prefix of `types::ScalarType` etc. (`__ag` in generated code).
    pub krate: TokenStream,
    /// Overridden base types and their Rust type (a `Copy` type).
    pub overrides: Vec<(BaseTy, TokenStream)>,
}

/// The base types whose Rust type can be overridden: plain values, passed by copy.
pub const OVERRIDABLE: &[BaseTy] = &[
    BaseTy::Int,
    BaseTy::SymInt,
    BaseTy::Float,
    BaseTy::Scalar,
    BaseTy::Bool,
    BaseTy::SymBool,
    BaseTy::ScalarType,
    BaseTy::Layout,
    BaseTy::Device,
    BaseTy::MemoryFormat,
];

fn base_value(b: BaseTy, map: &TypeMap) -> Option<ValueTy> {
    if let Some((_, t)) = map.overrides.iter().find(|(o, _)| *o == b) {
        return Some(ValueTy::copy(t.clone()));
    }
    let krate = &map.krate;
    Some(match b {
        BaseTy::Int | BaseTy::SymInt => ValueTy::copy(quote!(i64)),
        BaseTy::Float => ValueTy::copy(quote!(f64)),
        BaseTy::Scalar => ValueTy {
            into: true,
            ..ValueTy::copy(quote!(#krate::types::Scalar))
        },
        BaseTy::Bool | BaseTy::SymBool => ValueTy::copy(quote!(bool)),
        BaseTy::Str => ValueTy {
            param: quote!(&str),
            owned: quote!(__ag::String),
            to_owned: Conversion::Str,
            savable: true,
            into: false,
        },
        BaseTy::ScalarType => ValueTy::copy(quote!(#krate::types::ScalarType)),
        BaseTy::Layout => ValueTy::copy(quote!(#krate::types::Layout)),
        BaseTy::Device => ValueTy::copy(quote!(#krate::types::Device)),
        BaseTy::MemoryFormat => ValueTy::copy(quote!(#krate::types::MemoryFormat)),
        BaseTy::Generator => ValueTy {
            param: quote!(&#krate::types::Generator),
            owned: quote!(()),
            to_owned: Conversion::Copy,
            savable: false,
            into: false,
        },
        _ => return None,
    })
}

/// Map a schema type; `Err` names what has no Rust mapping.
pub fn rust_ty(t: &Type, krate: &TypeMap) -> Result<RustTy, String> {
    let unsupported = || format!("type `{t}` has no Rust mapping");
    Ok(match t {
        Type::Base(BaseTy::Tensor) => RustTy::Tensor,
        Type::Optional(e) if **e == Type::Base(BaseTy::Tensor) => RustTy::OptTensor,
        Type::List { elem, .. } if **elem == Type::Base(BaseTy::Tensor) => RustTy::TensorList,
        Type::List { elem, .. } if matches!(&**elem, Type::Optional(i) if **i == Type::Base(BaseTy::Tensor)) => {
            RustTy::OptTensorList
        }
        Type::Base(b) => RustTy::Value(base_value(*b, krate).ok_or_else(unsupported)?),
        Type::List { elem, size } => {
            let Type::Base(b) = &**elem else {
                return Err(unsupported());
            };
            // `Scalar[]` is `&[f64]` (the formulas' `float[]`), whatever one `Scalar` is.
            let scalar_list = *b == BaseTy::Scalar && !krate.overrides.iter().any(|o| o.0 == *b);
            let inner = match scalar_list {
                true => ValueTy::copy(quote!(f64)),
                false => base_value(*b, krate).ok_or_else(unsupported)?,
            };
            if inner.to_owned != Conversion::Copy || !inner.savable {
                return Err(unsupported());
            }
            let p = inner.param;
            match (b, size) {
                (BaseTy::Bool, Some(n)) => {
                    let n = proc_macro2::Literal::usize_unsuffixed(*n);
                    RustTy::Value(ValueTy::copy(quote!([bool; #n])))
                }
                _ => RustTy::Value(ValueTy {
                    param: quote!(&[#p]),
                    owned: quote!(__ag::Vec<#p>),
                    to_owned: Conversion::Slice,
                    savable: true,
                    into: false,
                }),
            }
        }
        Type::Optional(inner) => match rust_ty(inner, krate)? {
            RustTy::Value(v) => {
                let (p, o) = (v.param, v.owned);
                RustTy::Value(ValueTy {
                    param: quote!(__ag::Option<#p>),
                    owned: quote!(__ag::Option<#o>),
                    to_owned: match v.to_owned {
                        Conversion::Copy => Conversion::Copy,
                        Conversion::Slice => Conversion::OptSlice,
                        Conversion::Str => Conversion::OptStr,
                        _ => return Err(unsupported()),
                    },
                    savable: v.savable,
                    into: false,
                })
            }
            _ => return Err(unsupported()),
        },
        Type::CustomClass(_) => return Err(unsupported()),
    })
}
