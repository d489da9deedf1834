//! A user-defined operator with a hand-written backward node (PyTorch's
//! `torch.autograd.Function`), used in the same graph as the generated operators, with its
//! forward-mode rule too (`Function.jvp`: `runtime::forward::propagate`, as generated wrappers
//! do; `record` alone gives a custom op's output no tangent), and the Graphviz DOT export of a
//! small graph.
//!
//! Run: `cargo run -p ndtensor --example custom_op` (writes `examples/ndtensor/graph.dot`;
//! render it with `dot -Tsvg graph.dot > graph.svg`).

use autograd::runtime::{
    AutogradError, Node, SavedVariable, VariableList, forward, record, should_record, to_dot,
    variable_list,
};
use ndtensor::ops::*;
use ndtensor::{Element, NdTensor, Var};

/// Backward of [`softplus`]: `grad * sigmoid(x)`, written with the generated ops, so it is
/// itself differentiable (second derivatives work).
pub struct SoftplusBackward<E: Element> {
    x: SavedVariable<NdTensor<E>>,
}

impl<E: Element> Node<NdTensor<E>> for SoftplusBackward<E> {
    fn name(&self) -> &str {
        "SoftplusBackward"
    }
    fn apply(
        &mut self,
        grads: VariableList<NdTensor<E>>,
    ) -> Result<VariableList<NdTensor<E>>, AutogradError> {
        let Some(g) = &grads[0] else {
            return Ok(variable_list![None]);
        };
        let x = self.x.unpack()?;
        Ok(variable_list![Some(mul_tensor(g, &sigmoid(&x)?)?)])
    }
    fn release_variables(&mut self) {
        self.x.reset();
    }
    fn visit_saved(&self, f: &mut dyn FnMut(&str, &SavedVariable<NdTensor<E>>)) {
        f("self", &self.x);
    }
}

/// `softplus(x) = log(1 + exp(x))`, fused: one raw pass (numerically stable) and one node.
pub fn softplus<E: Element>(x: &Var<E>) -> Var<E> {
    let raw = x.with_data(|t| {
        NdTensor::from_array(
            t.to_float()
                .arr()
                .mapv(|v| v.max(E::zero()) + (E::one() + (-v.abs()).exp()).ln()),
        )
    });
    let out = if should_record(&[x]) {
        let node = SoftplusBackward {
            x: SavedVariable::new(x, false),
        };
        let ([out], _handle) = record(node, &[Some(x)], [raw]);
        out
    } else {
        Var::from_data(raw)
    };
    // The jvp: `x_t * sigmoid(x)`, with generated ops (so nested levels and forward over
    // reverse work). An error becomes the output's tangent (this function cannot return it).
    if forward::is_forward_ad_enabled() {
        forward::propagate_deferred(&out, &[x], |level| {
            mul_tensor(&forward::tangent_or_zeros(x, level)?, &sigmoid(x)?)
        });
    }
    out
}

/// Backward of [`clip_grad`]: clamps the incoming gradient to `[-max, max]`.
pub struct ClipGradBackward {
    max: f64,
}

impl<E: Element> Node<NdTensor<E>> for ClipGradBackward {
    fn name(&self) -> &str {
        "ClipGradBackward"
    }
    fn apply(
        &mut self,
        grads: VariableList<NdTensor<E>>,
    ) -> Result<VariableList<NdTensor<E>>, AutogradError> {
        let g = grads[0]
            .as_ref()
            .map(|g| clamp(g, Some((-self.max).into()), Some(self.max.into())))
            .transpose()?;
        Ok(variable_list![g])
    }
}

/// The identity in the forward pass; clips the gradient flowing back through it.
pub fn clip_grad<E: Element>(x: &Var<E>, max: f64) -> Var<E> {
    let raw = x.data();
    let out = if should_record(&[x]) {
        record(ClipGradBackward { max }, &[Some(x)], [raw]).0[0].clone()
    } else {
        Var::from_data(raw)
    };
    // The jvp of the identity: the tangent itself.
    if forward::is_forward_ad_enabled() {
        forward::propagate_deferred(&out, &[x], |level| forward::tangent_or_zeros(x, level));
    }
    out
}

fn main() -> Result<(), AutogradError> {
    run()
}

/// The example: builds, exports and backpropagates a small graph.
pub fn run() -> Result<(), AutogradError> {
    // A one-layer softplus regression on four points, custom ops mixed with generated ones.
    let x = Var::from_data(NdTensor::<f64>::from_vec(
        vec![0.5, -1.0, 1.5, 2.0, -0.3, 0.8, 1.0, 0.0],
        &[4, 2],
    ))
    .named("x");
    let w = Var::new(NdTensor::from_vec(vec![0.3, -0.2], &[2, 1]), true).named("w");
    let b = Var::new(NdTensor::scalar(0.1), true).named("b");
    let target = Var::from_data(NdTensor::from_vec(vec![1.0, 0.2, 0.7, 0.9], &[4, 1]));

    let h = add_tensor(&mm(&x, &clip_grad(&w, 0.1))?, &b, 1.0)?;
    let y = softplus(&h);
    let loss = mse_loss(&y, &target, 1)?.named("loss");

    let dot = to_dot(std::slice::from_ref(&loss));
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/graph.dot");
    std::fs::write(path, &dot).expect("write graph.dot");
    println!("{dot}");
    println!("(written to {path})");

    loss.backward()?;
    println!("loss = {:.6}", loss.data().item());
    println!(
        "dloss/dw = {:?} (clipped to [-0.1, 0.1] by ClipGradBackward)",
        w.grad().unwrap().data().to_vec()
    );
    println!("dloss/db = {:.6}", b.grad().unwrap().data().item());
    Ok(())
}
