//! A schema with an unknown type.

autograd::autograd_ops!(yaml = r#"
- name: mul.Tensor(Tensr self, Tensor other) -> Tensor
  self: grad
"#);

fn main() {}
