//! A CompositeImplicitAutograd function (its `dispatch:` names the kernel) that also has a
//! derivatives entry: one of the two would never be used.

mod helpers {}

// (trybuild compiles this in target/tests/trybuild/autograd: the path is relative to it.)
autograd::autograd_ops!(
    yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: grad
- name: twice(Tensor self) -> Tensor
  self: grad
"#,
    native = "../../../../tests/ui/composite_with_entry.native.yaml",
    helpers = crate::helpers
);

fn main() {}
