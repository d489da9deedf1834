//! A formula naming an unknown local fails in rustc, pointing at the formula and its line in the YAML.

autograd::autograd_ops!(yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: grad_output.clone()
"#);

fn main() {}
