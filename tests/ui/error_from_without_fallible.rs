//! `error_from` bounds the kernels' error type, which only fallible kernels have.

autograd::autograd_ops!(
    yaml = r#"
- name: exp(Tensor self) -> Tensor
  self: grad
"#,
    error_from = std::fmt::Error
);

fn main() {}
