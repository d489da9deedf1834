//! The ready queue: gradients delivered to vertices, and the order vertices run in
//! (deepest first, then by sequence number, as PyTorch orders ready nodes). A lone ready
//! vertex waits in `next`, off the heap; in a lazy pass (`backward()`), a vertex that
//! nothing else can reach is handed its gradient directly, without being claimed.

use super::grad::Grad;
use super::task::{Task, Vertex};
use crate::list::OptList;
use crate::node::Edge;
use crate::tensor::Tensor;

impl<T: Tensor> Vertex<'_, T> {
    /// Execution priority: the larger runs first. Topological depth first
    /// (a consumer always outranks what it consumes), then the sequence
    /// number as in PyTorch (leaves, PyTorch's `AccumulateGrad`, last among
    /// equals... they have depth 0, below every node).
    pub(super) fn priority(&self) -> (u64, u64) {
        match self {
            Vertex::Node(n) => (u64::from(n.topo()), n.cell().seq),
            Vertex::Leaf(_) => (0, u64::MAX),
        }
    }
}

impl<'a, T: Tensor, G: Grad<T>> Task<'a, T, G> {
    /// Hands `grad` to the vertex of `edge` and makes it the next to run, without
    /// claiming or indexing it, when nothing else can reach it: a lazy pass whose ready
    /// set is empty after a vertex with this one edge ran (every vertex discovered so far
    /// has run, so whatever else could deliver to this vertex would have to be reached
    /// through it, which a graph without cycles rules out). `false` otherwise (the caller
    /// delivers as usual). A chain of single-input nodes runs through here: measured on
    /// the chain bench, finding, claiming and queueing each vertex was about a fifth of
    /// the backward pass's instructions.
    pub(super) fn deliver_direct(&mut self, edge: &'a Edge<T>, grad: &mut Option<G>) -> bool {
        if !self.direct_possible() {
            return false;
        }
        let (v, nr) = Vertex::of(edge);
        let i = self.new_state(v, false, true);
        hand_in(
            &mut self.states[i as usize].buffer,
            v.num_inputs(),
            nr,
            grad,
        );
        self.buffers_left += 1;
        self.next = Some(i);
        true
    }

    /// Whether every vertex found so far has run (a lazy pass with nothing ready): then
    /// the one input of a node that just ran can be reached by nothing else.
    #[inline]
    pub(super) fn direct_possible(&self) -> bool {
        self.lazy && self.next.is_none() && self.ready.is_empty()
    }

    pub(super) fn deliver(&mut self, edge: &'a Edge<T>, grad: &mut Option<G>) {
        let (v, nr) = Vertex::of(edge);
        let i = if self.lazy {
            let (i, new) = self.insert(v);
            if new {
                self.push_ready(i);
            }
            i
        } else {
            let Some(i) = self.find(&v) else {
                return;
            };
            i
        };
        let st = &mut self.states[i as usize];
        if st.buffer.is_empty() {
            st.buffer.set_none_len(st.vertex.num_inputs());
            self.buffers_left += 1;
        }
        if grad.is_some()
            && let Some(slot) = st.buffer.get_mut(nr)
        {
            match slot.take() {
                None => *slot = grad.take(),
                Some(old) => *slot = grad.take().map(|g| G::sum(old, &g)),
            }
        }
        if !self.lazy {
            st.deps -= 1;
            if st.deps == 0 && (st.exec || st.capture) {
                self.push_ready(i);
            }
        }
    }

    pub(super) fn push_ready(&mut self, i: u32) {
        if self.next.is_none() && self.ready.is_empty() {
            self.next = Some(i);
            return;
        }
        if let Some(j) = self.next.take() {
            let key = self.states[j as usize].vertex.priority();
            self.ready.push((key, j));
        }
        let key = self.states[i as usize].vertex.priority();
        self.ready.push((key, i));
    }

    /// The ready vertex with the highest priority.
    pub(super) fn pop_ready(&mut self) -> Option<u32> {
        self.next
            .take()
            .or_else(|| self.ready.pop().map(|(_, i)| i))
    }
}

/// Makes `buf` a vertex's gradient list of `len` slots holding the one gradient `g` in
/// slot `nr` (a direct vertex's, or a chain node's in `run_chain`).
#[inline]
pub(super) fn hand_in<G>(buf: &mut OptList<G, 2>, len: usize, nr: usize, g: &mut Option<G>) {
    buf.set_none_len(len);
    if let Some(slot) = buf.get_mut(nr) {
        *slot = g.take();
    }
}
