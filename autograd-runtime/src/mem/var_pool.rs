//! Memory for variables ([`VarArc`](super::var_ptr::VarArc)): blocks of one size, kept by
//! each thread in a short free list.
//!
//! Why: a recorded op makes one variable and, one op later, drops the one before (a
//! chain's intermediate results), so a variable's memory is freed and taken again once
//! per op. Through `malloc` and `free` that cost about 130 instructions per op on the
//! runtime's chain bench (callgrind, `Inline`, where a variable is the only allocation):
//! a tenth of the op. From a thread's free list it is a pop and a push. The memory is the
//! same: the block just freed is the next one used, as `malloc`'s per-thread cache would
//! give it.
//!
//! Invariants: every block is an allocation of [`BLOCK`] from the global allocator; a
//! block is either in use (owned by one variable) or in exactly one thread's list (owned
//! by that list), never both. A list holds at most [`KEPT`] blocks and frees them when its
//! thread exits; blocks freed on another thread than the one that took them join that
//! thread's list (any thread may free any block: they all have the same layout).

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::cell::Cell;
use std::ptr::NonNull;

/// The layout of every block. Variables whose memory does not fit use the allocator
/// directly ([`fits`]).
pub(crate) const BLOCK: Layout = match Layout::from_size_align(128, 16) {
    Ok(l) => l,
    Err(_) => panic!("128 bytes aligned to 16 is a valid layout"),
};

/// Blocks a thread keeps (16 KiB): a loop of ops needs one or two; more are kept for the
/// variables a graph's backward or a dropped list frees at once.
const KEPT: u32 = 128;

/// Whether a value of `layout` is given a block.
pub(crate) const fn fits(layout: Layout) -> bool {
    layout.size() <= BLOCK.size() && layout.align() <= BLOCK.align()
}

/// A block in a list: its first word links to the next.
struct Free {
    next: Option<NonNull<Free>>,
}

struct List {
    head: Cell<Option<NonNull<Free>>>,
    len: Cell<u32>,
}

impl Drop for List {
    fn drop(&mut self) {
        while let Some(b) = self.head.get() {
            // SAFETY: a block in the list is owned by it, and its first word was written
            // by `give` (a `Free`); it is unlinked before it is freed.
            self.head.set(unsafe { b.as_ref() }.next);
            // SAFETY: every block is an allocation of `BLOCK` (module invariant).
            unsafe { dealloc(b.as_ptr().cast(), BLOCK) };
        }
    }
}

thread_local! {
    static LIST: List = const {
        List {
            head: Cell::new(None),
            len: Cell::new(0),
        }
    };
}

/// A block for a variable: the last one this thread freed, or a new one.
#[inline]
pub(crate) fn take() -> NonNull<u8> {
    let kept = LIST.try_with(|l| {
        let b = l.head.get()?;
        // SAFETY: a block in the list is owned by it and starts with the `Free` written
        // by `give`; taking it out of the list makes it the caller's.
        l.head.set(unsafe { b.as_ref() }.next);
        l.len.set(l.len.get() - 1);
        Some(b.cast::<u8>())
    });
    if let Ok(Some(b)) = kept {
        return b;
    }
    // SAFETY: `BLOCK` has a non-zero size.
    let p = unsafe { alloc(BLOCK) };
    NonNull::new(p).unwrap_or_else(|| handle_alloc_error(BLOCK))
}

/// Gives a block back: kept in this thread's list, or freed when the list is full (or
/// the thread is exiting).
///
/// # Safety
/// `b` came from [`take`], is no longer used by anything, and is not used by the caller
/// afterwards.
#[inline]
pub(crate) unsafe fn give(b: NonNull<u8>) {
    let kept = LIST.try_with(|l| {
        if l.len.get() >= KEPT {
            return false;
        }
        let f = b.cast::<Free>();
        // SAFETY: the block is the caller's to give (nothing uses it), at least `BLOCK`
        // bytes aligned to 16, so a `Free` fits at its start; the list owns it from here.
        unsafe { f.write(Free { next: l.head.get() }) };
        l.head.set(Some(f));
        l.len.set(l.len.get() + 1);
        true
    });
    if kept != Ok(true) {
        // SAFETY: an allocation of `BLOCK` (from `take`), no longer used.
        unsafe { dealloc(b.as_ptr(), BLOCK) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_block_is_the_next_one_taken_and_the_list_is_bounded() {
        std::thread::spawn(|| {
            let a = take();
            // SAFETY: `a` came from `take` and is not used again.
            unsafe { give(a) };
            let b = take();
            assert_eq!(a, b);
            let blocks: Vec<_> = (0..KEPT + 5).map(|_| take()).collect();
            for &p in &blocks {
                // SAFETY: each block came from `take` and is given back once.
                unsafe { give(p) };
            }
            assert_eq!(LIST.with(|l| l.len.get()), KEPT);
            // SAFETY: `b` came from `take` and is not used again.
            unsafe { give(b) };
        })
        .join()
        .unwrap();
    }

    #[test]
    fn blocks_freed_on_another_thread_join_its_list() {
        struct Block(NonNull<u8>);
        // SAFETY: a block is plain memory, owned by whoever holds it.
        unsafe impl Send for Block {}
        let b = Block(take());
        std::thread::spawn(move || {
            let b = b;
            // SAFETY: taken on the other thread, given back once here.
            unsafe { give(b.0) };
            assert_eq!(LIST.with(|l| l.len.get()), 1);
            assert_eq!(take(), b.0);
            // SAFETY: as above.
            unsafe { give(b.0) };
        })
        .join()
        .unwrap();
    }
}
