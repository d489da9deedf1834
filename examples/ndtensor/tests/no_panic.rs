//! No panic reachable from any public ndtensor op: every function of the YAML (enumerated
//! from the analysis, so a new op is covered without anyone listing it) is called many times
//! with random arguments of its schema's types (random shapes with 0-d and empty tensors,
//! non-contiguous tensors, out-of-range dims, negative sizes, NaN and huge scalars, index
//! tensors with out-of-range values, non-leaf and leaf inputs), and then backward runs
//! through whatever it returned. Each call must give `Ok` or `Err`: a panic fails the test.

mod common;

use autograd_opset::conformance::no_panic::random_calls;
use common::T;

/// Random calls per function.
const ROUNDS: usize = 250;

#[test]
fn no_public_op_panics_on_random_arguments() {
    let r = random_calls::<T>(ROUNDS);
    println!("no-panic property test: {} calls Ok, {} Err", r.ok, r.err);
    assert!(
        r.panics.is_empty(),
        "{} of {} random calls panicked:\n{}",
        r.panics.len(),
        r.ok + r.err + r.panics.len(),
        r.panics.join("\n")
    );
    // Both outcomes occur: the arguments reach the kernels' checks and their normal paths.
    assert!(r.ok > 0 && r.err > 0);
}
