//! A node that leaves a broadcast gradient unreduced, as PyTorch's formulas do
//! (`self: grad * other`): the engine sums it to the input's shape with ndtensor's
//! `Tensor::sum_to`, in both backward forms (raw, and recorded under `create_graph`), and
//! gradgradcheck holds through the reduction. (Every backend's kit runs the same reduction:
//! the op set's formulas leave broadcast gradients to the engine, and its cases broadcast.)

use autograd::gradcheck::{Tolerances, gradcheck, gradgradcheck};
use autograd::runtime::{AutogradError, Node, VariableList, record, should_record, variable_list};
use ndtensor::ops::*;
use ndtensor::{NdTensor, Var};

/// `x * w` for `x: [3]` and `w: [2, 3]`, with the gradient of `x` left as `grad * w`
/// (shape `[2, 3]`).
struct MulUnreduced {
    x: Var,
    w: Var,
}

impl Node<NdTensor<f64>> for MulUnreduced {
    fn name(&self) -> &str {
        "MulUnreducedBackward"
    }
    fn apply(
        &mut self,
        grads: VariableList<NdTensor<f64>>,
    ) -> Result<VariableList<NdTensor<f64>>, AutogradError> {
        let g = grads[0].clone().expect("a gradient");
        Ok(variable_list![
            Some(mul_tensor(&g, &self.w)?),
            Some(mul_tensor(&g, &self.x)?)
        ])
    }
}

fn mul_unreduced(x: &Var, w: &Var) -> Var {
    let raw = mul_tensor(x, w).unwrap().data();
    let node = MulUnreduced {
        x: x.clone(),
        w: w.clone(),
    };
    if should_record(&[x, w]) {
        record(node, &[Some(x), Some(w)], [raw]).0[0].clone()
    } else {
        Var::from_data(raw)
    }
}

#[test]
fn the_engine_reduces_what_the_node_left_broadcast() {
    let x = Var::new(NdTensor::from_vec(vec![1.0, 2.0, 3.0], &[3]), true);
    let w = Var::new(
        NdTensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]),
        true,
    );
    sum(&mul_unreduced(&x, &w), None)
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(x.grad().unwrap().data().to_vec(), vec![5.0, 7.0, 9.0]);
    assert_eq!(
        w.grad().unwrap().data().to_vec(),
        vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]
    );
}

#[test]
fn gradients_of_the_reduction_are_checked() {
    let f = |v: &[Var]| mul_unreduced(&v[0], &v[1]);
    let inputs = [
        NdTensor::from_vec(vec![0.5, -1.0, 2.0], &[3]),
        NdTensor::from_vec(vec![1.0, 2.0, 3.0, -4.0, 5.0, 0.25], &[2, 3]),
    ];
    gradcheck(f, &inputs, Tolerances::default()).unwrap();
    gradgradcheck(f, &inputs, Tolerances::default()).unwrap();
}
