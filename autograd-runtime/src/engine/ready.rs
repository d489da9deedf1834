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
    fn priority(&self) -> (u64, u64) {
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

    fn push_ready(&mut self, i: u32) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::add;
    use crate::tensor::testing::{Val, val};
    use crate::variable::Variable;

    type T<'a> = Task<'a, Val, Val>;

    #[test]
    fn the_deepest_vertex_runs_first_then_the_latest_recorded_and_leaves_last() {
        let x = Variable::new(val(1.0), true);
        let a = add(&x, &x); // depth 1
        let b = add(&a, &a); // depth 2
        let c = add(&x, &x); // depth 1, recorded after `a`
        let edges: Vec<_> = [&x, &a, &b, &c]
            .iter()
            .map(|v| v.gradient_edge().unwrap())
            .collect();
        let mut t = T::new();
        let idx: Vec<u32> = edges.iter().map(|e| t.insert(Vertex::of(e).0).0).collect();
        for &i in &idx {
            t.push_ready(i);
        }
        let order: Vec<u32> = std::iter::from_fn(|| t.pop_ready()).collect();
        assert_eq!(order, [idx[2], idx[3], idx[1], idx[0]]);
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
