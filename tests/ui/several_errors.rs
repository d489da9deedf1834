//! Every error of the file is reported, not only the first.

autograd::autograd_ops!(yaml = r#"
- name: exp(Tensor self) -> Tensor
  slef: grad
- name: neg(Tensr self) -> Tensor
  self: grad
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad
  other: grad
  other: grad
"#);

fn main() {}
