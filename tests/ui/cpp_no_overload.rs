//! A C++ formula whose call matches no overload of the operator.

autograd::autograd_ops!(formulas = "cpp", yaml = r#"
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad.mul(other, other)
  other: grad * self
"#);

fn main() {}
