//! Every op of the toy's derivatives.yaml against finite differences, first and second order.

use autograd::gradcheck::{Tolerances, gradcheck, gradgradcheck};
use autograd::runtime::{AutogradError, Variable};
use autograd_toy::Toy;
use autograd_toy::ops::*;

mod common;
use common::{cases, v};

#[test]
fn every_op_passes_gradcheck() {
    for (name, f, inputs) in cases() {
        gradcheck(f, &inputs, Tolerances::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn every_op_passes_gradgradcheck() {
    let tol = Tolerances {
        eps: 1e-5,
        atol: 1e-4,
        rtol: 1e-3,
    };
    for (name, f, inputs) in cases() {
        gradgradcheck(f, &inputs, tol).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn gradcheck_catches_a_wrong_formula() {
    // A deliberately wrong "backward": the check must fail, so it can fail.
    let wrong = |x: &[Variable<Toy>]| -> Variable<Toy> {
        // y = x * x but the gradient flows through a detached copy of one factor: d/dx = x, not 2x.
        mul_tensor(&x[0], &x[0].detach())
    };
    assert!(gradcheck(wrong, &[v(&[0.5, 2.0])], Tolerances::default()).is_err());
}

#[test]
fn not_implemented_has_pytorchs_shape_then_the_reason() {
    let x = Variable::new(v(&[0.1, 0.2]), true);
    let y = sum(&sin(&x));
    let err = y.backward().unwrap_err().to_string();
    assert_eq!(
        err,
        "the derivative for 'sin' is not implemented. sin backward is left out on purpose"
    );
}

#[test]
fn third_derivative_through_generated_nodes() {
    // d³/dx³ exp(2x) = 8 exp(2x)
    let x = Variable::new(Toy::scalar(0.3), true);
    let y = exp(&mul_scalar(&x, 2.0));
    let opts = |cg| autograd::runtime::GradOptions {
        create_graph: cg,
        retain_graph: Some(true),
        ..Default::default()
    };
    let g1 = autograd::runtime::grad_with(&[y], std::slice::from_ref(&x), &[], opts(true)).unwrap()
        [0]
    .clone()
    .unwrap();
    let g2 = autograd::runtime::grad_with(&[g1], std::slice::from_ref(&x), &[], opts(true))
        .unwrap()[0]
        .clone()
        .unwrap();
    let g3 = autograd::runtime::grad_with(&[g2], std::slice::from_ref(&x), &[], opts(false))
        .unwrap()[0]
        .clone()
        .unwrap();
    let got = g3.data().data[0];
    assert!((got - 8.0 * (0.6f64).exp()).abs() < 1e-9, "{got}");
}

#[test]
fn inplace_matches_out_of_place_and_bumps_version() {
    let a = v(&[0.3, -1.2, 0.7]);
    let b = v(&[1.1, 0.4, -0.5]);
    // out of place
    let x1 = Variable::new(a.clone(), true);
    let y1 = sum(&mul_tensor(
        &mul_scalar(&x1, 2.0),
        &Variable::from_data(b.clone()),
    ));
    y1.backward().unwrap();
    // in place on a non-leaf (mul.Scalar saves nothing that the in-place op modifies)
    let x2 = Variable::new(a.clone(), true);
    let t = mul_scalar(&x2, 2.0);
    let before = t.version();
    let t2 = mul_tensor_(&t, &Variable::from_data(b.clone())).unwrap();
    assert_eq!(t.version(), before + 1);
    assert!(t2.ptr_eq(&t));
    assert_eq!(t.grad_fn().unwrap().name(), "MulBackward0");
    sum(&t).backward().unwrap();
    assert_eq!(x1.grad().unwrap().data(), x2.grad().unwrap().data());
}

#[test]
fn inplace_on_leaf_requiring_grad_is_refused() {
    let x = Variable::new(v(&[1.0]), true);
    let err = exp_(&x).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a leaf Variable that requires grad is being used in an in-place operation."
    );
}

#[test]
fn inplace_on_a_saved_output_fails_backward() {
    // exp saves its result; modifying it in place makes backward fail, as in PyTorch.
    let x = Variable::new(v(&[0.5]), true);
    let t = exp(&x);
    mul_tensor_(&t, &Variable::from_data(v(&[2.0]))).unwrap();
    let msg = sum(&t).backward().unwrap_err().to_string();
    assert!(msg.contains("output 0 of ExpBackward0"), "{msg}");
}

#[test]
fn modified_saved_input_fails_with_version_message() {
    let x = Variable::new(v(&[0.5, 1.5]), true);
    let t = mul_scalar(&x, 1.0);
    let y = sum(&mul_tensor(&t, &t)); // saves t
    tanh_(&t).unwrap(); // modifies it
    let err: AutogradError = y.backward().unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("modified by an inplace operation"), "{msg}");
    assert!(
        msg.contains("is at version 1; expected version 0 instead"),
        "{msg}"
    );
}

#[test]
fn out_variant_refuses_requires_grad_and_writes_out() {
    let x = Variable::new(v(&[1.0, 2.0]), true);
    let out = Variable::from_data(v(&[0.0, 0.0]));
    let err = mul_out(&x, &x, &out).unwrap_err().to_string();
    assert!(
        err.contains("out=... arguments don't support automatic differentiation"),
        "{err}"
    );
    let y = Variable::from_data(v(&[3.0, 4.0]));
    let r = add_out(&y, &y, 1.0, &out).unwrap();
    assert_eq!(r.data(), v(&[6.0, 8.0]));
    assert_eq!(out.version(), 1);
}

#[test]
fn non_differentiable_output_has_no_history() {
    let x = Variable::new(v(&[0.3, 2.0, -1.0]), true);
    let (values, indices) = max_dim(&x, 0, false);
    assert!(values.requires_grad());
    assert!(!indices.requires_grad());
    assert_eq!(indices.data(), Toy::scalar(1.0));
}

#[test]
fn nothing_recorded_without_grad() {
    let x = Variable::new(v(&[0.3]), true);
    {
        let _g = autograd::runtime::no_grad();
        assert!(exp(&x).grad_fn().is_none());
    }
    let c = Variable::from_data(v(&[0.3]));
    assert!(exp(&c).grad_fn().is_none());
    assert!(exp(&x).grad_fn().is_some());
}

#[test]
fn methods_on_variables() {
    use autograd_toy::VariableOps;
    let x = Variable::new(v(&[0.5, 1.0]), true);
    let y = x.exp().mul_tensor(&x).sum();
    y.backward().unwrap();
    // d/dx x e^x = (1 + x) e^x
    let g = x.grad().unwrap().data();
    assert!((g.data[0] - 1.5 * 0.5f64.exp()).abs() < 1e-12);
}

#[test]
fn inplace_op_second_derivatives() {
    // mul_ saves the original `self` for `other`'s formula: it must keep its history, so
    // that gradients of gradients flow through it (PyTorch saves `self.clone()`).
    let tol = Tolerances {
        eps: 1e-5,
        atol: 1e-4,
        rtol: 1e-3,
    };
    let f = |x: &[Variable<Toy>]| -> Variable<Toy> {
        let t = mul_scalar(&x[0], 1.0);
        mul_tensor_(&t, &x[1]).unwrap();
        t
    };
    let inputs = [v(&[0.3, -1.2, 0.7]), v(&[1.1, 0.4, -0.5])];
    gradcheck(f, &inputs, Tolerances::default()).unwrap();
    gradgradcheck(f, &inputs, tol).unwrap();
}

#[test]
fn a_function_without_an_entry_records_a_not_implemented_node() {
    // PyTorch 2.15: torch.floor_divide(x, 2.0) on x requiring grad has grad_fn
    // NotImplemented, and backward raises "derivative for aten::floor_divide is not
    // implemented".
    let x = Variable::new(v(&[1.5, 2.5]), true);
    let y = floor_divide_scalar(&x, 2.0);
    assert!(y.requires_grad());
    assert_eq!(y.grad_fn().unwrap().name(), "NotImplemented");
    let err = sum(&y).backward().unwrap_err().to_string();
    assert_eq!(err, "derivative for aten::floor_divide is not implemented");
    // In place on a non-leaf: the same history.
    let t = mul_scalar(&x, 1.0);
    floor_divide_scalar_(&t, 2.0).unwrap();
    assert_eq!(t.grad_fn().unwrap().name(), "NotImplemented");
    assert!(sum(&t).backward().is_err());
    // Nothing requires grad, or grad mode is off: no history.
    let c = Variable::new(v(&[1.5]), false);
    assert!(floor_divide_scalar(&c, 2.0).grad_fn().is_none());
    let _g = autograd::runtime::no_grad();
    assert!(floor_divide_scalar(&x, 2.0).grad_fn().is_none());
}
