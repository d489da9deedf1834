//! [`DataLock`]: the read-write lock around a variable's raw tensor, with a fast path for
//! one reader at a time.
//!
//! Every op reads its inputs' data, and a variable's data is replaced (`set_data`, an
//! in-place op's result) rarely. `std::sync::RwLock` counts each reader in and out: two
//! atomic read-modify-writes per read, measured at 5-14% of the chain bench's time
//! (docs/runtime.md, "What the time goes to"). Here a reader first tries to take a one-reader
//! flag with one compare-and-swap and gives it back with a plain release store; only when
//! the flag is taken (another reader, or a writer) does it read under the `RwLock`. A writer
//! takes the `RwLock` for writing (which excludes the slow readers and other writers), then
//! waits for the flag to be free and marks it as a writer's until it is done.
//!
//! The invariants: the value is read only by the holder of the flag's reader state (`FAST`)
//! or of the `RwLock`'s read lock, and written only by the holder of both the `RwLock`'s
//! write lock and the flag's writer state (`WRITER`). A reader with the flag and readers
//! under the read lock may overlap (all shared access); a writer overlaps with neither.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::backoff::Backoff;

/// The flag is free.
const FREE: u32 = 0;
/// One reader holds the flag.
const FAST: u32 = 1;
/// The writer holds the flag (and the `RwLock`'s write lock).
const WRITER: u32 = 2;

/// A read-write lock around a variable's raw tensor (see the module documentation).
pub(crate) struct DataLock<T> {
    flag: AtomicU32,
    lock: RwLock<()>,
    value: UnsafeCell<T>,
}

// SAFETY: as `RwLock<T>`: the value is shared between readers on any threads (`T: Sync`)
// and written or dropped by one thread at a time (`T: Send`).
unsafe impl<T: Send> Send for DataLock<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for DataLock<T> {}

// As `RwLock`, whose poisoning the runtime ignored: a writer that panics leaves the old or
// the new tensor, both whole (`set_data` swaps a value).
impl<T> std::panic::RefUnwindSafe for DataLock<T> {}
impl<T> std::panic::UnwindSafe for DataLock<T> {}

impl<T> DataLock<T> {
    /// A free lock around `value`.
    pub(crate) fn new(value: T) -> Self {
        DataLock {
            flag: AtomicU32::new(FREE),
            lock: RwLock::new(()),
            value: UnsafeCell::new(value),
        }
    }

    /// Shared access: the flag if it is free (one compare-and-swap), else the read lock.
    #[inline]
    pub(crate) fn read(&self) -> ReadGuard<'_, T> {
        if self
            .flag
            .compare_exchange(FREE, FAST, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return ReadGuard {
                lock: self,
                slow: None,
            };
        }
        self.read_slow()
    }

    #[cold]
    fn read_slow(&self) -> ReadGuard<'_, T> {
        let g = self.lock.read().unwrap_or_else(PoisonError::into_inner);
        ReadGuard {
            lock: self,
            slow: Some(g),
        }
    }

    /// Exclusive access: the write lock, then the flag once its reader (if any) left.
    pub(crate) fn write(&self) -> WriteGuard<'_, T> {
        let g = self.lock.write().unwrap_or_else(PoisonError::into_inner);
        let mut backoff = Backoff::default();
        while self
            .flag
            .compare_exchange(FREE, WRITER, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            backoff.snooze();
        }
        WriteGuard {
            lock: self,
            _write: g,
        }
    }
}

/// Shared access to the value (see [`DataLock::read`]).
pub(crate) struct ReadGuard<'a, T> {
    lock: &'a DataLock<T>,
    /// The read lock when the flag was taken by someone else.
    slow: Option<RwLockReadGuard<'a, ()>>,
}

impl<T> Deref for ReadGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the flag's reader state or the read lock, so no writer
        // holds both the write lock and the flag's writer state, which writing needs (see
        // the module's invariants); other access is shared.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> Drop for ReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if self.slow.is_none() {
            // Release: this reader's accesses happen before a writer's (its acquire
            // compare-and-swap reads this store).
            self.lock.flag.store(FREE, Ordering::Release);
        }
    }
}

/// Exclusive access to the value (see [`DataLock::write`]).
pub(crate) struct WriteGuard<'a, T> {
    lock: &'a DataLock<T>,
    _write: RwLockWriteGuard<'a, ()>,
}

impl<T> Deref for WriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the write lock and the flag's writer state: no reader
        // holds either (see the module's invariants).
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for WriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`; `&mut self` makes this the only reference through the
        // guard.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for WriteGuard<'_, T> {
    fn drop(&mut self) {
        // Release: the write happens before the next fast reader's acquire
        // compare-and-swap; the write lock is released after this (field drop order).
        self.lock.flag.store(FREE, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_second_reader_takes_the_read_lock_and_the_flag_comes_back() {
        let l = DataLock::new(5);
        {
            let a = l.read();
            let b = l.read(); // the flag is taken: the slow path
            assert!(a.slow.is_none() && b.slow.is_some());
            assert_eq!((*a, *b), (5, 5));
        }
        assert_eq!(l.flag.load(Ordering::Relaxed), FREE);
        *l.write() = 6;
        assert_eq!(*l.read(), 6);
        assert_eq!(l.flag.load(Ordering::Relaxed), FREE);
    }

    #[test]
    fn a_panicking_reader_gives_the_flag_back() {
        let l = DataLock::new(1);
        let r = std::panic::catch_unwind(|| {
            let _g = l.read();
            panic!("in a reader");
        });
        assert!(r.is_err());
        assert_eq!(l.flag.load(Ordering::Relaxed), FREE);
        *l.write() += 1;
        assert_eq!(*l.read(), 2);
    }

    #[test]
    fn readers_never_see_a_write_half_done() {
        // The value is a pair kept equal by the writers: a reader that saw a torn write
        // would see two different halves.
        let l = Arc::new(DataLock::new((0u64, 0u64)));
        let n = if cfg!(miri) { 20 } else { 2000 };
        let writer = {
            let l = l.clone();
            std::thread::spawn(move || {
                for i in 1..=n {
                    let mut w = l.write();
                    w.0 = i;
                    w.1 = i;
                }
            })
        };
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..n {
                        let r = l.read();
                        assert_eq!(r.0, r.1);
                    }
                })
            })
            .collect();
        writer.join().unwrap();
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(*l.read(), (n, n));
    }
}
