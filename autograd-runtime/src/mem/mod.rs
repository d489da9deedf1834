//! Memory plumbing (being moved here).

#[allow(unsafe_code)]
pub(crate) mod arena;
pub(crate) mod backoff;
pub(crate) mod bias;
#[allow(unsafe_code)]
pub(crate) mod counter_slot;
pub(crate) mod counts;
#[allow(unsafe_code)]
pub(crate) mod data_lock;
#[allow(unsafe_code)]
pub(crate) mod node_lock;
#[allow(unsafe_code)]
pub(crate) mod node_ptr;
pub(crate) mod refcount;
#[allow(unsafe_code)]
pub(crate) mod reuse;
#[allow(unsafe_code)]
pub(crate) mod str_word;
#[allow(unsafe_code)]
pub(crate) mod var_pool;
#[allow(unsafe_code)]
pub(crate) mod var_ptr;
