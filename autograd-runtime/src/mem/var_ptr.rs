//! [`VarArc`] and [`VarWeak`]: the reference-counted pointer of a variable's state
//! (`Arc<V>` and `Weak<V>` with the same semantics, 32-bit counts; the model's
//! `Variable<T>` is a `VarArc<VarInner<T>>`).
//!
//! Why not `Arc`: dropping the last `Arc` also gives back the strong references' weak count
//! with an atomic read-modify-write, although hardly any variable ever had a weak reference
//! (a retained gradient, a view's base, a tangent's level do). Here the last weak count is
//! given back with a load (as the graph's node pointers do, `node_ptr.rs`): an op's output
//! dies one op later, so this is one atomic operation fewer per op.
//!
//! The invariants, as in `Arc`: `strong` counts the `VarArc`s; `weak` counts the `VarWeak`s
//! plus one for all the strong references together. The value is dropped by whoever brings
//! `strong` to zero, the allocation freed by whoever brings `weak` to zero. Every pointer
//! owns one count, so the memory it reads is alive while it exists.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering, fence};

use super::refcount::{increment, increment_if_alive, release_weak_count};
use super::var_pool;

struct VarBox<V> {
    strong: AtomicU32,
    weak: AtomicU32,
    inner: V,
}

/// A strong reference to a variable's shared state.
pub(crate) struct VarArc<V>(NonNull<VarBox<V>>);

/// A weak reference: keeps the allocation, not the value.
pub(crate) struct VarWeak<V>(NonNull<VarBox<V>>);

// SAFETY: as for `Arc<V>` and `Weak<V>`, with `Arc`'s bounds: the counts are atomic, the
// value is shared between threads (`&V`, so `V: Sync`) and dropped by whichever thread
// gives up the last strong count (so `V: Send`).
unsafe impl<V: Send + Sync> Send for VarArc<V> {}
// SAFETY: as above.
unsafe impl<V: Send + Sync> Sync for VarArc<V> {}
// SAFETY: as above (a weak reference reads only the counts, but upgrades to a strong one).
unsafe impl<V: Send + Sync> Send for VarWeak<V> {}
// SAFETY: as above.
unsafe impl<V: Send + Sync> Sync for VarWeak<V> {}

// As `Arc` is for the model's value: a variable's state is behind locks and atomics.
impl<V> std::panic::UnwindSafe for VarArc<V> {}
impl<V> std::panic::RefUnwindSafe for VarArc<V> {}

impl<V> VarArc<V> {
    /// A new allocation holding `inner`, with one strong reference.
    #[inline]
    pub(crate) fn new(inner: V) -> Self {
        Self::new_with(|| inner)
    }

    /// A new allocation holding `make()`, with one strong reference: the memory is taken
    /// first and the value built into it. Measured on the chain bench: a variable built
    /// before the allocation was kept on the stack across the allocator's call and copied
    /// with 16-byte loads of fields just written with 8-byte stores, a store-forwarding
    /// stall of about 7% of the `Inline` chain's time. Always inlined: called, it takes
    /// `make`'s captures (a node pointer with its vtable) from memory the same way.
    #[inline(always)]
    pub(crate) fn new_with(make: impl FnOnce() -> V) -> Self {
        let p = alloc_box::<V>();
        // SAFETY: `p` is fresh memory for a `VarBox<V>` (its layout, or a larger block of
        // at least its alignment) that nothing else uses.
        unsafe {
            p.write(VarBox {
                strong: AtomicU32::new(1),
                weak: AtomicU32::new(1),
                inner: make(),
            })
        };
        VarArc(p)
    }

    #[inline]
    fn counts(&self) -> &VarBox<V> {
        // SAFETY: this reference's strong count keeps the allocation and the value alive.
        unsafe { self.0.as_ref() }
    }

    /// A weak reference to the same variable.
    pub(crate) fn downgrade(this: &Self) -> VarWeak<V> {
        increment(&this.counts().weak);
        VarWeak(this.0)
    }

    /// Whether both point to the same variable.
    #[inline]
    pub(crate) fn ptr_eq(a: &Self, b: &Self) -> bool {
        a.0 == b.0
    }

    /// The address of the value (an identity, never dereferenced by callers).
    #[inline]
    pub(crate) fn as_ptr(this: &Self) -> *const V {
        &this.counts().inner
    }
}

impl<V> std::ops::Deref for VarArc<V> {
    type Target = V;
    #[inline]
    fn deref(&self) -> &V {
        &self.counts().inner
    }
}

impl<V> Clone for VarArc<V> {
    #[inline]
    fn clone(&self) -> Self {
        increment(&self.counts().strong);
        VarArc(self.0)
    }
}

impl<V> Drop for VarArc<V> {
    #[inline]
    fn drop(&mut self) {
        if self.counts().strong.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Every other reference's use of the value happens before it is dropped.
        fence(Ordering::Acquire);
        // SAFETY: the strong count reached zero: no `VarArc` is left and none can be made
        // (`upgrade` refuses a zero count), and this reference's pointer is not used again.
        unsafe { drop_value(self.0) };
    }
}

/// Drops the value of `p` and gives up the strong references' weak count. Out of line:
/// inlined, it made every drop of an edge or a list holding variables too large to be
/// inlined in turn (measured: +40 instructions an op on the chain bench).
///
/// # Safety
/// The strong count of `p` reached zero (after an acquire fence): this is the only access
/// to the value, which was initialised in `new` and is dropped once, here.
#[inline(never)]
unsafe fn drop_value<V>(p: NonNull<VarBox<V>>) {
    // SAFETY: by the caller's guarantee; the strong references' weak count, still held,
    // keeps the allocation alive until `release_weak`.
    unsafe {
        std::ptr::drop_in_place(&raw mut (*p.as_ptr()).inner);
        release_weak(p);
    }
}

/// Gives up one weak count of `p`, freeing the allocation with the last.
///
/// # Safety
/// The caller owns one weak count of the live allocation `p`, whose value was dropped if
/// this can be the last, and does not use `p` afterwards.
unsafe fn release_weak<V>(p: NonNull<VarBox<V>>) {
    // SAFETY: the caller's count keeps the allocation alive until the `fetch_sub`. Only the
    // count is read: the value may be dropped already.
    let weak = unsafe { &(*p.as_ptr()).weak };
    // Usually the last count: no weak reference was ever made.
    if release_weak_count(weak) {
        fence(Ordering::Acquire);
        // SAFETY: no counts are left, so nothing uses the allocation any more; it came
        // from `alloc_box` in `VarArc::new`, and its value was dropped when the strong
        // count reached zero (`drop_in_place` above), so only the memory is freed.
        unsafe { free_box(p) };
    }
}

/// Memory for a `VarBox<V>`: a block of the thread's list (`var_pool.rs`) when it fits,
/// else from the allocator.
#[inline]
fn alloc_box<V>() -> NonNull<VarBox<V>> {
    let layout = Layout::new::<VarBox<V>>();
    if var_pool::fits(layout) {
        return var_pool::take().cast();
    }
    // SAFETY: a `VarBox` has a non-zero size (it holds two counts).
    let p = unsafe { alloc(layout) };
    NonNull::new(p.cast()).unwrap_or_else(|| handle_alloc_error(layout))
}

/// Frees the memory of [`alloc_box`].
///
/// # Safety
/// `p` came from `alloc_box::<V>()`, its value was dropped or moved out, and nothing uses
/// it any more.
#[inline]
unsafe fn free_box<V>(p: NonNull<VarBox<V>>) {
    let layout = Layout::new::<VarBox<V>>();
    if var_pool::fits(layout) {
        // SAFETY: a block from `var_pool::take` (same `fits` test), no longer used.
        unsafe { var_pool::give(p.cast()) };
    } else {
        // SAFETY: allocated with this layout in `alloc_box`, no longer used.
        unsafe { dealloc(p.as_ptr().cast(), layout) };
    }
}

impl<V> VarWeak<V> {
    /// A strong reference, if the variable is still alive.
    pub(crate) fn upgrade(&self) -> Option<VarArc<V>> {
        // SAFETY: the weak count keeps the allocation (and its counts) alive.
        let strong = unsafe { &(*self.0.as_ptr()).strong };
        increment_if_alive(strong).then(|| VarArc(self.0))
    }

    /// Whether the value is alive (a strong reference exists). Once dead it stays dead (an
    /// upgrade is refused); alive, it may die right after.
    pub(crate) fn is_alive(&self) -> bool {
        // SAFETY: the weak count keeps the allocation (and its counts) alive.
        let strong = unsafe { &(*self.0.as_ptr()).strong };
        strong.load(Ordering::Relaxed) != 0
    }

    /// The address of the value (what [`VarArc::as_ptr`] gives for the same variable).
    pub(crate) fn as_ptr(&self) -> *const V {
        // A place computed from the pointer, not a reference: the value may be dropped.
        // SAFETY: in bounds of the live allocation (the weak count keeps it).
        unsafe { &raw const (*self.0.as_ptr()).inner }
    }
}

impl<V> Clone for VarWeak<V> {
    fn clone(&self) -> Self {
        // SAFETY: the weak count keeps the allocation alive.
        increment(unsafe { &(*self.0.as_ptr()).weak });
        VarWeak(self.0)
    }
}

impl<V> Drop for VarWeak<V> {
    fn drop(&mut self) {
        // SAFETY: this reference owns one weak count, given up here. If it is the last, the
        // strong references' count is gone too, so the value was dropped.
        unsafe { release_weak(self.0) };
    }
}

/// Whether a `VarArc<V>`'s memory is a block of the thread's list (`var_pool.rs`): a
/// value too large for it goes back to `malloc`, silently.
#[cfg(test)]
pub(crate) const fn takes_pool_block<V>() -> bool {
    var_pool::fits(Layout::new::<VarBox<V>>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A value that says when it is dropped (the count of its `Arc`).
    struct Probe(#[allow(dead_code)] Arc<()>);

    #[test]
    fn the_value_goes_with_the_last_strong_reference_and_the_memory_with_the_last_weak_one() {
        let probe = Arc::new(());
        let a = VarArc::new(Probe(probe.clone()));
        let b = a.clone();
        assert!(VarArc::ptr_eq(&a, &b));
        let w = VarArc::downgrade(&a);
        let w2 = w.clone();
        assert!(w.is_alive());
        assert_eq!(w.as_ptr(), VarArc::as_ptr(&a));
        drop(a);
        let c = w.upgrade().expect("alive: `b` holds it");
        drop((b, c));
        assert_eq!(
            Arc::strong_count(&probe),
            1,
            "dropped with the last strong count"
        );
        assert!(
            w2.upgrade().is_none() && !w2.is_alive(),
            "an upgrade of a dead value is refused"
        );
        drop((w, w2));
    }

    #[test]
    fn a_value_is_dropped_on_the_thread_that_gives_up_the_last_reference() {
        let probe = Arc::new(());
        let a = VarArc::new(Probe(probe.clone()));
        let w = VarArc::downgrade(&a);
        let b = a.clone();
        std::thread::spawn(move || drop(b)).join().unwrap();
        assert_eq!(Arc::strong_count(&probe), 2);
        std::thread::spawn(move || drop(a)).join().unwrap();
        assert_eq!(Arc::strong_count(&probe), 1);
        assert!(w.upgrade().is_none());
    }

    #[test]
    fn small_values_take_pool_blocks_and_large_ones_the_allocator() {
        assert!(takes_pool_block::<[u64; 4]>());
        assert!(!takes_pool_block::<[u64; 32]>());
        // Both kinds of memory are given back the way they were taken.
        let small = VarArc::new([1u64; 4]);
        let large = VarArc::new([2u64; 32]);
        assert_eq!((small[3], large[31]), (1, 2));
    }
}
