//! A CompositeExplicitAutograd function's default kernel lives in the helpers module.

// (trybuild compiles this elsewhere: a path not found under its CARGO_MANIFEST_DIR is
// looked up beside this file.)
autograd::autograd_ops!(
    yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: grad
"#,
    native = "decomposition_without_helpers.native.yaml"
);

fn main() {}
