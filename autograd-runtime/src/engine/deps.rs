//! Dependencies (`grad()` and `backward(inputs=...)`): the edges into every reachable
//! vertex are counted before the pass runs, and the vertices that must run to reach the
//! targets are marked (PyTorch's `compute_dependencies` and `init_to_execute`). A plain
//! `backward()` counts them only when it cannot run lazily (`ready.rs`).

use super::grad::Grad;
use super::task::{Task, Vertex};
use crate::node::Edge;
use crate::tensor::Tensor;
use crate::variable::Variable;

/// What a pass computes gradients for.
pub(super) enum Targets<'a, T: Tensor> {
    /// `backward()`: every leaf reached.
    All,
    /// `grad()`: these edges' gradients are returned; nothing is accumulated.
    Capture(&'a [Edge<T>]),
    /// `backward(inputs=...)`: only these edges' vertices run (a leaf
    /// accumulates, a node runs its hooks, retained gradient and itself).
    Accumulate(&'a [Edge<T>]),
}

impl<T: Tensor> Clone for Targets<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Tensor> Copy for Targets<'_, T> {}

impl<'a, T: Tensor, G: Grad<T>> Task<'a, T, G> {
    /// Claims every vertex reachable from `roots` and counts the edges into
    /// each (PyTorch's `compute_dependencies`).
    fn count_dependencies(&mut self, roots: &'a [(Edge<T>, Option<Variable<T>>)]) {
        let mut stack = std::mem::take(&mut self.stack);
        for (edge, _) in roots {
            let (i, new) = self.insert(Vertex::of(edge).0);
            if new {
                stack.push(i);
            }
            self.states[i as usize].deps += 1;
        }
        while let Some(i) = stack.pop() {
            if let Vertex::Node(node) = self.states[i as usize].vertex {
                for edge in node.cell().edges.iter().flatten() {
                    let (j, new) = self.insert(Vertex::of(edge).0);
                    if new {
                        stack.push(j);
                    }
                    self.states[j as usize].deps += 1;
                }
            }
        }
        self.stack = stack;
    }

    /// `grad()` and `backward(inputs)`: counts the dependencies of every
    /// reachable vertex and marks which must run to reach the targets
    /// (PyTorch's `compute_dependencies` and `init_to_execute`). Returns
    /// `(vertex, input slot, position in the captures)` for `grad()`.
    pub(super) fn init_to_execute(
        &mut self,
        roots: &'a [(Edge<T>, Option<Variable<T>>)],
        targets: Targets<'a, T>,
    ) -> Vec<(u32, usize, usize)> {
        let mut slots = Vec::new();
        let (edges, capture) = match targets {
            Targets::All => {
                // Not lazy (`ready.rs`): every vertex found runs once its count is zero.
                if !self.lazy {
                    self.count_dependencies(roots);
                }
                return slots;
            }
            Targets::Capture(caps) => (caps, true),
            Targets::Accumulate(inputs) => (inputs, false),
        };
        self.count_dependencies(roots);
        for (pos, edge) in edges.iter().enumerate() {
            if let Some(i) = self.lookup(edge) {
                let st = &mut self.states[i as usize];
                if capture {
                    slots.push((i, edge.input_nr(), pos));
                    st.capture = true;
                } else {
                    st.needed = true;
                }
            }
        }
        mark_needed(self);
        slots
    }
}

/// exec = a target of `backward(inputs)`, or some child must receive a
/// gradient (it runs or captures).
fn mark_needed<'a, T: Tensor, G: Grad<T>>(task: &mut Task<'a, T, G>) {
    let n = task.states.len();
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut indeg = vec![0u32; n];
    for (i, ch) in children.iter_mut().enumerate() {
        if let Vertex::Node(node) = task.states[i].vertex {
            for edge in node.cell().edges.iter().flatten() {
                if let Some(j) = task.lookup(edge) {
                    ch.push(j);
                    indeg[j as usize] += 1;
                }
            }
        }
    }
    let mut order = Vec::with_capacity(n);
    let mut queue: Vec<u32> = (0..n as u32).filter(|&i| indeg[i as usize] == 0).collect();
    while let Some(i) = queue.pop() {
        order.push(i);
        for &j in &children[i as usize] {
            indeg[j as usize] -= 1;
            if indeg[j as usize] == 0 {
                queue.push(j);
            }
        }
    }
    let mut should = vec![false; n];
    for &i in order.iter().rev() {
        let st = &task.states[i as usize];
        let exec = st.needed || children[i as usize].iter().any(|&j| should[j as usize]);
        let st = &mut task.states[i as usize];
        st.exec = exec;
        should[i as usize] = exec || st.capture;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::add;
    use crate::tensor::testing::{Val, val};

    type T<'a> = Task<'a, Val, Val>;

    #[test]
    fn the_edges_into_every_reachable_vertex_are_counted() {
        let x = Variable::new(val(1.0), true);
        let a = add(&x, &x);
        let b = add(&a, &x);
        let roots = vec![(b.gradient_edge().unwrap(), None)];
        let mut t = T::new();
        t.count_dependencies(&roots);
        let deps = |v: &Variable<Val>| {
            let e = v.gradient_edge().unwrap();
            t.states[t.lookup(&e).unwrap() as usize].deps
        };
        assert_eq!((deps(&b), deps(&a), deps(&x)), (1, 1, 3));
        assert_eq!(t.states.len(), 3);
    }

    #[test]
    fn only_what_leads_to_a_target_runs() {
        // b = a + w, a = x + x: `grad(b, x)` runs b and a, and accumulates into no leaf.
        let x = Variable::new(val(1.0), true);
        let w = Variable::new(val(1.0), true);
        let a = add(&x, &x);
        let b = add(&a, &w);
        let roots = vec![(b.gradient_edge().unwrap(), None)];
        let captures = [x.gradient_edge().unwrap()];
        let mut t = T::new();
        let slots = t.init_to_execute(&roots, Targets::Capture(&captures));
        let st = |v: &Variable<Val>| {
            let s = &t.states[t.lookup(&v.gradient_edge().unwrap()).unwrap() as usize];
            (s.exec, s.capture)
        };
        assert_eq!(st(&b), (true, false));
        assert_eq!(st(&a), (true, false));
        assert_eq!(st(&x), (false, true), "captured, not accumulated");
        assert_eq!(st(&w), (false, false));
        let xi = t.lookup(&captures[0]).unwrap();
        assert_eq!(slots, [(xi, 0, 0)]);
        // `backward(inputs=[a])`: a runs, nothing below it.
        let inputs = [a.gradient_edge().unwrap()];
        let mut t = T::new();
        t.init_to_execute(&roots, Targets::Accumulate(&inputs));
        let exec = |v: &Variable<Val>| {
            t.states[t.lookup(&v.gradient_edge().unwrap()).unwrap() as usize].exec
        };
        assert!(exec(&b) && exec(&a) && !exec(&x) && !exec(&w));
    }
}
