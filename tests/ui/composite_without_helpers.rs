//! A CompositeImplicitAutograd function needs the helpers module its kernel lives in.

// (trybuild compiles this in target/tests/trybuild/autograd: the path is relative to it.)
autograd::autograd_ops!(
    yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: grad
"#,
    native = "../../../../tests/ui/composite_with_entry.native.yaml"
);

fn main() {}
