//! The hand-written nodes of `examples/custom_op.rs`, checked like the generated ones.

#[path = "../examples/custom_op.rs"]
#[allow(dead_code)]
mod custom_op;

use autograd::gradcheck::{Tolerances, check_forward, gradcheck, gradgradcheck};
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

#[test]
fn custom_ops_have_forward_mode_rules() {
    // clip_grad clips gradients on purpose: with a large bound its vjp is the true one.
    let f = |x: &[Var]| mul_tensor(&softplus(&x[0]), &clip_grad(&x[0], 1e9)).unwrap();
    check_forward(f, &[input()], Tolerances::default()).unwrap();
    // Forward over reverse through the hand-written backward node.
    let x = Var::from_data(input());
    let dir = Var::from_data(NdTensor::from_vec(
        vec![1.0, -0.5, 0.3, 0.2, -1.0, 0.7],
        &[2, 3],
    ));
    let loss = |p: &[Var]| sum(&mul_tensor(&softplus(&p[0]), &p[0]).unwrap(), None);
    let (_, hv) =
        autograd::functional::hvp(loss, std::slice::from_ref(&x), std::slice::from_ref(&dir))
            .unwrap();
    // d²/dx² (x softplus(x)) = 2 s(x) + x s(x) (1 - s(x)), s the sigmoid, elementwise.
    let want: Vec<f64> = input()
        .to_vec()
        .iter()
        .zip(dir.data().to_vec())
        .map(|(x, v)| {
            let s = 1.0 / (1.0 + (-x).exp());
            v * (2.0 * s + x * s * (1.0 - s))
        })
        .collect();
    for (a, b) in hv[0].data().to_vec().iter().zip(&want) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
}
