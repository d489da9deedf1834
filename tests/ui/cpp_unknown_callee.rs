//! A C++ formula calling a function that is neither an operator nor a declared helper.

autograd::autograd_ops!(formulas = "cpp", yaml = r#"
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad * nosuch_backward(other)
  other: grad * self
"#);

fn main() {}
