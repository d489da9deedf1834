//! [`Edge`]: where the gradient of one input of a node goes.

use super::*;

/// An edge of the graph: where the gradient of one input of a node goes.
///
/// Either input slot `input_nr` of another node (the input was computed by
/// an op: its `grad_fn` and `output_nr`), or a leaf variable that requires
/// grad (gradients are accumulated into its `.grad`; PyTorch routes these
/// through an `AccumulateGrad` node, which is what the DOT export shows).
pub enum Edge<T: Tensor> {
    /// Slot `input_nr` of `node`.
    Node {
        /// The next node.
        node: NodeRef<T>,
        /// Which of its gradients.
        input_nr: u32,
    },
    /// A leaf variable that requires grad.
    Leaf(Variable<T>),
}

impl<T: Tensor> Clone for Edge<T> {
    fn clone(&self) -> Self {
        match self {
            Edge::Node { node, input_nr } => Edge::Node {
                node: node.clone(),
                input_nr: *input_nr,
            },
            Edge::Leaf(v) => Edge::Leaf(v.clone()),
        }
    }
}

impl<T: Tensor> fmt::Debug for Edge<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Edge::Node { node, input_nr } => write!(f, "({node:?}, {input_nr})"),
            Edge::Leaf(_) => write!(f, "(AccumulateGrad, 0)"),
        }
    }
}

impl<T: Tensor> Edge<T> {
    /// The next node, if this is not a leaf edge.
    pub fn node(&self) -> Option<&NodeRef<T>> {
        match self {
            Edge::Node { node, .. } => Some(node),
            Edge::Leaf(_) => None,
        }
    }

    /// The leaf, if this is a leaf edge.
    pub fn leaf(&self) -> Option<&Variable<T>> {
        match self {
            Edge::Leaf(v) => Some(v),
            Edge::Node { .. } => None,
        }
    }

    /// Input slot of the next node (0 for leaves).
    pub fn input_nr(&self) -> usize {
        match self {
            Edge::Node { input_nr, .. } => *input_nr as usize,
            Edge::Leaf(_) => 0,
        }
    }

    /// Name of the target (`"AccumulateGrad"` for leaves).
    pub fn name(&self) -> String {
        match self {
            Edge::Node { node, .. } => node.name(),
            Edge::Leaf(_) => "AccumulateGrad".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ops::add;
    use crate::tensor::testing::{Val, val};
    use crate::variable::Variable;

    #[test]
    fn a_leaf_that_requires_grad_has_an_accumulate_grad_edge() {
        let x = Variable::new(val(1.0), true);
        let e = x.gradient_edge().unwrap();
        assert!(e.leaf().unwrap().ptr_eq(&x) && e.node().is_none());
        assert_eq!((e.name(), e.input_nr()), ("AccumulateGrad".to_string(), 0));
        assert_eq!(format!("{e:?}"), "(AccumulateGrad, 0)");
        assert!(
            Variable::<Val>::new(val(1.0), false)
                .gradient_edge()
                .is_none()
        );
    }

    #[test]
    fn an_op_output_has_an_edge_to_its_node() {
        let x = Variable::new(val(1.0), true);
        let y = add(&x, &x);
        let e = y.gradient_edge().unwrap();
        assert!(e.leaf().is_none());
        assert!(e.node().unwrap().ptr_eq(&y.grad_fn().unwrap()));
        assert_eq!((e.name(), e.input_nr()), ("AddBackward0".to_string(), 0));
        let c = e.clone();
        assert!(c.node().unwrap().ptr_eq(e.node().unwrap()));
    }
}
