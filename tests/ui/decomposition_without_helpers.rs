//! A CompositeExplicitAutograd function's default kernel lives in the helpers module.

// (trybuild compiles this in target/tests/trybuild/autograd: the path is relative to it.)
autograd::autograd_ops!(
    yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: grad
"#,
    native = "../../../../tests/ui/decomposition_without_helpers.native.yaml"
);

fn main() {}
