// A formula that rustc rejects: the error shows the formula's line in derivatives.yaml.

autograd::autograd_ops!(yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: mul_tensor(&grad, "twice")
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor(&grad, &other)
  other: mul_tensor(&grad, &self)
"#);

fn main() {}
