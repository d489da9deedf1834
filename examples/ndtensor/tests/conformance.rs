//! The op set's conformance kit on ndtensor, in one call (`autograd_opset::conformance`):
//! every kind of case (gradcheck, gradgradcheck, forward mode, in-place, out=, views), in
//! f64 and in f32 (`NdTensor<f32>` against `NdTensor<f64>`), the PyTorch fixtures replayed,
//! random calls that must never panic; and the README's table of operators is this run's.

use autograd_opset::conformance::report::{check_readme_table, markdown_table};
use autograd_opset::conformance::{KitOptions, check_backend_with};
use ndtensor::NdTensor;

#[test]
fn the_op_sets_conformance_kit_passes() {
    let run = check_backend_with::<NdTensor<f64>>(&KitOptions::default(), &[]);
    assert!(run.failures.is_empty(), "{}", run.failures.join("\n"));
    let rows: Vec<_> = run
        .records
        .iter()
        .map(|r| (run.backend.clone(), r.clone()))
        .collect();
    let readme = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    check_readme_table(readme.as_ref(), &markdown_table(&rows)).unwrap_or_else(|e| panic!("{e}"));
}
