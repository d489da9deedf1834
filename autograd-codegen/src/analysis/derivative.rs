//! One entry's infos: backward formulas with their saved attributes (torchgen's
//! `set_up_derivatives` / `create_derivative`) and the checks on how they use gradients.

use super::cpp::{self, cpp_arguments, cpp_name, return_names};
use super::forward::{ForwardContext, bad_tokens, create_forward_derivative, postprocess_forward};
use super::{
    AnalysisOptions, Derivative, DifferentiabilityInfo, ForwardDerivative, SavedAttribute, saved,
};
use crate::diagnostics::{Ctxt, Location};
use crate::formula::Formula;
use crate::model::derivatives::{DispatchFormulas, FormulaEntry};
use crate::model::native::NativeFunction;
use std::collections::BTreeSet;

/// One dispatch key's formulas, checked against the canonical function's arguments and
/// returns (torchgen's `set_up_derivatives`).
pub(super) struct Setup<'a> {
    f: &'a NativeFunction,
    defn: &'a str,
    spec: &'a str,
    options: &'a AnalysisOptions,
    cpp_args: Vec<cpp::CppArg<'a>>,
    all_arg_names: Vec<&'a str>,
    all_ret_names: Vec<&'a str>,
    /// Return names as formulas see them (`self` is `result`).
    ret_names: Vec<String>,
    available_named_gradients: Vec<String>,
}

/// The formulas of one key, sorted by kind.
#[derive(Default)]
struct Collected {
    derivatives: Vec<Derivative>,
    forward: Vec<(ForwardDerivative, Formula)>,
    non_differentiable: Vec<String>,
    with_derivatives: BTreeSet<String>,
    failed: bool,
}

impl<'a> Setup<'a> {
    pub(super) fn new(
        f: &'a NativeFunction,
        defn: &'a str,
        spec: &'a str,
        output_differentiability: Option<&[bool]>,
        options: &'a AnalysisOptions,
    ) -> Self {
        let cpp_args = cpp_arguments(&f.func);
        let all_arg_names = cpp_args.iter().map(|a| a.name).collect();
        let returns = &f.func.returns;
        let all_ret_names = returns.iter().filter_map(|r| r.name.as_deref()).collect();
        let differentiability: Vec<bool> =
            output_differentiability.map_or_else(|| vec![true; returns.len()], <[bool]>::to_vec);
        let available_named_gradients = returns
            .iter()
            .zip(differentiability.iter())
            .filter(|(r, d)| **d && r.name.is_some() && r.ty.is_tensor_like())
            .map(|(r, _)| format!("grad_{}", r.name.as_deref().unwrap_or_default()))
            .collect();
        let ret_names = return_names(&f.func)
            .into_iter()
            .map(|n| if n == "self" { "result".to_string() } else { n })
            .collect();
        Setup {
            f,
            defn,
            spec,
            options,
            cpp_args,
            all_arg_names,
            all_ret_names,
            ret_names,
            available_named_gradients,
        }
    }

    /// The info of dispatch key `d`, or `None` after reporting its errors.
    pub(super) fn info(
        &self,
        fidx: usize,
        d: &DispatchFormulas,
        cx: &mut Ctxt,
    ) -> Option<DifferentiabilityInfo> {
        let mut sorted: Vec<&FormulaEntry> = d.formulas.iter().collect();
        sorted.sort_by(|a, b| a.key.cmp(&b.key));
        let mut c = Collected::default();
        for fe in sorted {
            self.add_formula(fe, &mut c, cx);
        }
        self.finish(fidx, d, c, cx)
    }

    fn error(&self, loc: &Location, msg: impl Into<String>, c: &mut Collected, cx: &mut Ctxt) {
        cx.error(loc, Some(self.spec), msg);
        c.failed = true;
    }

    fn add_formula(&self, fe: &FormulaEntry, c: &mut Collected, cx: &mut Ctxt) {
        let names = &fe.var_names;
        let is_arg = |n: &str| self.all_arg_names.contains(&n);
        for name in names {
            if is_arg(name) && self.all_ret_names.contains(&name.as_str()) {
                let msg = format!(
                    "`{name}` is both an input argument and a named return of `{}`",
                    self.f.func.name
                );
                self.error(&fe.loc, msg, c, cx);
            }
        }
        if !is_arg(&names[0]) {
            match create_forward_derivative(self.f, fe) {
                Ok(fw) => c.forward.push(fw),
                Err(msg) => self.error(&fe.loc, msg, c, cx),
            }
            return;
        }
        if let Some(bad) = names.iter().find(|n| !is_arg(n)) {
            let msg = format!(
                "`{bad}` in `{}` is not an argument of `{}`",
                fe.key, self.f.func.name
            );
            self.error(&fe.loc, msg, c, cx);
            return;
        }
        if fe.formula.trim().to_lowercase() == "non_differentiable" {
            c.non_differentiable.extend(names.iter().cloned());
            return;
        }
        match self.create_derivative(fe) {
            Ok(der) => {
                c.with_derivatives.extend(names.iter().cloned());
                c.derivatives.push(der);
            }
            Err(msg) => self.error(&fe.loc, msg, c, cx),
        }
    }

    fn finish(
        &self,
        fidx: usize,
        d: &DispatchFormulas,
        mut c: Collected,
        cx: &mut Ctxt,
    ) -> Option<DifferentiabilityInfo> {
        let overlap: Vec<&String> = c
            .non_differentiable
            .iter()
            .filter(|n| c.with_derivatives.contains(*n))
            .collect();
        if !overlap.is_empty() {
            let msg = format!(
                "derivatives definition for `{}` have overlapped non_differentiable and differentiable variables: {overlap:?}",
                self.spec
            );
            cx.error(&d.loc, Some(self.spec), msg);
            c.failed = true;
        }
        let args_with_derivatives: Vec<String> = self
            .cpp_args
            .iter()
            .filter(|a| c.with_derivatives.contains(a.name))
            .map(|a| a.name.to_string())
            .collect();
        let fcx = ForwardContext {
            f: self.f,
            defn: self.defn,
            all_arg_names: &self.all_arg_names,
            derivatives: &c.derivatives,
            args_with_derivatives: &args_with_derivatives,
        };
        let forward = match postprocess_forward(&fcx, std::mem::take(&mut c.forward)) {
            Ok(fw) => fw,
            Err((loc, msg)) => {
                cx.error(&loc, Some(self.spec), msg);
                c.failed = true;
                Vec::new()
            }
        };
        if let Err((loc, msg)) = check_grad_usage(self.defn, &c.derivatives, &d.loc) {
            cx.error(&loc, Some(self.spec), msg);
            c.failed = true;
        }
        if c.failed {
            return None;
        }
        Some(self.build(fidx, d, c, forward, args_with_derivatives))
    }

    fn build(
        &self,
        fidx: usize,
        d: &DispatchFormulas,
        c: Collected,
        forward: Vec<ForwardDerivative>,
        args_with_derivatives: Vec<String>,
    ) -> DifferentiabilityInfo {
        let derivatives = c.derivatives;
        let mut used_named_gradients = BTreeSet::new();
        for der in &derivatives {
            used_named_gradients.extend(der.named_gradients.iter().cloned());
        }
        let all_saved_inputs = dedup(derivatives.iter().flat_map(|d| d.saved_inputs.iter()));
        let all_saved_outputs = dedup(derivatives.iter().flat_map(|d| d.saved_outputs.iter()));
        DifferentiabilityInfo {
            name: self.defn.to_string(),
            func: fidx,
            op: None,
            derivatives,
            forward_derivatives: forward,
            all_saved_inputs,
            all_saved_outputs,
            available_named_gradients: self.available_named_gradients.clone(),
            used_named_gradients,
            args_with_derivatives,
            non_differentiable_arg_names: c.non_differentiable,
            output_differentiability: None,
            output_differentiability_conditions: None,
            loc: d.loc.clone(),
            view_inverse: None,
        }
    }

    /// torchgen's `create_derivative`: the saved attributes, named gradients and `grads[i]`
    /// bounds of one backward formula.
    fn create_derivative(&self, fe: &FormulaEntry) -> Result<Derivative, String> {
        let mut tokens = Formula::parse(&fe.formula)
            .map_err(|err| bad_tokens(&format!("the formula for `{}`", fe.key), fe, &err))?;
        let rules = &self.options.rules;
        let mut saved_inputs = Vec::new();
        saved::saved_variables(
            &mut tokens,
            &self.all_arg_names,
            &fe.var_names,
            rules,
            &mut saved_inputs,
        )
        .map_err(|e| e.0)?;
        let ret_refs: Vec<&str> = self.ret_names.iter().map(String::as_str).collect();
        let mut saved_outputs = Vec::new();
        saved::saved_variables(
            &mut tokens,
            &ret_refs,
            &fe.var_names,
            rules,
            &mut saved_outputs,
        )
        .map_err(|e| e.0)?;
        let named_gradients: BTreeSet<String> = self
            .available_named_gradients
            .iter()
            .filter(|n| tokens.has_ident(n))
            .cloned()
            .collect();
        let n = self.f.func.returns.len();
        if let Some(i) = tokens.grads_indices().into_iter().find(|&i| i >= n) {
            return Err(format!(
                "Out of bounds grads access: derivative formula for {} used grads[{i}], but the forward only returns {n} outputs.",
                cpp_name(&self.f.func)
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
}

fn dedup<'a>(it: impl Iterator<Item = &'a SavedAttribute>) -> Vec<SavedAttribute> {
    let mut seen = BTreeSet::new();
    it.filter(|s| seen.insert(s.name.clone()))
        .cloned()
        .collect()
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
