//! Per-thread bump arenas for backward nodes.
//!
//! A node is allocated from a 64 KiB chunk owned by the thread that records
//! it. A chunk counts its live allocations, plus one while it is some
//! thread's current chunk, and is freed when the count drops to zero, on
//! whichever thread drops the last node in it. When every node of the current
//! chunk is gone (a training step's graph freed after backward), the next node
//! starts again at the beginning of the chunk: a loop that builds and frees a
//! graph per step allocates no memory for nodes, and consecutive nodes sit
//! next to each other in memory.
//!
//! Why: measured on the chain benchmark, `malloc` + `free` of ~250-byte nodes
//! (freed all at once when a graph goes) cost more than everything else a
//! node does. The price: a node that outlives its neighbours keeps its chunk
//! (64 KiB) allocated until it goes.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering, fence};

/// Size of a shared chunk.
const CHUNK_SIZE: usize = 64 << 10;
/// Alignment of every chunk; allocations with a larger alignment get a chunk
/// of their own.
const CHUNK_ALIGN: usize = 64;
/// Offset of the first allocation (the header, padded to the alignment).
const START: usize = CHUNK_ALIGN;
/// Allocations above this size get a chunk of their own.
const MAX_SHARED: usize = CHUNK_SIZE / 8;

/// The header at the start of every chunk.
pub(crate) struct Chunk {
    live: AtomicUsize,
    size: usize,
    align: usize,
}

const _: () = assert!(std::mem::size_of::<Chunk>() <= START);

thread_local! {
    static LIVE_CHUNKS: Cell<isize> = const { Cell::new(0) };
}

/// Debug counter: node arena chunks (64 KiB each) allocated on this thread
/// minus chunks freed on this thread.
///
/// A loop that builds a graph, runs backward and drops it reuses one chunk:
/// the count stays put. Like [`live_nodes`](crate::live_nodes) it is per
/// thread, so a chunk freed on another thread is not subtracted here.
pub fn live_chunks() -> isize {
    // Releases this thread still holds back are given first.
    let _ = CURRENT.try_with(Current::flush);
    LIVE_CHUNKS.try_with(Cell::get).unwrap_or(0)
}

fn new_chunk(size: usize, align: usize, live: usize) -> NonNull<Chunk> {
    let _ = LIVE_CHUNKS.try_with(|c| c.set(c.get() + 1));
    let layout = Layout::from_size_align(size, align).expect("chunk layout");
    // SAFETY: `layout` has a non-zero size (every caller asks for at least
    // `START` bytes).
    let p = unsafe { alloc(layout) };
    let Some(p) = NonNull::new(p.cast::<Chunk>()) else {
        handle_alloc_error(layout)
    };
    // SAFETY: `p` is a fresh allocation of at least `START >= size_of::<Chunk>()`
    // bytes, aligned to `align >= CHUNK_ALIGN >= align_of::<Chunk>()`, that
    // nothing else refers to yet.
    unsafe {
        p.as_ptr().write(Chunk {
            live: AtomicUsize::new(live),
            size,
            align,
        })
    };
    p
}

/// Drops one count of `chunk`, freeing it with the last one.
///
/// A node of the calling thread's current chunk is counted in the thread's
/// own tally (no atomic read-modify-write). Others are held back while
/// consecutive releases hit the same chunk, and given to its atomic count in
/// one `fetch_sub` when a release hits another chunk (or on
/// [`live_chunks`], or when the thread exits): a graph is freed node after
/// node, about a hundred per chunk. The cost: a chunk whose last node went
/// stays allocated until the thread's next release elsewhere (one chunk per
/// thread at most).
///
/// # Safety
/// The caller owns one count (an allocation it made) and does not use the
/// chunk's memory afterwards.
pub(crate) unsafe fn release(chunk: NonNull<Chunk>) {
    let taken = CURRENT.try_with(|c| {
        if c.chunk.get() == Some(chunk) {
            c.local.set(c.local.get() - 1);
        } else if c.held.get() == Some(chunk) {
            c.held_n.set(c.held_n.get() + 1);
        } else {
            c.flush();
            c.held.set(Some(chunk));
            c.held_n.set(1);
        }
    });
    if taken.is_err() {
        // SAFETY: the caller's count, given up.
        unsafe { release_counts(chunk, 1) };
    }
}

/// Takes `n` counts off `chunk`'s atomic count, freeing it when none is left.
///
/// # Safety
/// The caller owns those `n` counts and does not use the chunk's memory
/// afterwards.
unsafe fn release_counts(chunk: NonNull<Chunk>, n: usize) {
    // SAFETY: the caller's counts keep the chunk (allocated and its header
    // initialised in `new_chunk`) alive until the `fetch_sub`; `c` is used
    // after it only if those were the last counts.
    let c = unsafe { chunk.as_ref() };
    if c.live.fetch_sub(n, Ordering::Release) != n {
        return;
    }
    // Every other user's writes (and drops) happen before the free.
    fence(Ordering::Acquire);
    let _ = LIVE_CHUNKS.try_with(|c| c.set(c.get() - 1));
    let (size, align) = (c.size, c.align);
    // SAFETY: the chunk was allocated in `new_chunk` with this size and
    // alignment (a valid layout, checked there); no counts are left, so no
    // one uses its memory any more (the acquire fence orders their accesses
    // before this).
    unsafe {
        dealloc(
            chunk.as_ptr().cast(),
            Layout::from_size_align_unchecked(size, align),
        )
    };
}

/// The calling thread's current chunk and the offset of its free space.
///
/// Biased counting: while a chunk is some thread's current chunk, its atomic
/// `live` count holds [`BIAS`] for the owner, minus the nodes other threads
/// (or the owner, once the chunk is no longer current) released, and the
/// owner counts its own allocations and releases in `local`, with plain
/// loads and stores. The chunk's live nodes are `local + live - BIAS`. When
/// the chunk stops being current, the owner moves `local` into `live` (one
/// `fetch_sub` of `BIAS - local`). Measured on the chain bench: the two
/// atomic read-modify-writes per node (one at allocation, one at release)
/// were a visible share of recording and freeing a graph.
struct Current {
    chunk: Cell<Option<NonNull<Chunk>>>,
    offset: Cell<usize>,
    /// Allocations in `chunk` not yet released on this thread.
    local: Cell<usize>,
    /// A chunk other than `chunk` whose counts this thread released but did
    /// not give back yet (`held_n` of them; see [`release`]).
    held: Cell<Option<NonNull<Chunk>>>,
    held_n: Cell<usize>,
}

/// The owner's share of a current chunk's atomic count: larger than the
/// number of nodes a chunk can hold (`CHUNK_SIZE / 16`), so releases by other
/// threads never bring the count to zero while the chunk is current.
const BIAS: usize = 1 << 30;

impl Current {
    /// Gives the held-back releases to their chunk's atomic count.
    fn flush(&self) {
        if let Some(c) = self.held.take() {
            // SAFETY: `held_n` counts of `c`, released by their owners on this
            // thread, which gave them to this tally (see `release`).
            unsafe { release_counts(c, self.held_n.replace(0)) };
        }
    }

    /// Stops using the current chunk: its count gets the owner's tally.
    fn retire(&self) {
        if let Some(c) = self.chunk.take() {
            let local = self.local.replace(0);
            // SAFETY: while current, the chunk's count holds `BIAS` for the
            // owner, of which `local` stand for nodes still alive (each of
            // them now holds one count of the atomic); the other
            // `BIAS - local` are given up here (the chunk was just taken out
            // of the cell and is not used here again).
            unsafe { release_counts(c, BIAS - local) };
        }
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        self.flush();
        self.retire();
    }
}

thread_local! {
    static CURRENT: Current = const {
        Current {
            chunk: Cell::new(None),
            offset: Cell::new(0),
            local: Cell::new(0),
            held: Cell::new(None),
            held_n: Cell::new(0),
        }
    };
}

fn align_up(x: usize, align: usize) -> usize {
    (x + align - 1) & !(align - 1)
}

impl Current {
    /// Memory for `layout` in the current chunk (a new one if it is full).
    /// Only for `layout.size() <= MAX_SHARED`, `layout.align() <= CHUNK_ALIGN`.
    #[inline]
    fn bump(&self, layout: Layout) -> (NonNull<u8>, NonNull<Chunk>) {
        debug_assert!(layout.size() <= MAX_SHARED && layout.align() <= CHUNK_ALIGN);
        if let Some(c) = self.chunk.get() {
            // SAFETY: the owner's share of the count keeps the chunk alive
            // while it is in `self.chunk`, which is until `retire` below.
            let ch = unsafe { c.as_ref() };
            let mut offset = self.offset.get();
            // Only this thread allocates here; if no node in the chunk is
            // alive any more (those released elsewhere are counted in
            // `live`), start over. Acquire: their releases happen before the
            // memory is reused.
            if self.local.get() == BIAS - ch.live.load(Ordering::Acquire) {
                offset = START;
            }
            let start = align_up(offset, layout.align());
            if start + layout.size() <= CHUNK_SIZE {
                self.local.set(self.local.get() + 1);
                self.offset.set(start + layout.size());
                // SAFETY: `start + layout.size() <= CHUNK_SIZE`, the chunk's
                // size, so the offset is in bounds of its allocation (and the
                // result, inside a live allocation, is not null). The space
                // from `start` is unused: the offset only grows, except when
                // no allocation in the chunk is alive.
                let p = unsafe { NonNull::new_unchecked(c.as_ptr().cast::<u8>().add(start)) };
                return (p, c);
            }
            self.retire();
        }
        let c = new_chunk(CHUNK_SIZE, CHUNK_ALIGN, BIAS);
        self.chunk.set(Some(c));
        // This allocation, counted by the owner.
        self.local.set(1);
        let start = align_up(START, layout.align());
        self.offset.set(start + layout.size());
        // SAFETY: `bump` is only called (by `alloc_node`) for layouts with
        // `align() <= CHUNK_ALIGN` and `size() <= MAX_SHARED`, so `start + layout.size() <=
        // CHUNK_ALIGN + MAX_SHARED < CHUNK_SIZE`: in bounds of the fresh
        // chunk (and not null).
        let p = unsafe { NonNull::new_unchecked(c.as_ptr().cast::<u8>().add(start)) };
        (p, c)
    }
}

/// Hints the processor to fetch the memory just below `p` (a node being
/// freed): a chain is freed from its last record to its first, and the
/// record recorded before another usually sits right below it in its chunk.
/// Only a hint: the address is never read by the program (a prefetch does
/// not fault, whatever the address).
#[inline]
pub(crate) fn prefetch_below(p: *const u8) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        for k in 1..=PREFETCH_LINES {
            let q = p.wrapping_sub(64 * k).cast::<i8>();
            // SAFETY: a prefetch is a hint, not an access: it cannot fault
            // or change memory, whatever `q` points to (SSE, which
            // `_mm_prefetch` needs, is part of the x86_64 baseline).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(q) };
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = p;
}

/// Cache lines below a freed node that [`prefetch_below`] asks for.
#[cfg(all(target_arch = "x86_64", not(miri)))]
const PREFETCH_LINES: usize = 8;

/// Memory for one node: `layout.size()` bytes aligned to `layout.align()`, and
/// the chunk to [`release`] when the node's memory is no longer used. The memory
/// starts less than 64 KiB after the chunk (a node records the distance in 16 bits)
/// when `layout.align() <= CHUNK_ALIGN`.
#[inline]
pub(crate) fn alloc_node(layout: Layout) -> (NonNull<u8>, NonNull<Chunk>) {
    if layout.size() <= MAX_SHARED
        && layout.align() <= CHUNK_ALIGN
        && let Ok(r) = CURRENT.try_with(|c| c.bump(layout))
    {
        return r;
    }
    // Large, over-aligned, or the thread is exiting: a chunk of its own.
    let align = layout.align().max(CHUNK_ALIGN);
    let start = align_up(START, align);
    let c = new_chunk(start + layout.size(), align, 1);
    // SAFETY: the chunk is `start + layout.size()` bytes long, so `start` is
    // in bounds of (or one past the end of, for a zero-sized layout) its
    // allocation, and the result is not null.
    let p = unsafe { NonNull::new_unchecked(c.as_ptr().cast::<u8>().add(start)) };
    (p, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Releases one count of each of `chunks` on a new thread (pointers, not
    /// addresses, so that Miri keeps their provenance).
    ///
    /// # Safety
    /// The caller owns those counts and does not use the chunks afterwards.
    unsafe fn release_elsewhere(chunks: Vec<NonNull<Chunk>>) {
        struct Counts(Vec<NonNull<Chunk>>);
        // SAFETY: chunk counts are atomic and a chunk may be released on any
        // thread (nodes are `Send`).
        unsafe impl Send for Counts {}
        let counts = Counts(chunks);
        std::thread::spawn(move || {
            let counts = counts;
            for c in counts.0 {
                // SAFETY: a count the caller gave up, released once.
                unsafe { release(c) };
            }
        })
        .join()
        .unwrap();
    }

    fn live(c: NonNull<Chunk>) -> usize {
        // SAFETY: called only while the test holds a count of `c`.
        unsafe { c.as_ref() }.live.load(Ordering::Relaxed)
    }

    #[test]
    fn bump_reuse_and_release() {
        std::thread::spawn(|| {
            let l = Layout::from_size_align(100, 8).unwrap();
            let (a, ca) = alloc_node(l);
            let (b, cb) = alloc_node(l);
            assert_eq!(ca, cb);
            assert_eq!(b.as_ptr() as usize - a.as_ptr() as usize, 104);
            // Counted by the owner: the atomic count holds just its share.
            assert_eq!(live(ca), BIAS);
            assert_eq!(CURRENT.with(|c| c.local.get()), 2);
            // SAFETY: one count per allocation, each given up once; the
            // memory is not used.
            unsafe {
                release(ca);
                release(cb);
            }
            // Everything gone: the next allocation starts over.
            let (c, cc) = alloc_node(l);
            assert_eq!(c, a);
            // SAFETY: the allocation's count, given up once.
            unsafe { release(cc) };
            // Large and over-aligned allocations get their own chunk.
            let big = Layout::from_size_align(MAX_SHARED + 1, 8).unwrap();
            let (_, own) = alloc_node(big);
            assert_ne!(own, ca);
            assert_eq!(live(own), 1);
            // SAFETY: the allocation's count, given up once.
            unsafe { release(own) };
            let over = Layout::from_size_align(16, 128).unwrap();
            let (p, own) = alloc_node(over);
            assert_eq!(p.as_ptr() as usize % 128, 0);
            // SAFETY: the allocation's count, given up once.
            unsafe { release(own) };
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_current_chunk_counts_releases_from_other_threads() {
        std::thread::spawn(|| {
            let l = Layout::from_size_align(64, 8).unwrap();
            let (a, ca) = alloc_node(l);
            let (_, cb) = alloc_node(l);
            // SAFETY: the second allocation's count, given up once, on another
            // thread while the chunk is still current.
            unsafe { release_elsewhere(vec![cb]) };
            assert_eq!(live(ca), BIAS - 1);
            // SAFETY: the first allocation's count, given up once.
            unsafe { release(ca) };
            // Both gone (one counted here, one there): the chunk starts over.
            let (c, cc) = alloc_node(l);
            assert_eq!(c, a);
            // SAFETY: the allocation's count, given up once.
            unsafe { release(cc) };
        })
        .join()
        .unwrap();
    }

    #[test]
    fn releases_held_back_on_the_owner_thread_free_retired_chunks() {
        std::thread::spawn(|| {
            let base = live_chunks();
            let l = Layout::from_size_align(MAX_SHARED, 8).unwrap();
            let allocs: Vec<_> = (0..20).map(|_| alloc_node(l)).collect();
            assert_eq!(live_chunks(), base + 3);
            for (_, c) in allocs {
                // SAFETY: one count per allocation, each given up once.
                unsafe { release(c) };
            }
            // The two retired chunks are freed (the last releases were held
            // back until `live_chunks` gave them); the current one stays.
            assert_eq!(live_chunks(), base + 1);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_full_chunk_is_replaced_and_freed_by_its_last_node() {
        std::thread::spawn(|| {
            let l = Layout::from_size_align(MAX_SHARED, 8).unwrap();
            let allocs: Vec<_> = (0..20).map(|_| alloc_node(l)).collect();
            let first = allocs[0].1;
            assert!(allocs.iter().any(|(_, c)| *c != first));
            // SAFETY: one count per allocation above, each given up once.
            unsafe { release_elsewhere(allocs.iter().map(|(_, c)| *c).collect()) };
        })
        .join()
        .unwrap();
    }
}
