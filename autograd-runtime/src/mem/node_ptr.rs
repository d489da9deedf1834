//! The pointers to a node's arena allocation: [`NodeRef`] (strong, type-erased),
//! [`WeakNode`] (keeps the header, not the node) and [`NodeHandle`] (strong,
//! typed), with `Arc`'s reference counting.
//!
//! All the unsafe code of the graph's nodes is here. The invariants:
//!
//! * A `NodeBox` is written once, header first and cell later, by
//!   [`Pending`] (with no strong count until the cell is written), into
//!   memory from [`arena::alloc_node`] that nothing else uses. Its strong
//!   count, the number of `NodeRef`/`NodeHandle` values (and unclaimed
//!   [`OutputRefs`] counts) pointing to it, is biased (`counts.rs`, `bias.rs`): `local`
//!   (the owner thread's plain count) plus the count in `shared` (every other
//!   thread's, atomic, possibly negative until merged); its `weak` count is the
//!   number of `WeakNode`s plus one for all the strong references together, as
//!   in `Arc`.
//! * The cell (`NodeBox::cell`) is alive until the strong count is known to be
//!   zero: `shared` is marked `MERGED` (the owner gave up `local`, adding it
//!   in) and its count is zero. Whoever makes that state drops the cell
//!   ([`LastRef`]); nothing leaves it (an upgrade refuses it). The header
//!   (counts, chunk offset, flags, depth, version counters) is alive while `weak > 0`; whoever
//!   brings `weak` to zero gives the node's count of its arena chunk back.
//! * Every pointer type here owns exactly one count, so while it exists the
//!   memory it reads is alive; the fields are private to this module, so no
//!   other code can make a pointer without a count.

use std::alloc::Layout;
use std::any::TypeId;
use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering, fence};

use crate::mem::arena::{self, Chunk};
use crate::mem::bias;
use crate::mem::counts::Counts;
use crate::mem::node_lock::{LockFlag, Locked, NodeGuard};
use crate::mem::refcount::{increment, release_weak_count};
use crate::node::{CellInfo, Edge, Node, NodeCell, drop_last_ref};
use crate::tensor::Tensor;

/// A node's allocation: its header, then the cell, at [`CELL_OFFSET`] for every
/// node type (`repr(C)`, checked in [`Pending::new`]).
#[repr(C)]
struct NodeBox<T: Tensor, N: ?Sized> {
    head: Head,
    cell: NodeCell<T, N>,
}

/// Reference counts (as in `Arc`: the strong references together hold one
/// weak count), where the arena chunk the node lives in starts, the version counters
/// of its first outputs, and the cell's few small fields (packed here, where the chunk's
/// pointer left room: each took eight bytes of the cell with its padding). Written
/// before the cell ([`Pending`]) and read through [`head`], never through a reference
/// to the whole `NodeBox`.
struct Head {
    /// The strong (biased) and weak counts (`counts.rs`).
    counts: Counts,
    /// The node's offset in its arena chunk: the chunk starts this many bytes below
    /// (chunks are 64 KiB, and a record of its own chunk starts near the chunk's start).
    chunk_offset: u16,
    /// [`OWN_OUTPUTS`] (set before the node is published), [`HAS_EXTRAS`] and
    /// [`HAS_HOOKS`] (set when hooks or an anomaly trace are attached).
    flags: AtomicU8,
    /// The lock of the cell's typed node (`node_lock.rs`).
    lock: LockFlag,
    /// 1 + the largest `topo` of the nodes the edges lead to (0 for none): every
    /// consumer of a node has a larger one, on any thread. Set once, before the node is
    /// published. 32 bits: a chain of 2^32 nodes would not fit in memory.
    topo: AtomicU32,
    /// The version counters of outputs `0..NODE_COUNTERS` (see
    /// [`Variable`](crate::Variable)): in the header, outside the cell, so
    /// that a weak reference can still read them after the node is dropped.
    versions: [AtomicU32; NODE_COUNTERS],
}

impl Head {
    /// Whether `flag` is set (acquire: what was done before it was set is visible).
    #[inline]
    fn has(&self, flag: u8) -> bool {
        self.flags.load(Ordering::Acquire) & flag != 0
    }
}

/// The node saved an output of its own through `record_saving` (an `OwnNode`): the
/// engine runs its `apply` as the node (`run_as`), which the others skip.
const OWN_OUTPUTS: u8 = 1;
/// The node has hooks or an anomaly trace, kept outside the record (`node.rs`).
pub(crate) const HAS_EXTRAS: u8 = 2;
/// A hook was registered on the node (the engine then takes a snapshot).
pub(crate) const HAS_HOOKS: u8 = 4;

/// Where the cell starts in every `NodeBox`: right after the 32-byte header (a node
/// type aligned to more than the header would move it; `Pending::new` refuses
/// those at compile time). A constant, so that reaching the cell of a type-erased
/// node is one addition: Rust computes a `dyn` field's offset from the alignment
/// in the vtable (measured: about 20 instructions a node in backward).
const CELL_OFFSET: usize = std::mem::size_of::<Head>();

/// The graph metadata of the node at `p` (the start of its cell), reached with the
/// constant offset.
///
/// # Safety
/// `p` is a node allocation of tensor type `T` (from `Pending::new`, so its cell is at
/// `CELL_OFFSET`, with its `CellInfo<T>` first).
#[inline]
unsafe fn info_ptr<T: Tensor>(p: Ptr) -> *mut CellInfo<T> {
    // SAFETY: in bounds of the allocation by the caller's guarantee.
    unsafe { p.as_ptr().byte_add(CELL_OFFSET).cast::<CellInfo<T>>() }
}

/// The type-erased (fat) pointer of the node at `p`, made by its type's [`ToDyn`].
///
/// # Safety
/// `p` is a node allocation of tensor type `T` whose cell is alive.
#[inline]
unsafe fn fat<T: Tensor>(p: Ptr) -> NonNull<DynBox<T>> {
    // SAFETY: the cell is alive (the caller's guarantee); `to_dyn` was set by `build_cell`
    // for the node type written into this allocation.
    let to_dyn = unsafe { (*info_ptr::<T>(p)).to_dyn.0 };
    to_dyn(p)
}

/// Where the typed node starts in every cell: right after its `CellInfo` (node types
/// are aligned to at most 16 bytes; `Pending::new` refuses others at compile time). A
/// constant, so that reaching the node is one addition: Rust computes a `dyn` field's
/// offset from the alignment in the vtable.
const fn node_offset<T: Tensor>() -> usize {
    CELL_OFFSET + std::mem::size_of::<CellInfo<T>>()
}

/// The typed node of the record at `p`, behind its lock.
///
/// # Safety
/// `p` is a node allocation of tensor type `T` whose cell is alive.
#[inline]
unsafe fn node_ptr<T: Tensor>(p: Ptr) -> *const Locked<dyn Node<T>> {
    // SAFETY: the cell is alive (the caller's guarantee), so its cast is set; the node
    // lies `node_offset` bytes into the allocation (checked for each node type in
    // `Pending::new`). The cast keeps the vtable (same `dyn Node<T>` tail).
    unsafe { (fat::<T>(p).as_ptr() as *const Locked<dyn Node<T>>).byte_add(node_offset::<T>()) }
}

/// A record's thin pointer: the address of its header, which every node type has at
/// the start of its allocation (`NodeBox` is `repr(C)`). A thin pointer (one word)
/// makes an [`Edge`] 16 bytes instead of 24; what needs the node's vtable gets it from
/// the cell ([`fat`]).
type Ptr = NonNull<Head>;

/// The thin pointer of a typed record.
#[inline]
fn thin<T: Tensor, N: ?Sized>(p: NonNull<NodeBox<T, N>>) -> Ptr {
    p.cast::<Head>()
}

/// How a record's thin pointer becomes the type-erased pointer of its node type (an
/// unsizing cast), kept in the cell ([`CellInfo::to_dyn`]).
pub(crate) struct ToDyn<T: Tensor>(fn(Ptr) -> NonNull<DynBox<T>>);

impl<T: Tensor> ToDyn<T> {
    /// The cast for records of node type `N`.
    #[inline]
    pub(crate) fn of<N: Node<T>>() -> Self {
        ToDyn(|p| -> NonNull<DynBox<T>> { p.cast::<NodeBox<T, N>>() })
    }
}

/// The header of the node at `p`.
///
/// # Safety
/// `p` is a node allocation whose header was written and stays alive for
/// `'a` (the caller holds a count).
#[inline]
unsafe fn head<'a>(p: Ptr) -> &'a Head {
    // SAFETY: the header is initialised and alive by the caller's guarantee;
    // the reference covers the header only, never the cell (which may not
    // be written yet, or may be dropped already).
    unsafe { &*p.as_ptr() }
}

/// How many outputs of a node keep their version counter in its header
/// (outputs beyond keep theirs inline, like leaves).
pub(crate) const NODE_COUNTERS: usize = 2;

type DynBox<T> = NodeBox<T, dyn Node<T>>;

/// Drops the weak count held by `p` and frees the memory with the last one.
///
/// # Safety
/// `p` is a live allocation and the caller owns one weak count of it, which
/// it gives up (it does not use `p` afterwards).
unsafe fn release_weak(p: Ptr) {
    // SAFETY: the caller's weak count keeps the header alive until the
    // `fetch_sub` below; `b` is not used after it unless it was the last.
    let b = unsafe { head(p) };
    // Usually the last count: no saved output or shared counter refers to
    // the node.
    if release_weak_count(&b.counts.weak) {
        // Every other user's accesses happen before the chunk is released.
        fence(Ordering::Acquire);
        // SAFETY: the node lies `chunk_offset` bytes into its chunk (`Pending::new`), so
        // the chunk's start is in the same allocation.
        let chunk = unsafe { p.cast::<u8>().byte_sub(usize::from(b.chunk_offset)) };
        // SAFETY: no counts are left, so nothing reads the node's memory any
        // more; the node's allocation holds one count of its chunk (taken in
        // `Pending::new`), given back here exactly once.
        unsafe { arena::release(chunk.cast::<Chunk>()) };
    }
}

/// The last strong reference of a node: dropping it drops the cell, then the
/// nodes its edges held the last references of, in a loop (see [`free_node`]).
struct LastRef<T: Tensor>(Ptr, PhantomData<fn() -> T>);

impl<T: Tensor> Drop for LastRef<T> {
    /// A chain of nodes (each the only holder of the next) is freed in this
    /// loop, without recursion or the depth count of `drop_last_ref`, which
    /// still guards every other way a drop can reach a node (a second edge
    /// holding a last reference, a saved variable's history, a closure).
    /// Measured on the chain bench: 10 instructions an op fewer, and 3-7% less
    /// time (the recursion's frames and thread-local accesses, 61 pairs).
    fn drop(&mut self) {
        let mut p = self.0;
        loop {
            arena::prefetch_below(p.as_ptr().cast::<u8>());
            // SAFETY: a `LastRef` owns the last strong reference of `p` (see
            // `free_node`): `self.0` by construction, the next ones as
            // `free_node` hands them over (forgotten right away, so owned
            // once, here).
            let Some(next) = (unsafe { free_node::<T>(p) }) else {
                return;
            };
            p = next.0;
            std::mem::forget(next);
        }
    }
}

/// Frees the node at `p`: releases its edges' references (the first that was
/// a last one is returned, to be freed by the caller's loop; any other goes
/// through `drop_last_ref`), drops its cell and gives up the strong
/// references' weak count.
///
/// # Safety
/// The caller owns the last strong reference of `p`: a `LastRef` is made only
/// when the strong count reached zero (after an acquire fence), so this is the
/// only access to the cell, which was initialised in `NodeHandle::new` and not
/// dropped yet; weak references never touch it. The strong references' weak
/// count is still held, so the memory is alive; it is given up by
/// `release_weak` after the cell is gone. The caller does not use `p` again.
#[inline]
unsafe fn free_node<T: Tensor>(p: Ptr) -> Option<LastRef<T>> {
    // SAFETY: the only access to a live cell (above).
    let cell = unsafe { &mut *info_ptr::<T>(p) };
    let mut next = None;
    for e in cell.edges.iter_mut() {
        if !matches!(e, Some(Edge::Node { .. })) {
            continue;
        }
        let Some(Edge::Node { node, .. }) = e.take() else {
            unreachable!("matched above")
        };
        if let Some(last) = node.release() {
            match next {
                None => next = Some(last),
                Some(_) => drop_last_ref(last),
            }
        }
    }
    // SAFETY: as above; `cell` is not used after this. The cell's two fields are dropped
    // in its own order, the typed node (reached through `to_dyn`, read before anything is
    // dropped) after the metadata, each at its constant offset.
    unsafe {
        let node = node_ptr::<T>(p).cast_mut();
        std::ptr::drop_in_place(info_ptr::<T>(p));
        std::ptr::drop_in_place(node);
    }
    // SAFETY: the strong references' weak count keeps the header alive.
    if unsafe { head(p) }.has(HAS_EXTRAS) {
        // Before the memory goes: another node could get the address.
        crate::node::forget_extras(addr_of_node(p));
    }
    // SAFETY: the strong references' weak count, given up once; `p` is not used after.
    unsafe { release_weak(p) };
    next
}

/// A shared, type-erased reference to a node in the graph (PyTorch's
/// `std::shared_ptr<Node>`): what [`Variable::grad_fn`](crate::Variable::grad_fn)
/// returns and what [`Edge`](crate::Edge)s point to. Cheap to clone (one
/// atomic increment).
pub struct NodeRef<T: Tensor>(Ptr, PhantomData<fn() -> T>);

// SAFETY: like `Arc<NodeCell<T, dyn Node<T>>>`: the counts are atomic, the
// cell's mutable parts are behind mutexes or atomics (its other fields are
// written once, before the node is shared), `Node: Send`, `T: Tensor` is
// `Send + Sync`, and the arena chunk may be released from any thread.
unsafe impl<T: Tensor> Send for NodeRef<T> {}
// SAFETY: as above: `&NodeRef` gives only shared access to the cell, through
// mutexes and atomics.
unsafe impl<T: Tensor> Sync for NodeRef<T> {}

impl<T: Tensor> NodeRef<T> {
    /// Gives this reference up like `drop`, except that the owner thread's last
    /// reference of a dead node is returned instead of dropped (for
    /// [`free_node`]'s loop).
    #[inline]
    fn release(self) -> Option<LastRef<T>> {
        let p = self.0;
        std::mem::forget(self);
        // SAFETY: the forgotten handle owned one strong count, so the node is alive.
        let h = unsafe { head(p) };
        if !h.counts.owned() {
            release_shared::<T>(p);
            return None;
        }
        // `drop`'s steps, with the last count's check inlined: in this one loop it
        // pays (through `drop`'s out-of-line `release_last_local`, 12 instructions
        // an op more on the chain bench). Not `then_some`: it would make (and
        // drop) a `LastRef` of a live node.
        if h.counts.release_local() && h.counts.release_last_local() {
            Some(LastRef(p, PhantomData))
        } else {
            None
        }
    }
}

impl<T: Tensor> Drop for NodeRef<T> {
    /// The owner thread gives a reference back with a plain store, unless it
    /// is its last one.
    #[inline]
    fn drop(&mut self) {
        // SAFETY: this handle owns one strong count, so the node is alive.
        let h = unsafe { head(self.0) };
        if !h.counts.owned() {
            return release_shared::<T>(self.0);
        }
        if h.counts.release_local() {
            release_last_local::<T>(self.0);
        }
    }
}

/// The owner's last local count of `p` goes: the node dies, or its counts are
/// merged. Out of line: inlined into every drop of a `NodeRef`, the two paths
/// cost the chain bench more instructions than the atomic they save.
#[inline(never)]
fn release_last_local<T: Tensor>(p: Ptr) {
    // SAFETY: the caller owns the owner's last local count of `p`.
    let h = unsafe { head(p) };
    if h.counts.release_last_local() {
        drop_last_ref(LastRef::<T>(p, PhantomData));
    }
}

/// Gives up a strong count of `p` on a thread that does not own it.
#[inline(never)]
fn release_shared<T: Tensor>(p: Ptr) {
    // SAFETY: the caller owns one strong count of `p`, so the node is alive.
    let r = unsafe { head(p) }.counts.release_shared();
    if let Some(owner) = r.queue_to {
        bias::enqueue(owner, merge_fn::<T>(p));
    } else if r.dead {
        drop_last_ref(LastRef::<T>(p, PhantomData));
    }
    if r.extra_weak {
        // SAFETY: the count taken for a merge that was not queued.
        unsafe { release_weak(p) };
    }
}

/// The merge of a queued node, holding a weak count of it: unless the owner
/// merged already, its `local` count is added to `shared`, and the cell
/// dropped if the sum is zero. Runs on the owner thread or, if it exited,
/// after it left `bias.rs`'s map (ordered by its mutex); nothing else merges
/// then (a node is queued once), so the check and the merge do not race.
fn merge_fn<T: Tensor>(p: Ptr) -> bias::Merge {
    struct Queued<T: Tensor>(Ptr, PhantomData<fn() -> T>);
    // SAFETY: as for `NodeRef`; the merge is the only use of the pointer.
    unsafe impl<T: Tensor> Send for Queued<T> {}
    let q = Queued::<T>(p, PhantomData);
    Box::new(move || {
        // The whole `Queued` (a closure would capture just its field).
        let Queued(p, _) = { q };
        // SAFETY: the merge's weak count keeps the header alive; a merge that finds
        // the node not merged yet knows it alive, and drops it if the sum is zero.
        if unsafe { head(p) }.counts.merge() {
            drop_last_ref(LastRef::<T>(p, PhantomData));
        }
        // SAFETY: the merge's weak count, given up once.
        unsafe { release_weak(p) };
    })
}

impl<T: Tensor> Clone for NodeRef<T> {
    #[inline]
    fn clone(&self) -> Self {
        // SAFETY: this handle's strong count keeps the node alive.
        unsafe { head(self.0) }.counts.acquire();
        NodeRef(self.0, PhantomData)
    }
}

impl<T: Tensor> NodeRef<T> {
    #[inline]
    pub(crate) fn cell(&self) -> &CellInfo<T> {
        // SAFETY: the strong count keeps the cell alive for as long as `self`
        // is borrowed.
        unsafe { &*info_ptr::<T>(self.0) }
    }

    /// The version counter of output `k` (`k < NODE_COUNTERS`).
    #[inline]
    pub(crate) fn version_slot(&self, k: u32) -> &AtomicU32 {
        // SAFETY: the strong count keeps the header alive (indexing is
        // bounds-checked).
        unsafe { &head(self.0).versions[k as usize] }
    }

    /// The node's depth: 1 + the largest of the nodes its edges lead to (0 for none).
    #[inline]
    pub(crate) fn topo(&self) -> u32 {
        // SAFETY: the strong count keeps the header alive.
        unsafe { head(self.0) }.topo.load(Ordering::Relaxed)
    }

    /// Whether the node saved an output of its own ([`OwnNode`]).
    #[inline]
    pub(crate) fn own_outputs(&self) -> bool {
        // SAFETY: the strong count keeps the header alive.
        unsafe { head(self.0) }.has(OWN_OUTPUTS)
    }

    /// Whether `flag` ([`HAS_EXTRAS`], [`HAS_HOOKS`]) is set (acquire: what was done
    /// before it was set is visible).
    #[inline]
    pub(crate) fn has_flag(&self, flag: u8) -> bool {
        // SAFETY: the strong count keeps the header alive.
        unsafe { head(self.0) }.has(flag)
    }

    /// Sets `flag` ([`HAS_EXTRAS`], [`HAS_HOOKS`]), releasing what was done before.
    pub(crate) fn set_flag(&self, flag: u8) {
        // SAFETY: the strong count keeps the header alive.
        unsafe { head(self.0) }
            .flags
            .fetch_or(flag, Ordering::Release);
    }

    /// The node's address: its identity while it lives.
    #[inline]
    pub(crate) fn addr(&self) -> usize {
        addr_of_node(self.0)
    }

    /// Locks the typed node, waiting while another thread holds it.
    #[inline]
    pub(crate) fn lock(&self) -> NodeGuard<'_, dyn Node<T>> {
        // SAFETY: the strong count keeps the header and cell alive while `self` is
        // borrowed; a record's node is only ever locked with its header's flag.
        unsafe { head(self.0).lock.lock(&*node_ptr::<T>(self.0)) }
    }

    /// The typed node's lock, if it is free now.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<NodeGuard<'_, dyn Node<T>>> {
        // SAFETY: as in `lock`.
        unsafe { head(self.0).lock.try_lock(&*node_ptr::<T>(self.0)) }
    }

    pub(crate) fn downgrade(&self) -> WeakNode<T> {
        // SAFETY: this handle keeps the node alive.
        unsafe { head(self.0) }.counts.downgrade();
        WeakNode(self.0, PhantomData)
    }

    /// Whether both refer to the same node.
    pub fn ptr_eq(&self, other: &NodeRef<T>) -> bool {
        self.0 == other.0
    }
}

/// A weak reference to a node: keeps its memory, not the node (saved outputs
/// refer to their own node this way, so that there is no cycle).
pub(crate) struct WeakNode<T: Tensor>(Ptr, PhantomData<fn() -> T>);

// SAFETY: as for `NodeRef`; a `WeakNode` only reads the header's atomics.
unsafe impl<T: Tensor> Send for WeakNode<T> {}
// SAFETY: as for `NodeRef`.
unsafe impl<T: Tensor> Sync for WeakNode<T> {}

impl<T: Tensor> WeakNode<T> {
    /// The version counter of output `k` (`k < NODE_COUNTERS`).
    #[inline]
    pub(crate) fn version_slot(&self, k: u32) -> &AtomicU32 {
        // SAFETY: the weak count keeps the header alive (indexing is
        // bounds-checked).
        unsafe { &head(self.0).versions[k as usize] }
    }

    /// A strong reference, if the node is still alive (not yet known dead:
    /// a node whose last references were dropped on other threads stays
    /// alive until its owner merges the counts).
    pub(crate) fn upgrade(&self) -> Option<NodeRef<T>> {
        // SAFETY: the weak count keeps the header alive.
        let h = unsafe { head(self.0) };
        h.counts.try_upgrade().then(|| NodeRef(self.0, PhantomData))
    }
}

impl<T: Tensor> Clone for WeakNode<T> {
    fn clone(&self) -> Self {
        // SAFETY: this handle's weak count keeps the header alive.
        increment(unsafe { &head(self.0).counts.weak });
        WeakNode(self.0, PhantomData)
    }
}

impl<T: Tensor> Drop for WeakNode<T> {
    fn drop(&mut self) {
        // SAFETY: this handle owns one weak count, given up here.
        unsafe { release_weak(self.0) };
    }
}

/// The node whose `apply` (or whose typed access: [`NodeRef::with_node`],
/// [`NodeHandle::with`]) runs on this thread: what an [`OwnNode`] is compared
/// with. Lives on the stack of [`run_as`] for as long as the thread-local points
/// to it.
struct Frame {
    /// The node's address (its identity: the data part of the pointer).
    addr: usize,
    /// The tensor type, so that `node` is read as the right `NodeRef<T>`.
    tensor: TypeId,
    /// The running `&NodeRef<T>`, type-erased.
    node: *const (),
}

thread_local! {
    static RUNNING: Cell<*const Frame> = const { Cell::new(std::ptr::null()) };
}

/// The address that identifies the node at `p`.
#[inline]
fn addr_of_node(p: Ptr) -> usize {
    p.as_ptr().addr()
}

/// Runs `f` with `node` as this thread's running node (restored afterwards,
/// also on a panic): inside, the [`OwnNode`]s of `node` reach it.
#[inline(always)]
pub(crate) fn run_as<T: Tensor, R>(node: &NodeRef<T>, f: impl FnOnce() -> R) -> R {
    struct Restore(*const Frame);
    impl Drop for Restore {
        #[inline]
        fn drop(&mut self) {
            RUNNING.set(self.0);
        }
    }
    let frame = Frame {
        addr: addr_of_node(node.0),
        tensor: TypeId::of::<T>(),
        node: std::ptr::from_ref(node).cast(),
    };
    let _restore = Restore(RUNNING.replace(&raw const frame));
    f()
}

/// A node's own saved output's way back to its node, without a count
/// ([`SavedVariable`](crate::SavedVariable)s made by
/// [`record_saving`](crate::record_saving)): the node's address, compared with
/// the node running on this thread ([`run_as`]: the engine's `apply`, or typed
/// access to the node). A saved output lives in its node's cell, so it is unpacked
/// while its node runs; a weak reference (`WeakNode`) would cost a weak count taken
/// and given back and the node's death one read-modify-write more, three atomic
/// operations per such node. It is never dereferenced, only compared: moved out of
/// its node, it reaches nothing (or, once its node is gone and another node of the
/// same tensor type got the address and runs, that node: a wrong history for a
/// misused saved output, never a dangling pointer).
pub(crate) struct OwnNode<T: Tensor> {
    addr: usize,
    _tensor: PhantomData<fn() -> T>,
}

impl<T: Tensor> OwnNode<T> {
    /// `f` on the node, if it is the one running on this thread.
    #[inline]
    pub(crate) fn with_running<R>(&self, f: impl FnOnce(&NodeRef<T>) -> R) -> Option<R> {
        let frame = RUNNING.get();
        if frame.is_null() {
            return None;
        }
        // SAFETY: a non-null `RUNNING` points to the frame of a `run_as` call
        // still running on this thread (it restores the previous value before
        // its frame goes), which borrows `node` for the whole call.
        let frame = unsafe { &*frame };
        if frame.addr != self.addr || frame.tensor != TypeId::of::<T>() {
            return None;
        }
        // SAFETY: the frame's `node` is a `&NodeRef<T>` (the type checked just
        // above) borrowed for the whole `run_as` call, which outlives this one.
        Some(f(unsafe { &*frame.node.cast::<NodeRef<T>>() }))
    }

    /// The version counter of output `k` (`k < NODE_COUNTERS`), if the node runs.
    #[inline]
    pub(crate) fn version(&self, k: u32) -> Option<u32> {
        self.with_running(|n| n.version_slot(k).load(Ordering::Acquire))
    }

    /// A strong reference, if the node runs on this thread.
    pub(crate) fn upgrade(&self) -> Option<NodeRef<T>> {
        self.with_running(NodeRef::clone)
    }
}

/// Typed access to a node after it was put in the graph, returned by
/// [`record`](crate::record): the generated code uses it to save the op's
/// outputs (`handle.with(|n| n.result = SavedVariable::new(&out, true))`).
pub struct NodeHandle<T: Tensor, N: Node<T>>(NonNull<NodeBox<T, N>>);

// SAFETY: as for `NodeRef` (`N: Node<T>` is `Send`).
unsafe impl<T: Tensor, N: Node<T>> Send for NodeHandle<T, N> {}
// SAFETY: as for `NodeRef`: `with` locks the node's mutex.
unsafe impl<T: Tensor, N: Node<T>> Sync for NodeHandle<T, N> {}

impl<T: Tensor, N: Node<T>> NodeHandle<T, N> {
    /// Puts `cell` in the thread's arena with `1 + refs` strong counts: one
    /// for the returned handle, `refs` for the returned [`OutputRefs`] (one
    /// per output variable).
    #[inline]
    pub(crate) fn new(cell: NodeCell<T, N>, topo: u32, refs: usize) -> (Self, OutputRefs<T, N>) {
        let strong = refs.checked_add(1).expect("too many outputs for one node");
        let (p, out) = Pending::new().publish_counted(cell, topo, strong, refs);
        (NodeHandle(p), out)
    }

    /// Runs `f` with mutable access to the node (locks its mutex). The node runs
    /// meanwhile: its own saved outputs unpack.
    pub fn with<R>(&self, f: impl FnOnce(&mut N) -> R) -> R {
        // A borrowed reference: the handle's count, not given back.
        let node = std::mem::ManuallyDrop::new(NodeRef::<T>(thin(self.0), PhantomData));
        // SAFETY: the handle's strong count keeps the header and cell alive; a record's
        // node is only ever locked with its header's flag.
        let mut guard = unsafe {
            let cell = &(*self.0.as_ptr()).cell;
            head(thin(self.0)).lock.lock(&cell.node)
        };
        run_as(&node, || f(&mut guard))
    }

    /// The type-erased reference (what `grad_fn()` returns).
    pub fn node_ref(&self) -> NodeRef<T> {
        // Cloning a borrowed `NodeRef` counts the new reference.
        (*std::mem::ManuallyDrop::new(NodeRef::<T>(thin(self.0), PhantomData))).clone()
    }
}

/// A node's memory with its header written and its cell not yet
/// ([`record_saving`](crate::record_saving)): the node's saved outputs need
/// weak references to it before the node value is complete. The strong
/// count stays zero until [`publish`](Self::publish) writes the cell, so a
/// weak reference cannot be upgraded before (the cell is never read).
pub(crate) struct Pending<T: Tensor, N: Node<T>>(NonNull<NodeBox<T, N>>);

impl<T: Tensor, N: Node<T>> Pending<T, N> {
    /// Takes the memory for a `NodeBox<T, N>` and writes its header. Always inlined:
    /// called, it was 9 more instructions an op on the chain bench.
    #[inline(always)]
    pub(crate) fn new() -> Self {
        bias::before_record();
        // Records take their size, a multiple of 8 (their alignment). They were
        // rounded to 16 bytes from the first session of issue 15 on: with 8-byte
        // granularity the chain bench's records then (200 + 192 + 248 = 640 bytes per
        // step, a power-of-two multiple) made freeing the graph twice as slow as at 656
        // bytes per step (cache set or store-forwarding aliasing). With today's records
        // (112 + 120 + 144 bytes a step on `HeapT`), 8 bytes is faster in every
        // comparison (docs/runtime.md, ninth session).
        let layout = Layout::new::<NodeBox<T, N>>();
        let (mem, chunk) = arena::alloc_node(layout);
        let p = mem.cast::<NodeBox<T, N>>();
        // Under 64 KiB (`alloc_node`'s guarantee): the chunk's start is found from the
        // node's address when the node's memory is given back.
        let chunk_offset = u16::try_from(mem.as_ptr().addr() - chunk.as_ptr().addr())
            .expect("a node starts within 64 KiB of its chunk");
        const {
            assert!(
                std::mem::offset_of!(NodeBox<T, N>, cell) == CELL_OFFSET
                    && CELL_OFFSET + std::mem::offset_of!(NodeCell<T, N>, node)
                        == node_offset::<T>(),
                "a node type aligned to more than 16 bytes"
            )
        };
        // SAFETY: `alloc_node` returns memory of `layout` (at least
        // `NodeBox<T, N>`'s size and alignment) that nothing else uses, plus
        // one count of its chunk, which the node keeps. Only the header is
        // written; the weak count is the strong references' (none yet), and
        // `shared` is merged with a zero count, so no upgrade succeeds.
        unsafe {
            (&raw mut (*p.as_ptr()).head).write(Head {
                counts: Counts::unpublished(),
                chunk_offset,
                flags: AtomicU8::new(0),
                lock: LockFlag::new(),
                topo: AtomicU32::new(0),
                versions: [const { AtomicU32::new(0) }; NODE_COUNTERS],
            })
        };
        Pending(p)
    }

    /// Marks the node as one that saved an output of its own ([`OwnNode`]): the engine
    /// runs it as itself (`run_as`).
    #[inline]
    pub(crate) fn set_own_outputs(&self) {
        // SAFETY: the header was written by `new`; the pending node's count keeps it
        // alive. Published with the cell (a release store in `publish`).
        unsafe { head(thin(self.0)) }
            .flags
            .store(OWN_OUTPUTS, Ordering::Relaxed);
    }

    /// The pending node's identity for its own saved outputs ([`OwnNode`]).
    #[inline]
    pub(crate) fn own(&self) -> OwnNode<T> {
        OwnNode {
            addr: addr_of_node(thin(self.0)),
            _tensor: PhantomData,
        }
    }

    /// Writes the cell and hands out `refs >= 1` strong references (the
    /// node's outputs).
    #[inline(always)]
    pub(crate) fn publish(self, cell: NodeCell<T, N>, topo: u32, refs: usize) -> OutputRefs<T, N> {
        assert!(refs > 0, "a published node needs an output to keep it");
        self.publish_counted(cell, topo, refs, refs).1
    }

    /// Writes the cell with `strong` strong counts, `refs <= strong` of which
    /// the returned [`OutputRefs`] hands out (the caller owns the others).
    /// Always inlined: out of line it cost the chain bench 50 instructions an op
    /// (the cell is moved through memory).
    #[inline(always)]
    fn publish_counted(
        self,
        cell: NodeCell<T, N>,
        topo: u32,
        strong: usize,
        refs: usize,
    ) -> (NonNull<NodeBox<T, N>>, OutputRefs<T, N>) {
        let n = u32::try_from(strong)
            .ok()
            .filter(|&n| n > 0 && refs <= n as usize)
            .expect("too many outputs for one node");
        let p = std::mem::ManuallyDrop::new(self).0;
        // SAFETY: the cell's place in the allocation from `new` was never
        // written nor read (the strong count is zero, so no reference to the
        // cell exists).
        unsafe { (&raw mut (*p.as_ptr()).cell).write(cell) };
        // SAFETY: the header was written by `new`; the pending node's count keeps it
        // alive.
        unsafe { head(thin(p)) }.topo.store(topo, Ordering::Relaxed);
        // After the write: the owner's tag read before it made the cell go
        // through a `memcpy` (the chain bench's `tanh`). Release (in
        // `publish`): a weak reference upgraded after this sees the cell.
        // SAFETY: the header was written by `new`; the pending node's count
        // keeps it alive.
        unsafe { head(thin(p)) }.counts.publish(n);
        (p, OutputRefs { node: p, refs })
    }
}

impl<T: Tensor, N: Node<T>> Drop for Pending<T, N> {
    /// Never published (a panic while the node was being built): give up
    /// the strong references' weak count without touching the cell.
    fn drop(&mut self) {
        // SAFETY: the pending node owns that count; nothing reads the cell.
        unsafe { release_weak(thin(self.0)) };
    }
}

impl<T: Tensor, N: Node<T>> Drop for NodeHandle<T, N> {
    fn drop(&mut self) {
        // The handle's count, given to a `NodeRef` that releases it.
        drop(NodeRef::<T>(thin(self.0), PhantomData));
    }
}

/// Strong counts of a new node taken in advance, one per output variable
/// (saves an atomic increment per output), handed out as [`NodeRef`]s by
/// the iterator; counts not handed out are released on drop.
///
/// The pointer is kept typed (thin) and made a `dyn` pointer in `next`: a fat pointer
/// written as two words and read back as one 16-byte load was a store-forwarding stall,
/// measured at about 7% of the chain bench's `Inline` time.
pub(crate) struct OutputRefs<T: Tensor, N: Node<T>> {
    node: NonNull<NodeBox<T, N>>,
    refs: usize,
}

impl<T: Tensor, N: Node<T>> Iterator for OutputRefs<T, N> {
    type Item = NodeRef<T>;

    /// The next reference; `None` once the `refs` counts given to
    /// [`NodeHandle::new`] were handed out.
    #[inline]
    fn next(&mut self) -> Option<NodeRef<T>> {
        if self.refs == 0 {
            return None;
        }
        self.refs -= 1;
        // One of the counts taken in `NodeHandle::new`, now owned by the
        // returned reference.
        Some(NodeRef(thin(self.node), PhantomData))
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.refs, Some(self.refs))
    }
}

impl<T: Tensor, N: Node<T>> ExactSizeIterator for OutputRefs<T, N> {}

impl<T: Tensor, N: Node<T>> Drop for OutputRefs<T, N> {
    fn drop(&mut self) {
        self.for_each(drop);
    }
}

#[cfg(test)]
mod tests {
    use crate::error::AutogradError;
    use crate::node::{Node, VariableList};
    use crate::tensor::testing::Handle;
    use std::sync::Arc;

    type T = Handle<u8>;

    /// A node that says when it is dropped (the count of its `Arc`).
    struct Probe(#[allow(dead_code)] Arc<()>);

    impl Node<T> for Probe {
        fn name(&self) -> &str {
            "Probe"
        }
        fn apply(&mut self, grads: VariableList<T>) -> Result<VariableList<T>, AutogradError> {
            Ok(grads)
        }
    }

    /// A variable whose node is a `Probe` recorded on this thread, and the probe.
    fn probed() -> (Arc<()>, crate::Variable<T>) {
        let probe = Arc::new(());
        let ([y], _) = crate::record(Probe(probe.clone()), &[], [Handle::new(0u8)]);
        (probe, y)
    }

    #[test]
    fn a_queued_node_the_owner_merged_meanwhile_is_freed_once() {
        // Counts are interchangeable: the owner's last local count can go with a
        // reference another thread counted, while a merge is queued for a
        // reference the owner counted and another thread dropped. The owner's
        // merge frees the node; the queued one must then leave it alone (it
        // holds a weak count, so it reads a live header, and sees `MERGED`).
        let (probe, y) = probed();
        let weak = y.grad_fn().unwrap().downgrade();
        let weak2 = weak.clone();
        // Counted by this thread, dropped there: `shared` goes to -1, queued here.
        std::thread::spawn(move || drop(y)).join().unwrap();
        // Upgraded there (`shared` back to 0), dropped here with the last local count.
        let r = std::thread::spawn(move || weak2.upgrade().unwrap())
            .join()
            .unwrap();
        assert_eq!(Arc::strong_count(&probe), 2);
        drop(r);
        assert_eq!(Arc::strong_count(&probe), 1, "freed by the owner's merge");
        crate::mem::bias::drain();
        assert_eq!(Arc::strong_count(&probe), 1);
        assert!(weak.upgrade().is_none(), "dead: an upgrade is refused");
    }

    #[test]
    fn a_weak_reference_made_on_another_thread_keeps_the_owner_from_a_plain_death() {
        // The owner's last count dies without a read-modify-write only if no weak
        // reference was ever made. Here another thread made one from a reference
        // it counted and gave back: `shared` is zero again, and only `WEAKENED`
        // tells the owner to merge, which marks the node dead for the upgrade.
        let (probe, y) = probed();
        let g = y.grad_fn().unwrap();
        let (g, weak) = std::thread::spawn(move || {
            let mine = g.clone();
            let weak = mine.downgrade();
            drop(mine);
            (g, weak)
        })
        .join()
        .unwrap();
        drop(y);
        drop(g);
        assert_eq!(Arc::strong_count(&probe), 1, "dead");
        assert!(weak.upgrade().is_none(), "an upgrade is refused");
    }

    #[test]
    fn a_node_without_weak_references_dies_with_its_owners_last_count() {
        let (probe, y) = probed();
        let g = y.grad_fn().unwrap();
        // Another thread takes and gives back a reference of its own.
        let g = std::thread::spawn(move || {
            drop(g.clone());
            g
        })
        .join()
        .unwrap();
        drop(y);
        assert_eq!(Arc::strong_count(&probe), 2);
        drop(g);
        assert_eq!(Arc::strong_count(&probe), 1);
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod sizes {
    use super::{CELL_OFFSET, NodeBox};
    use crate::node::Edge;
    use crate::saved::SavedVariable;
    use crate::tensor::testing::Handle;

    #[test]
    fn a_record_is_a_32_byte_header_and_80_bytes_of_cell_before_its_node() {
        // The header: counts (16), the chunk offset, the flags, the lock's flag and the
        // depth (8), the version counters (8). The cell: edges (40: a thin node pointer
        // and an input number each), meta (16), sequence number, task slot and the node
        // type's cast (8 each). With the flags and depth in the cell, the dtype's length
        // in its own word, fat node pointers and a pointer to hooks, a node with nothing
        // in it took 144.
        type One = Handle<u32>;
        type Two = Handle<[usize; 2]>;
        assert_eq!(std::mem::size_of::<Edge<One>>(), 16);
        assert_eq!(std::mem::size_of::<Option<Edge<One>>>(), 16);
        assert_eq!(CELL_OFFSET, 32);
        assert_eq!(std::mem::size_of::<NodeBox<One, ()>>(), 112);
        assert_eq!(std::mem::size_of::<NodeBox<One, f32>>(), 120);
        assert_eq!(
            std::mem::size_of::<NodeBox<Two, SavedVariable<Two>>>(),
            112 + std::mem::size_of::<SavedVariable<Two>>()
        );
    }
}
