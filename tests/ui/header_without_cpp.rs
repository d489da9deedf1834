//! `header` declares the helpers of C++ formulas: without `formulas = "cpp"` it is a mistake.

autograd::autograd_ops!(header = "functions.h", yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: mul_tensor(&grad, &result)
"#);

fn main() {}
