//! A formula that is not a Rust expression.

autograd::autograd_ops!(yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: grad => result
"#);

fn main() {}
