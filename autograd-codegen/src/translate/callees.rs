//! What a formula can call: the operators of native_functions.yaml as PyTorch's C++ API
//! exposes them (`at::name`, `at::name_symint`, `tensor.name(..)`), and the helpers a header
//! declares. Each callee has its C++ parameters (to resolve overloads as C++ does) and the
//! Rust call it lowers to.

use super::decl::Decl;
use super::types::{Ty, from_schema};
use crate::analysis::cpp::cpp_arguments;
use crate::model::native::{NativeFunction, Variant};
use crate::model::schema::Argument;
use crate::names::op_fn_name;
use std::collections::HashMap;

/// One C++ parameter of a callee.
#[derive(Debug, Clone, PartialEq)]
pub struct CParam {
    /// Its name.
    pub name: String,
    /// Its type ([`Ty::Options`] for the grouped `dtype, layout, device, pin_memory`).
    pub ty: Ty,
    /// Its default in Rust, when it has one (`None`, `1.0`, `false`, `&[]`).
    pub default: Option<String>,
    /// Its default as C++ text, for a declared helper (lowered against the type on use).
    pub cpp_default: Option<String>,
}

/// Where a callee comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// An operator: its schema text and file line.
    Op(String),
    /// A declared helper: its header line.
    Helper(usize),
}

/// A function a formula can call.
#[derive(Debug, Clone, PartialEq)]
pub struct Callee {
    /// The Rust function it lowers to.
    pub rust: String,
    /// C++ parameters, the receiver first for a method.
    pub params: Vec<CParam>,
    /// Return type.
    pub ret: Ty,
    /// Template parameters (helpers).
    pub generics: Vec<String>,
    /// Where it is declared.
    pub origin: Origin,
}

/// The callees by C++ name.
#[derive(Debug, Clone, Default)]
pub struct Callees {
    /// `at::name(..)` and `name(..)` operators.
    pub functions: HashMap<String, Vec<Callee>>,
    /// `tensor.name(..)` operators (the receiver is the first parameter).
    pub methods: HashMap<String, Vec<Callee>>,
    /// Declared helpers.
    pub helpers: HashMap<String, Vec<Callee>>,
    /// Declared constants and their types.
    pub constants: HashMap<String, Ty>,
}

impl Callees {
    /// The operators of `functions` (out= variants left out: formulas do not call them)
    /// and the helpers of `decls`.
    pub fn new(functions: &[NativeFunction], decls: &[Decl]) -> Self {
        let mut c = Callees::default();
        for f in functions.iter().filter(|f| !f.func.is_out_fn()) {
            for callee in op_callees(f) {
                c.add_op(f, callee);
            }
        }
        for d in decls {
            if d.constant {
                c.constants.insert(d.name.clone(), d.ret.clone());
            } else {
                c.helpers
                    .entry(d.name.clone())
                    .or_default()
                    .push(helper_callee(d));
            }
        }
        c
    }

    /// `at::name`, `at::name_symint` and the methods of the same names.
    fn add_op(&mut self, f: &NativeFunction, callee: Callee) {
        let name = f.func.name.name.to_string();
        let mut names = vec![name.clone()];
        if f.func.has_symint() {
            names.push(format!("{name}_symint"));
        }
        for n in names {
            if f.variants.contains(&Variant::Function) {
                self.functions
                    .entry(n.clone())
                    .or_default()
                    .push(callee.clone());
            }
            if f.variants.contains(&Variant::Method) {
                self.methods.entry(n).or_default().push(callee.clone());
            }
        }
    }
}

fn helper_callee(d: &Decl) -> Callee {
    Callee {
        rust: d.rust.clone(),
        params: d
            .params
            .iter()
            .map(|p| CParam {
                name: p.name.clone(),
                ty: p.ty.clone(),
                default: None,
                cpp_default: p.default.clone(),
            })
            .collect(),
        ret: helper_ret(&d.ret),
        generics: d.generics.clone(),
        origin: Origin::Helper(d.line),
    }
}

/// A helper's return type as its Rust port returns it: a tuple of tensors is a tuple of
/// optionals (`Grads2`, `Grads3`: the gradients PyTorch's helper leaves undefined are `None`),
/// so that a ternary between a helper and an operator converts the operator's tensors.
fn helper_ret(t: &Ty) -> Ty {
    match t {
        Ty::Tuple(ts) => Ty::Tuple(
            ts.iter()
                .map(|t| match t {
                    Ty::Tensor => Ty::OptTensor,
                    t => t.clone(),
                })
                .collect(),
        ),
        t => t.clone(),
    }
}

/// An operator's C++ overloads: one, or two for a function with tensor options (grouped as
/// `TensorOptions options`, and the four optionals one by one).
fn op_callees(f: &NativeFunction) -> Vec<Callee> {
    // A Scalar's default (`1`, `0.01`) is lowered as C++ text: an integer stays an integer.
    let param = |arg: &Argument| {
        let ty = from_schema(&arg.ty);
        let scalar = matches!(&ty, Ty::Scalar) || matches!(&ty, Ty::Opt(t) if **t == Ty::Scalar);
        CParam {
            name: arg.name.clone(),
            default: arg
                .default
                .as_deref()
                .filter(|_| !scalar)
                .map(|d| rust_default(arg, d)),
            cpp_default: arg.default.clone().filter(|_| scalar),
            ty,
        }
    };
    let grouped = cpp_arguments(&f.func)
        .iter()
        .map(|a| match a.arg {
            Some(arg) => param(arg),
            None => CParam {
                name: "options".into(),
                ty: Ty::Options,
                default: Some("OPTIONS_DEFAULT".into()),
                cpp_default: None,
            },
        })
        .collect();
    let mut v = vec![op_callee(f, grouped)];
    if f.func.arguments.tensor_options.is_some() {
        let a = &f.func.arguments;
        let flat = a
            .flat_positional()
            .chain(a.flat_kwarg_only())
            .map(param)
            .collect();
        v.push(op_callee(f, flat));
    }
    v
}

fn op_callee(f: &NativeFunction, params: Vec<CParam>) -> Callee {
    let rets: Vec<Ty> = f.func.returns.iter().map(|r| from_schema(&r.ty)).collect();
    let ret = match rets.len() {
        0 => Ty::Void,
        1 => rets.into_iter().next().unwrap_or(Ty::Void),
        _ => Ty::Tuple(rets),
    };
    Callee {
        rust: op_fn_name(&f.func.name),
        params,
        ret,
        generics: Vec::new(),
        origin: Origin::Op(format!("{} (line {})", f.schema, f.loc.line)),
    }
}

/// A schema default as a Rust value of the argument's formula type.
pub fn rust_default(arg: &Argument, d: &str) -> String {
    let ty = from_schema(&arg.ty);
    match (d, &ty) {
        ("None", _) => "None".into(),
        ("True", _) => "true".into(),
        ("False", _) => "false".into(),
        ("Mean", _) => "1".into(),
        ("Sum", _) => "2".into(),
        ("contiguous_format", _) => "MemoryFormat::Contiguous".into(),
        ("long", _) => "ScalarType::Long".into(),
        (_, Ty::IntList | Ty::FloatList) if d.starts_with('[') => format!("&{d}"),
        (_, Ty::IntList) => format!("&[{d}]"),
        (_, Ty::BoolArray(_)) => d.to_lowercase(),
        (_, Ty::Float | Ty::Scalar) if !d.contains(['.', 'e', 'i', 'n']) => format!("{d}.0"),
        (_, Ty::Opt(inner)) if matches!(**inner, Ty::Float | Ty::Scalar) && !d.contains('.') => {
            format!("Some({d}.0)")
        }
        (_, Ty::Opt(inner)) if matches!(**inner, Ty::Str) => format!("Some({})", rust_str(d)),
        (_, Ty::Opt(_)) => format!("Some({d})"),
        (_, Ty::Str) => rust_str(d),
        _ => d.to_string(),
    }
}

/// A schema string literal (`'none'`, `"mean"`) as a Rust one.
fn rust_str(d: &str) -> String {
    format!("\"{}\"", d.trim_matches(['\'', '"']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_in_rust() {
        let a = |s: &str| Argument::parse(s).unwrap();
        let d = |s: &str| {
            let arg = a(s);
            rust_default(&arg, arg.default.as_deref().unwrap())
        };
        assert_eq!(d("Scalar alpha=1"), "1.0");
        assert_eq!(d("int[1] dim=[]"), "&[]");
        assert_eq!(d("bool keepdim=False"), "false");
        assert_eq!(d("int reduction=Mean"), "1");
        assert_eq!(d("str approximate='none'"), "\"none\"");
        assert_eq!(d("ScalarType? dtype=None"), "None");
        assert_eq!(d("str? rounding_mode='trunc'"), "Some(\"trunc\")");
        assert_eq!(d("float eps=1e-05"), "1e-05");
    }
}
