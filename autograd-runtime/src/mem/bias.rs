//! Biased reference counts: the threads' tags and the queues of merges (the
//! counts themselves are in `node_ptr.rs`).
//!
//! A node is owned by the thread that recorded it: that thread counts its
//! references with plain loads and stores (`local`), every other thread with an
//! atomic read-modify-write on a second count (`shared`), which may go below zero
//! (a reference the owner counted, dropped elsewhere). The design is Choi, Shull
//! and Torrellas's (PACT 2018), as in CPython's free-threaded build (PEP 703).
//! When `shared` first goes below zero, the dropping thread queues the node to
//! its owner ([`enqueue`]); the owner merges the two counts at its next record
//! or backward pass ([`drain`]), or when it exits. A node whose owner has exited
//! is merged at once by the thread that would have queued it.
//!
//! This module holds no unsafe code: a queued merge is a closure made by
//! `node_ptr.rs`, which owns the invariants.

use std::cell::{Cell, OnceCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The owner of a node that has none: merged, or recorded by a thread without a
/// tag.
pub(crate) const NO_OWNER: u32 = 0;
/// The tag of a thread that has none (not assigned yet, or exiting): no node
/// has this owner, so [`owns`] is one comparison.
const NO_TAG: u32 = u32::MAX;
/// A flag beside the owner's tag in a node's `owner` word (`node_ptr.rs`): a weak
/// reference to the node was made. Tags stay below it.
pub(crate) const WEAKENED: u32 = 1 << 31;

/// A queued merge: run once, on the owner thread or (after it exited) on the
/// thread that queued it.
pub(crate) type Merge = Box<dyn FnOnce() + Send>;

/// The merges queued to one owner thread.
struct Queue {
    merges: Mutex<Vec<Merge>>,
    /// Whether `merges` may be non-empty (read without the lock by the owner).
    pending: AtomicBool,
}

/// The thread's queue; dropping it (thread exit) runs its merges.
struct State {
    queue: OnceCell<Arc<Queue>>,
}

thread_local! {
    /// The thread's tag: [`NO_TAG`] until assigned, and again from the
    /// thread's exit on. Kept apart from [`STATE`]: without a destructor it is
    /// read with one load (no state check) on every count of a node.
    static TAG: Cell<u32> = const { Cell::new(NO_TAG) };
    static STATE: State = const { State { queue: OnceCell::new() } };
    /// Nodes recorded since the queue was last looked at ([`owner_for_new`]).
    static RECORDS: Cell<u8> = const { Cell::new(0) };
}

static NEXT_TAG: AtomicU32 = AtomicU32::new(1);

/// The live owners' queues, by tag. An owner removes itself when it exits; a
/// thread that finds no queue for a node's owner merges the node itself (the
/// owner's last use of the node's `local` count happened before its removal,
/// which this mutex orders before the lookup).
static OWNERS: Mutex<Option<HashMap<u32, Arc<Queue>>>> = Mutex::new(None);

fn owners() -> MutexGuard<'static, Option<HashMap<u32, Arc<Queue>>>> {
    // The map is consistent at every unlock (one insert or remove).
    OWNERS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether this thread owns a node whose `owner` word is `owner` (its tag and
/// maybe [`WEAKENED`]); never once the thread is exiting (its thread-local is gone).
#[inline]
pub(crate) fn owns(owner: u32) -> bool {
    TAG.get() == owner & !WEAKENED
}

/// Called before a node is recorded: every 256th call runs the merges queued
/// to this thread, so that a thread that records and never runs backward (a
/// producer whose graphs another thread frees) does not keep them. The other
/// merge points: the start of a backward pass,
/// the model's `live_nodes`, the thread's exit.
#[inline]
pub(crate) fn before_record() {
    let n = RECORDS.get().wrapping_add(1);
    RECORDS.set(n);
    if n == 0 {
        drain();
    }
}

/// The owner of a node recorded now: this thread's tag, assigned on first use,
/// or [`NO_OWNER`] once the thread is exiting or when tags ran out.
#[inline]
pub(crate) fn owner_for_new() -> u32 {
    match TAG.get() {
        NO_TAG => assign(),
        tag => tag,
    }
}

/// This thread's tag, given on first use; [`NO_OWNER`] when the tags ran out
/// or the thread is exiting (its `State` is gone).
#[cold]
fn assign() -> u32 {
    STATE
        .try_with(|s| {
            let Ok(tag) = NEXT_TAG.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                (t < WEAKENED - 1).then_some(t + 1)
            }) else {
                return NO_OWNER;
            };
            let queue = Arc::new(Queue {
                merges: Mutex::new(Vec::new()),
                pending: AtomicBool::new(false),
            });
            owners()
                .get_or_insert_with(HashMap::new)
                .insert(tag, queue.clone());
            let _ = s.queue.set(queue);
            TAG.set(tag);
            tag
        })
        .unwrap_or(NO_OWNER)
}

/// Queues `merge` to the thread tagged `owner`, or runs it now if that thread
/// has exited.
#[cold]
pub(crate) fn enqueue(owner: u32, merge: Merge) {
    let unqueued = {
        // Pushed under the map's lock: an owner leaves the map (at exit)
        // before it takes its queue for the last time, so nothing pushed is
        // left behind.
        let map = owners();
        match map.as_ref().and_then(|m| m.get(&owner)) {
            Some(q) => {
                q.merges
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(merge);
                q.pending.store(true, Ordering::Release);
                None
            }
            None => Some(merge),
        }
    };
    // Outside the lock: a merge may free nodes, which may queue more.
    if let Some(merge) = unqueued {
        merge();
    }
}

/// Runs the merges queued to this thread (cheap when there are none: one
/// relaxed load).
#[inline]
pub(crate) fn drain() {
    let _ = STATE.try_with(|s| {
        if let Some(q) = s.queue.get()
            && q.pending.load(Ordering::Relaxed)
        {
            run_queued(q);
        }
    });
}

#[cold]
fn run_queued(q: &Queue) {
    let merges = {
        let mut m = q.merges.lock().unwrap_or_else(PoisonError::into_inner);
        q.pending.store(false, Ordering::Relaxed);
        std::mem::take(&mut *m)
    };
    merges.into_iter().for_each(|merge| merge());
}

impl Drop for State {
    /// Thread exit: this thread stops owning anything (from here on its
    /// accesses to its nodes take the shared path: the thread-local is gone),
    /// leaves the map so that later merges run where they are queued, and runs
    /// the merges queued so far.
    fn drop(&mut self) {
        let tag = TAG.replace(NO_TAG);
        if let Some(q) = self.queue.get() {
            if let Some(m) = owners().as_mut() {
                m.remove(&tag);
            }
            run_queued(q);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_get_distinct_tags_and_exit_leaves_the_map() {
        let here = owner_for_new();
        assert_ne!(here, NO_OWNER);
        assert!(owns(here) && !owns(NO_OWNER) && !owns(NO_TAG));
        assert_eq!(owner_for_new(), here, "a thread keeps its tag");
        let there = std::thread::spawn(owner_for_new).join().unwrap();
        assert_ne!(there, here);
        assert!(
            !owners().as_ref().unwrap().contains_key(&there),
            "an exited thread's queue is removed"
        );
        assert!(owners().as_ref().unwrap().contains_key(&here));
    }

    #[test]
    fn merges_queued_to_a_live_owner_run_at_its_drain_and_to_a_gone_one_at_once() {
        let ran = Arc::new(AtomicU32::new(0));
        let owner = owner_for_new();
        let r = ran.clone();
        std::thread::spawn(move || {
            enqueue(
                owner,
                Box::new(move || _ = r.fetch_add(1, Ordering::Relaxed)),
            )
        })
        .join()
        .unwrap();
        assert_eq!(ran.load(Ordering::Relaxed), 0, "queued, not run");
        drain();
        assert_eq!(ran.load(Ordering::Relaxed), 1, "run by the owner's drain");
        let gone = std::thread::spawn(owner_for_new).join().unwrap();
        let r = ran.clone();
        enqueue(
            gone,
            Box::new(move || _ = r.fetch_add(1, Ordering::Relaxed)),
        );
        assert_eq!(
            ran.load(Ordering::Relaxed),
            2,
            "the owner exited: run at once"
        );
    }
}
