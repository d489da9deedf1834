//! A CompositeImplicitAutograd function (its `dispatch:` names the kernel) that also has a
//! derivatives entry: one of the two would never be used.

mod helpers {}

// (trybuild compiles this elsewhere: a path not found under its CARGO_MANIFEST_DIR is
// looked up beside this file.)
autograd::autograd_ops!(
    yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: grad
- name: twice(Tensor self) -> Tensor
  self: grad
"#,
    native = "composite_with_entry.native.yaml",
    helpers = crate::helpers
);

fn main() {}
