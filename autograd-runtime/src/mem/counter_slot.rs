//! [`CounterSlot`]: a set-once box read with one atomic load, which holds a
//! variable's shared version counter and its rarely used part.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, Ordering};

/// A set-once slot for a boxed value: a box kept as a raw pointer, so that
/// reading it is one load (an `OnceLock` costs a call into its `Once` on
/// first initialisation).
///
/// Invariant: the pointer is null or comes from `Box::into_raw`, and then the
/// slot owns that box until it is dropped (it is never replaced). `X: Send +
/// Sync` because the slot is (it is an `AtomicPtr`): the value may be read
/// from any thread and dropped on another thread than the one that set it.
pub(crate) struct CounterSlot<X: Send + Sync>(AtomicPtr<X>, PhantomData<Box<X>>);

impl<X: Send + Sync> CounterSlot<X> {
    pub(crate) const fn empty() -> Self {
        CounterSlot(AtomicPtr::new(std::ptr::null_mut()), PhantomData)
    }

    #[inline]
    pub(crate) fn get(&self) -> Option<&X> {
        // SAFETY: a non-null pointer came from `Box::into_raw` in `set`
        // (published with release ordering, read here with acquire, so the
        // box's contents are visible), and the slot owns the box, never
        // replaces or mutates it, and frees it only when dropped, which
        // cannot happen while `self` is borrowed.
        unsafe { self.0.load(Ordering::Acquire).as_ref() }
    }

    /// The value, stored first with `f()` if the slot is empty (when two
    /// threads race, one value is kept and the other dropped).
    pub(crate) fn get_or_init(&self, f: impl FnOnce() -> X) -> &X {
        if let Some(x) = self.get() {
            return x;
        }
        let _ = self.set(f());
        self.get().expect("the slot was just set")
    }

    /// Stores `x` if the slot is empty; gives it back otherwise.
    pub(crate) fn set(&self, x: X) -> Result<(), X> {
        let p = Box::into_raw(Box::new(x));
        match self
            .0
            .compare_exchange(std::ptr::null_mut(), p, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Ok(()),
            // SAFETY: `p` comes from `Box::into_raw` just above and was not
            // stored, so this is its only owner.
            Err(_) => Err(*unsafe { Box::from_raw(p) }),
        }
    }
}

impl<X: Send + Sync> Drop for CounterSlot<X> {
    fn drop(&mut self) {
        let p = *self.0.get_mut();
        if !p.is_null() {
            // SAFETY: the slot owns the box (see `set`), and `&mut self`
            // means no reference from `get` is alive.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}
