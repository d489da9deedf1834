//! `autograd-gen` as a user runs it: exit codes, messages naming file, line and entry, JSON.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

const BIN: &str = env!("CARGO_BIN_EXE_autograd-gen");

const NATIVE: &str = "\
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
  dispatch:
    CPU: mul
- func: mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
  variants: method
  dispatch:
    CPU: mul_
- func: mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: mul_out
- func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  dispatch:
    CPU: max
";

const DERIVATIVES: &str = "\
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor_backward(grad, other, self.scalar_type())
  other: mul_tensor_backward(grad, self, other.scalar_type())
  result: other_t * self_p + self_t * other_p

- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: value_selecting_reduction_backward_symint(grad, dim, indices, self.sym_sizes(), keepdim)
  output_differentiability: [True, False]
";

/// A fresh directory under the system's temporary directory.
fn temp_dir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    // The target directory's scratch space for tests, not the system's temporary folder.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "autograd-gen-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Write `native_functions.yaml` and `derivatives.yaml` into a fresh directory.
fn files(native: &str, derivatives: &str) -> (PathBuf, PathBuf) {
    let dir = temp_dir();
    let (n, d) = (
        dir.join("native_functions.yaml"),
        dir.join("derivatives.yaml"),
    );
    std::fs::write(&n, native).unwrap();
    std::fs::write(&d, derivatives).unwrap();
    (n, d)
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn analyze(native: &Path, derivatives: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "analyze",
        "--native",
        native.to_str().unwrap(),
        "--derivatives",
        derivatives.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn valid_files_give_one_json_record_per_function() {
    let (n, d) = files(NATIVE, DERIVATIVES);
    let o = analyze(&n, &d, &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    let fns = v["functions"].as_array().unwrap();
    assert_eq!(fns.len(), 4);
    assert_eq!(
        fns[0]["schema"],
        "mul.Tensor(Tensor self, Tensor other) -> Tensor"
    );
    assert_eq!(fns[0]["info"]["op"], "MulBackward0");
    // The in-place and out= variants get the functional entry's info (not exactly).
    assert_eq!(fns[1]["info"]["exact_match"], false);
    assert_eq!(
        fns[3]["differentiable_outputs"],
        serde_json::json!(["values"])
    );
    assert_eq!(v["source"]["generator"], "autograd-gen");
}

#[test]
fn summary_without_json() {
    let (n, d) = files(NATIVE, DERIVATIVES);
    let o = analyze(&n, &d, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with(
            "4 native functions, 4 with derivative information, 2 backward nodes, 0 errors\n"
        ),
        "{out}"
    );
    assert!(out.contains("inplace"), "{out}");
    assert!(out.contains("docs/analysis-json.md"), "{out}");
    assert!(serde_json::from_str::<serde_json::Value>(&out).is_err());
}

#[test]
fn output_file_gets_the_json_and_the_summary_prints() {
    let (n, d) = files(NATIVE, DERIVATIVES);
    let path = n.with_file_name("analysis.json");
    for extra in [&["-o"][..], &["--json", "--output"][..]] {
        let _ = std::fs::remove_file(&path);
        let mut args = extra.to_vec();
        args.push(path.to_str().unwrap());
        let o = analyze(&n, &d, &args);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(out.starts_with("4 native functions, "), "{out}");
        let written = format!("JSON written to {} (", path.display());
        assert!(out.contains(&written), "{out}");
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).expect("valid JSON");
        assert_eq!(v["functions"].as_array().unwrap().len(), 4);
    }
}

#[test]
fn dash_output_is_json_on_stdout() {
    let (n, d) = files(NATIVE, DERIVATIVES);
    let o = analyze(&n, &d, &["-o", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("only JSON");
    assert_eq!(v["functions"].as_array().unwrap().len(), 4);
}

#[test]
fn unwritable_output_fails_naming_it() {
    let (n, d) = files(NATIVE, DERIVATIVES);
    let path = n.with_file_name("no_such_dir").join("a.json");
    let o = analyze(&n, &d, &["-o", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("cannot write {}", path.display())),
        "{err}"
    );
}

#[test]
fn failed_analysis_writes_no_file() {
    let (n, d) = files(
        NATIVE,
        "- name: nothere(Tensor self) -> Tensor\n  self: grad\n",
    );
    let path = n.with_file_name("analysis.json");
    let o = analyze(&n, &d, &["-o", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
    assert!(!path.exists());
}

#[test]
fn summary_counts_functions_whose_outputs_fail() {
    let derivatives = "\
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  output_differentiability: [False]
";
    let (n, d) = files(NATIVE, derivatives);
    let o = analyze(&n, &d, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.lines().next().unwrap().ends_with(", 1 errors"), "{out}");
    assert!(
        out.contains("error: `mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)`: output_differentiability=False for inplace operation"),
        "{out}"
    );
}

/// The demo inputs the README runs: their summary is the README's sample.
#[test]
fn demo_inputs() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo");
    let o = analyze(
        &demo.join("native_functions.yaml"),
        &demo.join("derivatives.yaml"),
        &["--tags", demo.join("tags.yaml").to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "\
19 native functions, 17 with derivative information, 10 backward nodes, 0 errors
  functional    11 functions,    10 differentiable, forward formulas for 10 of 10
  inplace        4 functions,     4 differentiable, forward formulas for 4 of 4
  out            4 functions,     3 differentiable
(the whole analysis as JSON: add `-o FILE`; its format: docs/analysis-json.md)
"
    );
    let o = analyze(
        &demo.join("native_functions.yaml"),
        &demo.join("derivatives.yaml"),
        &["--tags", demo.join("tags.yaml").to_str().unwrap(), "--json"],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let record = |prefix: &str| {
        v["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["schema"].as_str().unwrap().starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix}"))
            .clone()
    };
    // What the demo's comments promise.
    assert_eq!(
        record("exp_(")["info"]["all_saved_outputs"],
        serde_json::json!(["result"])
    );
    assert_eq!(record("exp.out(")["info"]["op"], "ExpBackward0");
    assert_eq!(
        record("sort(")["differentiable_outputs"],
        serde_json::json!(["values"])
    );
    assert_eq!(
        record("max.dim(")["differentiable_outputs"],
        serde_json::json!(["values"])
    );
    assert_eq!(
        record("max.dim(")["info"]["all_saved_outputs"],
        serde_json::json!(["indices"])
    );
    assert!(
        record("mm(")["info"]["all_saved_inputs"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("self_sym_sizes"))
    );
    assert_eq!(
        record("sum.dim_IntList(")["info"]["dispatch_keys"],
        serde_json::json!(["AutogradNestedTensor", "Default"])
    );
    assert_eq!(record("argmax(")["info"], serde_json::Value::Null);
    assert_eq!(record("relu.out(")["info"], serde_json::Value::Null);
    assert_eq!(record("_foreach_exp(")["info"]["op"], "ForeachExpBackward0");
}

#[test]
fn help_names_the_json_format() {
    for args in [&["--help"][..], &["analyze", "--help"][..]] {
        let o = run(args);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("-o, --output PATH"), "{out}");
        assert!(out.contains("docs/analysis-json.md"), "{out}");
    }
}

/// The README's `expand` command.
#[test]
fn expand_the_toy_crate() {
    let toy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/toy");
    let o = run(&[
        "expand",
        "--derivatives",
        toy.join("derivatives.yaml").to_str().unwrap(),
        "--native",
        toy.join("native_functions.yaml").to_str().unwrap(),
        "--helpers",
        "crate::helpers",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("pub trait Backend"), "{out}");
    assert!(out.contains("crate::helpers"), "{out}");
    // Each formula on one line with its place in the YAML.
    assert!(
        out.contains("// ") && out.contains("derivatives.yaml:3: `add.Tensor("),
        "{out}"
    );
}

#[test]
fn expand_fallible_kernels_return_results() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fallible");
    let o = run(&[
        "expand",
        "--derivatives",
        f.join("derivatives.yaml").to_str().unwrap(),
        "--native",
        f.join("native_functions.yaml").to_str().unwrap(),
        "--fallible",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("type Error:"), "{out}");
    // A kernel the backend may leave out: its default returns PyTorch's "Could not run".
    assert!(
        out.contains("fn exp(self_: &Self) -> __ag::Result<Self, Self::Error> {"),
        "{out}"
    );
    assert!(out.contains("\"aten::exp\","), "{out}");
}

#[test]
fn bad_schema_names_file_line_and_entry() {
    let native = NATIVE.replace(
        "max.dim(Tensor self, int dim",
        "max.dim(Tensr self, int dim",
    );
    let (n, d) = files(&native, DERIVATIVES);
    let o = analyze(&n, &d, &["--json"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let err = stderr(&o);
    let at = format!("{}:12: in `max.dim(Tensr self", n.display());
    assert!(err.contains(&at), "{err}");
    assert!(err.contains("unrecognized type `Tensr`"), "{err}");
    // The derivatives entry for the broken function is reported too.
    assert!(err.contains(&format!("{}:6:", d.display())), "{err}");
    assert!(err.ends_with("2 error(s)\n"), "{err}");
}

#[test]
fn unknown_argument_in_derivatives() {
    let derivatives = DERIVATIVES.replace("  other: mul_tensor", "  othr: mul_tensor");
    let (n, d) = files(NATIVE, &derivatives);
    let o = analyze(&n, &d, &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "error: {}:3: in `mul.Tensor(Tensor self, Tensor other) -> Tensor`: ",
            d.display()
        )),
        "{err}"
    );
    assert!(err.contains("`othr`"), "{err}");
    assert!(err.ends_with("1 error(s)\n"), "{err}");
}

#[test]
fn malformed_yaml_names_the_line() {
    let (n, d) = files(
        NATIVE,
        "- name: mul.Tensor(Tensor self, Tensor other) -> Tensor\n  self: [grad\n- x",
    );
    let o = analyze(&n, &d, &["--json"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains(&format!("error: {}:", d.display())), "{err}");
    assert!(err.contains("invalid YAML"), "{err}");
}

#[test]
fn every_error_of_a_file_is_reported() {
    let derivatives = "\
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad
  bogus: grad

- name: nothere(Tensor self) -> Tensor
  self: grad

- self: grad

- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: grad
  output_differentiability: [True, \"x\"]
";
    let (n, d) = files(NATIVE, derivatives);
    let o = analyze(&n, &d, &["--json"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(lines.len(), 4, "{err}");
    for (line, what) in [
        (3, "`bogus`"),
        (5, "could not find a native function"),
        (8, "without `name:`"),
        (12, "output_differentiability"),
    ] {
        let prefix = format!("error: {}:{line}: ", d.display());
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&prefix) && l.contains(what)),
            "no error at line {line} about {what}:\n{err}"
        );
    }
    assert!(err.ends_with("4 error(s)\n"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    for (args, expect) in [
        (&[][..], "usage: autograd-gen analyze"),
        (&["frobnicate"][..], "unknown command `frobnicate`"),
        (
            &["analyze", "--derivatives", "d.yaml"][..],
            "--native is required",
        ),
        (
            &["analyze", "--native", "n.yaml"][..],
            "--derivatives is required",
        ),
        (
            &[
                "analyze",
                "--native",
                "n.yaml",
                "--derivatives",
                "d.yaml",
                "--fast",
            ][..],
            "unknown option `--fast`",
        ),
        (&["analyze", "--native"][..], "--native needs a path"),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(err.contains("usage:"), "{args:?}: {err}");
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn missing_file_is_named() {
    let (n, _) = files(NATIVE, DERIVATIVES);
    let missing = n.with_file_name("no_such_derivatives.yaml");
    let o = analyze(&n, &missing, &["--json"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains(&missing.display().to_string()), "{err}");
    assert!(err.contains("cannot read"), "{err}");
}

#[test]
fn real_corpus_has_3110_records() {
    let Some(dir) = autograd_codegen::api::pytorch_data_dir("CLI corpus test") else {
        return;
    };
    let native = dir.join("native_functions.yaml");
    let o = analyze(
        &native,
        &dir.join("derivatives.yaml"),
        &["--tags", dir.join("tags.yaml").to_str().unwrap(), "--json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["functions"].as_array().unwrap().len(), 3110);
}

const EXP_NATIVE: &str = "\
- func: exp(Tensor self) -> Tensor
  variants: function, method
  dispatch:
    CPU: exp
";

#[test]
fn output_differentiability_longer_than_outputs_fails() {
    let (n, d) = files(
        EXP_NATIVE,
        "- name: exp(Tensor self) -> Tensor\n  self: grad * result\n  output_differentiability: [True, False]\n",
    );
    let o = analyze(&n, &d, &["--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("derivatives.yaml:1: in `exp(Tensor self) -> Tensor`: output_differentiability has 2 values but `exp` has 1 output"),
        "{err}"
    );
}

#[test]
fn duplicate_entry_fails_naming_both_lines() {
    let (n, d) = files(
        EXP_NATIVE,
        "- name: exp(Tensor self) -> Tensor\n  self: grad * result\n\n- name: exp(Tensor self) -> Tensor\n  self: grad * result\n",
    );
    let o = analyze(&n, &d, &["--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("derivatives.yaml:4: in `exp(Tensor self) -> Tensor`: duplicate entry for `exp(Tensor self) -> Tensor`; the first is at "), "{err}");
    assert!(err.contains("derivatives.yaml:1"), "{err}");
    assert!(o.stdout.is_empty());
}

#[test]
fn bad_tokens_name_the_column_and_the_reason() {
    let (n, d) = files(
        EXP_NATIVE,
        "- name: exp(Tensor self) -> Tensor\n  self: grad * (result\n",
    );
    let o = analyze(&n, &d, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("derivatives.yaml:2: in `exp(Tensor self) -> Tensor`: the formula for `self` is not valid tokens at column 16: unclosed `(`"),
        "{err}"
    );
}
