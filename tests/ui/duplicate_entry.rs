//! Two entries for one function.

autograd::autograd_ops!(yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: grad * result

- name: exp(Tensor self) -> Tensor
  self: grad * result.clone()
"#);

fn main() {}
