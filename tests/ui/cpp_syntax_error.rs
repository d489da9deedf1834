//! A C++ formula that does not parse.

autograd::autograd_ops!(formulas = "cpp", yaml = r#"
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad * (other
  other: grad * self
"#);

fn main() {}
