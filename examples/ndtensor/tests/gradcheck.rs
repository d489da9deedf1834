//! Every differentiable operator of the op set's derivatives.yaml against central finite
//! differences (first and second order), on random shapes with broadcasting and
//! non-contiguous inputs. The list of operators comes from the analysis of the YAML files,
//! so an operator added without a case fails `the_op_sets_conformance_kit_passes`.

mod common;

use autograd::gradcheck::{Tolerances, gradcheck};
use common::*;
use ndtensor::ops::*;
use ndtensor::{NdTensor, Var};

/// The op set's conformance kit on ndtensor: every differentiable function of the op set's
/// analysis has a case, and every case passes gradcheck, gradgradcheck and the forward-mode
/// check (what a new backend runs, `autograd_opset::conformance`).
#[test]
fn the_op_sets_conformance_kit_passes() {
    use autograd_opset::conformance::{check_every_case, missing_cases};
    let missing = missing_cases::<T>();
    assert!(missing.is_empty(), "{missing:?}");
    let failures = check_every_case::<T>();
    assert!(
        failures.is_empty(),
        "{} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn at_least_45_operators() {
    let n = differentiable_functions()
        .iter()
        .filter(|(_, k)| *k == "functional")
        .count();
    assert!(n >= 45, "{n} differentiable operators");
}

#[test]
fn gradcheck_catches_a_wrong_formula() {
    // d/dx (x * detach(x)) is x, not 2x: the check must notice.
    let wrong = |x: &[Var]| mul_tensor(&x[0], &x[0].detach()).unwrap();
    assert!(gradcheck(wrong, &[v(&[0.5, 2.0], &[2])], Tolerances::default()).is_err());
}

#[test]
fn f32_tensors_differentiate_too() {
    let x = ndtensor::param(NdTensor::<f32>::from_vec(vec![1.0, -2.0, 3.0], &[3]));
    let y = sum(&mul_tensor(&tanh(&x).unwrap(), &x).unwrap(), None).unwrap();
    y.backward().unwrap();
    let g = x.grad().unwrap().data();
    assert_eq!(autograd::runtime::Tensor::dtype(&g), "f32");
    for (gi, xi) in g.to_vec().iter().zip([1.0f32, -2.0, 3.0]) {
        let want = xi.tanh() + xi * (1.0 - xi.tanh() * xi.tanh());
        assert!((gi - want).abs() < 1e-6, "{gi} vs {want}");
    }
}

#[test]
fn embedding_padding_idx_and_scale_grad_by_freq_follow_pytorch() {
    // Not true gradients by design (PyTorch's documented behaviour): the padding row gets no
    // gradient, and with scale_grad_by_freq each row's gradient is divided by its count.
    let w = ndtensor::param(NdTensor::<f64>::zeros(&[4, 2]));
    let idx = Var::from_data(T::from_i64(vec![1, 0, 1, 3, 1], &[5]));
    let y = embedding(&w, &idx, 0, true, false).unwrap();
    sum(&y, None).unwrap().backward().unwrap();
    let g = w.grad().unwrap().data().to_vec();
    assert_eq!(g, vec![0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0]);
    let w = ndtensor::param(NdTensor::<f64>::zeros(&[4, 2]));
    sum(&embedding(&w, &idx, 0, false, false).unwrap(), None)
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(
        w.grad().unwrap().data().to_vec(),
        vec![0.0, 0.0, 3.0, 3.0, 0.0, 0.0, 1.0, 1.0]
    );
}

#[test]
fn embedding_sparse_gradients_are_refused() {
    // PyTorch's gradient for sparse=True is a sparse tensor; the op set has none, and says so
    // rather than giving a dense gradient.
    let w = ndtensor::param(NdTensor::<f64>::zeros(&[4, 2]));
    let idx = Var::from_data(T::from_i64(vec![1, 0, 1], &[3]));
    let y = embedding(&w, &idx, -1, false, true).unwrap();
    let e = sum(&y, None).unwrap().backward().unwrap_err();
    assert!(e.to_string().contains("sparse=True"), "{e}");
}

#[test]
fn embedding_bag_sparse_gradients_are_refused() {
    // As embedding's: PyTorch's gradient for sparse=True is a sparse tensor, which the op set
    // does not have; the forward ignores `sparse`, the backward says so.
    let w = ndtensor::param(NdTensor::<f64>::zeros(&[4, 2]));
    let idx = Var::from_data(T::from_i64(vec![1, 0, 1], &[3]));
    let off = Var::from_data(T::from_i64(vec![0, 2], &[2]));
    let (y, ..) = _embedding_bag(&w, &idx, &off, false, 0, true, None, false, -1).unwrap();
    let e = sum(&y, None).unwrap().backward().unwrap_err();
    assert!(e.to_string().contains("sparse=True"), "{e}");
}
