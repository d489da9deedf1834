//! The pointers to a record's arena allocation: [`NodeRc`] (strong, type-erased),
//! [`WeakRc`] (keeps the header, not the node), [`Handle`] (strong, typed),
//! [`Pending`] (a record whose header exists before its cell) and [`OwnNode`] (a
//! record's identity, for its own saved outputs), with `Arc`'s reference counting.
//!
//! The records are generic over a [`Kind`]: what the model keeps in every record
//! ([`Kind::Info`], the graph's metadata: edges, shapes, ...) and the trait object
//! its nodes are seen through ([`Kind::Dyn`], `dyn Node<T>`). This module knows
//! nothing else of nodes: the model implements [`Kind`] and [`Erase`].
//!
//! All the unsafe code of the graph's nodes is here. The invariants:
//!
//! * A `NodeBox` is written once, header first and cell later, by
//!   [`Pending`] (with no strong count until the cell is written), into
//!   memory from [`arena::alloc_node`] that nothing else uses. Its strong
//!   count, the number of `NodeRc`/`Handle` values (and unclaimed
//!   [`OutputRefs`] counts) pointing to it, is biased (`counts.rs`, `bias.rs`): `local`
//!   (the owner thread's plain count) plus the count in `shared` (every other
//!   thread's, atomic, possibly negative until merged); its `weak` count is the
//!   number of `WeakRc`s plus one for all the strong references together, as
//!   in `Arc`.
//! * The cell (`NodeBox::cell`) is alive until the strong count is known to be
//!   zero: `shared` is marked `MERGED` (the owner gave up `local`, adding it
//!   in) and its count is zero. Whoever makes that state drops the cell
//!   ([`LastRef`]); nothing leaves it (an upgrade refuses it). The header
//!   (counts, chunk offset, flags, depth, version counters) is alive while `weak > 0`; whoever
//!   brings `weak` to zero gives the node's count of its arena chunk back.
//! * A cell's [`Cast`] is written by this module with the cell, for the node type
//!   written into it, and never changed: the type-erased node it gives is that node.
//! * Every pointer type here owns exactly one count, so while it exists the
//!   memory it reads is alive; the fields are private to this module, so no
//!   other code can make a pointer without a count.

use std::alloc::Layout;
use std::any::{Any, TypeId};
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, Ordering, fence};

use super::arena::{self, Chunk};
use super::bias;
use super::counts::Counts;
use super::node_lock::{LockFlag, Locked, NodeGuard};
use super::refcount::{increment, release_weak_count};

/// What this module needs to know of the records it keeps: implemented by the model for
/// its graph's nodes (`node.rs`), and by the tests below for a toy graph.
pub(crate) trait Kind: Sized + 'static {
    /// What every record's cell holds before its node (the model's graph metadata).
    /// Shared between threads and dropped on any of them, as the whole cell is.
    type Info: Send + Sync;
    /// The type-erased node (a trait object): what [`NodeRc::lock`] gives.
    type Dyn: ?Sized + Send;
    /// The header flag ([`NodeRc::set_flag`]) of the records that need
    /// [`freed`](Self::freed) when their cell is dropped.
    const FREED_FLAG: u8;
    /// Where `info` keeps its references to other records (the model's edges), one per
    /// slot, some slots holding none.
    type Slot;
    /// The slots of `info` (the record is being freed: the references [`take_ref`]
    /// moves out of them are given up in a loop, a chain of last ones without
    /// recursion; references left in `info` are dropped with it).
    ///
    /// [`take_ref`]: Self::take_ref
    fn slots(info: &mut Self::Info) -> &mut [Self::Slot];
    /// The reference to another record `slot` holds, moved out.
    fn take_ref(slot: &mut Self::Slot) -> Option<NodeRc<Self>>;
    /// The cell of the record at `addr` ([`NodeRc::addr`]), which had
    /// [`FREED_FLAG`](Self::FREED_FLAG), was just dropped; its memory is not yet given
    /// back (no other record has the address).
    fn freed(addr: usize);
}

/// A node type of the records of kind `K`: how a reference to it becomes one to `K`'s
/// type-erased node. The model's implementation is the unsizing coercion (`node` itself);
/// [`Cast`] checks that the address is kept, so no implementation can hand this module
/// another value than the record's own node.
pub(crate) trait Erase<K: Kind>: Send + 'static {
    /// `node`, type-erased.
    fn erase(node: &Locked<Self>) -> &Locked<K::Dyn>;
}

/// A node's allocation: its header, then the cell, at [`CELL_OFFSET`] for every
/// node type (`repr(C)`, checked in [`Pending::new`]).
#[repr(C)]
struct NodeBox<K: Kind, N: ?Sized> {
    head: Head,
    cell: NodeCell<K, N>,
}

/// A record's cell: the model's part every node type has, the cast to the type-erased
/// node, then the typed node behind its lock (the lock's flag is in the header). Dropped
/// with the last strong count. `repr(C)`: the info and the cast are at the same offsets
/// for every node type, so that a [`NodeRc`], a thin pointer, reaches them without the
/// node's vtable.
#[repr(C)]
struct NodeCell<K: Kind, N: ?Sized> {
    info: K::Info,
    cast: Cast<K>,
    node: Locked<N>,
}

/// A record's cell before it is written: `info`, the node and the node type's cast.
pub(crate) struct NewCell<K: Kind, N>(NodeCell<K, N>);

impl<K: Kind, N: Erase<K>> NewCell<K, N> {
    /// The cell of `info` and `node`. Always inlined: the cell is built where its parts
    /// are, and moved once, into the record ([`Pending::publish`], [`TypedRc::new`]).
    #[inline(always)]
    pub(crate) fn new(info: K::Info, node: N) -> Self {
        NewCell(NodeCell {
            info,
            cast: Cast::of::<N>(),
            node: Locked::new(node),
        })
    }
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
    /// [`OWN_OUTPUTS`] (set before the node is published) and the model's flags
    /// ([`NodeRc::set_flag`]: hooks or an anomaly trace attached).
    flags: AtomicU8,
    /// The lock of the cell's typed node (`node_lock.rs`).
    lock: LockFlag,
    /// The model's mark of the graph below the node (whether its sequence numbers grow
    /// toward the node: `Node::ordered`). Set once, before the node is published.
    ordered: AtomicBool,
    /// The version counters of outputs `0..NODE_COUNTERS` (the model's variables keep
    /// theirs here when they are a node's first outputs): in the header, outside the
    /// cell, so that a weak reference can still read them after the node is dropped.
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
/// engine runs its `apply` as the node (`run_as`), which the others skip. The other
/// bits of the flags are the model's ([`NodeRc::set_flag`]).
const OWN_OUTPUTS: u8 = 1;

/// Where the cell starts in every `NodeBox`: right after the 32-byte header (a node
/// type aligned to more than the header would move it; `Pending::new` refuses
/// those at compile time). A constant, so that reaching the cell of a type-erased
/// node is one addition: Rust computes a `dyn` field's offset from the alignment
/// in the vtable (measured: about 20 instructions a node in backward).
const CELL_OFFSET: usize = std::mem::size_of::<Head>();

/// Where the cast starts in every record of kind `K`: after the info, whatever the node
/// type (`repr(C)`).
const fn cast_offset<K: Kind>() -> usize {
    CELL_OFFSET + std::mem::offset_of!(NodeCell<K, ()>, cast)
}

/// The model's part of the record at `p` (the start of its cell), reached with the
/// constant offset.
///
/// # Safety
/// `p` is a record of kind `K` (from `Pending::new`, so its cell is at `CELL_OFFSET`,
/// with its `K::Info` first).
#[inline]
unsafe fn info_ptr<K: Kind>(p: Ptr) -> *mut K::Info {
    // SAFETY: `CELL_OFFSET` is in bounds of the allocation, a `NodeBox<K, _>` (the
    // caller's guarantee) whose cell starts there.
    unsafe { p.as_ptr().byte_add(CELL_OFFSET).cast::<K::Info>() }
}

/// How a record's thin pointer becomes the type-erased pointer of its node (kept in the
/// cell, written with it by [`Pending::publish_counted`] for the node type written there).
struct Cast<K: Kind>(unsafe fn(Ptr) -> NonNull<Locked<K::Dyn>>);

impl<K: Kind> Cast<K> {
    /// The cast of records whose node is an `N`.
    #[inline]
    fn of<N: Erase<K>>() -> Self {
        Cast(erased::<K, N>)
    }
}

/// The type-erased node of the record at `p`, whose node is an `N` (a [`Cast`]).
///
/// # Safety
/// `p` is a record of kind `K` and node type `N` whose cell is alive.
unsafe fn erased<K: Kind, N: Erase<K>>(p: Ptr) -> NonNull<Locked<K::Dyn>> {
    // SAFETY: the record is a `NodeBox<K, N>` whose cell is alive (the caller's
    // guarantee), so its node field is an initialised `Locked<N>`; the reference is
    // shared, and the node's contents are only reached through its lock (an `UnsafeCell`).
    let node = unsafe { &(*p.cast::<NodeBox<K, N>>().as_ptr()).cell.node };
    let dyn_node = N::erase(node);
    // A safe `erase` can only give a reference to a value that exists: at this address,
    // that is the node itself (its inside is private to `node_lock.rs`). After inlining
    // the model's coercion, this compares a pointer with itself: no code.
    assert!(
        std::ptr::addr_eq(dyn_node, node),
        "Erase::erase must return the node it is given"
    );
    NonNull::from(dyn_node)
}

/// The type-erased node of the record at `p`, behind its lock.
///
/// # Safety
/// `p` is a record of kind `K` whose cell is alive.
#[inline]
unsafe fn node_ptr<K: Kind>(p: Ptr) -> NonNull<Locked<K::Dyn>> {
    // SAFETY: the cell is alive (the caller's guarantee), so its cast, at the same offset
    // for every node type, was written by `publish_counted` for the node type of the
    // record, which is what `erased` needs.
    unsafe {
        let cast = p.as_ptr().byte_add(cast_offset::<K>()).cast::<Cast<K>>();
        ((*cast).0)(p)
    }
}

/// A record's thin pointer: the address of its header, which every node type has at
/// the start of its allocation (`NodeBox` is `repr(C)`). A thin pointer (one word)
/// makes an edge 16 bytes instead of 24; what needs the node's vtable gets it from
/// the cell ([`node_ptr`]).
type Ptr = NonNull<Head>;

/// The thin pointer of a typed record.
#[inline]
fn thin<K: Kind, N: ?Sized>(p: NonNull<NodeBox<K, N>>) -> Ptr {
    p.cast::<Head>()
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
struct LastRef<K: Kind>(Ptr, PhantomData<fn() -> K>);

impl<K: Kind> Drop for LastRef<K> {
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
            let Some(next) = (unsafe { free_node::<K>(p) }) else {
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
/// only access to the cell, which was initialised in `Pending::publish_counted` and not
/// dropped yet; weak references never touch it. The strong references' weak
/// count is still held, so the memory is alive; it is given up by
/// `release_weak` after the cell is gone. The caller does not use `p` again.
///
/// Always inlined (into `LastRef::drop`'s loop): with the model's edge loop behind
/// `Kind::take_refs`, `#[inline]` alone left it out of line (37 instructions an op more on
/// the chain bench).
#[inline(always)]
unsafe fn free_node<K: Kind>(p: Ptr) -> Option<LastRef<K>> {
    // SAFETY: the only access to a live cell (above).
    let info = unsafe { &mut *info_ptr::<K>(p) };
    let mut next = None;
    for slot in K::slots(info) {
        let Some(node) = K::take_ref(slot) else {
            continue;
        };
        if let Some(last) = node.release() {
            match next {
                None => next = Some(last),
                Some(_) => drop_last_ref(last),
            }
        }
    }
    // SAFETY: as above; `info` is not used after this. The cell's fields are dropped in
    // its own order, the typed node (reached through the cast, read before anything is
    // dropped) after the info; the cast is a function pointer (nothing to drop).
    unsafe {
        let node = node_ptr::<K>(p).as_ptr();
        std::ptr::drop_in_place(info_ptr::<K>(p));
        std::ptr::drop_in_place(node);
    }
    // SAFETY: the strong references' weak count keeps the header alive.
    if unsafe { head(p) }.has(K::FREED_FLAG) {
        // Before the memory goes: another node could get the address.
        K::freed(addr_of_node(p));
    }
    // SAFETY: the strong references' weak count, given up once; `p` is not used after.
    unsafe { release_weak(p) };
    next
}

thread_local! {
    static DROP_DEPTH: Cell<u32> = const { Cell::new(0) };
    static DEFERRED_DROPS: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

const DROP_DEPTH_LIMIT: u32 = 48;

/// Drops a node's last reference without unbounded recursion: a 100,000-op chain
/// would otherwise overflow the stack when its last reference goes (PyTorch's
/// `deleteNode` does the same). Below a depth of [`DROP_DEPTH_LIMIT`] nested drops,
/// `x` is dropped here; deeper, it is queued and dropped by the outermost call.
fn drop_last_ref<X: 'static>(x: X) {
    let Ok(depth) = DROP_DEPTH.try_with(Cell::get) else {
        drop(x);
        return;
    };
    if depth >= DROP_DEPTH_LIMIT {
        // If the thread-local is gone, the closure (and `x`) is dropped here.
        let _ = DEFERRED_DROPS.try_with(|d| d.borrow_mut().push(Box::new(x)));
        return;
    }
    DROP_DEPTH.set(depth + 1);
    drop(x);
    if depth == 0 {
        // `try_with`: this may run in a thread-local's destructor at thread exit
        // (`bias.rs` merges queued nodes there), after this list is gone.
        while let Some(next) = DEFERRED_DROPS
            .try_with(|d| d.borrow_mut().pop())
            .ok()
            .flatten()
        {
            drop(next);
        }
    }
    DROP_DEPTH.set(depth);
}

/// A shared, type-erased reference to a record (the model's `NodeRef`, PyTorch's
/// `std::shared_ptr<Node>`). Cheap to clone (one atomic increment, or none on the
/// thread that recorded the node).
pub(crate) struct NodeRc<K: Kind>(Ptr, PhantomData<fn() -> K>);

// SAFETY: like `Arc<NodeCell<K, K::Dyn>>`: the counts are atomic (or owned by one thread,
// `counts.rs`); the cell is shared between threads (`K::Info: Sync`) and dropped by
// whichever thread gives up the last strong count (`K::Info: Send`, `K::Dyn: Send`); the
// typed node is reached only through its lock (`Locked`, `Sync` for a `Send` value); the
// arena chunk may be released from any thread.
unsafe impl<K: Kind> Send for NodeRc<K> {}
// SAFETY: as above: `&NodeRc` gives only shared access to the info and locked access to
// the node.
unsafe impl<K: Kind> Sync for NodeRc<K> {}

impl<K: Kind> NodeRc<K> {
    /// Gives this reference up like `drop`, except that the owner thread's last
    /// reference of a dead node is returned instead of dropped (for
    /// [`free_node`]'s loop).
    #[inline]
    fn release(self) -> Option<LastRef<K>> {
        let p = self.0;
        std::mem::forget(self);
        // SAFETY: the forgotten handle owned one strong count, so the node is alive.
        let h = unsafe { head(p) };
        if !h.counts.owned() {
            release_shared::<K>(p);
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

impl<K: Kind> Drop for NodeRc<K> {
    /// The owner thread gives a reference back with a plain store, unless it
    /// is its last one.
    #[inline]
    fn drop(&mut self) {
        // SAFETY: this handle owns one strong count, so the node is alive.
        let h = unsafe { head(self.0) };
        if !h.counts.owned() {
            return release_shared::<K>(self.0);
        }
        if h.counts.release_local() {
            release_last_local::<K>(self.0);
        }
    }
}

/// The owner's last local count of `p` goes: the node dies, or its counts are
/// merged. Out of line: inlined into every drop of a `NodeRc`, the two paths
/// cost the chain bench more instructions than the atomic they save.
#[inline(never)]
fn release_last_local<K: Kind>(p: Ptr) {
    // SAFETY: the caller owns the owner's last local count of `p`.
    let h = unsafe { head(p) };
    if h.counts.release_last_local() {
        drop_last_ref(LastRef::<K>(p, PhantomData));
    }
}

/// Gives up a strong count of `p` on a thread that does not own it.
#[inline(never)]
fn release_shared<K: Kind>(p: Ptr) {
    // SAFETY: the caller owns one strong count of `p`, so the node is alive.
    let r = unsafe { head(p) }.counts.release_shared();
    if let Some(owner) = r.queue_to {
        bias::enqueue(owner, merge_fn::<K>(p));
    } else if r.dead {
        drop_last_ref(LastRef::<K>(p, PhantomData));
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
fn merge_fn<K: Kind>(p: Ptr) -> bias::Merge {
    struct Queued<K: Kind>(Ptr, PhantomData<fn() -> K>);
    // SAFETY: as for `NodeRc`; the merge is the only use of the pointer.
    unsafe impl<K: Kind> Send for Queued<K> {}
    let q = Queued::<K>(p, PhantomData);
    Box::new(move || {
        // The whole `Queued` (a closure would capture just its field).
        let Queued(p, _) = { q };
        // SAFETY: the merge's weak count keeps the header alive; a merge that finds
        // the node not merged yet knows it alive, and drops it if the sum is zero.
        if unsafe { head(p) }.counts.merge() {
            drop_last_ref(LastRef::<K>(p, PhantomData));
        }
        // SAFETY: the merge's weak count, given up once.
        unsafe { release_weak(p) };
    })
}

impl<K: Kind> Clone for NodeRc<K> {
    #[inline]
    fn clone(&self) -> Self {
        // SAFETY: this handle's strong count keeps the node alive.
        unsafe { head(self.0) }.counts.acquire();
        NodeRc(self.0, PhantomData)
    }
}

impl<K: Kind> NodeRc<K> {
    /// The model's part of the cell.
    #[inline]
    pub(crate) fn info(&self) -> &K::Info {
        // SAFETY: the strong count keeps the cell alive for as long as `self`
        // is borrowed; the info is only ever shared while the cell lives.
        unsafe { &*info_ptr::<K>(self.0) }
    }

    /// The version counter of output `k` (`k < NODE_COUNTERS`).
    #[inline]
    pub(crate) fn version_slot(&self, k: u32) -> &AtomicU32 {
        // SAFETY: the strong count keeps the header alive (indexing is
        // bounds-checked).
        unsafe { &head(self.0).versions[k as usize] }
    }

    /// The model's mark set when the node was published (`Pending::publish`).
    #[inline]
    pub(crate) fn ordered(&self) -> bool {
        // SAFETY: the strong count keeps the header alive.
        unsafe { head(self.0) }.ordered.load(Ordering::Relaxed)
    }

    /// Whether the node saved an output of its own ([`OwnNode`]).
    #[inline]
    pub(crate) fn own_outputs(&self) -> bool {
        // SAFETY: the strong count keeps the header alive.
        unsafe { head(self.0) }.has(OWN_OUTPUTS)
    }

    /// Whether the model's `flag` is set (acquire: what was done before it was set is
    /// visible).
    #[inline]
    pub(crate) fn has_flag(&self, flag: u8) -> bool {
        // SAFETY: the strong count keeps the header alive.
        unsafe { head(self.0) }.has(flag)
    }

    /// Sets the model's `flag` (any bit but the one this module keeps), releasing what
    /// was done before.
    pub(crate) fn set_flag(&self, flag: u8) {
        assert_eq!(flag & OWN_OUTPUTS, 0, "a flag of mem/node_ptr.rs");
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
    pub(crate) fn lock(&self) -> NodeGuard<'_, K::Dyn> {
        // SAFETY: the strong count keeps the header and cell alive while `self` is
        // borrowed; a record's node is only ever locked with its header's flag.
        unsafe { head(self.0).lock.lock(node_ptr::<K>(self.0).as_ref()) }
    }

    /// The typed node's lock, if it is free now.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<NodeGuard<'_, K::Dyn>> {
        // SAFETY: as in `lock`.
        unsafe { head(self.0).lock.try_lock(node_ptr::<K>(self.0).as_ref()) }
    }

    /// A weak reference to the record.
    pub(crate) fn downgrade(&self) -> WeakRc<K> {
        // SAFETY: this handle keeps the node alive.
        unsafe { head(self.0) }.counts.downgrade();
        WeakRc(self.0, PhantomData)
    }

    /// Whether both refer to the same node.
    #[inline]
    pub(crate) fn ptr_eq(&self, other: &NodeRc<K>) -> bool {
        self.0 == other.0
    }
}

/// A weak reference to a node: keeps its memory, not the node (saved outputs
/// refer to their own node this way, so that there is no cycle).
pub(crate) struct WeakRc<K: Kind>(Ptr, PhantomData<fn() -> K>);

// SAFETY: as for `NodeRc`; a `WeakRc` only reads the header's atomics, and upgrades to a
// `NodeRc`.
unsafe impl<K: Kind> Send for WeakRc<K> {}
// SAFETY: as for `NodeRc`.
unsafe impl<K: Kind> Sync for WeakRc<K> {}

impl<K: Kind> WeakRc<K> {
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
    pub(crate) fn upgrade(&self) -> Option<NodeRc<K>> {
        // SAFETY: the weak count keeps the header alive.
        let h = unsafe { head(self.0) };
        h.counts.try_upgrade().then(|| NodeRc(self.0, PhantomData))
    }
}

impl<K: Kind> Clone for WeakRc<K> {
    fn clone(&self) -> Self {
        // SAFETY: this handle's weak count keeps the header alive.
        increment(unsafe { &head(self.0).counts.weak });
        WeakRc(self.0, PhantomData)
    }
}

impl<K: Kind> Drop for WeakRc<K> {
    fn drop(&mut self) {
        // SAFETY: this handle owns one weak count, given up here.
        unsafe { release_weak(self.0) };
    }
}

/// The node whose `apply` (or whose typed access: the model's `with_node`,
/// [`TypedRc::with`]) runs on this thread: what an [`OwnNode`] is compared
/// with. Lives on the stack of [`run_as`] for as long as the thread-local points
/// to it.
struct Frame {
    /// The node's address (its identity: the data part of the pointer).
    addr: usize,
    /// The record kind, so that `node` is read as the right `NodeRc<K>`.
    kind: TypeId,
    /// The running `&NodeRc<K>`, type-erased.
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
pub(crate) fn run_as<K: Kind, R>(node: &NodeRc<K>, f: impl FnOnce() -> R) -> R {
    struct Restore(*const Frame);
    impl Drop for Restore {
        #[inline]
        fn drop(&mut self) {
            RUNNING.set(self.0);
        }
    }
    let frame = Frame {
        addr: addr_of_node(node.0),
        kind: TypeId::of::<K>(),
        node: std::ptr::from_ref(node).cast(),
    };
    let _restore = Restore(RUNNING.replace(&raw const frame));
    f()
}

/// A node's own saved output's way back to its node, without a count (the model's
/// saved outputs made by `record_saving`): the node's address, compared with
/// the node running on this thread ([`run_as`]: the engine's `apply`, or typed
/// access to the node). A saved output lives in its node's cell, so it is unpacked
/// while its node runs; a weak reference (`WeakRc`) would cost a weak count taken
/// and given back and the node's death one read-modify-write more, three atomic
/// operations per such node. It is never dereferenced, only compared: moved out of
/// its node, it reaches nothing (or, once its node is gone and another node of the
/// same kind got the address and runs, that node: a wrong history for a
/// misused saved output, never a dangling pointer).
pub(crate) struct OwnNode<K: Kind> {
    addr: usize,
    _kind: PhantomData<fn() -> K>,
}

impl<K: Kind> OwnNode<K> {
    /// `f` on the node, if it is the one running on this thread.
    #[inline]
    pub(crate) fn with_running<R>(&self, f: impl FnOnce(&NodeRc<K>) -> R) -> Option<R> {
        let frame = RUNNING.get();
        if frame.is_null() {
            return None;
        }
        // SAFETY: a non-null `RUNNING` points to the frame of a `run_as` call
        // still running on this thread (it restores the previous value before
        // its frame goes), which borrows `node` for the whole call.
        let frame = unsafe { &*frame };
        if frame.addr != self.addr || frame.kind != TypeId::of::<K>() {
            return None;
        }
        // SAFETY: the frame's `node` is a `&NodeRc<K>` (the kind checked just
        // above) borrowed for the whole `run_as` call, which outlives this one.
        Some(f(unsafe { &*frame.node.cast::<NodeRc<K>>() }))
    }

    /// The version counter of output `k` (`k < NODE_COUNTERS`), if the node runs.
    #[inline]
    pub(crate) fn version(&self, k: u32) -> Option<u32> {
        self.with_running(|n| n.version_slot(k).load(Ordering::Acquire))
    }

    /// A strong reference, if the node runs on this thread.
    pub(crate) fn upgrade(&self) -> Option<NodeRc<K>> {
        self.with_running(NodeRc::clone)
    }
}

/// Typed access to a record after it was put in the graph (the model's `NodeHandle`).
pub(crate) struct TypedRc<K: Kind, N>(NonNull<NodeBox<K, N>>);

// SAFETY: as for `NodeRc` (the node, reached only through its lock, is `Send`).
unsafe impl<K: Kind, N: Send> Send for TypedRc<K, N> {}
// SAFETY: as for `NodeRc`: `with` locks the node.
unsafe impl<K: Kind, N: Send> Sync for TypedRc<K, N> {}

impl<K: Kind, N> TypedRc<K, N> {
    /// Puts `cell` in the thread's arena with `1 + refs` strong counts: one
    /// for the returned handle, `refs` for the returned [`OutputRefs`] (one
    /// per output variable).
    #[inline]
    pub(crate) fn new(cell: NewCell<K, N>, ordered: bool, refs: usize) -> (Self, OutputRefs<K, N>) {
        let strong = refs.checked_add(1).expect("too many outputs for one node");
        let (p, out) = Pending::new().publish_counted(cell, ordered, strong, refs);
        (TypedRc(p), out)
    }

    /// Runs `f` with mutable access to the node (locks it). The node runs
    /// meanwhile: its own saved outputs unpack.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut N) -> R) -> R {
        // A borrowed reference: the handle's count, not given back.
        let node = std::mem::ManuallyDrop::new(NodeRc::<K>(thin(self.0), PhantomData));
        // SAFETY: the handle's strong count keeps the header and cell alive; a record's
        // node is only ever locked with its header's flag.
        let mut guard = unsafe {
            let typed = &(*self.0.as_ptr()).cell.node;
            head(thin(self.0)).lock.lock(typed)
        };
        run_as(&node, || f(&mut guard))
    }

    /// The type-erased reference.
    pub(crate) fn node_ref(&self) -> NodeRc<K> {
        // Cloning a borrowed `NodeRc` counts the new reference.
        (*std::mem::ManuallyDrop::new(NodeRc::<K>(thin(self.0), PhantomData))).clone()
    }
}

impl<K: Kind, N> Drop for TypedRc<K, N> {
    fn drop(&mut self) {
        // The handle's count, given to a `NodeRc` that releases it.
        drop(NodeRc::<K>(thin(self.0), PhantomData));
    }
}

/// A node's memory with its header written and its cell not yet (the model's
/// `record_saving`): the node's saved outputs need
/// weak references to it before the node value is complete. The strong
/// count stays zero until [`publish`](Self::publish) writes the cell, so a
/// weak reference cannot be upgraded before (the cell is never read).
pub(crate) struct Pending<K: Kind, N>(NonNull<NodeBox<K, N>>);

impl<K: Kind, N> Pending<K, N> {
    /// Takes the memory for a `NodeBox<K, N>` and writes its header. Always inlined:
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
        let layout = Layout::new::<NodeBox<K, N>>();
        let (mem, chunk) = arena::alloc_node(layout);
        let p = mem.cast::<NodeBox<K, N>>();
        // Under 64 KiB (`alloc_node`'s guarantee): the chunk's start is found from the
        // node's address when the node's memory is given back.
        let chunk_offset = u16::try_from(mem.as_ptr().addr() - chunk.as_ptr().addr())
            .expect("a node starts within 64 KiB of its chunk");
        const {
            assert!(
                std::mem::offset_of!(NodeBox<K, N>, cell) == CELL_OFFSET
                    && CELL_OFFSET + std::mem::offset_of!(NodeCell<K, N>, cast)
                        == cast_offset::<K>(),
                "a node type aligned to more than the 32-byte header"
            )
        };
        // SAFETY: `alloc_node` returns memory of `layout` (at least
        // `NodeBox<K, N>`'s size and alignment) that nothing else uses, plus
        // one count of its chunk, which the node keeps. Only the header is
        // written; the weak count is the strong references' (none yet), and
        // `shared` is merged with a zero count, so no upgrade succeeds.
        unsafe {
            (&raw mut (*p.as_ptr()).head).write(Head {
                counts: Counts::unpublished(),
                chunk_offset,
                flags: AtomicU8::new(0),
                lock: LockFlag::new(),
                ordered: AtomicBool::new(false),
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
    pub(crate) fn own(&self) -> OwnNode<K> {
        OwnNode {
            addr: addr_of_node(thin(self.0)),
            _kind: PhantomData,
        }
    }

    /// Writes the cell and hands out `refs >= 1` strong references (the node's outputs).
    #[inline(always)]
    pub(crate) fn publish(
        self,
        cell: NewCell<K, N>,
        ordered: bool,
        refs: usize,
    ) -> OutputRefs<K, N> {
        assert!(refs > 0, "a published node needs an output to keep it");
        self.publish_counted(cell, ordered, refs, refs).1
    }

    /// Writes the cell with `strong` strong counts, `refs <= strong` of which
    /// the returned [`OutputRefs`] hands out (the caller owns the others).
    /// Always inlined: out of line it cost the chain bench 50 instructions an op
    /// (the cell is moved through memory).
    #[inline(always)]
    fn publish_counted(
        self,
        cell: NewCell<K, N>,
        ordered: bool,
        strong: usize,
        refs: usize,
    ) -> (NonNull<NodeBox<K, N>>, OutputRefs<K, N>) {
        let n = u32::try_from(strong)
            .ok()
            .filter(|&n| n > 0 && refs <= n as usize)
            .expect("too many outputs for one node");
        let p = std::mem::ManuallyDrop::new(self).0;
        // SAFETY: the cell's place in the allocation from `new` was never
        // written nor read (the strong count is zero, so no reference to the
        // cell exists); the cast written with it is the one of its node type
        // (`NewCell::new`).
        unsafe { (&raw mut (*p.as_ptr()).cell).write(cell.0) };
        // SAFETY: the header was written by `new`; the pending node's count keeps it
        // alive.
        unsafe { head(thin(p)) }
            .ordered
            .store(ordered, Ordering::Relaxed);
        // After the write: the owner's tag read before it made the cell go
        // through a `memcpy` (the chain bench's `tanh`). Release (in
        // `publish`): a weak reference upgraded after this sees the cell.
        // SAFETY: the header was written by `new`; the pending node's count
        // keeps it alive.
        unsafe { head(thin(p)) }.counts.publish(n);
        (p, OutputRefs { node: p, refs })
    }
}

impl<K: Kind, N> Drop for Pending<K, N> {
    /// Never published (a panic while the node was being built): give up
    /// the strong references' weak count without touching the cell.
    fn drop(&mut self) {
        // SAFETY: the pending node owns that count; nothing reads the cell.
        unsafe { release_weak(thin(self.0)) };
    }
}

/// Strong counts of a new node taken in advance, one per output variable
/// (saves an atomic increment per output), handed out as [`NodeRc`]s by
/// the iterator; counts not handed out are released on drop.
///
/// The pointer is kept typed (thin) and made a type-erased reference in `next`: a fat
/// pointer written as two words and read back as one 16-byte load was a store-forwarding
/// stall, measured at about 7% of the chain bench's `Inline` time.
pub(crate) struct OutputRefs<K: Kind, N> {
    node: NonNull<NodeBox<K, N>>,
    refs: usize,
}

impl<K: Kind, N> Iterator for OutputRefs<K, N> {
    type Item = NodeRc<K>;

    /// The next reference; `None` once the `refs` counts given to
    /// [`TypedRc::new`] or [`Pending::publish`] were handed out.
    #[inline]
    fn next(&mut self) -> Option<NodeRc<K>> {
        if self.refs == 0 {
            return None;
        }
        self.refs -= 1;
        // One of the counts taken in `publish_counted`, now owned by the
        // returned reference.
        Some(NodeRc(thin(self.node), PhantomData))
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.refs, Some(self.refs))
    }
}

impl<K: Kind, N> ExactSizeIterator for OutputRefs<K, N> {}

impl<K: Kind, N> Drop for OutputRefs<K, N> {
    fn drop(&mut self) {
        self.for_each(drop);
    }
}

/// The size of a record of kind `K` whose node is an `N`, and where its cell starts (the
/// model's test of its records' sizes).
#[cfg(test)]
pub(crate) const fn record_layout<K: Kind, N>() -> (usize, usize) {
    (std::mem::size_of::<NodeBox<K, N>>(), CELL_OFFSET)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    /// A graph of toys: a record holds the references to the records it leads to, its
    /// node is any value.
    struct Toys;

    thread_local! {
        /// The addresses `Toys::freed` was told of on this thread.
        static FREED: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    }

    /// The flag of toys that want to hear of their death.
    const TOLD: u8 = 2;

    impl Kind for Toys {
        type Info = Vec<Option<NodeRc<Toys>>>;
        type Dyn = dyn Any + Send;
        type Slot = Option<NodeRc<Toys>>;
        const FREED_FLAG: u8 = TOLD;
        fn slots(info: &mut Self::Info) -> &mut [Self::Slot] {
            info
        }
        fn take_ref(slot: &mut Self::Slot) -> Option<NodeRc<Toys>> {
            slot.take()
        }
        fn freed(addr: usize) {
            FREED.with(|f| f.borrow_mut().push(addr));
        }
    }

    impl<N: Any + Send> Erase<Toys> for N {
        fn erase(node: &Locked<N>) -> &Locked<dyn Any + Send> {
            node
        }
    }

    /// A node that says when it is dropped (the count of its `Arc`).
    struct Probe(#[allow(dead_code)] Arc<()>);

    /// A toy recorded on this thread whose node is `node`, leading to `edges`.
    fn toy(node: impl Any + Send, edges: Vec<NodeRc<Toys>>) -> NodeRc<Toys> {
        let edges = edges.into_iter().map(Some).collect();
        Pending::new()
            .publish(NewCell::new(edges, node), true, 1)
            .next()
            .expect("one reference")
    }

    /// A toy holding a probe, and the probe.
    fn probed() -> (Arc<()>, NodeRc<Toys>) {
        let probe = Arc::new(());
        (probe.clone(), toy(Probe(probe), Vec::new()))
    }

    #[test]
    fn the_node_goes_with_the_last_strong_reference_and_a_weak_one_keeps_the_header() {
        let (probe, a) = probed();
        let b = a.clone();
        assert!(a.ptr_eq(&b));
        a.version_slot(1).store(7, Ordering::Relaxed);
        let w = a.downgrade();
        drop((a, b));
        assert_eq!(
            Arc::strong_count(&probe),
            1,
            "dropped with the last strong reference"
        );
        assert!(
            w.upgrade().is_none(),
            "an upgrade of a dead node is refused"
        );
        assert_eq!(w.clone().version_slot(1).load(Ordering::Relaxed), 7);
    }

    #[test]
    fn the_type_erased_node_is_the_typed_one() {
        let a = toy(5u64, Vec::new());
        let g = a.lock();
        assert_eq!(g.downcast_ref::<u64>(), Some(&5));
        assert!(a.try_lock().is_none(), "locked once at a time");
        drop(g);
        let (handle, mut refs) =
            TypedRc::<Toys, String>::new(NewCell::new(vec![Some(a)], "x".into()), true, 1);
        let b = refs.next().unwrap();
        assert!(refs.next().is_none());
        handle.with(|s| s.push('y'));
        assert_eq!(b.lock().downcast_ref::<String>().unwrap(), "xy");
        assert_eq!((b.ordered(), b.info().len()), (true, 1));
        assert!(handle.node_ref().ptr_eq(&b));
    }

    #[test]
    fn a_chain_of_many_nodes_is_freed_without_recursion_and_each_flagged_node_is_told() {
        let n = if cfg!(miri) { 200 } else { 100_000 };
        let drops = Arc::new(AtomicUsize::new(0));
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let mut last = toy(Counted(drops.clone()), Vec::new());
        let mut told = Vec::new();
        for i in 1..n {
            last = toy(Counted(drops.clone()), vec![last]);
            if i % 50 == 0 {
                last.set_flag(TOLD);
                told.push(last.addr());
            }
        }
        // A second reference to a node in the middle: freed on its own, later.
        let middle = {
            let mut r = &last;
            for _ in 0..n / 2 {
                r = r.info()[0].as_ref().unwrap();
            }
            r.clone()
        };
        FREED.with(|f| f.borrow_mut().clear());
        drop(last);
        assert_eq!(drops.load(Ordering::Relaxed), n - n / 2);
        drop(middle);
        assert_eq!(drops.load(Ordering::Relaxed), n);
        let mut freed = FREED.with(|f| std::mem::take(&mut *f.borrow_mut()));
        freed.sort_unstable();
        told.sort_unstable();
        assert!(freed == told, "{} told of {}", freed.len(), told.len());
    }

    #[test]
    fn own_nodes_reach_their_node_only_while_it_runs() {
        let pending = Pending::<Toys, u8>::new();
        let own = pending.own();
        pending.set_own_outputs();
        let a = pending
            .publish(NewCell::new(Vec::new(), 1), true, 1)
            .next()
            .unwrap();
        assert!(a.own_outputs());
        a.version_slot(0).store(4, Ordering::Relaxed);
        assert!(own.upgrade().is_none() && own.version(0).is_none());
        let b = toy(2u8, Vec::new());
        run_as(&b, || assert!(own.upgrade().is_none(), "another node runs"));
        run_as(&a, || {
            assert!(own.upgrade().unwrap().ptr_eq(&a));
            assert_eq!(own.version(0), Some(4));
            // Nested: the inner node runs, then the outer one again.
            run_as(&b, || assert!(own.upgrade().is_none()));
            assert!(own.upgrade().is_some());
        });
        assert!(own.upgrade().is_none());
    }

    #[test]
    fn a_pending_node_never_published_gives_its_memory_back() {
        std::thread::spawn(|| {
            let before = arena::live_chunks();
            let chunks: Vec<_> = (0..200)
                .map(|_| Pending::<Toys, [u64; 1000]>::new())
                .collect();
            assert!(arena::live_chunks() > before);
            drop(chunks);
            // All but the thread's current chunk are freed.
            assert_eq!(arena::live_chunks(), before + 1);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_queued_node_the_owner_merged_meanwhile_is_freed_once() {
        // Counts are interchangeable: the owner's last local count can go with a
        // reference another thread counted, while a merge is queued for a
        // reference the owner counted and another thread dropped. The owner's
        // merge frees the node; the queued one must then leave it alone (it
        // holds a weak count, so it reads a live header, and sees `MERGED`).
        let (probe, y) = probed();
        let weak = y.downgrade();
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
        bias::drain();
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
        let g = y.clone();
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
        let g = y.clone();
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

    #[test]
    fn a_node_whose_owner_exited_is_freed_where_its_last_reference_goes() {
        let probe = Arc::new(());
        let p = probe.clone();
        let y = std::thread::spawn(move || toy(Probe(p), Vec::new()))
            .join()
            .unwrap();
        let w = y.downgrade();
        drop(y);
        assert_eq!(Arc::strong_count(&probe), 1);
        assert!(w.upgrade().is_none());
    }
}
