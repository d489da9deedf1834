//! `autograd-gen translate` as a user runs it: PyTorch's C++ formulas lowered to Rust, each
//! error naming file, line, column, entry and formula, and the closing count.

use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_autograd-gen");

const NATIVE: &str = "\
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
- func: mul.Scalar(Tensor self, Scalar other) -> Tensor
  variants: function, method
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method
";

const HEADER: &str = "\
namespace torch::autograd::generated::details {
at::Tensor mul_tensor_backward(const Tensor& grad, const Tensor& other, ScalarType self_st);
} // namespace
";

/// Write the three files into a fresh folder of the target directory's test scratch space.
fn files(tag: &str, derivatives: &str, header: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("translate-{tag}"));
    std::fs::create_dir_all(&dir).unwrap();
    let n = dir.join("native_functions.yaml");
    let d = dir.join("derivatives.yaml");
    let h = dir.join("FunctionsManual.h");
    std::fs::write(&n, NATIVE).unwrap();
    std::fs::write(&d, derivatives).unwrap();
    std::fs::write(&h, header).unwrap();
    (n, d, h)
}

fn translate(n: &PathBuf, d: &PathBuf, extra: &[&str]) -> Output {
    let mut c = Command::new(BIN);
    c.args(["translate", "--native"])
        .arg(n)
        .arg("--derivatives")
        .arg(d);
    c.args(extra).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn formulas_become_rust_and_the_count_closes_the_output() {
    let (n, d, _) = files(
        "ok",
        "- name: mul.Tensor(Tensor self, Tensor other) -> Tensor\n  \
         self: mul_tensor_backward(grad, other, self.scalar_type())\n  \
         other: grad * self\n  \
         result: other_t * self_p + self_t * other_p\n",
        HEADER,
    );
    let o = translate(&n, &d, &["--fallible"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("    mul_tensor_backward(&grad, &other, self.scalar_type())?\n"),
        "{out}"
    );
    assert!(out.contains("    mul_tensor(&grad, &self)?\n"), "{out}");
    assert!(
        out.contains("    add_tensor(&mul_tensor(&other_t, &self_p)?, &mul_tensor(&self_t, &other_p)?, __ag::types::Scalar::Int(1))?\n"),
        "{out}"
    );
    assert!(out.ends_with("translated: 3/3 formulas\n"), "{out}");
}

#[test]
fn an_unknown_callee_is_an_error_at_its_column() {
    let (n, d, _) = files(
        "unknown",
        "- name: mul.Tensor(Tensor self, Tensor other) -> Tensor\n  \
         self: grad * nosuch_backward(other)\n  \
         other: grad * self\n",
        HEADER,
    );
    let o = translate(&n, &d, &["--errors-only"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("derivatives.yaml:2:16: error: `nosuch_backward` is neither an operator of the schemas nor a declared helper (entry `mul.Tensor(Tensor self, Tensor other) -> Tensor`, formula `self`)"),
        "{out}"
    );
    assert!(
        !out.contains("mul_tensor(&grad, &self)"),
        "--errors-only: {out}"
    );
    assert!(out.ends_with("translated: 1/2 formulas\n"), "{out}");
}

#[test]
fn a_header_that_does_not_parse_names_its_line() {
    let (n, d, h) = files(
        "header",
        "- name: mul.Tensor(Tensor self, Tensor other) -> Tensor\n  other: grad * self\n",
        "Tensor f(const Tensor& t)\nTensor g();\n",
    );
    let o = translate(&n, &d, &["--header", h.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("FunctionsManual.h:2:"), "{err}");
}

#[test]
fn every_formula_of_pytorchs_derivatives_yaml_translates() {
    let Some(dir) = autograd_codegen::api::pytorch_data_dir("translate corpus test") else {
        return;
    };
    let o = translate(
        &dir.join("native_functions.yaml"),
        &dir.join("derivatives.yaml"),
        &["--errors-only"],
    );
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert_eq!(out, "translated: 1388/1388 formulas\n");
}
