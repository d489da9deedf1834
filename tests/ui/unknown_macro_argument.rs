//! An unknown macro argument.

autograd::autograd_ops!(yaml = "[]", nativ = "native_functions.yaml");

fn main() {}
