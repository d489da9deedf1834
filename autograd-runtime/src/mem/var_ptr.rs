//! [`VarArc`] and [`VarWeak`]: the reference-counted pointer of a [`Variable`](crate::Variable)
//! (`Arc<VarInner<T>>` and `Weak` with the same semantics, 32-bit counts).
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

use crate::mem::refcount::{increment, increment_if_alive, release_weak_count};
use crate::mem::var_pool;
use crate::tensor::Tensor;
use crate::variable::VarInner;

struct VarBox<T: Tensor> {
    strong: AtomicU32,
    weak: AtomicU32,
    inner: VarInner<T>,
}

/// A strong reference to a variable's shared state.
pub(crate) struct VarArc<T: Tensor>(NonNull<VarBox<T>>);

/// A weak reference: keeps the allocation, not the value.
pub(crate) struct VarWeak<T: Tensor>(NonNull<VarBox<T>>);

// SAFETY: like `Arc<VarInner<T>>` and `Weak<VarInner<T>>`: the counts are atomic and the
// value is only shared (`&VarInner<T>`), which is `Send + Sync` (atomics, locks, and
// `T: Tensor`, which is `Send + Sync`).
unsafe impl<T: Tensor> Send for VarArc<T> {}
// SAFETY: as above.
unsafe impl<T: Tensor> Sync for VarArc<T> {}
// SAFETY: as above.
unsafe impl<T: Tensor> Send for VarWeak<T> {}
// SAFETY: as above.
unsafe impl<T: Tensor> Sync for VarWeak<T> {}

// As `Arc` is: a variable's state is behind locks and atomics.
impl<T: Tensor> std::panic::UnwindSafe for VarArc<T> {}
impl<T: Tensor> std::panic::RefUnwindSafe for VarArc<T> {}

impl<T: Tensor> VarArc<T> {
    /// A new allocation holding `inner`, with one strong reference.
    #[inline]
    pub(crate) fn new(inner: VarInner<T>) -> Self {
        Self::new_with(|| inner)
    }

    /// A new allocation holding `make()`, with one strong reference: the memory is taken
    /// first and the value built into it. Measured on the chain bench: a variable built
    /// before the allocation was kept on the stack across the allocator's call and copied
    /// with 16-byte loads of fields just written with 8-byte stores, a store-forwarding
    /// stall of about 7% of the `Inline` chain's time. Always inlined: called, it takes
    /// `make`'s captures (a node pointer with its vtable) from memory the same way.
    #[inline(always)]
    pub(crate) fn new_with(make: impl FnOnce() -> VarInner<T>) -> Self {
        let p = alloc_box::<T>();
        // SAFETY: `p` is fresh memory for a `VarBox<T>` (its layout, or a larger block of
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
    fn counts(&self) -> &VarBox<T> {
        // SAFETY: this reference's strong count keeps the allocation and the value alive.
        unsafe { self.0.as_ref() }
    }

    /// A weak reference to the same variable.
    pub(crate) fn downgrade(this: &Self) -> VarWeak<T> {
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
    pub(crate) fn as_ptr(this: &Self) -> *const VarInner<T> {
        &this.counts().inner
    }
}

impl<T: Tensor> std::ops::Deref for VarArc<T> {
    type Target = VarInner<T>;
    #[inline]
    fn deref(&self) -> &VarInner<T> {
        &self.counts().inner
    }
}

impl<T: Tensor> Clone for VarArc<T> {
    #[inline]
    fn clone(&self) -> Self {
        increment(&self.counts().strong);
        VarArc(self.0)
    }
}

impl<T: Tensor> Drop for VarArc<T> {
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
unsafe fn drop_value<T: Tensor>(p: NonNull<VarBox<T>>) {
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
unsafe fn release_weak<T: Tensor>(p: NonNull<VarBox<T>>) {
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

/// Memory for a `VarBox<T>`: a block of the thread's list (`var_pool.rs`) when it fits,
/// else from the allocator.
#[inline]
fn alloc_box<T: Tensor>() -> NonNull<VarBox<T>> {
    let layout = Layout::new::<VarBox<T>>();
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
/// `p` came from `alloc_box::<T>()`, its value was dropped or moved out, and nothing uses
/// it any more.
#[inline]
unsafe fn free_box<T: Tensor>(p: NonNull<VarBox<T>>) {
    let layout = Layout::new::<VarBox<T>>();
    if var_pool::fits(layout) {
        // SAFETY: a block from `var_pool::take` (same `fits` test), no longer used.
        unsafe { var_pool::give(p.cast()) };
    } else {
        // SAFETY: allocated with this layout in `alloc_box`, no longer used.
        unsafe { dealloc(p.as_ptr().cast(), layout) };
    }
}

impl<T: Tensor> VarWeak<T> {
    /// A strong reference, if the variable is still alive.
    pub(crate) fn upgrade(&self) -> Option<VarArc<T>> {
        // SAFETY: the weak count keeps the allocation (and its counts) alive.
        let strong = unsafe { &(*self.0.as_ptr()).strong };
        increment_if_alive(strong).then(|| VarArc(self.0))
    }

    /// The address of the value (what [`VarArc::as_ptr`] gives for the same variable).
    pub(crate) fn as_ptr(&self) -> *const VarInner<T> {
        // A place computed from the pointer, not a reference: the value may be dropped.
        // SAFETY: in bounds of the live allocation (the weak count keeps it).
        unsafe { &raw const (*self.0.as_ptr()).inner }
    }
}

impl<T: Tensor> Clone for VarWeak<T> {
    fn clone(&self) -> Self {
        // SAFETY: the weak count keeps the allocation alive.
        increment(unsafe { &(*self.0.as_ptr()).weak });
        VarWeak(self.0)
    }
}

impl<T: Tensor> Drop for VarWeak<T> {
    fn drop(&mut self) {
        // SAFETY: this reference owns one weak count, given up here. If it is the last, the
        // strong references' count is gone too, so the value was dropped.
        unsafe { release_weak(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A tensor as the examples' backends have them: a shape and a shared buffer.
    type Shared = crate::tensor::testing::Handle<(Vec<usize>, Arc<[f32]>)>;

    #[test]
    fn variables_of_handle_sized_tensors_take_pool_blocks() {
        // A five-word tensor (a shape `Vec` and an `Arc<[f32]>`) fills the 128-byte
        // block exactly; a larger tensor, or a larger `VarInner`, would silently go back
        // to `malloc` (`alloc_box`).
        assert!(var_pool::fits(Layout::new::<VarBox<Shared>>()));
    }
}
