//! A dispatch key that is not an autograd key.

autograd::autograd_ops!(yaml = r#"
- name: exp(Tensor self) -> Tensor
  dispatch:
    AutogradBogus:
      self: grad
"#);

fn main() {}
