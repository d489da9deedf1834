//! YAML that does not parse.

autograd::autograd_ops!(yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: [grad
- name: neg(Tensor self) -> Tensor
"#);

fn main() {}
