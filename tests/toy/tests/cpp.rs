//! The toy's layer generated from PyTorch's own C++ formulas (`cpp/derivatives.yaml`, copied
//! verbatim): every op against finite differences, first and second order and forward mode,
//! with a scalar broadcast against a vector (PyTorch's formulas leave the gradient of the
//! broadcast input unreduced; the engine reduces it, as PyTorch's does).

use autograd::gradcheck::{Tolerances, check_forward, gradcheck, gradgradcheck};
use autograd::runtime::Variable;
use autograd_toy::Toy;
use autograd_toy::cpp::ops::*;

type V = Variable<Toy>;
type Case = (&'static str, fn(&[V]) -> V, Vec<Toy>);

fn vec2() -> Toy {
    Toy::vec(vec![0.7, 1.9])
}

fn cases() -> Vec<Case> {
    let two = || vec![vec2(), Toy::vec(vec![1.3, -0.4])];
    let bcast = || vec![vec2(), Toy::scalar(1.6)];
    vec![
        ("add", |x| add_tensor(&x[0], &x[1], 2.5), two()),
        (
            "add scalar other",
            |x| add_tensor(&x[0], &x[1], 2.5),
            bcast(),
        ),
        ("sub", |x| sub_tensor(&x[0], &x[1], 0.5), two()),
        (
            "sub scalar self",
            |x| sub_tensor(&x[1], &x[0], 1.0),
            bcast(),
        ),
        ("mul", |x| mul_tensor(&x[0], &x[1]), two()),
        ("mul scalar other", |x| mul_tensor(&x[0], &x[1]), bcast()),
        ("mul.Scalar", |x| mul_scalar(&x[0], -3.0), vec![vec2()]),
        ("div", |x| div_tensor(&x[0], &x[1]), two()),
        ("div scalar other", |x| div_tensor(&x[0], &x[1]), bcast()),
        ("neg", |x| neg(&x[0]), vec![vec2()]),
        ("exp", |x| exp(&x[0]), vec![vec2()]),
        ("log", |x| log(&x[0]), vec![vec2()]),
        ("sin", |x| sin(&x[0]), vec![vec2()]),
        ("cos", |x| cos(&x[0]), vec![vec2()]),
        ("sum", |x| sum(&x[0], None), vec![vec2()]),
        (
            "expand",
            |x| expand(&x[0], &[3], false),
            vec![Toy::scalar(0.3)],
        ),
    ]
}

fn second_order() -> Tolerances {
    Tolerances {
        eps: 1e-5,
        atol: 1e-4,
        rtol: 1e-3,
    }
}

#[test]
fn every_op_passes_gradcheck_and_gradgradcheck() {
    for (name, f, inputs) in cases() {
        gradcheck(f, &inputs, Tolerances::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        gradgradcheck(f, &inputs, second_order()).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn every_op_passes_the_forward_check() {
    for (name, f, inputs) in cases() {
        check_forward(f, &inputs, Tolerances::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn the_broadcast_input_gets_the_summed_gradient() {
    // d(sum(x * s))/ds = sum(x), computed by PyTorch's `mul_tensor_backward(grad, self, ..)`
    // as the vector `grad * x` and reduced by the engine.
    let x = V::new(vec2(), true);
    let s = V::new(Toy::scalar(1.6), true);
    sum(&mul_tensor(&x, &s), None).backward().unwrap();
    let gs = s.grad().unwrap().data();
    assert_eq!(gs.shape, Vec::<usize>::new());
    assert!((gs.data[0] - 2.6).abs() < 1e-12, "{gs:?}");
}
