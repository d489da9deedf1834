//! `output_differentiability` with more flags than the function has outputs.

autograd::autograd_ops!(yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: grad * result
  output_differentiability: [True, False]
"#);

fn main() {}
