//! The argument and return names torchgen's analysis sees (its C++ API view of a schema).
//!
//! torchgen names things through the C++ signature: out= arguments come first, `dtype,
//! layout, device, pin_memory` collapse into `options`, in-place returns are `self`, unnamed
//! returns `result`/`resultN`. The analysis must use the same names to agree with it.

use crate::model::schema::{Argument, BaseTy, FunctionSchema, Type};

/// One argument as the analysis sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CppArg<'a> {
    /// Its name (`options` for the grouped tensor options).
    pub name: &'a str,
    /// The schema argument (`None` for `options`).
    pub arg: Option<&'a Argument>,
}

impl CppArg<'_> {
    /// The schema type, if this is a plain argument.
    pub fn ty(&self) -> Option<&Type> {
        self.arg.map(|a| &a.ty)
    }

    /// `Tensor[]` exactly (torchgen's `TensorList` bindings).
    pub fn is_tensor_list(&self) -> bool {
        matches!(self.ty(), Some(Type::List { elem, .. }) if **elem == Type::Base(BaseTy::Tensor))
    }
}

/// The arguments in C++ API order: out= first, then the others with tensor options grouped.
pub fn cpp_arguments(f: &FunctionSchema) -> Vec<CppArg<'_>> {
    let a = &f.arguments;
    let mut v: Vec<CppArg<'_>> = Vec::new();
    fn plain(x: &Argument) -> CppArg<'_> {
        CppArg {
            name: x.name.as_str(),
            arg: Some(x),
        }
    }
    v.extend(a.out.iter().map(plain));
    v.extend(a.flat_positional().map(plain));
    v.extend(a.pre_tensor_options_kwarg_only.iter().map(plain));
    if a.tensor_options.is_some() {
        v.push(CppArg {
            name: "options",
            arg: None,
        });
    }
    v.extend(a.post_tensor_options_kwarg_only.iter().map(plain));
    v
}

/// torchgen's `cpp.return_names`: `self` for in-place, the out= argument names for out=
/// functions, declared names (with `_return` when they clash with an argument), else
/// `result` / `result0..`.
pub fn return_names(f: &FunctionSchema) -> Vec<String> {
    let n = f.returns.len();
    f.returns
        .iter()
        .enumerate()
        .map(|(i, r)| {
            if f.name.name.inplace {
                "self".to_string()
            } else if f.is_out_fn() {
                f.arguments
                    .out
                    .get(i)
                    .map_or_else(|| format!("result{i}"), |a| a.name.clone())
            } else if let Some(name) = &r.name {
                if f.arguments.flat_all().any(|a| &a.name == name) {
                    format!("{name}_return")
                } else {
                    name.clone()
                }
            } else if n == 1 {
                "result".to_string()
            } else {
                format!("result{i}")
            }
        })
        .collect()
}

/// torchgen's `cpp.name`: the base name (with `_` for in-place), plus `_out` for out= functions.
pub fn cpp_name(f: &FunctionSchema) -> String {
    let mut s = f.name.name.to_string();
    if f.is_out_fn() {
        s.push_str("_out");
    }
    s
}
