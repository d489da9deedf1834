//! `_foreach_*` functions: infos built from the per-tensor op's, as torchgen's
//! `gen_foreach_derivativeinfo` builds them (including its plain-text formula rewrites, which
//! target its C++ loop over list elements).

use super::{Derivative, DifferentiabilityInfo, ForwardDerivative, InfoSet, SavedAttribute};
use crate::formula::Formula;
use crate::model::native::NativeFunction;
use crate::model::schema::{Argument, FunctionSchema, SchemaKind, Type};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeSet;
use std::sync::Arc;

const WITH_INPLACE_REF: &[&str] = &["_foreach_zero_"];
const WITH_TENSOR_OVERLOAD: &[&str] = &[
    "_foreach_add.Tensor",
    "_foreach_mul.Tensor",
    "_foreach_div.Tensor",
];
const SKIP_ARGUMENT_LEN_CHECK: &[&str] = &[
    "_foreach_add.Scalar",
    "_foreach_add_.Scalar",
    "_foreach_add.ScalarList",
    "_foreach_add_.ScalarList",
    "_foreach_sub.Scalar",
    "_foreach_sub_.Scalar",
    "_foreach_sub.ScalarList",
    "_foreach_sub_.ScalarList",
];

fn elem(t: &Type) -> Option<&Type> {
    match t {
        Type::List { elem, .. } | Type::Optional(elem) => Some(elem),
        _ => None,
    }
}

/// `base` is `f`'s base name after its last `_foreach_`.
fn is_reference(f: &FunctionSchema, base: &str, name: &str, reference: &FunctionSchema) -> bool {
    if base != reference.name.name.base {
        return false;
    }
    let f_args: Vec<&Argument> = f.arguments.flat_non_out().collect();
    let r_args: Vec<&Argument> = reference.arguments.flat_non_out().collect();
    (!reference.name.name.inplace || WITH_INPLACE_REF.contains(&name))
        && (SKIP_ARGUMENT_LEN_CHECK.contains(&name) || f_args.len() == r_args.len())
        && f_args
            .iter()
            .zip(r_args.iter())
            .all(|(a, r)| r.ty == a.ty || elem(&a.ty) == Some(&r.ty))
}

/// The info of foreach function `i`, and whether it was generated (`false`: the in-place
/// foreach function reuses the reference op's info as is).
pub(super) fn gen_foreach_info(
    functions: &[NativeFunction],
    i: usize,
    functional_by_sig: &[(FunctionSchema, InfoSet)],
    non_functional_by_sig: &[(FunctionSchema, InfoSet)],
) -> Option<(DifferentiabilityInfo, bool)> {
    let f = &functions[i];
    let name = f.func.name.to_string();
    let (ref_schema, reference) =
        find_reference(f, &name, functional_by_sig, non_functional_by_sig)?;
    if f.func.kind() == SchemaKind::Inplace {
        return Some(((*reference).clone(), false));
    }
    let mapping = ArgMapping::new(&f.func, ref_schema);
    let backward = backward_derivatives(&reference, &mapping)?;
    let args_with_derivatives: Vec<String> = f
        .func
        .arguments
        .flat_non_out()
        .filter(|a| backward.var_names.contains(&a.name))
        .map(|a| a.name.clone())
        .collect();
    let ref_func = &functions[reference.func].func;
    let forward = reference
        .forward_derivatives
        .iter()
        .map(|fw| forward_derivative(fw, &f.func, ref_func, &name))
        .collect::<Option<Vec<_>>>()?;
    Some((
        DifferentiabilityInfo {
            name: f.func.name.name.base.clone(),
            func: i,
            op: Some(format!(
                "Foreach{}{}",
                reference.op.as_deref().unwrap_or("None"),
                f.func.name.overload_name
            )),
            derivatives: backward.derivatives,
            forward_derivatives: forward,
            all_saved_inputs: sorted_by_name(backward.saved_inputs),
            all_saved_outputs: sorted_by_name(backward.saved_outputs),
            available_named_gradients: Vec::new(),
            used_named_gradients: BTreeSet::new(),
            args_with_derivatives,
            non_differentiable_arg_names: Vec::new(),
            output_differentiability: None,
            output_differentiability_conditions: None,
            loc: reference.loc.clone(),
            view_inverse: None,
        },
        true,
    ))
}

/// torchgen collects `all_saved_inputs` / `all_saved_outputs` of these infos in a Python set,
/// whose order depends on the hash seed; FORMAT.md makes them sorted by name.
fn sorted_by_name(mut v: Vec<SavedAttribute>) -> Vec<SavedAttribute> {
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v.dedup_by(|a, b| a.name == b.name);
    v
}

/// The reference (per-tensor) op's schema and `Default` info: a functional one, or for
/// `_foreach_zero_` an in-place one.
fn find_reference<'s>(
    f: &NativeFunction,
    name: &str,
    functional_by_sig: &'s [(FunctionSchema, InfoSet)],
    non_functional_by_sig: &'s [(FunctionSchema, InfoSet)],
) -> Option<(&'s FunctionSchema, Arc<DifferentiabilityInfo>)> {
    let default = |set: &InfoSet| {
        set.iter()
            .find(|(k, _)| k == "Default")
            .map(|(_, i)| i.clone())
    };
    let base = f
        .func
        .name
        .name
        .base
        .rsplit("_foreach_")
        .next()
        .unwrap_or_default();
    let search = |list: &'s [(FunctionSchema, InfoSet)]| {
        list.iter()
            .find(|(s, set)| is_reference(&f.func, base, name, s) && default(set).is_some())
            .and_then(|(s, set)| Some((s, default(set)?)))
    };
    search(functional_by_sig).or_else(|| {
        (f.func.kind() == SchemaKind::Inplace && WITH_INPLACE_REF.contains(&name))
            .then(|| search(non_functional_by_sig))
            .flatten()
    })
}

/// The reference op's argument names mapped to the foreach function's.
struct ArgMapping<'a> {
    ref_to_foreach: HashMap<&'a str, &'a str>,
    arg_by_name: HashMap<&'a str, &'a Argument>,
}

impl<'a> ArgMapping<'a> {
    fn new(f: &'a FunctionSchema, reference: &'a FunctionSchema) -> Self {
        let mut ref_to_foreach: HashMap<&str, &str> = HashMap::default();
        let mut arg_by_name: HashMap<&str, &Argument> = HashMap::default();
        for (a, r) in f
            .arguments
            .flat_non_out()
            .zip(reference.arguments.flat_non_out())
        {
            ref_to_foreach.insert(r.name.as_str(), a.name.as_str());
            arg_by_name.insert(a.name.as_str(), a);
        }
        ArgMapping {
            ref_to_foreach,
            arg_by_name,
        }
    }
}

/// The backward formulas rewritten for the foreach function, and what they use.
struct Backward {
    derivatives: Vec<Derivative>,
    var_names: Vec<String>,
    saved_inputs: Vec<SavedAttribute>,
    saved_outputs: Vec<SavedAttribute>,
}

fn backward_derivatives(reference: &DifferentiabilityInfo, m: &ArgMapping<'_>) -> Option<Backward> {
    let mut b = Backward {
        derivatives: Vec::new(),
        var_names: Vec::new(),
        saved_inputs: Vec::new(),
        saved_outputs: Vec::new(),
    };
    for d in &reference.derivatives {
        let der = backward_derivative(d, m)?;
        b.var_names.extend(der.var_names.iter().cloned());
        b.saved_inputs.extend(der.saved_inputs.iter().cloned());
        b.saved_outputs.extend(der.saved_outputs.iter().cloned());
        b.derivatives.push(der);
    }
    Some(b)
}

/// One backward formula, with torchgen's text rewrites (`grad` -> `grads[i]`, saved
/// arguments -> the foreach function's, `[i]` for lists).
fn backward_derivative(d: &Derivative, m: &ArgMapping<'_>) -> Option<Derivative> {
    let mut formula = d
        .formula
        .replace("grad", "grads[i]")
        .replace("result", "result[i]");
    let mut saved_inputs = Vec::new();
    for s in &d.saved_inputs {
        let jit_name = s.expr.split('.').next().unwrap_or_default();
        let mapped = *m.ref_to_foreach.get(jit_name)?;
        let is_list = matches!(
            m.arg_by_name.get(mapped).map(|a| &a.ty),
            Some(Type::List { .. })
        );
        let mapped_expr = if is_list {
            format!("{mapped}[i]")
        } else {
            mapped.to_string()
        };
        let new_expr = s.expr.replace(jit_name, &mapped_expr);
        formula = formula.replace(&s.name, &new_expr);
        saved_inputs.push(SavedAttribute {
            name: mapped.to_string(),
            expr: mapped.to_string(),
            property: None,
            var: mapped.to_string(),
            capture: Default::default(),
        });
    }
    if d.saved_outputs.iter().any(|s| s.name != "result") {
        return None;
    }
    let var_names: Vec<String> = d
        .var_names
        .iter()
        .map(|v| m.ref_to_foreach.get(v.as_str()).map(|s| s.to_string()))
        .collect::<Option<_>>()?;
    Some(Derivative {
        var_names,
        tokens: Formula::parse(&formula).unwrap_or_default(),
        formula,
        original_formula: d.formula.clone(),
        saved_inputs,
        saved_outputs: d.saved_outputs.clone(),
        named_gradients: BTreeSet::new(),
        loc: d.loc.clone(),
    })
}

/// One forward formula of the reference op, rewritten for the foreach function.
fn forward_derivative(
    fw: &ForwardDerivative,
    f: &FunctionSchema,
    ref_func: &FunctionSchema,
    name: &str,
) -> Option<ForwardDerivative> {
    let mut var_names = fw.var_names.clone();
    let mut fw_grad = fw.required_inputs_fw_grad.clone();
    let mut primal = fw.required_inputs_primal.clone();
    let mut formula = fw.formula.clone();
    if formula.contains("result") {
        formula = formula.replace("result", "result[i]");
    }
    for (a, r) in f
        .arguments
        .flat_non_out()
        .zip(ref_func.arguments.flat_non_out())
    {
        formula = rename_in_forward(formula, a, r, name)?;
        for list in [&mut var_names, &mut fw_grad, &mut primal] {
            for n in list.iter_mut() {
                if *n == r.name {
                    *n = a.name.clone();
                }
            }
        }
    }
    fw_grad.sort();
    primal.sort();
    Some(ForwardDerivative {
        var_names,
        tokens: crate::formula::Formula::parse(&formula).unwrap_or_default(),
        formula,
        required_inputs_primal: primal,
        required_inputs_fw_grad: fw_grad,
        is_reusing_outplace_formula: fw.is_reusing_outplace_formula,
        expansion: fw.expansion,
        loc: fw.loc.clone(),
    })
}

/// Reference argument `r` becomes foreach argument `a` in a forward formula; `None` where
/// torchgen cannot rewrite it (a plain tensor outside the tensor overloads).
fn rename_in_forward(
    mut formula: String,
    a: &Argument,
    r: &Argument,
    name: &str,
) -> Option<String> {
    if matches!(a.ty, Type::List { .. }) && !a.ty.is_tensor_like() {
        formula = formula.replace(&r.name, &format!("{}[i]", a.name));
    } else if a.ty.is_tensor_like() {
        let ok = matches!(a.ty, Type::List { .. })
            || (a.ty.is_tensor() && WITH_TENSOR_OVERLOAD.contains(&name));
        if !ok {
            return None;
        }
        for suffix in ["_p", "_t"] {
            let cur = format!("{}{suffix}", r.name);
            if formula.contains(&cur) {
                formula = formula.replace(&cur, &format!("{}{suffix}", a.name));
            }
        }
    } else if a.name != r.name {
        formula = formula.replace(&r.name, &a.name);
    }
    Some(formula)
}
