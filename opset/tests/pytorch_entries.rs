//! The op set's derivatives.yaml carries PyTorch's own entries as PyTorch writes them: every
//! formula of an entry PyTorch has equals PyTorch's (whitespace aside), but the deviations
//! README.md lists under "Formulas", which this test names one by one (and fails when one
//! of them becomes PyTorch's text again, so that the list stays true).

#![cfg(feature = "conformance")]

use autograd_codegen::diagnostics::Ctxt;
use autograd_codegen::model::derivatives::{DerivativeEntry, parse_derivatives};
use std::collections::BTreeMap;
use std::sync::Arc;

/// `(entry, key)` whose formula is the op set's own (README.md, "Formulas").
const OWN: &[(&str, &str)] = &[
    (
        "nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor",
        "result",
    ),
    (
        "native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor",
        "result",
    ),
    (NATIVE_BATCH_NORM_BACKWARD, "result0"),
    (NATIVE_BATCH_NORM_BACKWARD, "result1"),
    (NATIVE_BATCH_NORM_BACKWARD, "result2"),
    (NATIVE_LAYER_NORM_BACKWARD, "result0"),
    (NATIVE_LAYER_NORM_BACKWARD, "result1"),
    (NATIVE_LAYER_NORM_BACKWARD, "result2"),
    (GRID_SAMPLER_2D_BACKWARD, "result0"),
    (GRID_SAMPLER_2D_BACKWARD, "result1"),
    (
        "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",
        "result",
    ),
    (
        "_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",
        "result",
    ),
];

const NATIVE_BATCH_NORM_BACKWARD: &str = "native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)";

const NATIVE_LAYER_NORM_BACKWARD: &str = "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)";

const GRID_SAMPLER_2D_BACKWARD: &str = "grid_sampler_2d_backward(Tensor grad_output, Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners, bool[2] output_mask) -> (Tensor, Tensor)";

/// The `Default` formulas of each entry, whitespace collapsed, by entry and key.
fn formulas(name: &str, text: &str) -> BTreeMap<(String, String), String> {
    let mut cx = Ctxt::new();
    let entries: Vec<DerivativeEntry> = parse_derivatives(&Arc::from(name), text, &mut cx);
    cx.check(()).expect("the file parses");
    let mut out = BTreeMap::new();
    for e in entries {
        for d in e.dispatch.iter().filter(|d| d.key == "Default") {
            for f in &d.formulas {
                let words: Vec<&str> = f.formula.split_whitespace().collect();
                out.insert((e.name.clone(), f.key.clone()), words.join(" "));
            }
        }
    }
    out
}

#[test]
fn entries_pytorch_has_carry_pytorchs_formulas() {
    let Some(dir) = autograd_codegen::api::pytorch_data_dir("op set entries test") else {
        return;
    };
    let ours_text = include_str!("../derivatives.yaml");
    let theirs_text = std::fs::read_to_string(dir.join("derivatives.yaml")).unwrap();
    let ours = formulas("derivatives.yaml", ours_text);
    let theirs = formulas("pytorch/derivatives.yaml", &theirs_text);
    let formulas_they_have: Vec<&String> = ours
        .keys()
        .map(|(e, _)| e)
        .filter(|e| theirs.keys().any(|(t, _)| t == *e))
        .collect();
    assert!(
        formulas_they_have.len() >= 150,
        "{}",
        formulas_they_have.len()
    );
    let mut wrong = Vec::new();
    for ((entry, key), formula) in &ours {
        if !theirs.keys().any(|(t, _)| t == entry) {
            continue;
        }
        let own = OWN.contains(&(entry.as_str(), key.as_str()));
        match (theirs.get(&(entry.clone(), key.clone())), own) {
            (Some(t), false) if t == formula => {}
            (Some(t), true) if t == formula => {
                wrong.push(format!("{entry} {key}: listed as own but is PyTorch's"))
            }
            (None, true) => {}
            (_, true) => {}
            (t, false) => wrong.push(format!("{entry} {key}: `{formula}`, PyTorch: {t:?}")),
        }
    }
    for ((entry, key), _) in theirs
        .iter()
        .filter(|((e, _), _)| ours.keys().any(|(o, _)| o == e))
    {
        if !ours.contains_key(&(entry.clone(), key.clone())) {
            wrong.push(format!("{entry} {key}: PyTorch's formula is missing"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn functions_h_declares_pytorchs_helpers_as_pytorch_does() {
    use autograd_codegen::translate::decl::parse_header;
    let Some(dir) = autograd_codegen::api::pytorch_data_dir("op set header test") else {
        return;
    };
    // The declarations as written: the op set's `// undefined:` annotations (comments that
    // make parameters optional in Rust) left out.
    let ours_text: String = include_str!("../functions.h")
        .lines()
        .filter(|l| !l.trim_start().starts_with("// undefined:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let own_from = ours_text
        .lines()
        .position(|l| l.starts_with("// ---- The op set's own helpers"))
        .expect("the header's second part")
        + 1;
    let theirs = parse_header(&std::fs::read_to_string(dir.join("FunctionsManual.h")).unwrap())
        .expect("PyTorch's header parses");
    let ours = parse_header(&ours_text).expect("the op set's header parses");
    let copied: Vec<_> = ours.iter().filter(|d| d.line < own_from).collect();
    assert!(copied.len() >= 30, "{}", copied.len());
    // PyTorch's `const Tensor&` parameters that take an optional tensor (an undefined
    // tensor in PyTorch), declared as the optionals they are here: (helper, parameter).
    const OPTIONAL: &[(&str, &str)] =
        &[("convolution_jvp", "bias_p"), ("convolution_jvp", "bias_t")];
    for d in copied {
        let same = theirs.iter().any(|t| {
            t.name == d.name
                && t.ret == d.ret
                && t.params.len() == d.params.len()
                && t.params.iter().zip(&d.params).all(|(a, b)| {
                    a.ty == b.ty
                        || (OPTIONAL.contains(&(d.name.as_str(), b.name.as_str()))
                            && a.name == b.name)
                })
        });
        assert!(
            same,
            "functions.h:{}: `{}` is not PyTorch's declaration",
            d.line, d.name
        );
    }
    for d in ours.iter().filter(|d| d.line >= own_from) {
        assert!(
            !theirs.iter().any(|t| t.name == d.name),
            "functions.h:{}: `{}` is PyTorch's: copy its declaration into the first part",
            d.line,
            d.name
        );
    }
}
