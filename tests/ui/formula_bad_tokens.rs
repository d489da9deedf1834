//! A formula with an unclosed bracket: not even valid tokens.

autograd::autograd_ops!(yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: grad * (result.clone()
"#);

fn main() {}
