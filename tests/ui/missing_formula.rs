//! A tensor argument without formula, not_implemented or non_differentiable.

autograd::autograd_ops!(yaml = r#"
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad
"#);

fn main() {}
