//! [`LockFlag`] and [`Locked`]: the lock around a node's typed part (its formula state and saved
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

use super::backoff::Backoff;

/// The flag of a node's lock (see the module documentation). It sits in the record's
/// header, away from the node it guards ([`Locked`]): beside the node, a one-byte flag
/// took eight bytes of every record whose node has pointer-aligned fields.
pub(crate) struct LockFlag(AtomicBool);

/// A node's typed part, reached only through a [`NodeGuard`] from the one [`LockFlag`]
/// its record pairs it with (`node_ptr.rs`).
pub(crate) struct Locked<N: ?Sized>(UnsafeCell<N>);

// SAFETY: the value is reached only through a guard, which exists only while its flag
// was set by the guard's compare-and-swap, and a value is only ever locked with one flag
// (the contract of `LockFlag::lock`): one thread at a time, so `N: Send` suffices for
// both, as for `Mutex`.
unsafe impl<N: ?Sized + Send> Send for Locked<N> {}
// SAFETY: as above.
unsafe impl<N: ?Sized + Send> Sync for Locked<N> {}

// As `Mutex` is, whose poisoning the runtime ignored: a formula that panics leaves its
// node as it was, and the graph stays usable (variables and nodes stay `RefUnwindSafe`).
impl<N: ?Sized> std::panic::RefUnwindSafe for Locked<N> {}
impl<N: ?Sized> std::panic::UnwindSafe for Locked<N> {}

impl<N> Locked<N> {
    /// `value`, to be locked by one flag.
    pub(crate) const fn new(value: N) -> Self {
        Locked(UnsafeCell::new(value))
    }
}

impl LockFlag {
    /// A free lock's flag.
    pub(crate) const fn new() -> Self {
        LockFlag(AtomicBool::new(false))
    }

    /// Takes the lock of `value`, waiting for it if another thread holds it.
    ///
    /// # Safety
    /// `self` is the only flag ever used to lock `value`.
    #[inline]
    pub(crate) unsafe fn lock<'a, N: ?Sized>(&'a self, value: &'a Locked<N>) -> NodeGuard<'a, N> {
        // SAFETY: the caller's guarantee, passed on.
        if let Some(g) = unsafe { self.try_lock(value) } {
            return g;
        }
        // SAFETY: as above.
        unsafe { self.lock_contended(value) }
    }

    /// # Safety
    /// As for [`lock`](Self::lock).
    #[cold]
    unsafe fn lock_contended<'a, N: ?Sized>(&'a self, value: &'a Locked<N>) -> NodeGuard<'a, N> {
        let mut backoff = Backoff::default();
        loop {
            if !self.0.load(Ordering::Relaxed)
                // SAFETY: the caller's guarantee, passed on.
                && let Some(g) = unsafe { self.try_lock(value) }
            {
                return g;
            }
            backoff.snooze();
        }
    }

    /// The lock of `value` if it is free now.
    ///
    /// # Safety
    /// As for [`lock`](Self::lock).
    #[inline]
    pub(crate) unsafe fn try_lock<'a, N: ?Sized>(
        &'a self,
        value: &'a Locked<N>,
    ) -> Option<NodeGuard<'a, N>> {
        self.0
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| NodeGuard { flag: self, value })
    }
}

/// The held lock: gives access to the value and frees the lock when dropped.
pub(crate) struct NodeGuard<'a, N: ?Sized> {
    flag: &'a LockFlag,
    value: &'a Locked<N>,
}

impl<N: ?Sized> Deref for NodeGuard<'_, N> {
    type Target = N;
    #[inline]
    fn deref(&self) -> &N {
        // SAFETY: the guard exists only while this thread holds the value's one flag (see
        // `try_lock`), so no other reference to the value exists.
        unsafe { &*self.value.0.get() }
    }
}

impl<N: ?Sized> DerefMut for NodeGuard<'_, N> {
    #[inline]
    fn deref_mut(&mut self) -> &mut N {
        // SAFETY: as in `deref`; the guard is borrowed uniquely.
        unsafe { &mut *self.value.0.get() }
    }
}

impl<N: ?Sized> Drop for NodeGuard<'_, N> {
    #[inline]
    fn drop(&mut self) {
        // Release: the accesses made under the lock happen before the next holder's.
        self.flag.0.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A flag and the value it locks, as a record pairs them.
    struct Pair {
        flag: LockFlag,
        value: Locked<u64>,
    }

    impl Pair {
        fn new(v: u64) -> Self {
            Pair {
                flag: LockFlag::new(),
                value: Locked::new(v),
            }
        }
        fn lock(&self) -> NodeGuard<'_, u64> {
            // SAFETY: `value` is only ever locked with `flag`.
            unsafe { self.flag.lock(&self.value) }
        }
        fn try_lock(&self) -> Option<NodeGuard<'_, u64>> {
            // SAFETY: as in `lock`.
            unsafe { self.flag.try_lock(&self.value) }
        }
    }

    #[test]
    fn one_holder_at_a_time_across_threads() {
        let l = Arc::new(Pair::new(0));
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
        let l = Pair::new(1);
        let g = l.lock();
        assert!(l.try_lock().is_none());
        drop(g);
        assert_eq!(*l.try_lock().unwrap(), 1);
    }
}
