//! Differentiable outputs (torchgen's `gen_differentiable_outputs`).

use super::DifferentiabilityInfo;
use super::cpp::return_names;
use crate::model::native::NativeFunction;
use crate::model::schema::SchemaKind;

/// torchgen's `gen_differentiable_outputs`.
pub fn differentiable_outputs(
    f: &NativeFunction,
    info: Option<&DifferentiabilityInfo>,
) -> Result<Vec<String>, String> {
    let names = return_names(&f.func);
    let outputs: Vec<(String, &crate::model::schema::Type)> = names
        .into_iter()
        .zip(f.func.returns.iter().map(|r| &r.ty))
        .collect();
    if let Some(od) = info.and_then(|i| i.output_differentiability.as_ref()) {
        if od.len() != outputs.len() {
            return Err(format!(
                "The length of output_differentiability ({}), does not match the number of outputs ({}).",
                od.len(),
                outputs.len()
            ));
        }
        if od.contains(&false) && f.func.kind() == SchemaKind::Inplace {
            return Err("output_differentiability=False for inplace operation (version_counter won't get updated)".into());
        }
        return Ok(outputs
            .into_iter()
            .zip(od)
            .filter(|(_, d)| **d)
            .map(|((n, _), _)| n)
            .collect());
    }
    let candidates: Vec<String> = outputs
        .into_iter()
        .filter(|(n, t)| {
            t.is_tensor_like() && info.is_none_or(|i| !i.non_differentiable_arg_names.contains(n))
        })
        .map(|(n, _)| n)
        .collect();
    if info.is_some_and(|i| i.uses_ident("grad")) {
        Ok(candidates.into_iter().take(1).collect())
    } else {
        Ok(candidates)
    }
}
