//! An argument named `result`, which formulas reserve for the output.

autograd::autograd_ops!(yaml = r#"
- name: foo(Tensor self, Tensor result) -> Tensor
  self: grad
  result: non_differentiable
"#);

fn main() {}
