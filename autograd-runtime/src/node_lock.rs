//! [`NodeLock`]: the lock around a node's typed part (its formula state and saved
//! variables).
//!
//! A node is locked once per backward pass (by the engine, around `apply`) and seldom
//! otherwise (saving outputs through a `NodeHandle`, `name()`, hooks registration), and
//! almost never by two threads at once (two backward passes through one graph). So the
//! lock is a flag taken with one compare-and-swap and given back with a plain release
//! store: `std::sync::Mutex` gives it back with an atomic swap (it must learn whether a
//! thread sleeps on it), an atomic read-modify-write per node that showed in the chain
//! bench's profile. A thread that finds the flag taken spins briefly, then yields, then
//! sleeps in short steps until it is free. There is no poisoning (the runtime ignored
//! `Mutex`'s: a panicking formula leaves the node as it was).

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::backoff::Backoff;

/// A lock around a node's typed part (see the module documentation).
pub(crate) struct NodeLock<N: ?Sized> {
    held: AtomicBool,
    value: UnsafeCell<N>,
}

// SAFETY: the value is reached only through a guard, which exists only while `held` was
// set by its owner's compare-and-swap: one thread at a time, so
// `N: Send` suffices for both, as for `Mutex`.
unsafe impl<N: ?Sized + Send> Send for NodeLock<N> {}
// SAFETY: as above.
unsafe impl<N: ?Sized + Send> Sync for NodeLock<N> {}

// As `Mutex` is, whose poisoning the runtime ignored: a formula that panics leaves its
// node as it was, and the graph stays usable (variables and nodes stay `RefUnwindSafe`).
impl<N: ?Sized> std::panic::RefUnwindSafe for NodeLock<N> {}
impl<N: ?Sized> std::panic::UnwindSafe for NodeLock<N> {}

impl<N> NodeLock<N> {
    /// A free lock around `value`.
    pub(crate) const fn new(value: N) -> Self {
        NodeLock {
            held: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }
}

impl<N: ?Sized> NodeLock<N> {
    /// Takes the lock, waiting for it if another thread holds it.
    #[inline]
    pub(crate) fn lock(&self) -> NodeGuard<'_, N> {
        if let Some(g) = self.try_lock() {
            return g;
        }
        self.lock_contended()
    }

    #[cold]
    fn lock_contended(&self) -> NodeGuard<'_, N> {
        let mut backoff = Backoff::default();
        loop {
            if !self.held.load(Ordering::Relaxed)
                && let Some(g) = self.try_lock()
            {
                return g;
            }
            backoff.snooze();
        }
    }

    /// The lock if it is free now.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<NodeGuard<'_, N>> {
        self.held
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| NodeGuard { lock: self })
    }
}

/// The held lock: gives access to the value and frees the lock when dropped.
pub(crate) struct NodeGuard<'a, N: ?Sized> {
    lock: &'a NodeLock<N>,
}

impl<N: ?Sized> Deref for NodeGuard<'_, N> {
    type Target = N;
    #[inline]
    fn deref(&self) -> &N {
        // SAFETY: the guard exists only while this thread holds the lock (see `try_lock`),
        // so no other reference to the value exists.
        unsafe { &*self.lock.value.get() }
    }
}

impl<N: ?Sized> DerefMut for NodeGuard<'_, N> {
    #[inline]
    fn deref_mut(&mut self) -> &mut N {
        // SAFETY: as in `deref`; the guard is borrowed uniquely.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<N: ?Sized> Drop for NodeGuard<'_, N> {
    #[inline]
    fn drop(&mut self) {
        // Release: the accesses made under the lock happen before the next holder's.
        self.lock.held.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn one_holder_at_a_time_across_threads() {
        let l = Arc::new(NodeLock::new(0u64));
        let rounds = if cfg!(miri) { 50 } else { 20_000 };
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..rounds {
                        let mut g = l.lock();
                        // A non-atomic read-modify-write: a lost update shows a race.
                        let v = *g;
                        std::hint::black_box(&v);
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*l.lock(), 2 * rounds);
    }

    #[test]
    fn try_lock_fails_while_held() {
        let l = NodeLock::new(1);
        let g = l.lock();
        assert!(l.try_lock().is_none());
        drop(g);
        assert_eq!(*l.try_lock().unwrap(), 1);
    }
}
