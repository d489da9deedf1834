//! The generated code as text: formatted for people ([`generate_pretty`]: `autograd-gen
//! expand`, build scripts) or compact for rustc (the macro's file), each formula on a line
//! of its own beside its `derivatives.yaml` location.

use super::{Config, Settings, emit};
use crate::diagnostics::{Diagnostic, Diagnostics, Location};
use proc_macro2::TokenStream;
use std::cell::RefCell;

/// Generate and format with prettyplease: what `autograd-gen expand`, build scripts and the
/// macro's generated file contain. Each formula stands on one line with its location in
/// derivatives.yaml beside it, so that rustc's errors inside a formula show
/// `derivatives.yaml:LINE` and the entry.
pub fn generate_pretty(config: &Config) -> Result<String, Diagnostics> {
    let (tokens, formulas) = generate_with_placeholders(config)?;
    let file: syn::File = syn::parse2(tokens).map_err(|e| internal(&e))?;
    let text = prettyplease::unparse(&file);
    Ok(place_formulas(&text, &formulas))
}

/// The code with each formula a placeholder `__ag_formula_N`, and `(formula, location)` of
/// each.
fn generate_with_placeholders(config: &Config) -> Result<Formulas, Diagnostics> {
    let settings = Settings::new(config, true);
    let tokens = emit(config, &settings)?;
    let formulas = settings
        .placeholders
        .map(RefCell::into_inner)
        .unwrap_or_default();
    Ok((tokens, formulas))
}

type Formulas = (TokenStream, Vec<(String, String)>);

/// What the macro's file holds: the code as rustc reads it, not formatted (formatting costs
/// more than the rest of the expansion), but each formula on a line of its own with its
/// location, as in [`generate_pretty`].
pub(super) fn generate_compact(config: &Config) -> Result<String, Diagnostics> {
    let (tokens, formulas) = generate_with_placeholders(config)?;
    let text = tokens.to_string();
    let mut out = String::with_capacity(text.len() + formulas.len() * 160);
    let mut rest = text.as_str();
    while let Some(at) = rest.find("__ag_formula_") {
        let after = &rest[at + "__ag_formula_".len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let (formula, location) = after[..digits]
            .parse::<usize>()
            .ok()
            .and_then(|i| formulas.get(i))
            .ok_or_else(|| internal(&"formula placeholder without a formula"))?;
        out.push_str(&rest[..at]);
        out.push_str(&format!("\n{{ {formula} }} // {location}\n"));
        rest = &after[digits..];
    }
    out.push_str(rest);
    Ok(out)
}

fn internal(e: &dyn std::fmt::Display) -> Diagnostics {
    Diagnostics(vec![Diagnostic {
        location: Location::default(),
        entry: None,
        message: format!("internal error: generated code does not parse: {e}"),
    }])
}

/// Replace each `let __r = __ag_formula_N;` line with the formula and its location.
fn place_formulas(text: &str, formulas: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len() + formulas.len() * 120);
    for line in text.lines() {
        let t = line.trim_start();
        let id = t
            .strip_prefix("let __r = __ag_formula_")
            .and_then(|r| r.strip_suffix(';'))
            .and_then(|n| n.parse::<usize>().ok());
        match id.and_then(|i| formulas.get(i)) {
            Some((formula, at)) => {
                let indent = &line[..line.len() - t.len()];
                out.push_str(&format!("{indent}let __r = {{ {formula} }}; // {at}\n"));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}
