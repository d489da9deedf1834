//! Saved-attribute analysis: what a backward formula needs from the forward pass.
//!
//! torchgen's `saved_variables`: for each argument (then each output), derived properties
//! written in the formula (`self.sym_sizes()`, `other.scalar_type()`, `zeros_like(self)`) are
//! saved instead of the whole tensor and the formula is rewritten to use the saved name
//! (`self_sym_sizes`); a name still used after that is saved whole. The rules are one table,
//! [`PropertyRules`], that a user can extend.

use crate::formula::{Formula, TokKind};

/// How a property is written around the variable name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PropertyPattern {
    /// `x.method()` (or `x->method()` when `arrow`).
    Method {
        /// The method name.
        method: String,
        /// Written with `->` (C++ optional access).
        arrow: bool,
    },
    /// `x.method(ARG)` with one argument: an integer (possibly negative) or a name.
    MethodWithArg {
        /// The method name.
        method: String,
    },
    /// `func(x)`.
    Call {
        /// The function name.
        func: String,
    },
}

/// One rule: a pattern, the suffix of the saved name, and how the formula and the capture read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyRule {
    /// What to look for.
    pub pattern: PropertyPattern,
    /// Appended to the variable name: `_sym_sizes`. For [`PropertyPattern::MethodWithArg`]
    /// the argument is appended too (`_sym_argsize_` + `minus_1`).
    pub suffix: String,
    /// The capture expression at save time, with `{}` for the variable name; `None` means the
    /// matched text itself.
    pub expr: Option<String>,
    /// What replaces the match in the formula, with `{}` for the saved name; `None` means
    /// the saved name.
    pub replacement: Option<String>,
    /// A short name of the saved value's kind (`sym_sizes`, `scalar_type`, `info`, ...), used
    /// by the emitter to pick the field type.
    pub kind: String,
    /// Only allowed when the formula is for exactly this variable (`.sym_strides()`).
    pub single_var_only: bool,
}

impl PropertyRule {
    fn method(method: &str, suffix: &str) -> Self {
        PropertyRule {
            pattern: PropertyPattern::Method {
                method: method.into(),
                arrow: false,
            },
            suffix: suffix.into(),
            expr: None,
            replacement: None,
            kind: method.into(),
            single_var_only: false,
        }
    }

    fn call(func: &str, suffix: &str) -> Self {
        PropertyRule {
            pattern: PropertyPattern::Call { func: func.into() },
            suffix: suffix.into(),
            expr: None,
            replacement: None,
            kind: func.into(),
            single_var_only: false,
        }
    }
}

/// The ordered table of property rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyRules {
    /// Tried in order, each over the whole formula.
    pub rules: Vec<PropertyRule>,
    /// Count a name written inside a string literal as a use, as torchgen's regex does
    /// (`not_implemented("... save_mean")` saves `save_mean`). Off for Rust formulas.
    pub names_in_strings_are_uses: bool,
    /// Reject `.sizes()`, `.size(n)` and `.strides()` as torchgen does (C++ formulas must use
    /// the SymInt versions). Off for Rust formulas.
    pub torch_symint_checks: bool,
}

impl PropertyRules {
    /// torchgen's rules, in torchgen's order, for PyTorch's C++ formulas.
    pub fn torchgen() -> Self {
        let mut arrow = PropertyRule::method("sym_sizes", "_sym_sizes_opt");
        arrow.pattern = PropertyPattern::Method {
            method: "sym_sizes".into(),
            arrow: true,
        };
        arrow.expr = Some(
            "{}.has_value() ? std::optional<c10::SymIntArrayRef>({}->sym_sizes()) : std::nullopt"
                .into(),
        );
        arrow.kind = "sym_sizes_opt".into();
        let mut blocksize = PropertyRule::method("sym_blocksize", "_self_sym_blocksize_opt");
        blocksize.expr = Some("at::sparse_csr::getSymIntBlockSize({})".into());
        let mut zeros = PropertyRule::call("zeros_like", "_info");
        zeros.expr = Some("{}".into());
        zeros.replacement = Some("{}_info.zeros()".into());
        zeros.kind = "info".into();
        let sym_size = PropertyRule {
            pattern: PropertyPattern::MethodWithArg {
                method: "sym_size".into(),
            },
            suffix: "_sym_argsize_".into(),
            expr: None,
            replacement: None,
            kind: "sym_size".into(),
            single_var_only: false,
        };
        let mut strides = PropertyRule::method("sym_strides", "_sym_strides");
        strides.expr = Some("strides_or_error({}, \"{}\")".into());
        strides.single_var_only = true;
        let mut conj = PropertyRule::method("is_conj", "_conjugate");
        conj.kind = "is_conj".into();
        PropertyRules {
            rules: vec![
                PropertyRule::method("sym_sizes", "_sym_sizes"),
                arrow,
                blocksize,
                PropertyRule::method("options", "_options"),
                zeros,
                sym_size,
                PropertyRule::method("numel", "_numel"),
                PropertyRule::method("sym_numel", "_sym_numel"),
                PropertyRule::call("to_args_sizes", "_args_sizes"),
                PropertyRule::call("to_args_sizes_symint", "_args_sizes_symint"),
                PropertyRule::call("to_args_scalartypes", "_args_scalartypes"),
                PropertyRule::call("TensorGeometry", "_geometry"),
                PropertyRule::method("scalar_type", "_scalar_type"),
                PropertyRule::method("dim", "_dim"),
                strides,
                PropertyRule::method("layout", "_layout"),
                conj,
            ],
            torch_symint_checks: true,
            names_in_strings_are_uses: true,
        }
    }

    /// torchgen's rules plus the names a Rust tensor library uses: `sizes()`, `shape()`,
    /// `dtype()`, `device()`, `size(d)` (`dim()` and `numel()` are torchgen's already).
    pub fn rust() -> Self {
        let mut r = Self::torchgen();
        r.torch_symint_checks = false;
        r.names_in_strings_are_uses = false;
        r.rules.push(PropertyRule::method("sizes", "_sizes"));
        r.rules.push(PropertyRule::method("shape", "_shape"));
        r.rules.push(PropertyRule::method("dtype", "_dtype"));
        r.rules.push(PropertyRule::method("device", "_device"));
        r.rules.push(PropertyRule {
            pattern: PropertyPattern::MethodWithArg {
                method: "size".into(),
            },
            suffix: "_size_".into(),
            expr: None,
            replacement: None,
            kind: "size".into(),
            single_var_only: false,
        });
        r
    }

    /// Add a rule (tried after the existing ones).
    pub fn push(&mut self, rule: PropertyRule) {
        self.rules.push(rule);
    }
}

/// A value a backward node keeps from the forward pass.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SavedAttribute {
    /// The field name: `self`, `self_sym_sizes`, `result`.
    pub name: String,
    /// The capture expression at save time.
    pub expr: String,
    /// `None` for a whole argument or output; the rule's kind for a derived property.
    pub property: Option<String>,
    /// The variable it is derived from.
    pub var: String,
    /// For a derived property: the tokens it was written as in the formula (`self.size(-1)`);
    /// empty for a whole argument or output.
    pub capture: Formula,
}

/// Find the end of a match of `rule` for `name` starting at token `i`; returns (end, argument
/// text for `MethodWithArg`).
fn match_rule(f: &Formula, i: usize, name: &str, rule: &PropertyRule) -> Option<(usize, String)> {
    let t = &f.toks;
    let at = |k: usize| t.get(k);
    match &rule.pattern {
        PropertyPattern::Method { method, arrow } => {
            if !t[i].is_ident(name) {
                return None;
            }
            let mut k = i + 1;
            if *arrow {
                if !(at(k)?.is_punct("-") && at(k + 1)?.is_punct(">")) {
                    return None;
                }
                k += 2;
            } else {
                if !at(k)?.is_punct(".") {
                    return None;
                }
                k += 1;
            }
            (at(k)?.is_ident(method) && at(k + 1)?.is_punct("(") && at(k + 2)?.is_punct(")"))
                .then(|| (k + 3, String::new()))
        }
        PropertyPattern::MethodWithArg { method } => {
            if !(t[i].is_ident(name)
                && at(i + 1)?.is_punct(".")
                && at(i + 2)?.is_ident(method)
                && at(i + 3)?.is_punct("("))
            {
                return None;
            }
            let mut k = i + 4;
            let mut arg = String::new();
            if at(k)?.is_punct("-") {
                arg.push_str("minus_");
                k += 1;
            }
            let a = at(k)?;
            let word = a.kind == TokKind::Ident
                || (a.kind == TokKind::Literal
                    && a.text
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_'));
            if !word || !at(k + 1)?.is_punct(")") {
                return None;
            }
            arg.push_str(&a.text);
            Some((k + 2, arg))
        }
        PropertyPattern::Call { func } => (t[i].is_ident(func)
            && at(i + 1)?.is_punct("(")
            && at(i + 2)?.is_ident(name)
            && at(i + 3)?.is_punct(")"))
        .then(|| (i + 4, String::new())),
    }
}

/// A formula the rules reject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedError(pub String);

/// Rewrite `formula` for the variables `names` (in order) and return what must be saved.
/// `optional_strings` names the `str?` arguments (torchgen wraps them for C++).
pub fn saved_variables(
    formula: &mut Formula,
    names: &[&str],
    var_names: &[String],
    rules: &PropertyRules,
    saved: &mut Vec<SavedAttribute>,
) -> Result<(), SavedError> {
    if rules.torch_symint_checks {
        check_torch_symint(formula)?;
    }
    let in_strings =
        |f: &Formula, name: &str| rules.names_in_strings_are_uses && f.string_mentions(name);
    for &name in names {
        // Every pattern contains `name` as an identifier: without one there is nothing to do.
        if !formula.has_ident(name) {
            if in_strings(formula, name) {
                saved.push(SavedAttribute::whole(name));
            }
            continue;
        }
        for rule in &rules.rules {
            apply_rule(formula, name, rule, var_names, saved)?;
        }
        if formula.has_ident(name) || in_strings(formula, name) {
            saved.push(SavedAttribute::whole(name));
        }
    }
    Ok(())
}

impl SavedAttribute {
    /// `name` saved whole.
    fn whole(name: &str) -> Self {
        SavedAttribute {
            name: name.to_string(),
            expr: name.to_string(),
            property: None,
            var: name.to_string(),
            capture: Formula::default(),
        }
    }
}

/// Every match of `rule` for `name`: saved as a property and replaced in the formula.
fn apply_rule(
    formula: &mut Formula,
    name: &str,
    rule: &PropertyRule,
    var_names: &[String],
    saved: &mut Vec<SavedAttribute>,
) -> Result<(), SavedError> {
    // Every match has `name` at a fixed offset from its start: try only those starts.
    let offset = match rule.pattern {
        PropertyPattern::Call { .. } => 2,
        _ => 0,
    };
    let mut anchors = ident_positions(formula, name);
    let mut i = 0;
    let mut next = 0;
    while let Some(&pos) = anchors.get(next) {
        next += 1;
        if pos < i + offset {
            continue;
        }
        let start = pos - offset;
        let Some((end, arg)) = match_rule(formula, start, name, rule) else {
            continue;
        };
        i = start;
        if rule.single_var_only && !(var_names.len() == 1 && var_names[0] == name) {
            return Err(SavedError(format!(
                "`{}` is only supported in the formula of `{name}` alone",
                formula.text_of(i..end)
            )));
        }
        let saved_name = format!("{name}{}{arg}", rule.suffix);
        let expr = match &rule.expr {
            Some(e) => e.replace("{}", name),
            None => formula.text_of(i..end).trim().to_string(),
        };
        saved.push(SavedAttribute {
            name: saved_name.clone(),
            expr,
            property: Some(rule.kind.clone()),
            var: name.to_string(),
            capture: Formula {
                toks: formula.toks[i..end].to_vec(),
            },
        });
        let replacement = match &rule.replacement {
            Some(r) => r.replace("{}", name),
            None => saved_name,
        };
        let repl = Formula::parse(&replacement).unwrap_or_default();
        i += formula.splice(i, end - i, &repl);
        anchors = ident_positions(formula, name);
        next = 0;
    }
    Ok(())
}

/// Where `name` is an identifier token.
fn ident_positions(f: &Formula, name: &str) -> Vec<usize> {
    (0..f.toks.len())
        .filter(|&i| f.toks[i].is_ident(name))
        .collect()
}

fn check_torch_symint(f: &Formula) -> Result<(), SavedError> {
    let t = &f.toks;
    for i in 0..t.len() {
        let after_access = |k: usize| {
            (k >= 1 && t[k - 1].is_punct("."))
                || (k >= 2 && t[k - 1].is_punct(">") && t[k - 2].is_punct("-"))
        };
        let call_empty = |k: usize| {
            t.get(k + 1).is_some_and(|x| x.is_punct("("))
                && t.get(k + 2).is_some_and(|x| x.is_punct(")"))
        };
        if !after_access(i) || t[i].kind != TokKind::Ident {
            continue;
        }
        if t[i].text == "sizes" && call_empty(i) {
            return Err(SavedError(format!(
                ".sizes() is not supported in derivative formulas. Instead, please use the SymInt version,.sym_sizes(), which returned a c10::SymIntArrayRef. formula={}",
                f.render()
            )));
        }
        if t[i].text == "strides" && call_empty(i) {
            return Err(SavedError(format!(
                ".strides() is not supported in derivative formulas. Instead, please use the SymInt version,.sym_strides(), which returned a c10::SymIntArrayRef. formula={}",
                f.render()
            )));
        }
        if t[i].text == "size" && t.get(i + 1).is_some_and(|x| x.is_punct("(")) {
            let mut k = i + 2;
            if t.get(k).is_some_and(|x| x.is_punct("-")) {
                k += 1;
            }
            if t.get(k).is_some_and(|x| {
                x.kind == TokKind::Literal && x.text.chars().all(|c| c.is_ascii_digit())
            }) && t.get(k + 1).is_some_and(|x| x.is_punct(")"))
            {
                return Err(SavedError(format!(
                    ".size(int) is not supported in derivative formulas. Instead, please use the SymInt version,.sym_size(int), which returned a c10::SymIntArrayRef. formula={}",
                    f.render()
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(formula: &str, names: &[&str], rules: &PropertyRules) -> (String, Vec<String>) {
        let mut f = Formula::parse(formula).unwrap();
        let mut saved = Vec::new();
        saved_variables(&mut f, names, &["self".into()], rules, &mut saved).unwrap();
        (f.render(), saved.into_iter().map(|s| s.name).collect())
    }

    #[test]
    fn torchgen_rules_rewrite_and_save() {
        let r = PropertyRules::torchgen();
        let (f, s) = run(
            "value_selecting_reduction_backward_symint(grad, dim, indices, self.sym_sizes(), keepdim)",
            &["self", "dim", "keepdim"],
            &r,
        );
        assert_eq!(
            f,
            "value_selecting_reduction_backward_symint(grad, dim, indices, self_sym_sizes, keepdim)"
        );
        assert_eq!(s, ["self_sym_sizes", "dim", "keepdim"]);
        let (f, s) = run(
            "zeros_like(self) + self.sym_size(-1) * other.scalar_type()",
            &["self", "other"],
            &r,
        );
        assert_eq!(
            f,
            "self_info.zeros() + self_sym_argsize_minus_1 * other_scalar_type"
        );
        assert_eq!(
            s,
            ["self_info", "self_sym_argsize_minus_1", "other_scalar_type"]
        );
        // A name inside another identifier is never a use; inside a string only torchgen's
        // regex counts it.
        let (_, s) = run("not_implemented(\"self\") + grad_self", &["self"], &r);
        assert_eq!(s, ["self"]);
        let (_, s) = run(
            "not_implemented(\"self\") + grad_self",
            &["self"],
            &PropertyRules::rust(),
        );
        assert!(s.is_empty());
    }

    #[test]
    fn torch_rejects_sizes_rust_accepts() {
        let mut f = Formula::parse("grad.expand(self.sizes())").unwrap();
        let mut saved = Vec::new();
        let e = saved_variables(
            &mut f,
            &["self"],
            &[],
            &PropertyRules::torchgen(),
            &mut saved,
        )
        .unwrap_err();
        assert!(e.0.starts_with(".sizes() is not supported"));
        let (f, s) = run(
            "grad.expand(&self.sizes()) + self.size(0)",
            &["self"],
            &PropertyRules::rust(),
        );
        assert_eq!(f, "grad.expand(&self_sizes) + self_size_0");
        assert_eq!(s, ["self_sizes", "self_size_0"]);
    }

    #[test]
    fn strides_only_for_single_variable() {
        let mut f = Formula::parse("foo(grad, self.sym_strides())").unwrap();
        let mut saved = Vec::new();
        let r = PropertyRules::torchgen();
        assert!(
            saved_variables(
                &mut f,
                &["self"],
                &["self".into(), "other".into()],
                &r,
                &mut saved
            )
            .is_err()
        );
    }
}
