//! The graph task: the state of one backward pass. Each vertex (a node, or a leaf that
//! requires grad) gets a state (its gradient buffer, dependency count, what it must do)
//! at an index of the task's `states`; the index is found through the vertex's own
//! `task_slot`, claimed with one compare-and-swap, or through the task's `index` when
//! another thread's pass holds that vertex. A finished task's allocations are kept for
//! the thread's next pass.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::grad::Grad;
use super::heap::ReadyHeap;
use crate::list::OptList;
use crate::mem::{forget_elements, recycle};
use crate::node::{CellInfo, Edge, NodeRef};
use crate::tensor::Tensor;
use crate::variable::Variable;

/// Multiplicative hash for addresses (the std SipHash costs more than the
/// rest of a backward step on small tensors).
#[derive(Default)]
struct PtrHasher(u64);

impl Hasher for PtrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64 ^ self.0.rotate_left(8));
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        let h = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}

type PtrMap<V> = HashMap<usize, V, BuildHasherDefault<PtrHasher>>;

pub(super) enum Vertex<'a, T: Tensor> {
    /// A node, by the edge's reference to it (its apply runs as that node: `run_as`).
    Node(&'a NodeRef<T>),
    Leaf(&'a Variable<T>),
}

impl<T: Tensor> Clone for Vertex<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Tensor> Copy for Vertex<'_, T> {}

impl<'a, T: Tensor> Vertex<'a, T> {
    pub(super) fn of(edge: &'a Edge<T>) -> (Self, usize) {
        match edge {
            Edge::Node { node, input_nr } => (Vertex::Node(node), *input_nr as usize),
            Edge::Leaf(v) => (Vertex::Leaf(v), 0),
        }
    }

    pub(super) fn slot(&self) -> &'a AtomicU64 {
        match self {
            Vertex::Node(n) => &n.cell().task_slot,
            Vertex::Leaf(v) => &v.0.rare().task_slot,
        }
    }

    fn key(&self) -> usize {
        match self {
            Vertex::Node(n) => n.cell() as *const CellInfo<T> as *const u8 as usize,
            Vertex::Leaf(v) => v.inner_ptr(),
        }
    }

    pub(super) fn num_inputs(&self) -> usize {
        match self {
            Vertex::Node(n) => n.cell().meta.len(),
            Vertex::Leaf(_) => 1,
        }
    }
}

pub(super) struct VState<'a, T: Tensor, G: 'static> {
    pub(super) vertex: Vertex<'a, T>,
    pub(super) claimed: bool,
    /// Run next without being found by anyone (see [`Task::deliver_direct`]): like a
    /// claimed state, free again once it ran.
    pub(super) direct: bool,
    pub(super) deps: u32,
    pub(super) exec: bool,
    pub(super) capture: bool,
    /// A `backward(inputs=...)` target: runs even if nothing below it must.
    pub(super) needed: bool,
    pub(super) buffer: OptList<G, 2>,
}

/// Per-call state. Each vertex gets an index into `states`; the index is
/// found through the vertex's own `task_slot` (claimed with one CAS), or
/// through `index` when another thread's backward holds that vertex.
pub(super) struct Task<'a, T: Tensor, G: 'static> {
    pub(super) id: u64,
    index: PtrMap<u32>,
    pub(super) states: Vec<VState<'a, T, G>>,
    pub(super) ready: ReadyHeap,
    /// `backward` without captures on a graph whose sequence numbers grow toward its
    /// roots: vertices are found while running (no dependency pass), in decreasing
    /// `priority`, which is then PyTorch's order (`ready.rs`).
    pub(super) lazy: bool,
    /// Vertices still claimed, gradient buffers not yet taken: when both are
    /// zero, dropping the task does not walk its states.
    pub(super) claimed_left: u32,
    pub(super) buffers_left: u32,
    /// The only ready vertex when `ready` is empty: a chain of single-input
    /// nodes never touches the heap.
    pub(super) next: Option<u32>,
    pub(super) stack: Vec<u32>,
    /// `lazy` only: states of vertices that ran and were claimed by this
    /// task, free for the next vertex found (nothing reaches a vertex after
    /// it ran). A chain's backward then uses two states instead of one per
    /// node: measured on the chain bench, the states of a 60,000-node graph
    /// (4 MB, allocated anew each pass above the cached size) were a share
    /// of the backward pass's memory traffic.
    pub(super) free: Vec<u32>,
}

static NEXT_TASK_ID: AtomicU32 = AtomicU32::new(1);

impl<T: Tensor, G: 'static> Drop for Task<'_, T, G> {
    fn drop(&mut self) {
        if self.claimed_left > 0 {
            for st in &self.states {
                if st.claimed {
                    st.vertex.slot().store(0, Ordering::Release);
                }
            }
        }
        if self.buffers_left == 0 {
            // Every gradient buffer was taken, so every state holds an empty
            // inline list and nothing else that needs dropping: skip the walk.
            forget_elements(&mut self.states);
        }
        // Keep the buffers for the next backward on this thread (a training
        // loop runs graphs of one size again and again), up to a size: a
        // thread should not hold megabytes for the rest of its life, and a
        // large block kept in the heap slows the allocations of everything
        // else (measured: the chain benchmark's tape, 20-50% slower).
        if self.states.capacity() > MAX_CACHED_STATES {
            return;
        }
        self.states.clear();
        self.index.clear();
        self.ready.clear();
        self.stack.clear();
        self.free.clear();
        let bufs = TaskBuffers::<T, G> {
            states: recycle(std::mem::take(&mut self.states)),
            index: std::mem::take(&mut self.index),
            ready: std::mem::take(&mut self.ready),
            stack: std::mem::take(&mut self.stack),
            free: std::mem::take(&mut self.free),
        };
        let _ = TASK_BUFFERS.try_with(|c| {
            let mut c = c.borrow_mut();
            if c.is_none() {
                *c = Some(Box::new(bufs));
            }
        });
    }
}

/// Largest task (in vertices) whose buffers a thread keeps (about 1 MiB).
const MAX_CACHED_STATES: usize = 16_384;

/// The allocations of a finished task, reused by the next one on the thread.
struct TaskBuffers<T: Tensor, G: 'static> {
    states: Vec<VState<'static, T, G>>,
    index: PtrMap<u32>,
    ready: ReadyHeap,
    stack: Vec<u32>,
    free: Vec<u32>,
}

thread_local! {
    static TASK_BUFFERS: std::cell::RefCell<Option<Box<dyn std::any::Any>>> =
        const { std::cell::RefCell::new(None) };
}

impl<'a, T: Tensor, G: Grad<T>> Task<'a, T, G> {
    pub(super) fn new() -> Self {
        let mut id = NEXT_TASK_ID.fetch_add(1, Ordering::Relaxed);
        if id == 0 {
            id = NEXT_TASK_ID.fetch_add(1, Ordering::Relaxed);
        }
        let cached = TASK_BUFFERS
            .try_with(|c| {
                let mut c = c.borrow_mut();
                match c.take().map(|b| b.downcast::<TaskBuffers<T, G>>()) {
                    Some(Ok(b)) => Some(b),
                    Some(Err(other)) => {
                        *c = Some(other);
                        None
                    }
                    None => None,
                }
            })
            .ok()
            .flatten();
        let b = cached.map(|b| *b).unwrap_or_else(|| TaskBuffers {
            states: Vec::new(),
            index: PtrMap::default(),
            ready: ReadyHeap::default(),
            stack: Vec::new(),
            free: Vec::new(),
        });
        Task {
            id: id as u64,
            index: b.index,
            states: recycle(b.states),
            ready: b.ready,
            lazy: false,
            claimed_left: 0,
            buffers_left: 0,
            next: None,
            stack: b.stack,
            free: b.free,
        }
    }

    #[inline]
    pub(super) fn find(&self, v: &Vertex<'a, T>) -> Option<u32> {
        let cur = v.slot().load(Ordering::Acquire);
        if cur >> 32 == self.id {
            return Some(cur as u32);
        }
        if self.index.is_empty() {
            return None;
        }
        self.index.get(&v.key()).copied()
    }

    pub(super) fn insert(&mut self, v: Vertex<'a, T>) -> (u32, bool) {
        if let Some(i) = self.find(&v) {
            return (i, false);
        }
        let n = self.new_state(v, false, false);
        let claimed = v
            .slot()
            .compare_exchange(
                0,
                self.id << 32 | n as u64,
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok();
        if claimed {
            self.states[n as usize].claimed = true;
            self.claimed_left += 1;
        } else {
            self.index.insert(v.key(), n);
        }
        (n, true)
    }

    /// A state for vertex `v`: a free one (of a vertex that ran) or a new one.
    pub(super) fn new_state(&mut self, v: Vertex<'a, T>, claimed: bool, direct: bool) -> u32 {
        if let Some(i) = self.free.pop() {
            // The state of a vertex that ran: its buffer is already empty
            // (reset after the run), the rest is set anew.
            let st = &mut self.states[i as usize];
            st.vertex = v;
            (st.claimed, st.direct) = (claimed, direct);
            st.deps = 0;
            (st.exec, st.capture, st.needed) = (true, false, false);
            return i;
        }
        self.states.push(VState {
            vertex: v,
            claimed,
            direct,
            deps: 0,
            exec: true,
            capture: false,
            needed: false,
            buffer: OptList::new(),
        });
        self.states.len() as u32 - 1
    }

    pub(super) fn lookup(&self, edge: &'a Edge<T>) -> Option<u32> {
        self.find(&Vertex::of(edge).0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::testing::{Val, val};

    type T<'a> = Task<'a, Val, Val>;

    /// The edge of a new leaf that requires grad.
    fn leaf_edge() -> Edge<Val> {
        Variable::new(val(1.0), true).gradient_edge().unwrap()
    }

    #[test]
    fn a_vertex_is_claimed_by_one_task_and_indexed_by_another_and_given_back() {
        let edge = leaf_edge();
        let (v, _) = Vertex::of(&edge);
        let mut a = T::new();
        let (i, new) = a.insert(v);
        assert!(new && a.states[i as usize].claimed && a.index.is_empty());
        assert_eq!(a.insert(v), (i, false), "found again through its slot");
        assert_eq!(v.slot().load(Ordering::Relaxed) >> 32, a.id);
        // A second pass at the same time (another thread's) finds the slot taken.
        let mut b = T::new();
        let (j, new) = b.insert(v);
        assert!(new && !b.states[j as usize].claimed);
        assert_eq!(b.find(&v), Some(j), "found through the task's index");
        assert_eq!(b.lookup(&edge), Some(j));
        drop(b);
        assert_eq!(
            v.slot().load(Ordering::Relaxed) >> 32,
            a.id,
            "b never held it"
        );
        drop(a);
        assert_eq!(
            v.slot().load(Ordering::Relaxed),
            0,
            "given back with the task"
        );
    }

    #[test]
    fn a_finished_tasks_allocations_serve_the_next_task_on_the_thread() {
        let edges: Vec<_> = (0..100).map(|_| leaf_edge()).collect();
        let mut a = T::new();
        for e in &edges {
            a.insert(Vertex::of(e).0);
        }
        let cap = a.states.capacity();
        assert!(cap >= 100);
        drop(a);
        let b = T::new();
        assert!(b.states.is_empty() && b.states.capacity() == cap);
        // Another gradient type gets fresh buffers (the kept ones are not its).
        let c = Task::<'_, Val, Variable<Val>>::new();
        assert_eq!(c.states.capacity(), 0);
    }

    #[test]
    fn a_state_of_a_vertex_that_ran_is_reused_fresh() {
        let (e1, e2) = (leaf_edge(), leaf_edge());
        let mut t = T::new();
        let (i, _) = t.insert(Vertex::of(&e1).0);
        t.states[i as usize].deps = 3;
        t.states[i as usize].exec = false;
        t.free.push(i);
        let j = t.new_state(Vertex::of(&e2).0, false, true);
        assert_eq!(j, i);
        let st = &t.states[j as usize];
        assert!(st.direct && !st.claimed && st.deps == 0 && st.exec && !st.capture);
        assert_eq!(st.vertex.key(), Vertex::of(&e2).0.key());
    }
}
