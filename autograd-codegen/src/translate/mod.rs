//! The C++ formula front end: PyTorch's derivatives.yaml formulas, as PyTorch writes them,
//! lowered to Rust in the project's formula dialect.
//!
//! Layers, each looking only down: [`syntax`] (tokens and syntax tree of one formula) ->
//! [`types`] (the value types, from schemas and C++ declarations) and [`decl`] (a header's
//! helper declarations) -> [`callees`] (operators and helpers by C++ name) -> `lower` with
//! `convert` and `builtins` (typing, overload resolution, Rust text). [`translate_entries`]
//! runs it over a file's entries; `autograd-gen translate` prints the result.

pub mod callees;
pub mod decl;
pub mod syntax;
pub mod types;

mod builtins;
mod convert;
mod lower;

pub use lower::{LowerError, Lowerer, Val};

use crate::analysis::cpp::return_names;
use crate::diagnostics::{Ctxt, Diagnostics, Location};
use crate::model::autogen::add_generated_native_functions;
use crate::model::derivatives::{DerivativeEntry, FormulaEntry, parse_derivatives};
use crate::model::native::{NativeFunction, parse_native_functions};
use crate::model::schema::FunctionSchema;
use callees::Callees;
use std::collections::HashMap;
use std::sync::Arc;
use types::{Ty, from_schema};

/// The keywords that stand for a formula.
pub const KEYWORDS: &[&str] = &["non_differentiable", "auto_element_wise", "auto_linear"];

/// One formula's translation.
#[derive(Debug, Clone, PartialEq)]
pub struct Translation {
    /// The entry's `name:`.
    pub entry: String,
    /// The formula's key (`self`, `self, other`, `result`).
    pub key: String,
    /// Where the formula text starts.
    pub loc: Location,
    /// The Rust formula, or where in the formula (byte offset) and why it cannot be lowered.
    pub rust: Result<String, LowerError>,
}

/// The variables a formula of `schema` sees, for a backward formula or (`forward`) a forward
/// one: the arguments, the outputs, `grad`/`grads`/`grad_input_mask`/`retain_variables`,
/// and in forward formulas each argument's `_p` (primal) and `_t` (tangent).
///
/// A `_foreach_` function's formulas are written for one element `i` of its lists:
/// `self[i]`, `grads[i]`, `result[i]`, and in forward formulas `self_p` / `self_t` are the
/// element's primal and tangent.
pub fn formula_vars(schema: &FunctionSchema, forward: bool) -> HashMap<String, Ty> {
    let mut vars = HashMap::new();
    let foreach = schema.name.name.base.starts_with("_foreach_");
    if foreach {
        vars.insert("i".into(), Ty::Int);
    }
    for a in schema.arguments.flat_all() {
        let t = from_schema(&a.ty);
        if forward {
            let pt = match (&t, foreach) {
                (Ty::TensorList, true) => Ty::Tensor,
                _ => t.clone(),
            };
            vars.insert(format!("{}_p", a.name), pt.clone());
            vars.insert(format!("{}_t", a.name), pt.clone());
            vars.insert(format!("original_{}_p", a.name), pt.clone());
            vars.insert(format!("original_{}_t", a.name), pt);
        }
        vars.insert(a.name.clone(), t);
    }
    for (name, r) in return_names(schema).into_iter().zip(&schema.returns) {
        let t = from_schema(&r.ty);
        if let Some(n) = &r.name {
            vars.insert(format!("grad_{n}"), Ty::OptTensor);
        }
        if forward {
            vars.insert(format!("{name}_t"), t.clone());
        }
        vars.insert(name, t.clone());
        if schema.name.name.inplace {
            vars.entry("result".into()).or_insert(t);
        }
    }
    vars.insert("grad".into(), Ty::Tensor);
    vars.insert("grads".into(), Ty::OptTensorList);
    vars.insert("grad_input_mask".into(), Ty::BoolArray(0));
    vars.insert("retain_variables".into(), Ty::Bool);
    vars
}

/// Is the formula for outputs (a forward formula)? A backward formula's key names inputs
/// only.
fn is_forward(schema: &FunctionSchema, f: &FormulaEntry) -> bool {
    !f.var_names
        .iter()
        .all(|v| schema.arguments.flat_all().any(|a| &a.name == v))
}

/// Lower one formula of an entry whose schema is `schema`.
pub fn translate_formula(
    schema: &FunctionSchema,
    f: &FormulaEntry,
    callees: &Callees,
    cpp: &CppFormulas,
) -> Result<String, LowerError> {
    let text = f.formula.trim();
    if KEYWORDS.contains(&text) {
        return Ok(text.to_string());
    }
    let expr = syntax::parse(&f.formula).map_err(|e| LowerError {
        offset: e.offset,
        message: e.message,
    })?;
    let forward = is_forward(schema, f);
    // A forward formula sees its optional tensor arguments as `Option<&Variable<T>>`.
    let by_ref = match forward {
        true => schema
            .arguments
            .flat_all()
            .filter(|a| types::from_schema(&a.ty) == Ty::OptTensor)
            .map(|a| a.name.clone())
            .collect(),
        false => Vec::new(),
    };
    let lw = Lowerer {
        callees,
        vars: formula_vars(schema, forward),
        fallible: cpp.fallible,
        scalar_number: cpp.scalar_number,
        by_ref,
    };
    let v = lw.lower(&expr)?;
    Ok(lower::bare(&v.code).to_string())
}

/// Translate every formula of `entries` (all dispatch keys); an entry whose schema does not
/// parse gives one error per formula.
pub fn translate_entries(
    entries: &[DerivativeEntry],
    callees: &Callees,
    cpp: &CppFormulas,
) -> Vec<Translation> {
    let mut out = Vec::new();
    for e in entries {
        let schema = FunctionSchema::parse(&e.name);
        for d in &e.dispatch {
            for f in &d.formulas {
                let rust = match &schema {
                    Ok(s) => translate_formula(s, f, callees, cpp),
                    Err(err) => Err(LowerError {
                        offset: 0,
                        message: format!("the entry's schema does not parse: {}", err.0),
                    }),
                };
                out.push(Translation {
                    entry: e.name.clone(),
                    key: f.key.clone(),
                    loc: f.formula_loc.clone(),
                    rust,
                });
            }
        }
    }
    out
}

/// How C++ formulas are lowered: the helpers' header and whether calls return `Result`.
#[derive(Debug, Clone, Default)]
pub struct CppFormulas {
    /// `(file name, text)` of the C++ header declaring the helpers the formulas call
    /// (PyTorch's `FunctionsManual.h`, or the op set's part of it).
    pub header: Option<(String, String)>,
    /// `?` after every call: the backend's kernels and the helpers return `Result`.
    pub fallible: bool,
    /// `Scalar` is a plain number (the macro's `types = { Scalar = f64 }`), not
    /// `autograd::types::Scalar`.
    pub scalar_number: bool,
}

/// The helper declarations of `cpp`'s header; an unreadable declaration is an error at its
/// header line.
fn header_decls(cpp: &CppFormulas, cx: &mut Ctxt) -> Vec<decl::Decl> {
    let Some((name, text)) = &cpp.header else {
        return Vec::new();
    };
    decl::parse_header(text).unwrap_or_else(|e| {
        let loc = Location {
            file: Arc::from(name.as_str()),
            line: e.line,
            column: 0,
        };
        cx.error(&loc, None, e.message);
        Vec::new()
    })
}

/// Replace every formula of `entries` by its Rust lowering (keywords stay); a formula that
/// does not lower is an error at its place in the YAML (line, and column of the construct),
/// naming the entry.
pub fn translate_in_place(
    entries: &mut [DerivativeEntry],
    functions: &[NativeFunction],
    cpp: &CppFormulas,
    cx: &mut Ctxt,
) {
    let decls = header_decls(cpp, cx);
    let callees = Callees::new(functions, &decls);
    for e in entries.iter_mut() {
        let Ok(schema) = FunctionSchema::parse(&e.name) else {
            continue; // reported by the analysis
        };
        for f in e.dispatch.iter_mut().flat_map(|d| d.formulas.iter_mut()) {
            match translate_formula(&schema, f, &callees, cpp) {
                Ok(rust) => f.formula = rust,
                Err(err) => {
                    let mut loc = f.formula_loc.clone();
                    loc.column += err.offset;
                    let message = format!(
                        "in formula `{}` (column {}): {}",
                        f.key,
                        loc.column + 1,
                        err.message
                    );
                    cx.error(&loc, Some(&e.name), message);
                }
            }
        }
    }
}

/// The translation of a derivatives.yaml against the schemas of a native_functions.yaml
/// (PyTorch's generated functions added) and the helpers a C++ header declares: each input
/// is `(file name, text)`. Files that do not parse are errors naming file and line.
pub fn translate_sources(
    native: &(String, String),
    derivatives: &(String, String),
    header: Option<&(String, String)>,
    fallible: bool,
) -> Result<Vec<Translation>, Diagnostics> {
    let mut cx = Ctxt::new();
    let mut fns = parse_native_functions(
        &Arc::from(native.0.as_str()),
        &native.1,
        &Default::default(),
        &mut cx,
    );
    add_generated_native_functions(&mut fns, &mut cx);
    let entries = parse_derivatives(&Arc::from(derivatives.0.as_str()), &derivatives.1, &mut cx);
    let cpp = CppFormulas {
        header: header.cloned(),
        fallible,
        scalar_number: false,
    };
    let decls = header_decls(&cpp, &mut cx);
    let callees = Callees::new(&fns, &decls);
    cx.check(translate_entries(&entries, &callees, &cpp))
}

#[cfg(test)]
mod tests;
