//! [`Counts`]: the biased strong count and the weak count of a node (`node_ptr.rs`). The
//! threads' tags and the merge queues are in `bias.rs`. Variables keep plain atomic counts
//! (`var_ptr.rs`): biased as nodes are, they measured no faster (docs/runtime.md).
//!
//! The strong count is split: `local`, the owner thread's references, read and written by
//! that thread alone with relaxed loads and stores; `shared`, every other thread's, atomic,
//! a signed count (it goes below zero when a reference the owner counted is dropped
//! elsewhere) with two flags, [`MERGED`] and [`QUEUED`]; and `owner`, the owner's tag with
//! the sticky flag [`WEAKENED`] (a weak reference was made). `weak` counts the weak
//! references plus one for all the strong ones, as in `Arc`.
//!
//! This module holds no unsafe code: it says what happened (the object died, a merge must
//! be queued, a weak count must be given back), and the pointer modules do it.

use std::sync::atomic::{AtomicU32, Ordering, fence};

use super::bias::{self, NO_OWNER, WEAKENED};
use super::refcount::{MAX_REFCOUNT, increment};

/// `shared`: the owner's count was added in; from then on every thread counts in
/// `shared` alone, and a zero count there means the object is dead.
const MERGED: u32 = 1;
/// `shared`: its count went below zero once and the object was queued to its owner for a
/// merge (it is queued at most once).
const QUEUED: u32 = 2;
/// `shared`: one reference (the count sits above the two flags).
const STEP: u32 = 4;
/// Counts in `shared` above this abort, like `Arc`'s.
const MAX_SHARED: i32 = i32::MAX >> 3;

/// The signed count in a `shared` word.
#[inline]
fn count(shared: u32) -> i32 {
    (shared as i32) >> 2
}

/// The counts of one object (16 bytes).
#[repr(C)]
pub(crate) struct Counts {
    /// The owner thread's strong references (read and written by that thread only, with
    /// relaxed loads and stores; by another thread only to merge after the owner exited,
    /// ordered by `bias.rs`'s mutex).
    local: AtomicU32,
    /// Other threads' strong references: a signed count in steps of [`STEP`], with the
    /// flags [`MERGED`] and [`QUEUED`].
    shared: AtomicU32,
    /// The owner's tag (`bias.rs`), [`NO_OWNER`] once merged, and the flag [`WEAKENED`]
    /// once a weak reference was made (set with a `fetch_or` by other threads, before they
    /// give up the strong reference they made it from). The tag is written by the owner
    /// (or, after it exited, by the thread merging for it).
    owner: AtomicU32,
    /// Weak references, plus one for the strong references together.
    pub(crate) weak: AtomicU32,
}

/// What a drop on a thread that does not own the object calls for
/// ([`Counts::release_shared`]).
pub(crate) struct SharedRelease {
    /// The object is dead: drop its value (every use happened before: fenced).
    pub(crate) dead: bool,
    /// Queue a merge to this owner; the merge owns a weak count taken for it.
    pub(crate) queue_to: Option<u32>,
    /// Give back a weak count taken for a merge that was not queued after all.
    pub(crate) extra_weak: bool,
}

impl Counts {
    /// The counts of an object being built: no strong count (merged with a zero count,
    /// so no upgrade succeeds), the strong references' weak count.
    pub(crate) const fn unpublished() -> Self {
        Counts {
            local: AtomicU32::new(0),
            shared: AtomicU32::new(MERGED),
            owner: AtomicU32::new(NO_OWNER),
            weak: AtomicU32::new(1),
        }
    }

    /// Gives an unpublished object `n > 0` strong counts, owned by this thread (a thread
    /// without a tag counts in `shared` from the start). Release: a weak reference upgraded
    /// after this (Acquire) sees the object as it was written before.
    #[inline]
    pub(crate) fn publish(&self, n: u32) {
        assert!(
            n > 0 && n <= MAX_SHARED as u32,
            "a strong count out of range"
        );
        let owner = bias::owner_for_new();
        let (local, shared) = match owner {
            NO_OWNER => (0, n * STEP + MERGED),
            _ => (n, 0),
        };
        self.local.store(local, Ordering::Relaxed);
        self.owner.store(owner, Ordering::Relaxed);
        self.shared.store(shared, Ordering::Release);
    }

    /// Whether this thread owns the object (counts with `local`).
    #[inline]
    pub(crate) fn owned(&self) -> bool {
        bias::owns(self.owner.load(Ordering::Relaxed))
    }

    /// Adds a strong count to an object the caller keeps alive.
    #[inline]
    pub(crate) fn acquire(&self) {
        if self.owned() {
            let n = self.local.load(Ordering::Relaxed);
            if n > MAX_REFCOUNT {
                std::process::abort();
            }
            self.local.store(n + 1, Ordering::Relaxed);
        } else if count(self.shared.fetch_add(STEP, Ordering::Relaxed)) > MAX_SHARED {
            std::process::abort();
        }
    }

    /// The owner gives up a local count: `true` if it was its last one (the caller then
    /// calls [`release_last_local`](Self::release_last_local)).
    #[inline]
    pub(crate) fn release_local(&self) -> bool {
        let n = self.local.load(Ordering::Relaxed);
        if n > 1 {
            self.local.store(n - 1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// The owner's last local count goes: `true` if the object is dead. Inlined into
    /// the pointer modules' out-of-line `release_last_local`.
    #[inline]
    pub(crate) fn release_last_local(&self) -> bool {
        debug_assert_eq!(self.local.load(Ordering::Relaxed), 1);
        // No other thread counts a reference (`shared` is zero, no flags) and no weak
        // reference was ever made: no reference is left and none can be made, so the
        // object is dead without a read-modify-write. `shared` first, with Acquire: other
        // threads' uses happen before (each gave its reference back with a release), and
        // so does their `WEAKENED` (set before that release), which the second load sees.
        if self.shared.load(Ordering::Acquire) == 0
            && self.owner.load(Ordering::Relaxed) & WEAKENED == 0
        {
            return true;
        }
        // Otherwise merge. Release: the owner's uses happen before whoever drops the
        // value; Acquire: other threads' uses happen before this thread drops it.
        self.local.store(0, Ordering::Relaxed);
        self.owner.store(NO_OWNER, Ordering::Relaxed);
        // `fetch_add`: the flag is clear (the owner has not merged), and unlike `fetch_or`
        // it is one instruction, not a loop.
        count(self.shared.fetch_add(MERGED, Ordering::AcqRel)) == 0
    }

    /// Gives up a strong count on a thread that does not own the object.
    pub(crate) fn release_shared(&self) -> SharedRelease {
        // A weak count for the queue, taken while this reference keeps the object alive,
        // if this drop may be the one that queues it.
        let mut weak_taken = false;
        let mut cur = self.shared.load(Ordering::Relaxed);
        let new = loop {
            let mut new = cur.wrapping_sub(STEP);
            if cur & (MERGED | QUEUED) == 0 && count(new) < 0 {
                // The first count of the owner's dropped here: queue it.
                new |= QUEUED;
                if !weak_taken {
                    increment(&self.weak);
                    weak_taken = true;
                }
            }
            match self
                .shared
                .compare_exchange_weak(cur, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => break new,
                Err(c) => cur = c,
            }
        };
        let queued = new & QUEUED != 0 && cur & QUEUED == 0;
        let dead = !queued && new & MERGED != 0 && count(new) == 0;
        if dead {
            // Every other reference's use of the value happens before this.
            fence(Ordering::Acquire);
        }
        SharedRelease {
            dead,
            // `owner` may have merged meanwhile (counts are interchangeable: its `local`
            // may have gone to zero through references counted here): the merge then does
            // nothing.
            queue_to: queued.then(|| self.owner.load(Ordering::Relaxed) & !WEAKENED),
            extra_weak: weak_taken && !queued,
        }
    }

    /// A queued merge (the caller holds the queue's weak count): unless the owner merged
    /// already, its `local` count is added to `shared`. `true` if the object is dead. Runs
    /// on the owner thread or, if it exited, after it left `bias.rs`'s map (ordered by its
    /// mutex); nothing else merges then (an object is queued once), so the check and the
    /// merge do not race.
    pub(crate) fn merge(&self) -> bool {
        if self.shared.load(Ordering::Acquire) & MERGED != 0 {
            return false;
        }
        // Not merged, so not dead: the value is alive.
        let local = self.local.load(Ordering::Relaxed);
        if i32::try_from(local).map_or(true, |l| l > MAX_SHARED) {
            std::process::abort();
        }
        self.local.store(0, Ordering::Relaxed);
        self.owner.store(NO_OWNER, Ordering::Relaxed);
        let old = self
            .shared
            .fetch_add(local * STEP + MERGED, Ordering::AcqRel);
        count(old) + local as i32 == 0
    }

    /// Notes that a weak reference was made, so that the owner's last count is not taken
    /// for the object's last: the owner with a plain store (no other thread changes the
    /// word while it owns the object, but for setting this same flag), others with a
    /// `fetch_or`, before the strong reference they hold is given back.
    pub(crate) fn mark_weakened(&self) {
        let o = self.owner.load(Ordering::Relaxed);
        if o & WEAKENED != 0 {
            return;
        }
        if bias::owns(o) {
            self.owner.store(o | WEAKENED, Ordering::Relaxed);
        } else {
            self.owner.fetch_or(WEAKENED, Ordering::Relaxed);
        }
    }

    /// A weak reference made from a strong one the caller holds: the weak count and the
    /// flag.
    pub(crate) fn downgrade(&self) {
        increment(&self.weak);
        self.mark_weakened();
    }

    /// A weak reference's upgrade: `true` if a strong count was added (the object is not
    /// yet known dead: one whose last references were dropped on other threads stays
    /// alive until its owner merges the counts).
    pub(crate) fn try_upgrade(&self) -> bool {
        if self.owned() {
            let n = self.local.load(Ordering::Relaxed);
            if n > 0 {
                // The owner's own references keep the object alive.
                self.local.store(n + 1, Ordering::Relaxed);
                return true;
            }
        }
        // Refused only when merged with a zero count (dead, or not yet published).
        // Acquire: the new reference sees the object as its last owner left it.
        self.shared
            .fetch_update(Ordering::Acquire, Ordering::Relaxed, |cur| {
                if cur & MERGED != 0 && count(cur) == 0 {
                    None
                } else if count(cur) >= MAX_SHARED {
                    std::process::abort()
                } else {
                    Some(cur.wrapping_add(STEP))
                }
            })
            .is_ok()
    }
}
