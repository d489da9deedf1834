//! One entry's infos: backward formulas with their saved attributes (torchgen's
//! `set_up_derivatives` / `create_derivative`) and the checks on how they use gradients.

use super::cpp::{self, cpp_arguments, cpp_name, return_names};
use super::forward::{create_forward_derivative, postprocess_forward};
use super::{AnalysisOptions, Derivative, DifferentiabilityInfo, SavedAttribute, saved};
use crate::diagnostics::{Ctxt, Location};
use crate::formula::Formula;
use crate::model::derivatives::{DispatchFormulas, FormulaEntry};
use crate::model::native::NativeFunction;
use std::collections::BTreeSet;

#[allow(clippy::too_many_arguments)]
pub(super) fn set_up_derivatives(
    f: &NativeFunction,
    fidx: usize,
    defn: &str,
    d: &DispatchFormulas,
    output_differentiability: Option<&[bool]>,
    options: &AnalysisOptions,
    spec: &str,
    cx: &mut Ctxt,
) -> Option<DifferentiabilityInfo> {
    let e = Some(spec);
    let cpp_args = cpp_arguments(&f.func);
    let all_arg_names: Vec<&str> = cpp_args.iter().map(|a| a.name).collect();
    let all_ret_names: Vec<&str> = f
        .func
        .returns
        .iter()
        .filter_map(|r| r.name.as_deref())
        .collect();
    let n_returns = f.func.returns.len();
    let differentiability: Vec<bool> =
        output_differentiability.map_or_else(|| vec![true; n_returns], <[bool]>::to_vec);
    let available_named_gradients: Vec<String> = f
        .func
        .returns
        .iter()
        .zip(differentiability.iter())
        .filter(|(r, d)| **d && r.name.is_some() && r.ty.is_tensor_like())
        .map(|(r, _)| format!("grad_{}", r.name.as_deref().unwrap_or_default()))
        .collect();
    let ret_names: Vec<String> = return_names(&f.func)
        .into_iter()
        .map(|n| if n == "self" { "result".to_string() } else { n })
        .collect();

    let mut derivatives = Vec::new();
    let mut forward = Vec::new();
    let mut non_differentiable: Vec<String> = Vec::new();
    let mut with_derivatives: BTreeSet<String> = BTreeSet::new();
    let mut ok = true;
    let mut sorted: Vec<&FormulaEntry> = d.formulas.iter().collect();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    for fe in sorted {
        let names = &fe.var_names;
        for name in names {
            if all_arg_names.contains(&name.as_str()) && all_ret_names.contains(&name.as_str()) {
                cx.error(
                    &fe.loc,
                    e,
                    format!(
                        "`{name}` is both an input argument and a named return of `{}`",
                        f.func.name
                    ),
                );
                ok = false;
            }
        }
        if !all_arg_names.contains(&names[0].as_str()) {
            match create_forward_derivative(f, fe) {
                Ok(fw) => forward.push(fw),
                Err(msg) => {
                    cx.error(&fe.loc, e, msg);
                    ok = false;
                }
            }
            continue;
        }
        if let Some(bad) = names.iter().find(|n| !all_arg_names.contains(&n.as_str())) {
            cx.error(
                &fe.loc,
                e,
                format!(
                    "`{bad}` in `{}` is not an argument of `{}`",
                    fe.key, f.func.name
                ),
            );
            ok = false;
            continue;
        }
        if fe.formula.trim().to_lowercase() == "non_differentiable" {
            non_differentiable.extend(names.iter().cloned());
            continue;
        }
        match create_derivative(
            f,
            fe,
            &cpp_args,
            &ret_names,
            &available_named_gradients,
            options,
        ) {
            Ok(der) => {
                with_derivatives.extend(names.iter().cloned());
                derivatives.push(der);
            }
            Err(msg) => {
                cx.error(&fe.loc, e, msg);
                ok = false;
            }
        }
    }
    let overlap: Vec<&String> = non_differentiable
        .iter()
        .filter(|n| with_derivatives.contains(*n))
        .collect();
    if !overlap.is_empty() {
        cx.error(&d.loc, e, format!("derivatives definition for `{spec}` have overlapped non_differentiable and differentiable variables: {overlap:?}"));
        ok = false;
    }
    let args_with_derivatives: Vec<String> = cpp_args
        .iter()
        .filter(|a| with_derivatives.contains(a.name))
        .map(|a| a.name.to_string())
        .collect();
    let forward = match postprocess_forward(
        f,
        defn,
        &all_arg_names,
        &derivatives,
        forward,
        &args_with_derivatives,
    ) {
        Ok(fw) => fw,
        Err((loc, msg)) => {
            cx.error(&loc, e, msg);
            ok = false;
            Vec::new()
        }
    };
    if let Err((loc, msg)) = check_grad_usage(defn, &derivatives, &d.loc) {
        cx.error(&loc, e, msg);
        ok = false;
    }
    if !ok {
        return None;
    }
    let mut used_named_gradients = BTreeSet::new();
    for der in &derivatives {
        used_named_gradients.extend(der.named_gradients.iter().cloned());
    }
    let all_saved_inputs = dedup(derivatives.iter().flat_map(|d| d.saved_inputs.iter()));
    let all_saved_outputs = dedup(derivatives.iter().flat_map(|d| d.saved_outputs.iter()));
    Some(DifferentiabilityInfo {
        name: defn.to_string(),
        func: fidx,
        op: None,
        derivatives,
        forward_derivatives: forward,
        all_saved_inputs,
        all_saved_outputs,
        available_named_gradients,
        used_named_gradients,
        args_with_derivatives,
        non_differentiable_arg_names: non_differentiable,
        output_differentiability: None,
        output_differentiability_conditions: None,
        loc: d.loc.clone(),
    })
}

fn dedup<'a>(it: impl Iterator<Item = &'a SavedAttribute>) -> Vec<SavedAttribute> {
    let mut seen = BTreeSet::new();
    it.filter(|s| seen.insert(s.name.clone()))
        .cloned()
        .collect()
}

fn create_derivative(
    f: &NativeFunction,
    fe: &FormulaEntry,
    cpp_args: &[cpp::CppArg<'_>],
    ret_names: &[String],
    available_named_gradients: &[String],
    options: &AnalysisOptions,
) -> Result<Derivative, String> {
    let mut tokens = Formula::parse(&fe.formula)
        .map_err(|err| format!("the formula for `{}` is not valid tokens: {err}", fe.key))?;
    let arg_names: Vec<&str> = cpp_args.iter().map(|a| a.name).collect();
    let mut saved_inputs = Vec::new();
    saved::saved_variables(
        &mut tokens,
        &arg_names,
        &fe.var_names,
        &options.rules,
        &mut saved_inputs,
    )
    .map_err(|e| e.0)?;
    let ret_refs: Vec<&str> = ret_names.iter().map(String::as_str).collect();
    let mut saved_outputs = Vec::new();
    saved::saved_variables(
        &mut tokens,
        &ret_refs,
        &fe.var_names,
        &options.rules,
        &mut saved_outputs,
    )
    .map_err(|e| e.0)?;
    let named_gradients: BTreeSet<String> = available_named_gradients
        .iter()
        .filter(|n| tokens.has_ident(n))
        .cloned()
        .collect();
    let n = f.func.returns.len();
    if let Some(i) = tokens.grads_indices().into_iter().find(|&i| i >= n) {
        return Err(format!(
            "Out of bounds grads access: derivative formula for {} used grads[{i}], but the forward only returns {n} outputs.",
            cpp_name(&f.func)
        ));
    }
    Ok(Derivative {
        var_names: fe.var_names.clone(),
        formula: tokens.render(),
        tokens,
        original_formula: fe.formula.clone(),
        saved_inputs,
        saved_outputs,
        named_gradients,
        loc: fe.loc.clone(),
    })
}

fn check_grad_usage(
    defn: &str,
    derivatives: &[Derivative],
    entry_loc: &Location,
) -> Result<(), (Location, String)> {
    let mut uses_grad = None;
    let mut num_grads_uses = 0;
    let mut uses_named = None;
    let mut indices = Vec::new();
    let mut grads_loc = None;
    for d in derivatives {
        if d.tokens.has_ident("grad") {
            uses_grad.get_or_insert(&d.loc);
        }
        let c = d.tokens.count_ident("grads");
        if c > 0 {
            grads_loc.get_or_insert(&d.loc);
        }
        num_grads_uses += c;
        if !d.named_gradients.is_empty() {
            uses_named.get_or_insert(&d.loc);
        }
        indices.extend(d.tokens.grads_indices());
    }
    let only_indices = num_grads_uses == indices.len();
    if let (Some(_), Some(loc)) = (uses_grad, grads_loc) {
        return Err((
            loc.clone(),
            format!(
                "Derivative definition of {defn} in derivatives.yaml illegally mixes use of 'grad' and 'grads'. Consider replacing occurrences of 'grad' with 'grads[0]'"
            ),
        ));
    }
    if only_indices && !indices.is_empty() && indices.iter().all(|&i| i == 0) {
        return Err((
            grads_loc.unwrap_or(entry_loc).clone(),
            format!(
                "Derivative definition of {defn} in derivatives.yaml solely refers to 'grads[0]'.  If the first output is indeed the only differentiable output, replace 'grads[0]' with 'grad'; otherwise, there is a likely error in your derivatives declaration."
            ),
        ));
    }
    if let Some(loc) = uses_named
        && (uses_grad.is_some() || num_grads_uses > 0)
    {
        return Err((
            loc.clone(),
            format!(
                "Derivative definition of {defn} in derivatives.yaml illegally mixes use of \"grad_RETURN_NAME\" and \"grad\" or \"grads[x]\". Use only one method for identifying gradients."
            ),
        ));
    }
    Ok(())
}
