//! A CompositeImplicitAutograd function needs the helpers module its kernel lives in.

// (trybuild compiles this elsewhere: a path not found under its CARGO_MANIFEST_DIR is
// looked up beside this file.)
autograd::autograd_ops!(
    yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: grad
"#,
    native = "composite_with_entry.native.yaml"
);

fn main() {}
