//! A C++ construct the front end does not know: a member read without a call.

autograd::autograd_ops!(formulas = "cpp", yaml = r#"
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad * other.data
  other: grad * self
"#);

fn main() {}
