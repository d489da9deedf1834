//! The plan of each function's forward formulas (torchgen's `emit_fw_derivatives`, its
//! planning half): which outputs get a tangent from which formula, the formula's tokens with
//! `auto_linear` expanded and tensor properties read from the variables, and the inputs it
//! binds. [`crate::emit::forward`] emits it.

use super::{DiffInput, TensorKind};
use crate::analysis::cpp::{cpp_name, return_names};
use crate::analysis::{ForwardDerivative, ForwardExpansion, FunctionAnalysis};
use crate::emit::tokens::formula_tokens;
use crate::formula::{Formula, Tok, TokKind};
use crate::model::native::NativeFunction;
use crate::model::schema::SchemaKind;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

/// What a wrapper does for forward-mode AD.
pub(crate) enum ForwardPlan<'a> {
    /// Nothing: no input can give a differentiable output a tangent.
    Nothing,
    /// Fails when one of `inputs` has a tangent (PyTorch's `op` name; an out= function).
    Forbid {
        op: String,
        out_fn: bool,
        inputs: Vec<DiffInput<'a>>,
        /// The function has no derivatives entry: PyTorch's autograd fallback refuses a
        /// tangent with its own words ("... with aten::copy that does not support it.").
        fallback: bool,
    },
    /// Computes tangents with these formulas.
    Formulas(Vec<ForwardFormula<'a>>),
}

/// One output's forward formula, ready to emit.
pub(crate) struct ForwardFormula<'a> {
    /// The return it gives a tangent to.
    pub output: usize,
    /// The formula's tokens (an `auto_linear` call of the wrapper itself).
    pub expr: TokenStream,
    /// Inputs whose tangents trigger it (all the differentiable ones when none is named).
    pub checked: Vec<DiffInput<'a>>,
    /// Inputs bound as `x_t`.
    pub tangents: Vec<DiffInput<'a>>,
    /// Inputs bound as `x_p`.
    pub primals: Vec<DiffInput<'a>>,
    /// The formula reads `result`.
    pub result: bool,
    /// Other outputs it reads by name (`indices`), with their return index.
    pub named: Vec<(Ident, usize)>,
    /// The formula on one line, and where it is written (for the generated file).
    pub line: String,
    pub location: String,
}

/// The forward plan of a function: `inputs` are its differentiable inputs (those with a
/// backward formula, or every tensor input of a function without an entry), `diff_outputs`
/// its differentiable returns. `Err` is a message for the entry.
pub(crate) fn plan_forward<'a>(
    fa: &FunctionAnalysis,
    nf: &'a NativeFunction,
    inputs: Vec<DiffInput<'a>>,
    diff_outputs: &[usize],
    rename: &dyn Fn(&str) -> Option<String>,
) -> Result<ForwardPlan<'a>, String> {
    let f = &nf.func;
    let kind = f.kind();
    let forbid = |inputs| ForwardPlan::Forbid {
        op: cpp_name(f),
        out_fn: matches!(kind, SchemaKind::Out | SchemaKind::Scratch),
        inputs,
        fallback: false,
    };
    if matches!(kind, SchemaKind::Out | SchemaKind::Scratch) {
        return Ok(forbid(inputs));
    }
    if inputs.is_empty() || diff_outputs.is_empty() {
        return Ok(ForwardPlan::Nothing);
    }
    let fws = match fa.main_info() {
        Some(info) => &info.forward_derivatives,
        None => {
            return Ok(ForwardPlan::Forbid {
                op: format!("aten::{}", cpp_name(f)),
                out_fn: false,
                inputs,
                fallback: true,
            });
        }
    };
    // Joint formulas (`values, indices: ...`) are not emitted: their function fails instead.
    if fws.is_empty() || fws.iter().any(|d| d.var_names.len() != 1) {
        return Ok(forbid(inputs));
    }
    let names = return_names(f);
    let mut out = Vec::new();
    for fw in fws {
        let output = output_index(&fw.var_names[0], &names, kind)
            .ok_or_else(|| format!("forward formula for `{}`: no such output", fw.var_names[0]))?;
        let mut ff = formula(fw, nf, &inputs, output, rename)?;
        if matches!(kind, SchemaKind::Functional | SchemaKind::Mutable) {
            let tokens = &fw.tokens;
            ff.named = names
                .iter()
                .enumerate()
                .filter(|(_, n)| *n != "result" && tokens.has_ident(n))
                .filter(|(_, n)| !f.arguments.flat_all().any(|a| &a.name == *n))
                .map(|(i, n)| (crate::names::ident(n), i))
                .collect();
        }
        out.push(ff);
    }
    Ok(ForwardPlan::Formulas(out))
}

/// The return a formula's name means (`result`, `resultN`, a return's name; `self` or
/// `result` for an in-place function).
fn output_index(name: &str, names: &[String], kind: SchemaKind) -> Option<usize> {
    if kind == SchemaKind::Inplace || name == "result" {
        return Some(0);
    }
    if let Some(i) = names.iter().position(|n| n == name) {
        return Some(i);
    }
    name.strip_prefix("result")?.parse().ok()
}

fn formula<'a>(
    fw: &ForwardDerivative,
    nf: &'a NativeFunction,
    inputs: &[DiffInput<'a>],
    output: usize,
    rename: &dyn Fn(&str) -> Option<String>,
) -> Result<ForwardFormula<'a>, String> {
    let tokens = &fw.tokens;
    let pick = |pred: &dyn Fn(&DiffInput<'a>) -> bool| -> Vec<DiffInput<'a>> {
        inputs
            .iter()
            .filter(|i| pred(i))
            .map(|i| DiffInput {
                arg: i.arg,
                kind: i.kind,
            })
            .collect()
    };
    let uses =
        |i: &DiffInput<'_>, postfix: &str| tokens.has_ident(&format!("{}{postfix}", i.arg.name));
    let linear = fw.expansion == Some(ForwardExpansion::Linear);
    let tangents = pick(&|i| linear || uses(i, "_t"));
    let mut checked = pick(&|i| {
        fw.required_inputs_fw_grad.contains(&i.arg.name)
            || (i.kind.is_list() && (uses(i, "_t") || tokens.has_ident(&i.arg.name)))
            || (linear && tangents.iter().any(|t| t.arg.name == i.arg.name))
    });
    if checked.is_empty() {
        checked = pick(&|_| true);
    }
    let location = format!(
        "{}: `{}`: forward formula for `{}`",
        fw.loc, nf.schema, fw.var_names[0]
    );
    let tensors: Vec<&str> = nf
        .func
        .arguments
        .flat_all()
        .filter(|a| a.ty.is_tensor_like())
        .map(|a| a.name.as_str())
        .collect();
    let tokens = &properties(tokens, &tensors);
    let expr = if linear {
        linear_call(nf, inputs)
    } else {
        let ts = formula_tokens(tokens, rename)?;
        syn::parse2::<syn::Expr>(quote!({ #ts })).map_err(|e| {
            format!(
                "the forward formula for `{}` is not a Rust expression: {e} ({})",
                fw.var_names[0], ts
            )
        })?;
        ts
    };
    Ok(ForwardFormula {
        output,
        checked,
        primals: pick(&|i| uses(i, "_p")),
        result: tokens.has_ident("result"),
        named: Vec::new(),
        line: match linear {
            true => expr.to_string(),
            false => crate::emit::tokens::formula_line(tokens, rename),
        },
        location,
        tangents,
        expr,
    })
}

/// The properties backward formulas read from saved fields, read from the variables in a
/// forward formula with the types backward formulas see: `x.sizes()` / `x.sym_sizes()` a
/// `&[i64]`, `x.shape()` a `&[usize]`, `x.size(d)` / `x.numel()` / `x.dim()` an `i64` (so a
/// backward formula that `auto_element_wise` reuses compiles as it is). The receiver is a
/// primal or tangent (`x_p`, `x_t`), `result` / `resultN`, or a tensor argument.
pub(crate) fn properties(f: &Formula, tensors: &[&str]) -> Formula {
    let is_var = |t: &Tok| {
        t.kind == TokKind::Ident
            && (t.text.ends_with("_p")
                || t.text.ends_with("_t")
                || t.text.starts_with("result")
                || tensors.contains(&t.text.as_str()))
    };
    let mut out = f.clone();
    let mut i = 0;
    while i + 3 < out.toks.len() {
        let t = &out.toks;
        let after_path = i > 0 && (t[i - 1].is_punct(".") || t[i - 1].is_punct(":"));
        if after_path || !is_var(&t[i]) || !t[i + 1].is_punct(".") || !t[i + 3].is_punct("(") {
            i += 1;
            continue;
        }
        let Some(close) = matching_close(t, i + 3) else {
            break;
        };
        let (v, arg) = (&t[i].text, out.text_of(i + 4..close));
        let text = match (t[i + 2].text.as_str(), arg.trim().is_empty()) {
            ("sizes" | "sym_sizes", true) => {
                format!("(&{v}.shape().iter().map(|&d| d as i64).collect::<__ag::Vec<i64>>()[..])")
            }
            ("shape", true) => format!("(&{v}.shape()[..])"),
            ("numel" | "sym_numel", true) => {
                format!("({v}.shape().iter().product::<usize>() as i64)")
            }
            ("dim", true) => format!("({v}.shape().len() as i64)"),
            ("size" | "sym_size", false) => {
                format!("(__ag::size_at(&{v}.shape(), ({arg}) as i64) as i64)")
            }
            _ => {
                i += 1;
                continue;
            }
        };
        let repl = Formula::parse(&text).unwrap_or_default();
        i += out.splice(i, close + 1 - i, &repl);
    }
    out
}

/// The index of the bracket closing the one at `open`.
fn matching_close(t: &[Tok], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, tok) in t.iter().enumerate().skip(open) {
        match tok.kind {
            TokKind::Open => depth += 1,
            TokKind::Close => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// `auto_linear`: the wrapper itself on the tangents of the differentiable inputs.
fn linear_call(nf: &NativeFunction, inputs: &[DiffInput<'_>]) -> TokenStream {
    // An in-place function's tangent is its functional variant's on the tangents.
    let mut op = nf.func.name.clone();
    op.name.inplace = false;
    let name = format_ident!("{}", crate::names::op_fn_name(&op));
    let args = nf.func.arguments.flat_all().map(|a| {
        let n = crate::names::ident(&a.name);
        match inputs.iter().find(|i| i.arg.name == a.name).map(|i| i.kind) {
            Some(TensorKind::One | TensorKind::List) => {
                let t = format_ident!("{}_t", a.name);
                quote!(&#t)
            }
            Some(TensorKind::Opt) | Some(TensorKind::OptList) => {
                let t = format_ident!("{}_t", a.name);
                quote!(#t.as_ref())
            }
            None => quote!(#n),
        }
    });
    quote!(#name::<T>(#(#args),*))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(src: &str) -> String {
        properties(&Formula::parse(src).unwrap(), &["target"]).render()
    }

    #[test]
    fn properties_are_read_from_the_variables_with_the_backward_types() {
        assert_eq!(
            rewrite("expand(&self_t, self_p.sizes())"),
            "expand(&self_t, (&self_p.shape().iter().map(|&d| d as i64).collect::<__ag::Vec<i64>>()[..]))"
        );
        assert_eq!(rewrite("f(result.shape())"), "f((&result.shape()[..]))");
        assert_eq!(
            rewrite("g(target.size(-1), other_t.numel(), result1.dim())"),
            "g((__ag::size_at(&target.shape(), (-1) as i64) as i64), (other_t.shape().iter().product::<usize>() as i64), (result1.shape().len() as i64))"
        );
        // Not a tensor variable, a path, or not a property: unchanged.
        for src in [
            "dims.len()",
            "a.b_p.sizes()",
            "x_p.sum()",
            "n.size(0)",
            "x_p.sizes(1)",
        ] {
            assert_eq!(rewrite(src), src);
        }
    }
}
