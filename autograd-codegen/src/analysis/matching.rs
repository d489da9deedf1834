//! Matching: every native function gets its info (torchgen's `match_differentiability_info`),
//! its differentiable outputs and its dispatch strategy.

use super::forward::forward_for_function;
use super::outputs::differentiable_outputs;
use super::{DispatchStrategy, FunctionAnalysis, InfoMap, InfoSet, foreach};
use crate::diagnostics::Ctxt;
use crate::model::native::NativeFunction;
use crate::model::schema::{FunctionSchema, SchemaKind, SignatureKey};
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

/// torchgen's `match_differentiability_info` plus differentiable outputs and dispatch
/// strategy, for every function.
pub fn match_infos(
    functions: &[NativeFunction],
    infos: &mut InfoMap,
    cx: &mut Ctxt,
) -> Vec<FunctionAnalysis> {
    let (functional_by_sig, non_functional_by_sig) = by_signature(infos);
    // The key of a signature equals the key of the schema it came from.
    let functional_index: HashMap<SignatureKey<'_>, usize> = functional_by_sig
        .iter()
        .enumerate()
        .map(|(i, (s, _))| (s.signature_key(false, false), i))
        .collect();
    let mut results = Vec::with_capacity(functions.len());
    for (i, f) in functions.iter().enumerate() {
        let (set, exact) = find_info(
            functions,
            i,
            infos,
            &functional_by_sig,
            &functional_index,
            &non_functional_by_sig,
            cx,
        );
        let fw_derivatives = match &set {
            Some(set) => set
                .iter()
                .map(|(k, info)| (k.clone(), forward_for_function(f, info, exact, cx)))
                .collect(),
            None => Vec::new(),
        };
        let mut fa = FunctionAnalysis {
            func: i,
            infos: set,
            exact_match: exact,
            fw_derivatives,
            differentiable_outputs: Ok(Vec::new()),
            dispatch_strategy: DispatchStrategy::UseType,
        };
        fa.differentiable_outputs = differentiable_outputs(f, fa.main_info().map(|a| &**a));
        let has_derivs = fa
            .infos
            .as_ref()
            .is_some_and(|s| s.iter().any(|(_, i)| i.has_derivatives()));
        fa.dispatch_strategy = if f.is_abstract || has_derivs {
            DispatchStrategy::UseDerived
        } else {
            DispatchStrategy::UseType
        };
        results.push(fa);
    }
    results
}

/// Infos keyed by a signature, in insertion order.
type BySignature = Vec<(FunctionSchema, InfoSet)>;

/// The infos by `signature(strip_default=True)`, functional and non-functional apart, later
/// entries replacing earlier ones in place (a Python dict).
fn by_signature(infos: &InfoMap) -> (BySignature, BySignature) {
    let mut functional: Vec<(&FunctionSchema, InfoSet)> = Vec::new();
    let mut non_functional: Vec<(&FunctionSchema, InfoSet)> = Vec::new();
    let mut index: HashMap<(bool, SignatureKey<'_>), usize> = HashMap::default();
    for (schema, set) in infos.iter() {
        let is_functional = schema.kind() == SchemaKind::Functional;
        let list = if is_functional {
            &mut functional
        } else {
            &mut non_functional
        };
        let key = (is_functional, schema.signature_key(true, false));
        match index.get(&key) {
            Some(&i) => list[i].1 = set.clone(),
            None => {
                index.insert(key, list.len());
                list.push((schema, set.clone()));
            }
        }
    }
    let sigs = |l: Vec<(&FunctionSchema, InfoSet)>| -> BySignature {
        l.into_iter()
            .map(|(s, set)| (s.signature(true), set))
            .collect()
    };
    (sigs(functional), sigs(non_functional))
}

fn find_info(
    functions: &[NativeFunction],
    i: usize,
    infos: &mut InfoMap,
    functional_by_sig: &[(FunctionSchema, InfoSet)],
    functional_index: &HashMap<SignatureKey<'_>, usize>,
    non_functional_by_sig: &[(FunctionSchema, InfoSet)],
    cx: &mut Ctxt,
) -> (Option<InfoSet>, bool) {
    let f = &functions[i];
    let kind = f.func.kind();
    if f.has_tag("generated") && kind == SchemaKind::Out {
        return (None, false);
    }
    if let Some(set) = infos.get(&f.func) {
        return (Some(set.clone()), true);
    }
    let is_foreach = f.func.name.name.base.starts_with("_foreach_");
    let sig = f.func.signature_key(true, false);
    if !is_foreach && let Some(&k) = functional_index.get(&sig) {
        return (Some(functional_by_sig[k].1.clone()), false);
    }
    if f.has_tag("generated")
        && let Some((_, set)) = non_functional_by_sig
            .iter()
            .find(|(s, _)| s.signature_key(false, false) == sig)
    {
        if set.iter().any(|(_, info)| {
            info.all_saved_inputs
                .iter()
                .any(|s| s.name.contains("self"))
        }) {
            cx.error(&f.loc, Some(&f.schema), "Attempted to convert a derivative formula for a mutable operator to be used automatically by its functional variant. This is not currently supported.");
            return (None, false);
        }
        return (Some(set.clone()), false);
    }
    if is_foreach {
        return match foreach::gen_foreach_info(
            functions,
            i,
            functional_by_sig,
            non_functional_by_sig,
        ) {
            None => (None, false),
            Some((info, generated)) => {
                let set: InfoSet = vec![("Default".to_string(), Arc::new(info))];
                if generated {
                    infos.insert(f.func.clone(), set.clone());
                }
                (Some(set), generated)
            }
        };
    }
    (None, false)
}
