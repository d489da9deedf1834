//! The hand-written nodes of `examples/custom_op.rs`, checked like the generated ones.

#[path = "../examples/custom_op.rs"]
#[allow(dead_code)]
mod custom_op;

use autograd::gradcheck::{Tolerances, gradcheck, gradgradcheck};
use custom_op::{clip_grad, softplus};
use ndtensor::ops::*;
use ndtensor::{NdTensor, Var};

fn input() -> NdTensor<f64> {
    NdTensor::from_vec(vec![-2.0, -0.3, 0.0, 0.4, 1.7, 30.0], &[2, 3])
}

#[test]
fn softplus_passes_gradcheck_and_gradgradcheck() {
    let f = |x: &[Var]| mul_tensor(&softplus(&x[0]), &x[0]).unwrap();
    gradcheck(f, &[input()], Tolerances::default()).unwrap();
    let tol = Tolerances {
        eps: 1e-5,
        atol: 1e-4,
        rtol: 1e-3,
    };
    gradgradcheck(f, &[input()], tol).unwrap();
}

#[test]
fn softplus_matches_the_composition_of_generated_ops() {
    let x: Var = Var::from_data(NdTensor::from_vec(vec![-2.0, -0.3, 0.4, 1.7], &[4]));
    let fused = softplus(&x).data().to_vec();
    let composed = log(&add_scalar(&exp(&x).unwrap(), 1.0, 1.0).unwrap())
        .unwrap()
        .data()
        .to_vec();
    for (a, b) in fused.iter().zip(composed) {
        assert!((a - b).abs() < 1e-12);
    }
}

#[test]
fn clip_grad_clips_only_the_gradient() {
    let x: Var = Var::new(NdTensor::from_vec(vec![1.0, 2.0, 3.0], &[3]), true);
    let y = mul_scalar(&clip_grad(&x, 1.5), 2.0).unwrap();
    assert_eq!(y.data().to_vec(), vec![2.0, 4.0, 6.0]);
    sum(&y, None).unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().data().to_vec(), vec![1.5, 1.5, 1.5]);
    // Within the bound it is the identity's gradient.
    let f = |x: &[Var]| mul_tensor(&clip_grad(&x[0], 100.0), &x[0]).unwrap();
    gradcheck(f, &[input()], Tolerances::default()).unwrap();
}

#[test]
fn the_example_runs_and_exports_dot() {
    custom_op::run().expect("the example runs");
    let dot = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/graph.dot")).unwrap();
    for name in [
        "SoftplusBackward",
        "ClipGradBackward",
        "MseLossBackward0",
        "MmBackward0",
        "loss",
    ] {
        assert!(dot.contains(name), "{name} missing from\n{dot}");
    }
}
