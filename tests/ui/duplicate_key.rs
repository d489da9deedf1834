//! A key written twice in one entry: YAML would keep one of the two formulas silently.

autograd::autograd_ops!(yaml = r#"
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad
  other: grad
  self: grad
"#);

fn main() {}
