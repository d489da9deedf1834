//! Checks across an entry and the function it is for, or across entries, run once every
//! entry is prepared: each a short function, all called from [`check_entries`] (as serde_derive's
//! `internals/check.rs`).
