//! Rust names of schema items: wrapper names, argument names, keywords.
//!
//! Wrappers are `{base}_{overload}` in snake case (`mul.Tensor` -> `mul_tensor`,
//! `sum.dim_IntList` -> `sum_dim_intlist`), the base alone without overload; in-place variants
//! end in `_` (`mul_.Tensor` -> `mul_tensor_`); out= overloads keep their overload name
//! (`mul.out` -> `mul_out`). An argument named like a Rust keyword gets a trailing `_`
//! everywhere in generated code and in formulas (`self` -> `self_`, `type` -> `type_`); in
//! derivatives.yaml the key stays the schema's name (`self:`, `type:`).

use crate::model::schema::OperatorName;
use proc_macro2::{Ident, Span};

/// Methods of traits in the prelude (and `Variable`'s own `Clone`); a `VariableOps` method of
/// the same name would make every call ambiguous, so those ops are free functions only.
pub(crate) const PRELUDE_METHODS: &[&str] = &[
    "clone",
    "clone_from",
    "to_owned",
    "to_string",
    "into",
    "try_into",
    "eq",
    "ne",
];

const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// A schema name as a Rust identifier: `self` -> `self_`, keywords get a trailing `_`.
pub fn rust_name(name: &str) -> String {
    if KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// [`rust_name`] as an identifier.
pub(crate) fn ident(name: &str) -> Ident {
    Ident::new(&rust_name(name), Span::call_site())
}

/// The wrapper name of an operator (see the module docs).
pub fn op_fn_name(name: &OperatorName) -> String {
    let mut s = name.name.base.clone();
    if name.name.functional_overload {
        s.push_str("_functional");
    }
    if !name.overload_name.is_empty() {
        s.push('_');
        s.push_str(&name.overload_name.to_lowercase());
    }
    if name.name.inplace {
        s.push('_');
    }
    rust_name(&s)
}
