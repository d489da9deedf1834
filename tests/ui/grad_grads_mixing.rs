//! Using both `grad` and `grads[i]` in one entry.

autograd::autograd_ops!(yaml = r#"
- name: two(Tensor self, Tensor other) -> (Tensor a, Tensor b)
  self: grad.clone()
  other: grads[1].clone().unwrap()
"#);

fn main() {}
