//! A derivatives file that does not exist.

autograd::autograd_ops!("tests/ui/does_not_exist.yaml");

fn main() {}
