//! torchgen's autograd analysis, in Rust.
//!
//! [`load_infos`] turns each `derivatives.yaml` entry into a [`DifferentiabilityInfo`] per
//! dispatch key (torchgen's `load_derivatives` / `create_differentiability_info`), adding the
//! `{view}_copy` infos torchgen derives. [`match_infos`] gives every native function its info
//! (exact schema match, else the functional variant's through `signature(strip_default)`, the
//! generated and `_foreach_*` rules) and works out differentiable outputs and the dispatch
//! strategy (`match_differentiability_info`, `gen_differentiable_outputs`).
//!
//! Results live in their own types; the model is never written to.

mod check;
pub mod cpp;
mod derivative;
mod foreach;
mod forward;
pub mod json;
mod load;
mod matching;
mod outputs;
pub mod saved;

use crate::diagnostics::{Ctxt, Diagnostics, Location};
use crate::formula::Formula;
use crate::model::derivatives::DerivativeEntry;
use crate::model::native::NativeFunction;
use crate::model::schema::FunctionSchema;
pub use load::{load_infos, op_prefix};
pub use matching::match_infos;
pub use outputs::differentiable_outputs;
use rustc_hash::FxHashMap as HashMap;
pub use saved::{PropertyRule, PropertyRules, SavedAttribute};
use std::collections::BTreeSet;
use std::sync::Arc;

/// A backward formula for one or more inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Derivative {
    /// The inputs it computes gradients for (`self`, or `self, other` for a joint formula).
    pub var_names: Vec<String>,
    /// The formula after the saved-attribute rewrite.
    pub formula: String,
    /// The formula's tokens after the rewrite.
    pub tokens: Formula,
    /// The formula as written.
    pub original_formula: String,
    /// Inputs (or derived properties) it saves, in order of discovery, duplicates kept.
    pub saved_inputs: Vec<SavedAttribute>,
    /// Outputs it saves.
    pub saved_outputs: Vec<SavedAttribute>,
    /// The `grad_{name}` gradients it uses.
    pub named_gradients: BTreeSet<String>,
    /// Where it is written.
    pub loc: Location,
}

/// A forward-mode formula for one or more outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct ForwardDerivative {
    /// The outputs it defines.
    pub var_names: Vec<String>,
    /// The formula (after `auto_linear` / `auto_element_wise` expansion).
    pub formula: String,
    /// Its tokens (what code generation emits from).
    pub tokens: Formula,
    /// Inputs whose primal value it reads (`x_p`), sorted.
    pub required_inputs_primal: Vec<String>,
    /// Inputs whose tangent it reads (`x_t`), sorted.
    pub required_inputs_fw_grad: Vec<String>,
    /// An in-place function reusing its functional variant's formula.
    pub is_reusing_outplace_formula: bool,
    /// The formula was `auto_element_wise` or `auto_linear` (expanded in `formula`).
    pub expansion: Option<ForwardExpansion>,
    /// Where it is written.
    pub loc: Location,
}

/// The forward formulas torchgen expands from a keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardExpansion {
    /// `auto_element_wise`: the backward formula applied to the tangent.
    ElementWise,
    /// `auto_linear`: the function itself applied to the tangents.
    Linear,
}

/// Everything derivatives.yaml says about one function, for one dispatch key.
#[derive(Debug, Clone, PartialEq)]
pub struct DifferentiabilityInfo {
    /// The entry's base name (`mul` for `mul.Tensor`; `expand_copy.` for a derived view copy).
    pub name: String,
    /// The function the entry is for (index into the analysed functions).
    pub func: usize,
    /// The backward node's name (`MulBackward0`), `None` when no input has a formula.
    pub op: Option<String>,
    /// Backward formulas, sorted by key text.
    pub derivatives: Vec<Derivative>,
    /// Forward formulas, sorted by key text.
    pub forward_derivatives: Vec<ForwardDerivative>,
    /// Every saved input, de-duplicated by name in first-seen order.
    pub all_saved_inputs: Vec<SavedAttribute>,
    /// Every saved output, de-duplicated.
    pub all_saved_outputs: Vec<SavedAttribute>,
    /// `grad_{name}` for each named, differentiable, tensor-like return.
    pub available_named_gradients: Vec<String>,
    /// Those the formulas use.
    pub used_named_gradients: BTreeSet<String>,
    /// Inputs with a backward formula, in argument order.
    pub args_with_derivatives: Vec<String>,
    /// Inputs marked `non_differentiable`.
    pub non_differentiable_arg_names: Vec<String>,
    /// `output_differentiability` flags (conditions count as `true`).
    pub output_differentiability: Option<Vec<bool>>,
    /// The condition string, when `output_differentiability` gives one.
    pub output_differentiability_conditions: Option<Vec<String>>,
    /// The entry's location.
    pub loc: Location,
    /// The entry's `view_inverse:` (tokens and where), for a function returning a view.
    pub view_inverse: Option<(Formula, Location)>,
}

impl DifferentiabilityInfo {
    /// Some input has a backward formula.
    pub fn has_derivatives(&self) -> bool {
        !self.args_with_derivatives.is_empty()
    }

    /// Some backward formula uses identifier `ident`.
    pub fn uses_ident(&self, ident: &str) -> bool {
        self.derivatives.iter().any(|d| d.tokens.has_ident(ident))
    }
}

/// The infos of one entry: per dispatch key, in file order.
pub type InfoSet = Vec<(String, Arc<DifferentiabilityInfo>)>;

/// How the generated wrapper calls the kernel (torchgen's `dispatch_strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchStrategy {
    /// Call the backend kernel on unwrapped tensors and record a node.
    UseDerived,
    /// Call the composite implementation, which is differentiable through its parts.
    UseType,
}

impl DispatchStrategy {
    /// `use_derived` / `use_type`.
    pub fn as_str(self) -> &'static str {
        match self {
            DispatchStrategy::UseDerived => "use_derived",
            DispatchStrategy::UseType => "use_type",
        }
    }
}

/// The analysis of one native function.
#[derive(Debug, Clone)]
pub struct FunctionAnalysis {
    /// Index into [`Analysis::functions`].
    pub func: usize,
    /// Its derivative information, if any.
    pub infos: Option<InfoSet>,
    /// The function's own schema has the entry (not inherited through its signature).
    pub exact_match: bool,
    /// Forward formulas per dispatch key, adapted to this function (in-place rewrite).
    pub fw_derivatives: Vec<(String, Vec<ForwardDerivative>)>,
    /// Differentiable output names, or torchgen's error.
    pub differentiable_outputs: Result<Vec<String>, String>,
    /// The dispatch strategy.
    pub dispatch_strategy: DispatchStrategy,
}

impl FunctionAnalysis {
    /// The key whose info is reported: `Default`, else the only one.
    pub fn main_key(&self) -> Option<&str> {
        let infos = self.infos.as_ref()?;
        infos
            .iter()
            .find(|(k, _)| k == "Default")
            .or_else(|| infos.first())
            .map(|(k, _)| k.as_str())
    }

    /// The info of [`FunctionAnalysis::main_key`].
    pub fn main_info(&self) -> Option<&Arc<DifferentiabilityInfo>> {
        let key = self.main_key()?;
        self.infos
            .as_ref()?
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, i)| i)
    }
}

/// Options of the analysis.
#[derive(Debug, Clone)]
pub struct AnalysisOptions {
    /// The saved-property rules.
    pub rules: PropertyRules,
}

impl AnalysisOptions {
    /// torchgen's behaviour, for PyTorch's own C++ formulas.
    pub fn torchgen() -> Self {
        AnalysisOptions {
            rules: PropertyRules::torchgen(),
        }
    }

    /// For Rust formulas.
    pub fn rust() -> Self {
        AnalysisOptions {
            rules: PropertyRules::rust(),
        }
    }
}

/// The whole analysis.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The native functions, file order then generated ones.
    pub functions: Vec<NativeFunction>,
    /// One result per function, same order.
    pub results: Vec<FunctionAnalysis>,
}

/// Infos keyed by the function schema they are for, in insertion order (as a Python dict).
#[derive(Debug, Clone, Default)]
pub struct InfoMap {
    entries: Vec<(FunctionSchema, InfoSet)>,
    /// Entry positions by a hash of the schema's name (schemas are compared in full).
    index: HashMap<u64, Vec<usize>>,
}

/// A cheap hash of what tells most schemas apart: the operator name.
fn name_hash(schema: &FunctionSchema) -> u64 {
    use std::hash::BuildHasher;
    let n = &schema.name;
    rustc_hash::FxBuildHasher.hash_one((&n.name.base, n.name.inplace, &n.overload_name))
}

impl InfoMap {
    fn position(&self, schema: &FunctionSchema) -> Option<usize> {
        self.index
            .get(&name_hash(schema))?
            .iter()
            .copied()
            .find(|&i| self.entries[i].0 == *schema)
    }

    /// Insert or replace (keeping the first position, as a Python dict does).
    pub fn insert(&mut self, schema: FunctionSchema, infos: InfoSet) {
        match self.position(&schema) {
            Some(i) => self.entries[i].1 = infos,
            None => {
                let h = name_hash(&schema);
                self.index.entry(h).or_default().push(self.entries.len());
                self.entries.push((schema, infos));
            }
        }
    }

    /// The infos for `schema`.
    pub fn get(&self, schema: &FunctionSchema) -> Option<&InfoSet> {
        self.position(schema).map(|i| &self.entries[i].1)
    }

    /// In insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &(FunctionSchema, InfoSet)> {
        self.entries.iter()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Run the whole analysis: load infos, then match every function.
pub fn analyze(
    functions: Vec<NativeFunction>,
    entries: &[DerivativeEntry],
    options: &AnalysisOptions,
) -> Result<Analysis, Diagnostics> {
    let mut cx = Ctxt::new();
    let mut infos = load_infos(&functions, entries, options, &mut cx);
    let results = match_infos(&functions, &mut infos, &mut cx);
    cx.check(Analysis { functions, results })
}

#[cfg(test)]
mod tests;
