//! The thread's default generator for random ops (`native_dropout`'s mask), shared by every
//! backend of the op set, like PyTorch's default CPU generator.

use autograd::types::Generator;
use std::cell::RefCell;

thread_local! {
    static GENERATOR: RefCell<Generator> = RefCell::new(Generator::new(0x5eed));
}

/// Seeds this thread's default generator, like `torch.manual_seed`.
pub fn manual_seed(seed: u64) {
    GENERATOR.with(|g| *g.borrow_mut() = Generator::new(seed));
}

/// A uniform number in `[0, 1)` from this thread's default generator.
pub fn next_uniform() -> f64 {
    GENERATOR.with(|g| g.borrow().next_f64())
}

/// The state of this thread's default generator (`torch.get_rng_state`).
pub fn get_rng_state() -> u64 {
    GENERATOR.with(|g| g.borrow().state())
}

/// Restores a state of this thread's default generator (`torch.set_rng_state`).
pub fn set_rng_state(state: u64) {
    GENERATOR.with(|g| g.borrow().set_state(state));
}
