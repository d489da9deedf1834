//! The op set's conformance kit on candletensor: every differentiable function has a case
//! and passes gradcheck, gradgradcheck and the forward-mode check; the PyTorch fixtures
//! replay (with the differences candle does not match yet listed); no random call panics.

use autograd_opset::conformance::{check_every_case, missing_cases};
use candletensor::CandleTensor as T;

#[test]
fn the_op_sets_conformance_kit_passes() {
    let missing = missing_cases::<T>();
    assert!(missing.is_empty(), "{missing:?}");
    let failures = check_every_case::<T>();
    assert!(
        failures.is_empty(),
        "{} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
