//! Grad mode and anomaly mode: thread-local switches with RAII guards.

use std::cell::Cell;
use std::marker::PhantomData;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static ANOMALY_ENABLED: Cell<bool> = const { Cell::new(false) };
}

/// Whether operations on this thread record the graph (PyTorch's `GradMode::is_enabled`).
#[inline]
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

/// Restores the previous grad mode (or anomaly mode) of this thread when dropped.
/// Not `Send`: it belongs to the thread that created it.
#[must_use = "the mode is restored when the guard is dropped"]
pub struct GradModeGuard {
    prev: bool,
    _not_send: PhantomData<*const ()>,
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.prev));
    }
}

/// Sets grad mode on this thread until the guard drops (`torch.set_grad_enabled`).
pub fn set_grad_enabled(enabled: bool) -> GradModeGuard {
    let prev = GRAD_ENABLED.with(|g| g.replace(enabled));
    GradModeGuard {
        prev,
        _not_send: PhantomData,
    }
}

/// Disables recording on this thread until the guard drops (`torch.no_grad()`).
///
/// ```
/// let _guard = autograd_runtime::no_grad();
/// assert!(!autograd_runtime::is_grad_enabled());
/// drop(_guard);
/// assert!(autograd_runtime::is_grad_enabled());
/// ```
pub fn no_grad() -> GradModeGuard {
    set_grad_enabled(false)
}

/// Enables recording on this thread until the guard drops (`torch.enable_grad()`).
pub fn enable_grad() -> GradModeGuard {
    set_grad_enabled(true)
}

/// Whether anomaly detection is on for this thread.
///
/// Unlike PyTorch (a process-wide flag), anomaly mode is per thread like grad
/// mode: the engine runs backward on the calling thread, so the thread that
/// records and runs a graph decides. When on, [`record`](crate::record)
/// captures a backtrace of the forward call, and the engine checks every
/// backward output for NaN and attaches the node name and that backtrace to
/// errors ([`AutogradError::Anomaly`](crate::AutogradError::Anomaly)).
#[inline]
pub fn is_anomaly_enabled() -> bool {
    ANOMALY_ENABLED.with(Cell::get)
}

/// Restores the previous anomaly mode when dropped.
#[must_use = "the mode is restored when the guard is dropped"]
pub struct AnomalyModeGuard {
    prev: bool,
    _not_send: PhantomData<*const ()>,
}

impl Drop for AnomalyModeGuard {
    fn drop(&mut self) {
        ANOMALY_ENABLED.with(|g| g.set(self.prev));
    }
}

/// Turns anomaly detection on or off for this thread until the guard drops
/// (`torch.autograd.set_detect_anomaly`).
pub fn set_detect_anomaly(enabled: bool) -> AnomalyModeGuard {
    let prev = ANOMALY_ENABLED.with(|g| g.replace(enabled));
    AnomalyModeGuard {
        prev,
        _not_send: PhantomData,
    }
}

/// Anomaly detection on until the guard drops (`torch.autograd.detect_anomaly()`).
pub fn detect_anomaly() -> AnomalyModeGuard {
    set_detect_anomaly(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_nest_and_restore() {
        assert!(is_grad_enabled());
        {
            let _a = no_grad();
            assert!(!is_grad_enabled());
            {
                let _b = enable_grad();
                assert!(is_grad_enabled());
            }
            assert!(!is_grad_enabled());
        }
        assert!(is_grad_enabled());
        assert!(!is_anomaly_enabled());
        {
            let _a = detect_anomaly();
            assert!(is_anomaly_enabled());
        }
        assert!(!is_anomaly_enabled());
    }

    #[test]
    fn grad_mode_is_thread_local() {
        let _g = no_grad();
        let other = std::thread::spawn(is_grad_enabled).join().unwrap();
        assert!(other);
        assert!(!is_grad_enabled());
    }
}
