//! An argument both differentiable and non_differentiable.

autograd::autograd_ops!(yaml = r#"
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad
  other: non_differentiable
  self, other: (grad.clone(), grad.clone())
"#);

fn main() {}
