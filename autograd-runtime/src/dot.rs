//! Graphviz export of the recorded graph.

use std::collections::HashMap;
use std::fmt::Write;

use crate::node::{Edge, NodeRef};
use crate::tensor::Tensor;
use crate::variable::Variable;

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn dims(s: &[usize]) -> String {
    format!("{s:?}")
}

/// The graph reachable from `roots` as Graphviz DOT, for visual debugging
/// (render with `dot -Tsvg`).
///
/// Like torchviz: the roots are green boxes (name and shape), backward nodes
/// grey boxes listing their saved tensors with shapes (`released` once freed),
/// leaves blue boxes (name or `AccumulateGrad`, and shape). Arrows point in
/// the forward direction: from the node (or leaf) that produced an input to
/// the node that consumed it, and from a root's `grad_fn` to the root.
pub fn to_dot<T: Tensor>(roots: &[Variable<T>]) -> String {
    let mut out = String::from(
        "digraph autograd {\n  graph [rankdir=TB];\n  node [shape=box, style=filled, fontname=\"monospace\", fontsize=10];\n",
    );
    let mut ids: HashMap<usize, usize> = HashMap::new();
    let mut stack: Vec<Edge<T>> = Vec::new();
    let id_of = |key: usize, ids: &mut HashMap<usize, usize>| -> (usize, bool) {
        let n = ids.len();
        let e = *ids.entry(key).or_insert(n);
        (e, e == n)
    };
    for (r, root) in roots.iter().enumerate() {
        let label = format!(
            "{}\\n{}",
            esc(&root.name().unwrap_or_else(|| format!("output {r}"))),
            dims(&root.shape())
        );
        let _ = writeln!(
            out,
            "  r{r} [label=\"{label}\", fillcolor=darkolivegreen1];"
        );
        if let Some(edge) = root.gradient_edge() {
            let (id, new) = id_of(key(&edge), &mut ids);
            let _ = writeln!(out, "  v{id} -> r{r};");
            if new {
                stack.push(edge);
            }
        }
    }
    while let Some(edge) = stack.pop() {
        let (id, _) = id_of(key(&edge), &mut ids);
        match &edge {
            Edge::Leaf(v) => {
                let name = v.name().unwrap_or_else(|| "AccumulateGrad".to_string());
                let _ = writeln!(
                    out,
                    "  v{id} [label=\"{}\\n{}\", fillcolor=lightblue];",
                    esc(&name),
                    dims(&v.shape())
                );
            }
            Edge::Node { node, .. } => {
                let mut label = esc(&node.name());
                for (name, shape) in node.saved_tensors() {
                    let s = shape.map_or_else(|| "released".to_string(), |s| dims(&s));
                    let _ = write!(label, "\\n{}: {}", esc(&name), s);
                }
                let _ = writeln!(out, "  v{id} [label=\"{label}\", fillcolor=lightgrey];");
                for next in node.next_edges().iter().flatten() {
                    let (nid, new) = id_of(key(next), &mut ids);
                    let _ = writeln!(out, "  v{nid} -> v{id};");
                    if new {
                        stack.push(next.clone());
                    }
                }
            }
        }
    }
    out.push_str("}\n");
    out
}

fn key<T: Tensor>(e: &Edge<T>) -> usize {
    match e {
        Edge::Node { node, .. } => node_key(node),
        Edge::Leaf(v) => v.inner_ptr(),
    }
}

fn node_key<T: Tensor>(n: &NodeRef<T>) -> usize {
    n.cell() as *const _ as *const u8 as usize
}

/// The export as a method of the variable (here, beside it: the variable does not depend
/// on this module).
impl<T: Tensor> Variable<T> {
    /// The graph reachable from this variable as Graphviz DOT.
    pub fn to_dot(&self) -> String {
        to_dot(std::slice::from_ref(self))
    }
}
