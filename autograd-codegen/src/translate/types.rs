//! The value types of the C++ formulas, read from schema types and from C++ declarations.
//!
//! Only the distinctions that decide an overload or the Rust form of a value are kept:
//! `SymInt` is `int64_t`, `SymIntArrayRef` is `IntArrayRef`, every tensor list is one type.
//! A `Tensor` that may be undefined (`Tensor()`, `grads[i]`, an optional tensor's value) is
//! [`Ty::OptTensor`]: in Rust, `Option<Variable<T>>`.

use super::syntax::{TemplateArg, TypeName};
use crate::model::schema::{BaseTy, Type};

/// A formula value's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    /// A defined tensor: `Variable<T>`.
    Tensor,
    /// A tensor that may be undefined, or `std::optional<Tensor>`: `Option<Variable<T>>`.
    OptTensor,
    /// `Tensor[]`, `TensorList`, `variable_list`, `std::vector<Tensor>`.
    TensorList,
    /// `Tensor?[]`, `c10::List<std::optional<Tensor>>`.
    OptTensorList,
    /// `int64_t`, `SymInt`, `size_t`, `int`.
    Int,
    /// `double`, `float`.
    Float,
    /// `bool`.
    Bool,
    /// `Scalar`.
    Scalar,
    /// `IntArrayRef`, `SymIntArrayRef`, `std::vector<int64_t>`, `DimVector`.
    IntList,
    /// `ArrayRef<double>`.
    FloatList,
    /// `std::array<bool, N>`.
    BoolArray(usize),
    /// `ScalarType`.
    ScalarType,
    /// `Layout`.
    Layout,
    /// `Device`.
    Device,
    /// `MemoryFormat`.
    MemoryFormat,
    /// `TensorOptions`: a tensor's dtype, layout and device together.
    Options,
    /// `c10::string_view`, `std::string`, `const char*`.
    Str,
    /// `std::optional<T>` of a non-tensor.
    Opt(Box<Ty>),
    /// `std::tuple<...>`.
    Tuple(Vec<Ty>),
    /// A `Generator`.
    Generator,
    /// A brace list before it meets its parameter type.
    Brace(Vec<Ty>),
    /// A capture-less lambda with its parameter count.
    Lambda(usize),
    /// `std::nullopt`: converts to any optional.
    Nullopt,
    /// No value (`void`).
    Void,
    /// A type of the declarations the formulas never look into (`TensorGeometry`,
    /// `IndexRange`, ...), by name: values of it pass only to parameters of the same name.
    Opaque(String),
}

impl Ty {
    /// Is it a tensor, defined or not?
    pub fn is_tensor(&self) -> bool {
        matches!(self, Ty::Tensor | Ty::OptTensor)
    }

    /// Is it a number (usable in C++ arithmetic on numbers)?
    pub fn is_number(&self) -> bool {
        matches!(self, Ty::Int | Ty::Float | Ty::Bool | Ty::Scalar)
    }

    /// A short C++-like spelling for messages.
    pub fn show(&self) -> String {
        match self {
            Ty::Opt(t) => format!("std::optional<{}>", t.show()),
            Ty::Tuple(ts) => {
                let v: Vec<String> = ts.iter().map(Ty::show).collect();
                format!("std::tuple<{}>", v.join(", "))
            }
            Ty::Brace(ts) => {
                let v: Vec<String> = ts.iter().map(Ty::show).collect();
                format!("{{{}}}", v.join(", "))
            }
            Ty::BoolArray(n) => format!("std::array<bool, {n}>"),
            Ty::Opaque(n) => n.clone(),
            other => format!("{other:?}"),
        }
    }
}

/// The type of a schema type in the C++ API (`Tensor?` is an optional tensor, `int[1]?` an
/// optional list, `SymInt` an integer).
pub fn from_schema(t: &Type) -> Ty {
    match t {
        Type::Base(b) => from_base(*b),
        Type::Optional(inner) => match from_schema(inner) {
            Ty::Tensor => Ty::OptTensor,
            other => Ty::Opt(Box::new(other)),
        },
        Type::List { elem, size } => match from_schema(elem) {
            Ty::Tensor => Ty::TensorList,
            Ty::OptTensor => Ty::OptTensorList,
            Ty::Int => Ty::IntList,
            Ty::Float => Ty::FloatList,
            Ty::Bool => Ty::BoolArray(size.unwrap_or(0)),
            Ty::Scalar => Ty::FloatList,
            other => Ty::Opaque(format!("{}[]", other.show())),
        },
        Type::CustomClass(n) => Ty::Opaque(n.clone()),
    }
}

fn from_base(b: BaseTy) -> Ty {
    match b {
        BaseTy::Tensor => Ty::Tensor,
        BaseTy::Int | BaseTy::SymInt | BaseTy::DeviceIndex => Ty::Int,
        BaseTy::DimVector => Ty::IntList,
        BaseTy::Float => Ty::Float,
        BaseTy::Bool | BaseTy::SymBool => Ty::Bool,
        BaseTy::Scalar => Ty::Scalar,
        BaseTy::Str => Ty::Str,
        BaseTy::ScalarType => Ty::ScalarType,
        BaseTy::Layout => Ty::Layout,
        BaseTy::Device => Ty::Device,
        BaseTy::MemoryFormat => Ty::MemoryFormat,
        BaseTy::Generator => Ty::Generator,
        other => Ty::Opaque(other.as_str().to_string()),
    }
}

/// The last component of a qualified name: `c10::SymInt` -> `SymInt`.
pub fn unqualified(name: &str) -> &str {
    name.rsplit("::").next().unwrap_or(name)
}

/// The type a C++ type name denotes (`const at::Tensor&`, `c10::SymIntArrayRef`,
/// `std::optional<Tensor>`, `std::tuple<Tensor, Tensor>`).
pub fn from_cpp(t: &TypeName) -> Ty {
    let arg = |i: usize| match t.args.get(i) {
        Some(TemplateArg::Type(a)) => from_cpp(a),
        _ => Ty::Opaque("?".into()),
    };
    match unqualified(&t.name) {
        "Tensor" | "Variable" => Ty::Tensor,
        "TensorList" | "ITensorListRef" | "tensor_list" => Ty::TensorList,
        // Gradients: elements may be undefined.
        "variable_list" => Ty::OptTensorList,
        "int64_t" | "SymInt" | "int" | "size_t" | "int32_t" | "uint64_t" | "DeviceIndex" => Ty::Int,
        "double" | "float" => Ty::Float,
        "bool" => Ty::Bool,
        "Scalar" => Ty::Scalar,
        "IntArrayRef" | "SymIntArrayRef" | "DimVector" | "SymDimVector" => Ty::IntList,
        "OptionalIntArrayRef" | "OptionalSymIntArrayRef" => Ty::Opt(Box::new(Ty::IntList)),
        "ScalarType" => Ty::ScalarType,
        "Layout" => Ty::Layout,
        "Device" => Ty::Device,
        "MemoryFormat" => Ty::MemoryFormat,
        "TensorOptions" => Ty::Options,
        "string_view" | "string" | "char" => Ty::Str,
        "Generator" => Ty::Generator,
        "void" => Ty::Void,
        "optional" | "OptionalArrayRef" => opt(if unqualified(&t.name) == "optional" {
            arg(0)
        } else {
            list_of(arg(0))
        }),
        "vector" if matches!(t.args.first(), Some(TemplateArg::Type(a)) if unqualified(&a.name) == "Variable") => {
            Ty::OptTensorList
        }
        "vector" | "ArrayRef" | "List" | "SmallVector" => list_of(arg(0)),
        "array" => match (arg(0), t.args.get(1)) {
            (Ty::Bool, Some(TemplateArg::Int(n))) => Ty::BoolArray(*n as usize),
            (e, _) => list_of(e),
        },
        "tuple" => Ty::Tuple(
            t.args
                .iter()
                .map(|a| match a {
                    TemplateArg::Type(a) => from_cpp(a),
                    TemplateArg::Int(_) => Ty::Opaque("?".into()),
                })
                .collect(),
        ),
        other => Ty::Opaque(other.to_string()),
    }
}

/// `std::optional<t>`.
pub fn opt(t: Ty) -> Ty {
    match t {
        Ty::Tensor | Ty::OptTensor => Ty::OptTensor,
        o @ Ty::Opt(_) => o,
        other => Ty::Opt(Box::new(other)),
    }
}

/// A list of `e`.
pub fn list_of(e: Ty) -> Ty {
    match e {
        Ty::Tensor => Ty::TensorList,
        Ty::OptTensor => Ty::OptTensorList,
        Ty::Int => Ty::IntList,
        Ty::Float | Ty::Scalar => Ty::FloatList,
        Ty::Bool => Ty::BoolArray(0),
        other => Ty::Opaque(format!("std::vector<{}>", other.show())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::syntax::{ExprKind, parse};

    fn cpp(s: &str) -> Ty {
        let ExprKind::Template(t) = parse(&format!("std::optional<{s}>")).unwrap().kind else {
            panic!()
        };
        match &t.args[0] {
            TemplateArg::Type(t) => from_cpp(t),
            TemplateArg::Int(_) => panic!(),
        }
    }

    #[test]
    fn cpp_types() {
        assert_eq!(cpp("const at::Tensor&"), Ty::Tensor);
        assert_eq!(cpp("c10::SymIntArrayRef"), Ty::IntList);
        assert_eq!(cpp("std::optional<Tensor>"), Ty::OptTensor);
        assert_eq!(cpp("std::array<bool, 3>"), Ty::BoolArray(3));
        assert_eq!(
            cpp("std::tuple<Tensor, Tensor>"),
            Ty::Tuple(vec![Ty::Tensor, Ty::Tensor])
        );
        assert_eq!(
            cpp("at::OptionalIntArrayRef"),
            Ty::Opt(Box::new(Ty::IntList))
        );
    }

    #[test]
    fn schema_types() {
        let t = |s: &str| from_schema(&Type::parse(s).unwrap());
        assert_eq!(t("Tensor?"), Ty::OptTensor);
        assert_eq!(t("SymInt[]"), Ty::IntList);
        assert_eq!(t("int[1]?"), Ty::Opt(Box::new(Ty::IntList)));
        assert_eq!(t("bool[3]"), Ty::BoolArray(3));
        assert_eq!(t("Tensor?[]"), Ty::OptTensorList);
    }
}
