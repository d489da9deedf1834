//! What the engine checks of a node's gradients, as PyTorch's `validate_outputs`: one per
//! input, each of its input's shape and dtype (a broadcast shape summed, another dtype
//! converted, when the tensor type can), no NaN in anomaly mode; and the errors, with the
//! node's name and its forward trace in anomaly mode.

use super::grad::Grad;
use crate::error::AutogradError;
use crate::list::OptList;
use crate::mode::is_anomaly_enabled;
use crate::node::{Edge, NodeRef};
use crate::tensor::{Tensor, TensorMeta, same_dtype};

fn node_name<T: Tensor>(this: &NodeRef<T>) -> String {
    this.lock().name().to_string()
}

pub(super) fn anomaly_wrap<T: Tensor>(this: &NodeRef<T>, mut e: AutogradError) -> AutogradError {
    if let AutogradError::VersionMismatch {
        output_of: Some((_, name)),
        ..
    } = &mut e
        && name.is_empty()
    {
        *name = node_name(this);
    }
    if !is_anomaly_enabled() || matches!(e, AutogradError::Anomaly { .. }) {
        return e;
    }
    AutogradError::Anomaly {
        node: node_name(this),
        forward_trace: this.forward_trace(),
        source: Box::new(e),
    }
}

/// PyTorch's checks of a node's gradients: count, shapes and dtypes ([`validate`]),
/// and NaNs in anomaly mode ([`check_nan`]).
#[inline(always)]
pub(super) fn check_outputs<T: Tensor, G: Grad<T>>(
    this: &NodeRef<T>,
    outputs: &mut OptList<G, 2>,
) -> Result<(), AutogradError> {
    validate(this, outputs).map_err(|e| anomaly_wrap(this, e))?;
    check_nan(this, outputs)
}

/// In anomaly mode, PyTorch's error for a NaN in one of `outputs`.
#[inline(always)]
pub(super) fn check_nan<T: Tensor, G: Grad<T>>(
    this: &NodeRef<T>,
    outputs: &[Option<G>],
) -> Result<(), AutogradError> {
    if !is_anomaly_enabled() {
        return Ok(());
    }
    for (i, g) in outputs.iter().enumerate() {
        if let Some(g) = g
            && g.with_data(T::has_nan)
        {
            let e = AutogradError::NanInGradient {
                node: node_name(this),
                index: i,
            };
            return Err(anomaly_wrap(this, e));
        }
    }
    Ok(())
}

/// Checks `outputs` against the node's edges: one gradient per edge, each of its
/// input's shape and dtype. The check is inlined and the error built out of line
/// ([`invalid_gradients`]). Measured on the chain bench: as one function it was
/// 86 instructions a node, a third of them saving and restoring registers for the
/// error paths.
#[inline(always)]
fn validate<T: Tensor, G: Grad<T>>(
    this: &NodeRef<T>,
    outputs: &mut OptList<G, 2>,
) -> Result<(), AutogradError> {
    let (edges, grads) = (&this.cell().edges[..], &outputs[..]);
    if edges.len() == grads.len() && edges.iter().zip(grads).all(|(e, g)| fits(e, g)) {
        return Ok(());
    }
    adjust_gradients(this, outputs);
    let (edges, grads) = (&this.cell().edges[..], &outputs[..]);
    if edges.len() == grads.len() && edges.iter().zip(grads).all(|(e, g)| fits(e, g)) {
        return Ok(());
    }
    Err(invalid_gradients(this, outputs))
}

/// What PyTorch's `validate_outputs` does with a gradient that does not fit its input: one
/// of a shape the input's shape broadcasts to is summed to the input's shape, one of another
/// dtype converted to the input's dtype (when the tensor type provides
/// [`Tensor::sum_to`] / [`Tensor::to_dtype`]). Whatever still does not fit is refused by the
/// caller with PyTorch's error.
#[cold]
#[inline(never)]
fn adjust_gradients<T: Tensor, G: Grad<T>>(this: &NodeRef<T>, outputs: &mut OptList<G, 2>) {
    let cell = this.cell();
    if outputs.len() != cell.edges.len() {
        return;
    }
    for (edge, g) in cell.edges.iter().zip(outputs.iter_mut()) {
        let (Some(edge), Some(grad)) = (edge, g.as_mut()) else {
            continue;
        };
        if fits_edge(edge, &Some(grad.clone())) {
            continue;
        }
        let Some(expected) = edge_meta(edge) else {
            continue;
        };
        let got = grad.with_data(TensorMeta::of);
        if got.shape() != expected.shape()
            && broadcasts_to(expected.shape(), got.shape())
            && let Some(r) = grad.sum_to(expected.shape())
        {
            *grad = r;
        }
        let dtype = grad.with_data(|d| d.dtype());
        if !same_dtype(dtype, expected.dtype())
            && let Some(r) = grad.to_dtype(expected.dtype())
        {
            *grad = r;
        }
    }
}

/// The shape and dtype the input behind `edge` has.
fn edge_meta<T: Tensor>(edge: &Edge<T>) -> Option<TensorMeta> {
    match edge {
        Edge::Node { node, input_nr } => node.cell().meta.get(*input_nr as usize),
        Edge::Leaf(v) => Some(v.with_data(TensorMeta::of)),
    }
}

/// Whether `from` broadcasts to `to` (PyTorch's `is_expandable_to`): aligned from the
/// last dimension, each size of `from` is 1 or equal to `to`'s.
fn broadcasts_to(from: &[usize], to: &[usize]) -> bool {
    from.len() <= to.len()
        && from
            .iter()
            .rev()
            .zip(to.iter().rev())
            .all(|(f, t)| *f == 1 || f == t)
}

/// Whether gradient `g` (if any) may flow along `edge` (if any).
#[inline(always)]
fn fits<T: Tensor, G: Grad<T>>(edge: &Option<Edge<T>>, g: &Option<G>) -> bool {
    edge.as_ref().is_none_or(|e| fits_edge(e, g))
}

/// Whether gradient `g` (if any) may flow along `edge`.
#[inline(always)]
pub(super) fn fits_edge<T: Tensor, G: Grad<T>>(edge: &Edge<T>, g: &Option<G>) -> bool {
    let Some(g) = g else {
        return true;
    };
    match edge {
        Edge::Node { node, input_nr } => {
            let meta = &node.cell().meta;
            g.with_data(|d| meta.matches(*input_nr as usize, d))
        }
        Edge::Leaf(v) => {
            let got = g.with_data(TensorMeta::of);
            v.with_data(|d| shape_ok(&got, d))
        }
    }
}

/// The error for `outputs` that [`validate`] refused.
#[cold]
#[inline(never)]
fn invalid_gradients<T: Tensor, G: Grad<T>>(
    this: &NodeRef<T>,
    outputs: &OptList<G, 2>,
) -> AutogradError {
    let cell = this.cell();
    if outputs.len() != cell.edges.len() {
        return AutogradError::InvalidGradientCount {
            node: node_name(this),
            expected: cell.edges.len(),
            got: outputs.len(),
        };
    }
    let (i, (edge, g)) = cell
        .edges
        .iter()
        .zip(outputs.iter())
        .enumerate()
        .find(|(_, (e, g))| !fits(e, g))
        .expect("validate found a gradient that does not fit");
    let (Some(edge), Some(g)) = (edge, g) else {
        unreachable!("a missing edge or gradient always fits")
    };
    invalid_gradient(this, i, edge, g.with_data(TensorMeta::of))
}

/// The error for gradient `i` of node `this` whose shape or dtype is not its input's.
fn invalid_gradient<T: Tensor>(
    this: &NodeRef<T>,
    i: usize,
    edge: &Edge<T>,
    got: TensorMeta,
) -> AutogradError {
    let expected = match edge {
        Edge::Node { node, input_nr } => node
            .cell()
            .meta
            .get(*input_nr as usize)
            .unwrap_or_else(|| got.clone()),
        Edge::Leaf(v) => v.with_data(TensorMeta::of),
    };
    if got.shape() != expected.shape() {
        return AutogradError::InvalidGradientShape {
            node: node_name(this),
            index: i,
            got: got.shape().to_vec(),
            expected: expected.shape().to_vec(),
        };
    }
    AutogradError::InvalidGradientDtype {
        node: node_name(this),
        index: i,
        got: got.dtype().to_string(),
        expected: expected.dtype().to_string(),
    }
}

fn shape_ok<T: Tensor>(m: &TensorMeta, t: &T) -> bool {
    m.shape() == t.shape() && same_dtype(m.dtype(), t.dtype())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::add;
    use crate::tensor::testing::{Val, val};
    use crate::variable::Variable;

    fn vals(shape: &[usize], dtype: &'static str) -> Val {
        Val {
            shape: shape.to_vec(),
            data: vec![1.0; shape.iter().product()],
            dtype,
        }
    }

    #[test]
    fn broadcasting_aligns_from_the_last_dimension() {
        assert!(broadcasts_to(&[], &[2, 3]));
        assert!(broadcasts_to(&[3], &[2, 3]));
        assert!(broadcasts_to(&[1, 3], &[2, 3]));
        assert!(broadcasts_to(&[2, 1], &[2, 3]));
        assert!(!broadcasts_to(&[2], &[2, 3]));
        assert!(!broadcasts_to(&[4, 2, 3], &[2, 3]));
    }

    #[test]
    fn a_gradient_fits_its_inputs_shape_and_dtype() {
        let x = Variable::new(vals(&[2], "f64"), true);
        let leaf = x.gradient_edge().unwrap();
        assert!(fits_edge(&leaf, &Some(vals(&[2], "f64"))));
        assert!(fits_edge(&leaf, &None::<Val>), "no gradient always fits");
        assert!(!fits_edge(&leaf, &Some(vals(&[3], "f64"))));
        assert!(!fits_edge(&leaf, &Some(vals(&[2], "f32"))));
        let a = add(&x, &x);
        let node = a.gradient_edge().unwrap();
        assert!(fits_edge(&node, &Some(vals(&[2], "f64"))));
        assert!(!fits_edge(&node, &Some(vals(&[2, 1], "f64"))));
    }

    #[test]
    fn a_wrong_gradient_is_pytorchs_shape_or_dtype_error() {
        let x = Variable::new(vals(&[2], "f64"), true);
        let a = add(&x, &x);
        let f = a.grad_fn().unwrap();
        let edge = x.gradient_edge().unwrap();
        let shape = invalid_gradient(&f, 1, &edge, TensorMeta::of(&vals(&[3], "f64")));
        assert!(matches!(
            shape,
            AutogradError::InvalidGradientShape { index: 1, .. }
        ));
        let dtype = invalid_gradient(&f, 0, &edge, TensorMeta::of(&vals(&[2], "f32")));
        assert!(matches!(
            dtype,
            AutogradError::InvalidGradientDtype { index: 0, .. }
        ));
    }

    #[test]
    fn a_broadcast_or_other_dtype_gradient_is_adjusted_when_the_tensor_type_can() {
        let x = Variable::new(val(1.0), true);
        let a = add(&x, &x);
        let f = a.grad_fn().unwrap();
        // One gradient per input of `add`: one broadcast, one of another dtype.
        let mut out = OptList::<Val, 2>::new();
        out.push(Some(vals(&[2, 1], "f64")));
        out.push(Some(vals(&[], "f32")));
        assert!(validate(&f, &mut out).is_ok());
        assert_eq!(
            out[0],
            Some(Val {
                shape: vec![],
                data: vec![2.0],
                dtype: "f64"
            })
        );
        assert_eq!(out[1].as_ref().unwrap().dtype, "f64");
        // A count that is not the node's is refused.
        let mut one = OptList::<Val, 2>::new();
        one.push(Some(val(1.0)));
        assert!(matches!(
            validate(&f, &mut one),
            Err(AutogradError::InvalidGradientCount {
                expected: 2,
                got: 1,
                ..
            })
        ));
    }
}
