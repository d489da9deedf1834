// The formula's error points at a line that names `formula_type_error_in_file.yaml:4`.

// (trybuild compiles this elsewhere: a path not found under its CARGO_MANIFEST_DIR is
// looked up beside this file.)
autograd::autograd_ops!("formula_type_error_in_file.yaml");

fn main() {}
