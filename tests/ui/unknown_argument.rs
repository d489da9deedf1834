//! A formula key that names neither an argument nor an output.

autograd::autograd_ops!(yaml = r#"
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad
  othr: grad
"#);

fn main() {}
