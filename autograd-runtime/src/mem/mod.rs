//! The runtime's memory plumbing: every raw pointer, reference count, lock and arena of
//! the crate, and all of its unsafe code, behind a small safe interface (the re-exports
//! below). The model (the rest of the crate: variables, nodes, the engine, ...) builds
//! on it and is free of unsafe code; nothing here imports the model.
//!
//! # What it owns
//!
//! * **Node records** (`node_ptr.rs`): one arena allocation per recorded op, a 32-byte
//!   header (biased strong and weak counts, the chunk offset, flags, the node lock's
//!   flag, the depth, two version counters) and a cell (the model's metadata, the cast
//!   to the type-erased node, the node behind its lock). [`NodeRc`] (strong, thin),
//!   [`WeakRc`] (keeps the header), [`TypedRc`] (strong, typed), [`Pending`] (header
//!   written, cell not yet) and [`OwnNode`] (a record's identity while it runs,
//!   [`run_as`]). Generic over a [`Kind`], which the model implements for its graph
//!   (`Kind::Info` is its `CellInfo<T>`, `Kind::Dyn` is `dyn Node<T>`), and [`Erase`],
//!   the coercion of a node type to `Kind::Dyn`.
//! * **Biased counts** (`counts.rs`, safe: the count logic; `bias.rs`, safe: the threads'
//!   tags and the queues of merges; `refcount.rs`, safe: `Arc`'s rules on 32-bit counts).
//! * **Node arenas** (`arena.rs`): 64 KiB chunks per thread, bump-allocated, counted
//!   with a bias, freed by whichever thread drops the last node; [`live_chunks`].
//! * **Locks**: the node lock ([`Locked`], [`NodeGuard`], its flag in the record's
//!   header: `node_lock.rs`), the lock around a variable's data ([`DataLock`],
//!   [`ReadGuard`], with a one-reader fast path: `data_lock.rs`), and how both wait
//!   (`backoff.rs`, safe).
//! * **Variables' memory**: [`VarArc`] and [`VarWeak`] (`var_ptr.rs`, `Arc` and `Weak`
//!   with 32-bit counts and a weak count given back with a load), their blocks from a
//!   per-thread free list (`var_pool.rs`), and [`CounterSlot`] (`counter_slot.rs`: a
//!   set-once box read with one load, for a variable's shared version counter and its
//!   rarely used part).
//! * **Small words**: [`StrWord`] (`str_word.rs`: a `&'static str` and a 56-bit value in
//!   two words, for the packed shape and dtype of a node's output), and the reuse of the
//!   engine's buffers between calls ([`forget_elements`], [`recycle`]: `reuse.rs`).
//!
//! # The interface
//!
//! Only the items re-exported here are visible to the model (the files are private
//! modules), and all of them are safe to use: no safe code outside this module can
//! break the invariants below, whatever it does with them. Where the model plugs in (the
//! [`Kind`] and [`Erase`] implementations), this module relies on nothing a safe
//! implementation could get wrong: [`Kind::take_ref`] hands over references it owns,
//! [`Kind::freed`] is a notification, and the cast a record's cell keeps is written here
//! from the node type written with it, [`Erase::erase`]'s result checked to be the node
//! itself.
//!
//! # The invariants
//!
//! * Every counted pointer ([`NodeRc`], [`WeakRc`], [`TypedRc`], [`VarArc`], [`VarWeak`],
//!   the counts an [`OutputRefs`] holds) owns exactly one count, so the memory it reads
//!   is alive while it exists; the fields are private, so no pointer exists without its
//!   count. A record's cell (a variable's value) is dropped exactly once, by whoever
//!   makes the strong count known to be zero; its memory is given back by whoever gives
//!   up the last weak count.
//! * A record's cell is written once, after its header, while no strong count exists,
//!   with the cast of the node type written into it; the node is reached only through
//!   the one lock flag of its header.
//! * A variable's data is read under the data lock's reader state or read lock, written
//!   under both its write lock and writer state.
//! * An arena chunk is freed when the last of its nodes and its owner's share are given
//!   back; a block of the variables' free list is in use by one variable or in one
//!   thread's list.
//!
//! Every unsafe block has a `SAFETY:` comment saying why it is sound
//! (`clippy::undocumented_unsafe_blocks` is denied for the crate), and the files with
//! unsafe code are marked `#[allow(unsafe_code)]` below (the crate denies it elsewhere).
//! The unit tests of this module run under Miri with the rest of the crate's tests
//! (`docs/runtime.md`, "Unsafe code"; `.ci/run`).

#[allow(unsafe_code)]
mod arena;
mod backoff;
mod bias;
#[allow(unsafe_code)]
mod counter_slot;
mod counts;
#[allow(unsafe_code)]
mod data_lock;
#[allow(unsafe_code)]
mod node_lock;
#[allow(unsafe_code)]
mod node_ptr;
mod refcount;
#[allow(unsafe_code)]
mod reuse;
#[allow(unsafe_code)]
mod str_word;
#[allow(unsafe_code)]
mod var_pool;
#[allow(unsafe_code)]
mod var_ptr;

pub use arena::live_chunks;
pub(crate) use bias::drain as drain_merges;
pub(crate) use counter_slot::CounterSlot;
pub(crate) use data_lock::{DataLock, ReadGuard};
pub(crate) use node_lock::{Locked, NodeGuard};
#[cfg(test)]
pub(crate) use node_ptr::record_layout;
pub(crate) use node_ptr::{
    Erase, Kind, NODE_COUNTERS, NewCell, NodeRc, OutputRefs, OwnNode, Pending, TypedRc, WeakRc,
    run_as,
};
pub(crate) use reuse::{forget_elements, recycle};
pub(crate) use str_word::StrWord;
#[cfg(test)]
pub(crate) use var_ptr::takes_pool_block;
pub(crate) use var_ptr::{VarArc, VarWeak};
