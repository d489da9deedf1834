//! The reference-count operations shared by the runtime's counted pointers (`node_ptr.rs`
//! for nodes, `var_ptr.rs` for variables): `Arc`'s rules on 32-bit counts.

use std::sync::atomic::{AtomicU32, Ordering};

/// Counts above this abort, like `Arc` (a leaked-handle loop, not a real graph). The counts
/// are 32 bits (smaller records; see docs/runtime.md): the abort is reached after 2^31
/// handles to one object, long before the count could wrap.
pub(crate) const MAX_REFCOUNT: u32 = i32::MAX as u32;

/// Adds a reference to a count that the caller's own reference keeps alive.
#[inline]
pub(crate) fn increment(count: &AtomicU32) {
    if count.fetch_add(1, Ordering::Relaxed) > MAX_REFCOUNT {
        std::process::abort();
    }
}

/// Adds a strong reference if the object is still alive (the count is not zero): a weak
/// reference's `upgrade`. Acquire: the new reference sees the object as its last owner
/// left it.
#[inline]
pub(crate) fn increment_if_alive(strong: &AtomicU32) -> bool {
    let mut n = strong.load(Ordering::Relaxed);
    loop {
        if n == 0 {
            return false;
        }
        if n > MAX_REFCOUNT {
            std::process::abort();
        }
        match strong.compare_exchange_weak(n, n + 1, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(cur) => n = cur,
        }
    }
}

/// Gives up one weak count; true if it was the last (the caller then frees the memory,
/// after an acquire fence). The last count, the usual case when no weak reference was
/// ever made, needs no read-modify-write: no other count exists to be released
/// concurrently, and none can be made (that needs a count).
#[inline]
pub(crate) fn release_weak_count(weak: &AtomicU32) -> bool {
    weak.load(Ordering::Acquire) == 1 || weak.fetch_sub(1, Ordering::Release) == 1
}
