// A function returning a view of `self` needs `view_inverse:` (how a write through the view
// reaches its base).

autograd::autograd_ops!(yaml = r#"
- name: narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)
  self: grad.clone()
"#);

fn main() {}
