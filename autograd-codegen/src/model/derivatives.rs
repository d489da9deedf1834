//! `derivatives.yaml`: the entries as written, located, before any analysis.
//!
//! An entry names a schema and maps argument names (or output names, for forward formulas)
//! to formulas, either directly or per dispatch key under `dispatch:`. Everything is kept as
//! text with its line; the analysis in [`crate::analysis`] gives it meaning.

use crate::diagnostics::{Ctxt, Location};
use crate::yaml::{self, Node, Value};
use std::sync::Arc;

/// `output_differentiability:` as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputDifferentiability {
    /// `[True, False]`: one flag per output.
    Flags(Vec<bool>),
    /// `["condition"]`: one C++/Rust condition for a single-output function.
    Conditions(Vec<String>),
}

/// One `key: formula` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormulaEntry {
    /// The key as written: `self`, `self, other`, `result`, `grad_output`.
    pub key: String,
    /// The key split at commas.
    pub var_names: Vec<String>,
    /// The formula text.
    pub formula: String,
    /// Where the key is.
    pub loc: Location,
    /// Where the formula text starts (its first character, inside the quotes of a quoted
    /// scalar).
    pub formula_loc: Location,
}

/// The formulas of one dispatch key (`Default` for an entry without `dispatch:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchFormulas {
    /// `Default`, `AutogradNestedTensor`, ...
    pub key: String,
    /// Where the key is (the entry's line for `Default` without `dispatch:`).
    pub loc: Location,
    /// The formulas, in file order.
    pub formulas: Vec<FormulaEntry>,
}

/// One `- name:` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerivativeEntry {
    /// The `name:` schema text.
    pub name: String,
    /// Where the entry starts.
    pub loc: Location,
    /// `output_differentiability:`, if given.
    pub output_differentiability: Option<OutputDifferentiability>,
    /// Formulas per dispatch key, in file order.
    pub dispatch: Vec<DispatchFormulas>,
    /// `view_inverse:` (not torchgen's): for a function returning a view of `self`, how a new
    /// value of the view (`mutated_view`) is written into its base (`base`), in the target
    /// language; `overlapping` for a view whose elements share memory (`expand`).
    pub view_inverse: Option<FormulaEntry>,
}

/// Read `derivatives.yaml`. Malformed entries are reported to `cx` and skipped.
pub fn parse_derivatives(file: &Arc<str>, text: &str, cx: &mut Ctxt) -> Vec<DerivativeEntry> {
    let items = yaml::parse_list(
        file,
        text,
        "derivatives.yaml must be a list of `- name:` entries",
        cx,
    );
    items
        .iter()
        .filter_map(|item| parse_entry(file, item, cx))
        .collect()
}

fn parse_entry(file: &Arc<str>, item: &Node, cx: &mut Ctxt) -> Option<DerivativeEntry> {
    let loc = item.location(file);
    let Some(map) = item.as_map() else {
        cx.error(
            &loc,
            None,
            format!("expected an entry with `name:`, found {}", item.kind_name()),
        );
        return None;
    };
    let Some(name) = item.get("name") else {
        cx.error(&loc, None, "entry without `name:`");
        return None;
    };
    let Some(name) = name.as_str().map(str::to_string) else {
        cx.error(
            &name.location(file),
            None,
            "`name:` must be a schema string",
        );
        return None;
    };
    let entry = Some(name.as_str());
    let mut output_differentiability = None;
    let mut dispatch = Vec::new();
    let mut default_formulas = Vec::new();
    let mut has_dispatch = false;
    let mut view_inverse = None;
    check_duplicate_keys(file, map, entry, cx);
    for (k, v) in map {
        let Some(key) = k.as_str() else {
            cx.error(&k.location(file), entry, "keys must be strings");
            continue;
        };
        match key {
            "name" => {}
            "output_differentiability" => {
                output_differentiability = parse_output_differentiability(file, v, entry, cx);
            }
            "dispatch" => {
                has_dispatch = true;
                dispatch.extend(parse_dispatch(file, v, entry, cx));
            }
            "view_inverse" => view_inverse = formula_entry(file, k, v, entry, cx),
            _ => default_formulas.extend(formula_entry(file, k, v, entry, cx)),
        }
    }
    if has_dispatch {
        if let Some(f) = default_formulas.first() {
            cx.error(
                &f.loc,
                entry,
                format!(
                    "formula `{}` next to `dispatch:`: put it under a dispatch key",
                    f.key
                ),
            );
        }
    } else {
        dispatch.push(DispatchFormulas {
            key: "Default".into(),
            loc: loc.clone(),
            formulas: default_formulas,
        });
    }
    Some(DerivativeEntry {
        view_inverse,
        name,
        loc,
        output_differentiability,
        dispatch,
    })
}

/// `dispatch:`: formulas per dispatch key.
/// A key written twice in one mapping: YAML readers keep one of the two without a word
/// (PyYAML, so torchgen, the last), so a formula would silently disappear.
fn check_duplicate_keys(file: &Arc<str>, map: &[(Node, Node)], entry: Option<&str>, cx: &mut Ctxt) {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for (k, _) in map {
        let Some(key) = k.as_str() else { continue };
        let loc = k.location(file);
        match seen.iter().find(|(s, _)| *s == key) {
            Some((_, first)) => cx.error(
                &loc,
                entry,
                format!(
                    "key `{key}` appears twice (first at line {first}); YAML would keep only one"
                ),
            ),
            None => seen.push((key, loc.line)),
        }
    }
}

fn parse_dispatch(
    file: &Arc<str>,
    v: &Node,
    entry: Option<&str>,
    cx: &mut Ctxt,
) -> Vec<DispatchFormulas> {
    let Some(keys) = v.as_map() else {
        cx.error(
            &v.location(file),
            entry,
            "`dispatch:` must map dispatch keys to formulas",
        );
        return Vec::new();
    };
    let mut dispatch = Vec::new();
    for (dk, dv) in keys {
        let Some(dkey) = dk.as_str() else {
            cx.error(&dk.location(file), entry, "dispatch keys must be strings");
            continue;
        };
        let Some(formulas) = dv.as_map() else {
            cx.error(
                &dv.location(file),
                entry,
                format!("dispatch key `{dkey}` must map names to formulas"),
            );
            continue;
        };
        check_duplicate_keys(file, formulas, entry, cx);
        let formulas = formulas
            .iter()
            .filter_map(|(fk, fv)| formula_entry(file, fk, fv, entry, cx))
            .collect();
        dispatch.push(DispatchFormulas {
            key: dkey.to_string(),
            loc: dk.location(file),
            formulas,
        });
    }
    dispatch
}

fn formula_entry(
    file: &Arc<str>,
    k: &Node,
    v: &Node,
    entry: Option<&str>,
    cx: &mut Ctxt,
) -> Option<FormulaEntry> {
    let key = k.as_str()?.to_string();
    let mut formula_loc = v.location(file);
    let formula = match &v.value {
        Value::Scalar { text, plain } => {
            if !plain {
                formula_loc.column += 1;
            }
            text.clone()
        }
        _ => {
            cx.error(
                &v.location(file),
                entry,
                format!(
                    "the formula for `{key}` must be a string, found {}",
                    v.kind_name()
                ),
            );
            return None;
        }
    };
    let var_names: Vec<String> = key.split(',').map(|s| s.trim().to_string()).collect();
    if var_names.iter().any(|n| n.is_empty()) {
        cx.error(
            &k.location(file),
            entry,
            format!("malformed key `{key}`: expected names separated by `, `"),
        );
        return None;
    }
    Some(FormulaEntry {
        key,
        var_names,
        formula,
        loc: k.location(file),
        formula_loc,
    })
}

fn parse_output_differentiability(
    file: &Arc<str>,
    v: &Node,
    entry: Option<&str>,
    cx: &mut Ctxt,
) -> Option<OutputDifferentiability> {
    let Some(items) = v.as_seq() else {
        cx.error(
            &v.location(file),
            entry,
            "`output_differentiability:` must be a list of True/False or one condition string",
        );
        return None;
    };
    if let Some(flags) = items
        .iter()
        .map(Node::as_bool)
        .collect::<Option<Vec<bool>>>()
    {
        return Some(OutputDifferentiability::Flags(flags));
    }
    if items.iter().any(|n| n.as_bool().is_some()) {
        cx.error(
            &v.location(file),
            entry,
            "`output_differentiability:` mixes booleans and conditions",
        );
        return None;
    }
    let conds: Vec<String> = items
        .iter()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect();
    if conds.len() != items.len() {
        cx.error(
            &v.location(file),
            entry,
            "`output_differentiability:` entries must be True/False or strings",
        );
        return None;
    }
    Some(OutputDifferentiability::Conditions(conds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_flat_and_dispatch_entries() {
        let yaml = "\
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor_backward(grad, other, self.scalar_type())
  other: mul_tensor_backward(grad, self, other.scalar_type())
  result: other_t * self_p + self_t * other_p

- name: chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]
  dispatch:
    Default:
      self: not_implemented(\"chunk\")
    AutogradNestedTensor:
      self: chunk_backward_nested(grads, self, chunks, dim)
- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  output_differentiability: [True, False]
  self: grad
";
        let mut cx = Ctxt::new();
        let entries = parse_derivatives(&Arc::from("d.yaml"), yaml, &mut cx);
        cx.check(()).unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].dispatch[0].key, "Default");
        assert_eq!(entries[0].dispatch[0].formulas.len(), 3);
        assert_eq!(entries[0].dispatch[0].formulas[1].loc.line, 3);
        assert_eq!(entries[1].loc.line, 6);
        let keys: Vec<_> = entries[1].dispatch.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["Default", "AutogradNestedTensor"]);
        assert_eq!(
            entries[2].output_differentiability,
            Some(OutputDifferentiability::Flags(vec![true, false]))
        );
    }

    #[test]
    fn collects_all_malformed_entries() {
        let yaml = "\
- name: a(Tensor self) -> Tensor
  self: [grad]
- self: grad
- name: b(Tensor self) -> Tensor
  output_differentiability: [True, \"x\"]
";
        let mut cx = Ctxt::new();
        parse_derivatives(&Arc::from("d.yaml"), yaml, &mut cx);
        let errs = cx.check(()).unwrap_err().0;
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert_eq!(errs[0].location.line, 2);
        assert!(errs[0].message.contains("must be a string"));
        assert_eq!(errs[1].location.line, 3);
        assert!(errs[1].message.contains("without `name:`"));
        assert_eq!(errs[2].location.line, 5);
    }
}
