//! `grads[2]` of a function with two outputs.

autograd::autograd_ops!(yaml = r#"
- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: grads[2].clone().unwrap()
"#);

fn main() {}
