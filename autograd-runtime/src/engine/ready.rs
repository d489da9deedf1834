//! The ready queue: gradients delivered to vertices, and the order vertices run in:
//! PyTorch's, the highest sequence number first (`CompareNodeTaskTime` in PyTorch's
//! `engine.h`), leaves (PyTorch's `AccumulateGrad`, whose sequence number is the largest
//! there is) as soon as they are ready, and equal keys as libstdc++'s heap orders them
//! (`heap.rs`). A lone ready vertex waits in `next`, off the heap; in a lazy pass
//! (`backward()`), a vertex that nothing else can reach is handed its gradient directly,
//! without being claimed.
//!
//! The lazy pass counts no dependencies: it runs the vertex with the highest sequence
//! number found so far, which is PyTorch's order when every node's sequence number is
//! larger than those of the nodes its edges lead to (a graph recorded on one thread;
//! `Node::ordered`, checked on the roots). A node is then run after every consumer of it:
//! a consumer not yet run would have a larger number and be found already, or be reached
//! only through some found vertex with a larger number still. Leaves wait until no node
//! is left (a leaf's consumers are not known before they ran); that only moves when a
//! leaf's hooks run, so a pass takes the lazy path only when no leaf has a hook
//! (`node::leaf_hooks_registered`).

use super::grad::Grad;
use super::task::{Task, Vertex};
use crate::list::OptList;
use crate::node::Edge;
use crate::tensor::Tensor;

impl<T: Tensor> Vertex<'_, T> {
    /// Execution priority: the larger runs first. A node's sequence number; a leaf's
    /// is the largest (PyTorch's `AccumulateGrad`: `UINT64_MAX`), except in a lazy pass,
    /// where leaves wait for every node (their key 0, the nodes' their number + 1).
    fn priority(&self, lazy: bool) -> u64 {
        match (self, lazy) {
            (Vertex::Node(n), false) => n.cell().seq,
            (Vertex::Node(n), true) => n.cell().seq.saturating_add(1),
            (Vertex::Leaf(_), false) => u64::MAX,
            (Vertex::Leaf(_), true) => 0,
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

    fn push_ready(&mut self, i: u32) {
        if self.next.is_none() && self.ready.is_empty() {
            self.next = Some(i);
            return;
        }
        if let Some(j) = self.next.take() {
            let key = self.states[j as usize].vertex.priority(self.lazy);
            self.ready.push((key, j));
        }
        let key = self.states[i as usize].vertex.priority(self.lazy);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::add;
    use crate::tensor::testing::{Val, val};
    use crate::variable::Variable;

    type T<'a> = Task<'a, Val, Val>;

    /// The ready vertices in the order they pop, pushed in `order` (`lazy` or counted).
    fn popped(vars: &[&Variable<Val>], lazy: bool) -> Vec<usize> {
        let edges: Vec<_> = vars.iter().map(|v| v.gradient_edge().unwrap()).collect();
        let mut t = T::new();
        t.lazy = lazy;
        let idx: Vec<u32> = edges.iter().map(|e| t.insert(Vertex::of(e).0).0).collect();
        for &i in &idx {
            t.push_ready(i);
        }
        std::iter::from_fn(|| t.pop_ready())
            .map(|i| idx.iter().position(|&j| j == i).unwrap())
            .collect()
    }

    #[test]
    fn the_latest_recorded_runs_first_and_leaves_first_or_last() {
        let x = Variable::new(val(1.0), true);
        let a = add(&x, &x);
        let b = add(&a, &a);
        let c = add(&x, &x); // recorded after `b`, though not as deep
        // PyTorch's order: leaves (`AccumulateGrad`) first, then c, b, a.
        assert_eq!(popped(&[&x, &a, &b, &c], false), [0, 3, 2, 1]);
        // A lazy pass keeps leaves for last.
        assert_eq!(popped(&[&x, &a, &b, &c], true), [3, 2, 1, 0]);
    }

    #[test]
    fn a_lone_ready_vertex_waits_off_the_heap() {
        let x = Variable::new(val(1.0), true);
        let e = x.gradient_edge().unwrap();
        let mut t = T::new();
        let (i, _) = t.insert(Vertex::of(&e).0);
        t.push_ready(i);
        assert!(t.ready.is_empty() && t.next == Some(i));
        assert_eq!(t.pop_ready(), Some(i));
        assert_eq!(t.pop_ready(), None);
    }

    #[test]
    fn gradients_for_one_slot_are_summed_and_a_vertex_is_queued_once() {
        let x = Variable::new(val(1.0), true);
        let e = x.gradient_edge().unwrap();
        let mut t = T::new();
        t.lazy = true;
        t.deliver(&e, &mut Some(val(2.0)));
        t.deliver(&e, &mut Some(val(3.0)));
        t.deliver(&e, &mut None);
        let i = t.pop_ready().expect("queued");
        assert_eq!(t.pop_ready(), None, "queued once");
        assert_eq!(t.states[i as usize].buffer[0], Some(val(5.0)));
        assert_eq!(t.buffers_left, 1);
    }

    #[test]
    fn a_vertex_nothing_else_reaches_gets_its_gradient_directly() {
        let x = Variable::new(val(1.0), true);
        let e = x.gradient_edge().unwrap();
        let mut t = T::new();
        let mut g = Some(val(4.0));
        assert!(!t.deliver_direct(&e, &mut g), "not a lazy pass");
        t.lazy = true;
        assert!(t.deliver_direct(&e, &mut g));
        assert!(
            g.is_none() && t.claimed_left == 0,
            "handed over, not claimed"
        );
        let i = t.pop_ready().unwrap();
        assert!(t.states[i as usize].direct);
        assert_eq!(t.states[i as usize].buffer[0], Some(val(4.0)));
        // With a vertex ready, another could still deliver to this one: not direct.
        t.push_ready(i);
        assert!(!t.direct_possible());
    }
}
