//! The analysis as JSON, in the shape of PyTorch's golden analysis (`FORMAT.md`).

use super::{
    Analysis, Derivative, DifferentiabilityInfo, ForwardDerivative, FunctionAnalysis,
    SavedAttribute,
};
use serde_json::{Value, json};

fn saved(list: &[SavedAttribute]) -> Value {
    Value::Array(
        list.iter()
            .map(|s| json!({"name": s.name, "expr": s.expr}))
            .collect(),
    )
}

fn derivative(d: &Derivative) -> Value {
    json!({
        "var_names": d.var_names,
        "formula": d.formula,
        "original_formula": d.original_formula,
        "saved_inputs": saved(&d.saved_inputs),
        "saved_outputs": saved(&d.saved_outputs),
        "named_gradients": d.named_gradients,
    })
}

fn forward(d: &ForwardDerivative) -> Value {
    json!({
        "var_names": d.var_names,
        "formula": d.formula,
        "required_inputs_primal": d.required_inputs_primal,
        "required_inputs_fw_grad": d.required_inputs_fw_grad,
        "is_reusing_outplace_formula": d.is_reusing_outplace_formula,
    })
}

fn info(fa: &FunctionAnalysis, info: &DifferentiabilityInfo) -> Value {
    let key = fa.main_key().unwrap_or("Default");
    let fw: Vec<Value> = fa
        .fw_derivatives
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.iter().map(forward).collect())
        .unwrap_or_default();
    let mut keys: Vec<&str> = fa.infos.iter().flatten().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    json!({
        "name": info.name,
        "exact_match": fa.exact_match,
        "op": info.op,
        "args_with_derivatives": info.args_with_derivatives,
        "non_differentiable_arg_names": info.non_differentiable_arg_names,
        "output_differentiability": info.output_differentiability,
        "output_differentiability_conditions": info.output_differentiability_conditions,
        "available_named_gradients": info.available_named_gradients,
        "used_named_gradients": info.used_named_gradients,
        "derivatives": info.derivatives.iter().map(derivative).collect::<Vec<_>>(),
        "forward_derivatives": fw,
        "all_saved_inputs": info.all_saved_inputs.iter().map(|s| &s.name).collect::<Vec<_>>(),
        "all_saved_outputs": info.all_saved_outputs.iter().map(|s| &s.name).collect::<Vec<_>>(),
        "dispatch_keys": keys,
    })
}

/// One function's record.
pub fn function_record(analysis: &Analysis, fa: &FunctionAnalysis) -> Value {
    let f = &analysis.functions[fa.func];
    json!({
        "schema": f.func.to_string(),
        "kind": f.func.kind().as_str(),
        "info": fa.main_info().map_or(Value::Null, |i| info(fa, i)),
        "differentiable_outputs": match &fa.differentiable_outputs {
            Ok(v) => json!(v),
            Err(e) => json!({"error": e}),
        },
        "dispatch_strategy": fa.dispatch_strategy.as_str(),
    })
}

/// The whole document: `{"source": ..., "functions": [...]}`.
pub fn to_json(analysis: &Analysis, source: Value) -> Value {
    json!({
        "source": source,
        "functions": analysis.results.iter().map(|fa| function_record(analysis, fa)).collect::<Vec<_>>(),
    })
}
