//! Forward-mode formulas: read from an entry (`result: ...`), expanded (`auto_element_wise`,
//! `auto_linear`) and adapted to in-place variants.

use super::cpp::{cpp_arguments, return_names};
use super::{Derivative, DifferentiabilityInfo, ForwardDerivative, ForwardExpansion};
use crate::diagnostics::{Ctxt, Location};
use crate::formula::{Formula, FormulaError};
use crate::model::derivatives::FormulaEntry;
use crate::model::native::{NativeFunction, Variant};
use crate::model::schema::SchemaKind;
use std::collections::BTreeSet;

/// A forward formula as written (`result: ...`, `values, indices: ...`), with its tokens.
pub(super) fn create_forward_derivative(
    f: &NativeFunction,
    fe: &FormulaEntry,
) -> Result<(ForwardDerivative, Formula), String> {
    let names = &fe.var_names;
    let returns = &f.func.returns;
    let by_name = returns
        .iter()
        .any(|r| r.name.as_ref().is_some_and(|n| names.contains(n)));
    let matched = by_name
        || (names.len() == 1 && names[0] == "result" && returns.len() == 1)
        || names.iter().any(|n| {
            n.strip_prefix("result")
                .and_then(|i| i.parse::<usize>().ok())
                .is_some_and(|i| i < returns.len())
        });
    if !matched {
        let mut outputs = return_names(&f.func);
        if outputs.len() > 1 {
            outputs.extend((0..returns.len()).map(|i| format!("result{i}")));
        }
        return Err(format!(
            "`{}` names neither an argument of `{}` nor one of its outputs ({})",
            fe.key,
            f.func.name,
            outputs.join(", ")
        ));
    }
    let tokens = Formula::parse(&fe.formula)
        .map_err(|err| bad_tokens(&format!("the forward formula for `{}`", fe.key), fe, &err))?;
    let fw = ForwardDerivative {
        var_names: names.clone(),
        formula: fe.formula.clone(),
        tokens: tokens.clone(),
        required_inputs_primal: Vec::new(),
        required_inputs_fw_grad: Vec::new(),
        is_reusing_outplace_formula: false,
        expansion: None,
        loc: fe.loc.clone(),
    };
    Ok((fw, tokens))
}

/// "`{what}` is not valid tokens at column 17: unclosed `(`": the lexer's reason, and where
/// in the YAML line (1-based column; a line too when the formula spans several).
pub(super) fn bad_tokens(what: &str, fe: &FormulaEntry, err: &FormulaError) -> String {
    let before = fe.formula.get(..err.offset).unwrap_or_default();
    let at = match before.rfind('\n') {
        None => format!(
            "at column {}",
            fe.formula_loc.column + before.chars().count() + 1
        ),
        Some(nl) => format!(
            "at line {}, column {}",
            fe.formula_loc.line + before.matches('\n').count(),
            before[nl + 1..].chars().count() + 1
        ),
    };
    format!("{what} is not valid tokens {at}: {err}")
}

/// What a forward formula needs of the differentiable inputs: which primal values (`x_p`) and
/// tangents (`x_t`) it reads (torchgen's `find_required_inputs`).
struct Required<'a> {
    defn: &'a str,
    args_with_derivatives: &'a [String],
    /// Tensor-list arguments, skipped (their functions handle lists themselves) except for
    /// `_foreach_` functions.
    skipped: Vec<&'a str>,
}

impl Required<'_> {
    fn find(
        &self,
        formula: &Formula,
        postfix: &str,
        loc: &Location,
    ) -> Result<Vec<String>, (Location, String)> {
        let defn = self.defn;
        let mut req = BTreeSet::new();
        for arg in self.args_with_derivatives {
            if self.skipped.contains(&arg.as_str()) {
                continue;
            }
            if formula.has_ident(arg) {
                return Err((
                    loc.clone(),
                    format!(
                        "The forward formula for {defn} is using the base name of the {arg} argument which is ambiguous. You should use {arg}_p to access the primal value and {arg}_t to access the tangent."
                    ),
                ));
            }
            if formula.has_ident(&format!("{arg}{postfix}")) {
                req.insert(arg.clone());
            }
        }
        Ok(req.into_iter().collect())
    }
}

/// The inputs of [`postprocess_forward`] the expansions need.
pub(super) struct ForwardContext<'a> {
    pub f: &'a NativeFunction,
    pub defn: &'a str,
    pub all_arg_names: &'a [&'a str],
    pub derivatives: &'a [Derivative],
    pub args_with_derivatives: &'a [String],
}

/// torchgen's `postprocess_forward_derivatives`: expand `auto_element_wise` / `auto_linear`
/// and find the required primal values and tangents.
pub(super) fn postprocess_forward(
    cx: &ForwardContext<'_>,
    forward: Vec<(ForwardDerivative, Formula)>,
) -> Result<Vec<ForwardDerivative>, (Location, String)> {
    let f = cx.f;
    let is_foreach = f.func.name.name.base.starts_with("_foreach_");
    let skipped = if is_foreach {
        Vec::new()
    } else {
        cpp_arguments(&f.func)
            .into_iter()
            .filter(|a| a.is_tensor_list())
            .map(|a| a.name)
            .collect()
    };
    let required = Required {
        defn: cx.defn,
        args_with_derivatives: cx.args_with_derivatives,
        skipped,
    };
    let n = forward.len();
    let single_var = forward.first().is_none_or(|(d, _)| d.var_names.len() <= 1);
    let mut out = Vec::with_capacity(n);
    for (mut fw, mut tokens) in forward {
        let loc = fw.loc.clone();
        let mut required_tangent = required.find(&tokens, "_t", &loc)?;
        let expanded = match fw.formula.trim() {
            "auto_element_wise" => Some((
                auto_element_wise(cx, n == 1 && single_var, &loc)?,
                ForwardExpansion::ElementWise,
            )),
            "auto_linear" => Some((
                auto_linear(cx, n == 1 && single_var, &loc)?,
                ForwardExpansion::Linear,
            )),
            _ => None,
        };
        if let Some(((text, tangent), kind)) = expanded {
            fw.expansion = Some(kind);
            tokens = Formula::parse(&text).unwrap_or_default();
            fw.formula = text;
            required_tangent = tangent;
        }
        fw.required_inputs_primal = required.find(&tokens, "_p", &loc)?;
        fw.required_inputs_fw_grad = required_tangent;
        fw.tokens = tokens;
        out.push(fw);
    }
    Ok(out)
}

/// `auto_element_wise`: the backward formula with `grad` replaced by the tangent, conjugated;
/// the formula and the required tangents.
fn auto_element_wise(
    cx: &ForwardContext<'_>,
    single_output: bool,
    loc: &Location,
) -> Result<(String, Vec<String>), (Location, String)> {
    let (f, defn) = (cx.f, cx.defn);
    let err = |msg: String| Err((loc.clone(), msg));
    if f.func.kind() == SchemaKind::Inplace {
        return err(format!(
            "Cannot use auto_element_wise with {} because it is an in-place variant",
            f.func.name
        ));
    }
    if cx.args_with_derivatives.len() != 1 || !single_output {
        return err(format!(
            "Derivative definition of {defn} in derivatives.yaml defines the forward definition of gradient as element_wise but this only works for functions with a single differentiable input and a single differentiable output."
        ));
    }
    if cx.derivatives.len() != 1 {
        return err(format!(
            "Derivative definition of {defn} in derivatives.yaml defines the forward definition of gradient as element_wise but it does not defines the gradient formula for its argument which is required."
        ));
    }
    let input = &cx.args_with_derivatives[0];
    let mut t = Formula::parse(&cx.derivatives[0].original_formula).unwrap_or_default();
    t.replace_ident("grad", &format!("{input}_t.conj()"));
    for arg in cx.args_with_derivatives {
        t.replace_ident(arg, &format!("{arg}_p"));
    }
    let mut all: Vec<String> = cx.all_arg_names.iter().map(|s| s.to_string()).collect();
    all.sort();
    all.dedup();
    Ok((format!("({}).conj()", t.render()), all))
}

/// `auto_linear`: the function itself called on the tangents; the formula and the required
/// tangents.
fn auto_linear(
    cx: &ForwardContext<'_>,
    single_output: bool,
    loc: &Location,
) -> Result<(String, Vec<String>), (Location, String)> {
    let (f, defn) = (cx.f, cx.defn);
    if !single_output {
        return Err((
            loc.clone(),
            format!(
                "Derivative definition of {defn} in derivatives.yaml defines the forward definition of gradient as linear but this only works for functions with a single differentiable output."
            ),
        ));
    }
    if cx.args_with_derivatives.is_empty() {
        return Err((
            loc.clone(),
            format!("auto_linear for {defn} needs at least one differentiable argument"),
        ));
    }
    let new_args: Vec<String> = cx
        .all_arg_names
        .iter()
        .map(|a| {
            if cx.args_with_derivatives.iter().any(|d| d == a) {
                format!("{a}_t")
            } else {
                a.to_string()
            }
        })
        .collect();
    let mut name = defn.to_string();
    if f.func.has_symint() {
        name.push_str("_symint");
    }
    let text = if f.variants.contains(&Variant::Function) {
        format!("at::{name}({})", new_args.join(", "))
    } else {
        format!("{}.{name}({})", new_args[0], new_args[1..].join(", "))
    };
    let mut tangent = cx.args_with_derivatives.to_vec();
    tangent.sort();
    Ok((text, tangent))
}

/// The forward formulas as this function uses them: in-place functions rewrite the
/// functional formula (`result` becomes `self_p`, the tangent is updated in place).
pub(super) fn forward_for_function(
    f: &NativeFunction,
    info: &DifferentiabilityInfo,
    exact: bool,
    cx: &mut Ctxt,
) -> Vec<ForwardDerivative> {
    if info.forward_derivatives.is_empty() || f.func.kind() != SchemaKind::Inplace {
        return info.forward_derivatives.clone();
    }
    if info.forward_derivatives.len() != 1 {
        cx.error(
            &f.loc,
            Some(&f.schema),
            "only single-output in-place functions can have forward formulas",
        );
        return Vec::new();
    }
    let fw = &info.forward_derivatives[0];
    let mut t = Formula::parse(&fw.formula).unwrap_or_default();
    if t.has_ident("self_p") {
        if exact {
            cx.error(&fw.loc, Some(&f.schema), format!("The formula for \"{}\" is using the original value of self that is being modified inplace. This would lead to wrong forward gradients. Please use \"result\" in the formula only.", f.func.name));
            return Vec::new();
        }
        t.replace_ident("self_p", "original_self_p");
        t.replace_ident("self_t", "original_self_t");
    }
    t.replace_ident("result", "self_p");
    let mut primal = fw.required_inputs_primal.clone();
    if t.has_ident("self_p") {
        // torchgen appends `self` even when it is already there.
        primal.push("self".into());
        primal.sort();
    }
    let mut formula = t.render();
    if !exact {
        // NOTE [In-place forward AD formula Optimization]: `self_t.op(args)` becomes `self_t_raw.op_(args)`.
        let direct = formula.strip_prefix("self_t.").and_then(|rest| {
            let open = rest.find('(')?;
            let (op, args) = (&rest[..open], &rest[open + 1..]);
            let args = args.strip_suffix(')')?;
            let mut level = 1i32;
            for ch in args.chars() {
                if ch == ')' {
                    level -= 1;
                    if level == 0 {
                        return None;
                    }
                }
                if ch == '(' {
                    level += 1;
                }
            }
            (op.chars().all(|c| c.is_alphanumeric() || c == '_') && op == info.name)
                .then(|| (op.to_string(), args.to_string()))
        });
        formula = match direct {
            Some((op, args)) => {
                format!("self_t_raw.defined() ? self_t_raw.{op}_({args}) : {formula}")
            }
            None => format!("self_t_raw.defined() ? self_t_raw.copy_({formula}) : {formula}"),
        };
    }
    vec![ForwardDerivative {
        var_names: vec!["self".into()],
        tokens: Formula::parse(&formula).unwrap_or_default(),
        formula,
        required_inputs_primal: primal,
        required_inputs_fw_grad: fw.required_inputs_fw_grad.clone(),
        is_reusing_outplace_formula: !exact,
        expansion: fw.expansion,
        loc: fw.loc.clone(),
    }]
}
