//! Mixing `grad_{name}` with `grad`.

autograd::autograd_ops!(yaml = r#"
- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: grad_values.unwrap_or(grad)
"#);

fn main() {}
