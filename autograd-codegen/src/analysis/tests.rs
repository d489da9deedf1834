//! Unit tests of the analysis on inline YAML.

use super::*;
use crate::model::derivatives::parse_derivatives;
use crate::model::native::parse_native_functions;

fn run(native: &str, derivs: &str) -> Result<Analysis, Diagnostics> {
    let mut cx = Ctxt::new();
    let fns = parse_native_functions(&Arc::from("n.yaml"), native, &Default::default(), &mut cx);
    let entries = parse_derivatives(&Arc::from("d.yaml"), derivs, &mut cx);
    cx.check(())?;
    analyze(fns, &entries, &AnalysisOptions::torchgen())
}

const NATIVE: &str = "
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
  dispatch:
    CPU: mul
- func: mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
  dispatch:
    CPU: mul_
- func: mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: mul_out
- func: mul.Scalar(Tensor self, Scalar other) -> Tensor
  dispatch:
    CPU: mul
- func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  dispatch:
    CPU: max
- func: sum(Tensor self) -> Tensor
";

const DERIVS: &str = "
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor_backward(grad, other, self.scalar_type())
  other: mul_tensor_backward(grad, self, other.scalar_type())
  result: other_t * self_p + self_t * other_p
- name: mul.Scalar(Tensor self, Scalar other) -> Tensor
  self: grad * other
- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: value_selecting_reduction_backward_symint(grad, dim, indices, self.sym_sizes(), keepdim)
  values: gather_with_keepdimed_indices(self_t, dim, indices, keepdim)
";

#[test]
fn matches_variants_and_counts_ops() {
    let a = run(NATIVE, DERIVS).unwrap();
    let by = |s: &str| {
        a.results
            .iter()
            .find(|r| a.functions[r.func].func.to_string().starts_with(s))
            .unwrap()
    };
    let mul = by("mul.Tensor");
    let info = mul.main_info().unwrap();
    assert!(mul.exact_match);
    assert_eq!(info.op.as_deref(), Some("MulBackward0"));
    assert_eq!(info.args_with_derivatives, ["self", "other"]);
    // Sorted by key: "other" before "self".
    assert_eq!(info.derivatives[0].var_names, ["other"]);
    assert_eq!(
        info.derivatives[1].formula,
        "mul_tensor_backward(grad, other, self_scalar_type)"
    );
    let names: Vec<_> = info
        .all_saved_inputs
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["self", "other_scalar_type", "self_scalar_type", "other"]
    );
    assert_eq!(mul.dispatch_strategy, DispatchStrategy::UseDerived);
    // In-place and out= variants inherit the functional entry.
    let inplace = by("mul_.Tensor");
    assert!(!inplace.exact_match);
    assert_eq!(
        inplace.main_info().unwrap().op.as_deref(),
        Some("MulBackward0")
    );
    assert_eq!(inplace.differentiable_outputs, Ok(vec!["self".to_string()]));
    assert!(inplace.fw_derivatives[0].1[0].is_reusing_outplace_formula);
    assert_eq!(
        by("mul.out").differentiable_outputs,
        Ok(vec!["out".to_string()])
    );
    assert_eq!(
        by("mul.Scalar").main_info().unwrap().op.as_deref(),
        Some("MulBackward1")
    );
    // The single-`grad` rule keeps only the first output; `indices` is a saved output.
    let max = by("max.dim");
    assert_eq!(max.differentiable_outputs, Ok(vec!["values".to_string()]));
    let mi = max.main_info().unwrap();
    assert_eq!(mi.all_saved_outputs[0].name, "indices");
    assert_eq!(mi.forward_derivatives[0].required_inputs_fw_grad, ["self"]);
    // No entry: composite, use_type.
    let sum = by("sum(");
    assert!(sum.infos.is_none());
    assert_eq!(sum.dispatch_strategy, DispatchStrategy::UseType);
}

fn errors(derivs: &str) -> Vec<String> {
    run(NATIVE, derivs)
        .unwrap_err()
        .0
        .into_iter()
        .map(|d| d.to_string())
        .collect()
}

#[test]
fn reports_grad_grads_mixing() {
    let e = errors(
        "- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)\n  self: grad + grads[1]\n",
    );
    assert_eq!(e.len(), 1);
    assert!(e[0].starts_with("d.yaml:2: in `max.dim"), "{}", e[0]);
    assert!(e[0].contains("illegally mixes use of 'grad' and 'grads'"));
}

#[test]
fn reports_only_grads_zero_and_out_of_bounds() {
    let e = errors(
        "- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)\n  self: grads[0]\n",
    );
    assert!(e[0].contains("solely refers to 'grads[0]'"), "{e:?}");
    let e = errors(
        "- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)\n  self: grads[2] + grads[0]\n",
    );
    assert!(e[0].contains("Out of bounds grads access"), "{e:?}");
}

#[test]
fn reports_unknown_schema_with_available_overloads() {
    let e = errors("- name: mul.Tensor(Tensor self, Tensor othr) -> Tensor\n  self: grad\n");
    assert!(
        e[0].contains("could not find a native function for schema"),
        "{e:?}"
    );
    assert!(
        e[0].contains("mul.Scalar(Tensor self, Scalar other) -> Tensor"),
        "{e:?}"
    );
}

#[test]
fn reports_overlap_unknown_key_and_bad_dispatch_key_all_at_once() {
    let e = errors(
        "- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad
  other: non_differentiable
  self, other: grad
- name: mul.Scalar(Tensor self, Scalar other) -> Tensor
  slef: grad
- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  dispatch:
    AutogradBogus:
      self: grad
",
    );
    assert_eq!(e.len(), 3, "{e:?}");
    assert!(
        e[0].contains("overlapped non_differentiable and differentiable"),
        "{e:?}"
    );
    assert!(
        e[1].starts_with("d.yaml:6:") && e[1].contains("`slef` names neither an argument"),
        "{e:?}"
    );
    assert!(e[2].contains("Invalid dispatch key AutogradBogus"), "{e:?}");
}

#[test]
fn op_prefix_follows_python_title() {
    assert_eq!(op_prefix("add"), "AddBackward");
    assert_eq!(op_prefix("conv2d"), "Conv2DBackward");
    assert_eq!(op_prefix("_fused_dropout"), "FusedDropoutBackward");
    assert_eq!(
        op_prefix("native_layer_norm_forward"),
        "NativeLayerNormBackward"
    );
}

/// Many entries are prepared on two threads: errors, infos and node names are those of one
/// pass in entry order.
#[test]
fn many_entries_in_parallel_equal_one_pass() {
    let mut native = String::new();
    let mut derivs = String::new();
    for i in 0..150 {
        native.push_str(&format!(
            "- func: op{i}(Tensor self, Tensor other) -> Tensor\n  dispatch:\n    CPU: op{i}\n"
        ));
        let other = if i % 7 == 3 { "othr" } else { "other" };
        derivs.push_str(&format!(
            "- name: op{i}(Tensor self, Tensor other) -> Tensor\n  self: grad * {other}\n  {other}: grad * self\n"
        ));
    }
    let mut cx = Ctxt::new();
    let fns = parse_native_functions(&Arc::from("n.yaml"), &native, &Default::default(), &mut cx);
    let entries = parse_derivatives(&Arc::from("d.yaml"), &derivs, &mut cx);
    cx.check(()).unwrap();
    let errors = |cx: Ctxt| -> Vec<String> {
        cx.check(())
            .err()
            .map(|d| d.0.iter().map(ToString::to_string).collect())
            .unwrap_or_default()
    };
    let options = AnalysisOptions::torchgen();
    let mut cx = Ctxt::new();
    let all = load_infos(&fns, &entries, &options, &mut cx);
    let all_errors = errors(cx);
    // In chunks below the parallel threshold: the sequential path.
    let mut chunk_errors = Vec::new();
    let mut chunk_ops = Vec::new();
    for chunk in entries.chunks(50) {
        let mut cx = Ctxt::new();
        let m = load_infos(&fns, chunk, &options, &mut cx);
        chunk_errors.extend(errors(cx));
        chunk_ops.extend(
            m.iter()
                .map(|(s, set)| (s.to_string(), set[0].1.op.clone())),
        );
    }
    assert_eq!(all_errors.len(), 21, "{all_errors:?}");
    assert_eq!(all_errors, chunk_errors);
    let ops: Vec<_> = all
        .iter()
        .map(|(s, set)| (s.to_string(), set[0].1.op.clone()))
        .collect();
    assert_eq!(ops.len(), chunk_ops.len());
    assert_eq!(ops[0].1.as_deref(), Some("Op0Backward0"));
    assert_eq!(
        ops.iter().map(|o| &o.0).collect::<Vec<_>>(),
        chunk_ops.iter().map(|o| &o.0).collect::<Vec<_>>()
    );
}

fn messages(derivs: &str) -> Vec<String> {
    run(NATIVE, derivs)
        .unwrap_err()
        .0
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn output_differentiability_must_have_one_flag_per_output() {
    for flags in ["[True, False, True]", "[True]"] {
        let m = messages(&format!(
            "- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)\n  self: grad\n  output_differentiability: {flags}\n"
        ));
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(
            m[0].starts_with("d.yaml:1: in `max.dim(")
                && m[0].contains("but `max.dim` has 2 outputs: give one True or False per output"),
            "{m:?}"
        );
    }
}

#[test]
fn formulas_with_no_differentiable_output_are_an_error() {
    let m = messages(
        "- name: sum(Tensor self) -> Tensor\n  self: grad\n  output_differentiability: [False]\n",
    );
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(
        m[0].contains("marks no output of `sum` differentiable"),
        "{m:?}"
    );
    // Without formulas (PyTorch's `any`, `all`), it is fine.
    run(
        NATIVE,
        "- name: sum(Tensor self) -> Tensor\n  output_differentiability: [False]\n",
    )
    .unwrap();
}

#[test]
fn duplicate_entries_name_both_lines() {
    let m = messages(
        "- name: sum(Tensor self) -> Tensor\n  self: grad\n\n- name: sum(Tensor self) -> Tensor\n  self: grad * 2\n",
    );
    assert_eq!(
        m,
        [
            "d.yaml:4: in `sum(Tensor self) -> Tensor`: duplicate entry for `sum(Tensor self) -> Tensor`; the first is at d.yaml:1"
        ]
    );
}

#[test]
fn bad_tokens_say_why_and_at_which_column() {
    let m = messages("- name: sum(Tensor self) -> Tensor\n  self: grad.expand((self.sizes())\n");
    assert_eq!(
        m,
        [
            "d.yaml:2: in `sum(Tensor self) -> Tensor`: the formula for `self` is not valid tokens at column 20: unclosed `(`"
        ]
    );
    let m =
        messages("- name: sum(Tensor self) -> Tensor\n  self: \"f(\\\"x)\"\n  result: g(\"x)\n");
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(m[1].ends_with("the forward formula for `result` is not valid tokens at column 13: unterminated string literal"), "{m:?}");
    assert!(
        m[0].ends_with(
            "the formula for `self` is not valid tokens at column 12: unterminated string literal"
        ),
        "{m:?}"
    );
}
