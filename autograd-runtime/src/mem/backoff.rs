//! [`Backoff`]: how a thread waits for a lock that another thread holds for a short time
//! (the node lock, the data lock's writer): spin briefly, then yield, then sleep in short
//! steps.

use std::time::Duration;

/// The waiting steps of one wait (see the module documentation).
#[derive(Default)]
pub(crate) struct Backoff(u32);

impl Backoff {
    /// Waits a little longer than the previous call did.
    pub(crate) fn snooze(&mut self) {
        self.0 = self.0.saturating_add(1);
        if self.0 < 100 {
            std::hint::spin_loop();
        } else if self.0 < 200 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(20));
        }
    }
}
