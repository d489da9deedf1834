// The formula's error points at a line that names `formula_type_error_in_file.yaml:4`.

// (trybuild compiles this in target/tests/trybuild/autograd: the path is relative to it.)
autograd::autograd_ops!("../../../../tests/ui/formula_type_error_in_file.yaml");

fn main() {}
