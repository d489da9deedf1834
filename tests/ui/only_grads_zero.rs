//! Only `grads[0]` is used: should be `grad`.

autograd::autograd_ops!(yaml = r#"
- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: grads[0].clone().unwrap()
"#);

fn main() {}
