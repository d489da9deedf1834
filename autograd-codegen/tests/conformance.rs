//! Conformance with torchgen: analyze PyTorch's corpus and compare every record of
//! `golden-public.json` under the policy of `FORMAT.md` (the same one `compare.py` applies).
//! Lists are compared in order, including `all_saved_inputs` / `all_saved_outputs` of the
//! generated `_foreach_*` infos, which FORMAT.md makes sorted by name.

use autograd_codegen::analysis::{AnalysisOptions, json};
use autograd_codegen::api::{Sources, analyze_sources, pytorch_data_dir};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// torchgen's C++-only rewrite of `str?` arguments, read back as the plain name.
fn undo_optional_string(s: &str) -> String {
    let mut out = s.to_string();
    while let Some(pos) = out.find(".has_value()?std::optional<std::string_view>(") {
        let name_start = out[..pos]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let name = out[name_start..pos].to_string();
        let tail =
            format!(".has_value()?std::optional<std::string_view>({name}.value()):std::nullopt");
        if out[pos..].starts_with(&tail) {
            out.replace_range(name_start..pos + tail.len(), &name);
        } else {
            break;
        }
    }
    out
}

fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| {
            w.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
        })
}

/// Names that the entry's formulas mention only inside string literals.
fn string_only_names(info: &Value) -> BTreeSet<String> {
    let (mut inside, mut outside) = (BTreeSet::new(), BTreeSet::new());
    for d in info["derivatives"].as_array().into_iter().flatten() {
        let Some(f) = d["original_formula"].as_str() else {
            continue;
        };
        let mut rest = String::new();
        let mut in_str = false;
        let mut lit = String::new();
        let mut chars = f.chars();
        while let Some(c) = chars.next() {
            if in_str {
                match c {
                    '\\' => {
                        lit.push(c);
                        if let Some(n) = chars.next() {
                            lit.push(n);
                        }
                    }
                    '"' => {
                        inside.extend(words(&lit).map(str::to_string));
                        lit.clear();
                        in_str = false;
                        rest.push_str("\"\"");
                    }
                    _ => lit.push(c),
                }
            } else if c == '"' {
                in_str = true;
            } else {
                rest.push(c);
            }
        }
        outside.extend(words(&rest).map(str::to_string));
    }
    inside.difference(&outside).cloned().collect()
}

fn normalize(mut f: Value) -> Value {
    let Some(info) = f.get_mut("info").filter(|i| i.is_object()) else {
        return f;
    };
    let quoted = string_only_names(info);
    let keep = |v: &Value| v.as_str().is_none_or(|n| !quoted.contains(n));
    for key in ["all_saved_inputs", "all_saved_outputs"] {
        if let Some(list) = info[key].as_array_mut() {
            list.retain(keep);
        }
    }
    for d in info["derivatives"].as_array_mut().into_iter().flatten() {
        for key in ["saved_inputs", "saved_outputs"] {
            if let Some(list) = d[key].as_array_mut() {
                let names: Vec<Value> = list
                    .iter()
                    .map(|s| s.get("name").cloned().unwrap_or_else(|| s.clone()))
                    .filter(keep)
                    .collect();
                *list = names;
            }
        }
        if let Some(s) = d["formula"].as_str() {
            d["formula"] = Value::String(undo_optional_string(&squash(s)));
        }
        if let Some(s) = d["original_formula"].as_str() {
            d["original_formula"] = Value::String(squash(s));
        }
    }
    for d in info["forward_derivatives"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if d["is_reusing_outplace_formula"] == Value::Bool(true) {
            d.as_object_mut().unwrap().remove("formula");
        } else if let Some(s) = d["formula"].as_str() {
            d["formula"] = Value::String(squash(s));
        }
    }
    f
}

/// Every difference between `golden` and `cand`, as `path: golden vs candidate`.
fn diff(path: &str, golden: &Value, cand: &Value, out: &mut Vec<String>) {
    if path == "differentiable_outputs" && golden.get("error").is_some() {
        if !cand
            .as_object()
            .is_some_and(|o| o.len() == 1 && o.contains_key("error"))
        {
            out.push(format!("{path}: {golden} vs {cand}"));
        }
        return;
    }
    match (golden, cand) {
        (Value::Object(g), Value::Object(c)) => {
            for (k, gv) in g {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match c.get(k) {
                    Some(cv) => diff(&p, gv, cv, out),
                    None => out.push(format!("{p}: missing in candidate")),
                }
            }
        }
        (Value::Array(g), Value::Array(c)) if g.len() == c.len() => {
            for (i, (gv, cv)) in g.iter().zip(c).enumerate() {
                diff(&format!("{path}[{i}]"), gv, cv, out);
            }
        }
        _ if golden == cand => {}
        _ => out.push(format!("{path}: {golden} vs {cand}")),
    }
}

#[test]
fn reproduces_torchgen_on_every_public_golden_record() {
    let Some(dir) = pytorch_data_dir("conformance test") else {
        return;
    };
    let sources = Sources::pytorch(&dir).unwrap();
    let analysis =
        analyze_sources(&sources, &AnalysisOptions::torchgen()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(analysis.results.len(), 3110);
    let ours = json::to_json(&analysis, Value::Null);
    let by_schema: HashMap<&str, &Value> = ours["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["schema"].as_str().unwrap(), f))
        .collect();
    let golden: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("golden-public.json")).unwrap())
            .unwrap();
    let records = golden["functions"].as_array().unwrap();
    let mut failures = Vec::new();
    for g in records {
        let schema = g["schema"].as_str().unwrap();
        let Some(c) = by_schema.get(schema) else {
            failures.push(format!("{schema}: missing"));
            continue;
        };
        let mut d = Vec::new();
        diff("", &normalize(g.clone()), &normalize((*c).clone()), &mut d);
        if !d.is_empty() {
            failures.push(format!("{schema}:\n    {}", d.join("\n    ")));
        }
    }
    println!(
        "conformance: {}/{} functions match",
        records.len() - failures.len(),
        records.len()
    );
    assert!(records.len() >= 1552);
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
