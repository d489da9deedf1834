//! In-place (`op_`) and out= variants: every in-place operator with a backward node gives the
//! same values and gradients as its out-of-place operator; every out= variant writes the
//! functional result (resizing out, or through a view into its base) and refuses inputs
//! that require grad. Both lists are checked against the analysis of the YAML files, so a
//! new variant cannot escape.

mod common;

use autograd_opset::conformance::out_cases::{check_out, out_cases};
use common::inplace_cases::*;
use common::*;
use ndtensor::ops::*;
use ndtensor::{Var, param};
use std::collections::BTreeSet;

#[test]
fn zero_and_fill_cut_the_history_of_what_they_overwrite() {
    // PyTorch: b = x * 2; b.zero_(); (b + x).sum().backward() gives x.grad == 1.
    for fill in [true, false] {
        let x = param(T::from_vec(vec![1.0, 2.0, 3.0], &[3]));
        let b = mul_scalar(&x, 2.0).unwrap();
        if fill {
            fill_scalar_(&b, 7.0).unwrap();
        } else {
            zero_(&b).unwrap();
        }
        sum(&add_tensor(&b, &x, 1.0).unwrap(), None)
            .unwrap()
            .backward()
            .unwrap();
        assert_eq!(x.grad().unwrap().data().to_vec(), vec![1.0, 1.0, 1.0]);
    }
}

#[test]
fn every_inplace_operator_has_a_case() {
    let covered: BTreeSet<&str> = inplace_cases().iter().map(|c| c.op).collect();
    let inplace: Vec<_> = differentiable_functions()
        .into_iter()
        .filter(|(_, k)| *k == "inplace")
        .collect();
    assert_eq!(inplace.len(), covered.len(), "{inplace:?}");
    let missing: Vec<String> = inplace
        .into_iter()
        .filter(|(op, kind)| *kind == "inplace" && !covered.contains(op.as_str()))
        .map(|(op, _)| op)
        .collect();
    assert!(
        missing.is_empty(),
        "in-place operators without a case: {missing:?}"
    );
}

#[test]
fn inplace_gradients_equal_out_of_place_gradients() {
    let r = Rng::new(5);
    for c in inplace_cases() {
        let w = Var::from_data(r.t(c.x.shape()));
        // Out of place.
        let x1 = param(c.x.clone());
        let o1: Vec<Var> = c.others.iter().cloned().map(param).collect();
        let y1 = (c.functional)(&mul_scalar(&x1, 1.0).unwrap(), &o1);
        sum(&mul_tensor(&y1, &w).unwrap(), None)
            .unwrap()
            .backward()
            .unwrap();
        // In place, on a non-leaf.
        let x2 = param(c.x.clone());
        let o2: Vec<Var> = c.others.iter().cloned().map(param).collect();
        let t = mul_scalar(&x2, 1.0).unwrap();
        let before = t.version();
        let y2 = (c.inplace)(&t, &o2);
        assert!(y2.ptr_eq(&t), "{}: returns self", c.op);
        assert_eq!(t.version(), before + 1, "{}: bumps the version", c.op);
        // Fills have their own entries (PyTorch's ZeroBackward0, FillBackward0), and so has
        // `copy_` (the op set's entry of PyTorch's manual wrapper); the others reuse their
        // functional variant's.
        let expected = match c.op {
            "zero_" => "ZeroBackward0".to_string(),
            "fill_.Scalar" => "FillBackward0".to_string(),
            "copy_" => "CopyBackward0".to_string(),
            _ => y1.grad_fn().unwrap().name().to_string(),
        };
        assert_eq!(
            t.grad_fn().unwrap().name(),
            expected,
            "{}: the backward node",
            c.op
        );
        assert_eq!(t.data().to_vec(), y1.data().to_vec(), "{}: values", c.op);
        sum(&mul_tensor(&t, &w).unwrap(), None)
            .unwrap()
            .backward()
            .unwrap();
        let close = |a: &T, b: &T| {
            a.to_vec()
                .iter()
                .zip(b.to_vec())
                .all(|(p, q)| (p - q).abs() < 1e-12)
        };
        assert!(
            close(&x1.grad().unwrap().data(), &x2.grad().unwrap().data()),
            "{}: grad of self",
            c.op
        );
        for (i, (a, b)) in o1.iter().zip(&o2).enumerate() {
            let (ga, gb) = (a.grad().unwrap().data(), b.grad().unwrap().data());
            assert_eq!(ga.shape(), gb.shape(), "{}: grad shape of input {i}", c.op);
            assert!(close(&ga, &gb), "{}: grad of input {i}", c.op);
        }
    }
}

#[test]
fn inplace_on_a_leaf_that_requires_grad_is_refused() {
    let x = param(Rng::new(1).t::<T>(&[3]));
    let err = relu_(&x).unwrap_err().to_string();
    assert!(err.contains("leaf Variable that requires grad"), "{err}");
}

#[test]
fn inplace_on_a_saved_tensor_fails_backward() {
    // tanh saves its result; changing it in place makes backward fail, as in PyTorch.
    let x = param(Rng::new(2).t::<T>(&[3]));
    let y = tanh(&x).unwrap();
    mul_scalar_(&y, 2.0).unwrap();
    let err = sum(&y, None).unwrap().backward().unwrap_err().to_string();
    assert!(err.contains("modified by an inplace operation"), "{err}");
}

#[test]
fn every_out_variant_has_a_case() {
    let covered: BTreeSet<&str> = out_cases::<T>().iter().map(|c| c.op).collect();
    let n_out = all_functions().iter().filter(|(_, k)| *k == "out").count();
    assert_eq!(n_out, covered.len());
    let missing: Vec<String> = all_functions()
        .into_iter()
        .filter(|(op, kind)| *kind == "out" && !covered.contains(op.as_str()))
        .map(|(op, _)| op)
        .collect();
    assert!(
        missing.is_empty(),
        "out= variants without a case: {missing:?}"
    );
}

/// The kit's out= cases (`autograd_opset::conformance::out_cases`): each writes the
/// functional result into an empty out, one of the result's shape, one of another shape
/// (resized, as PyTorch resizes it) and a view of a base (the base changes), and refuses
/// inputs that require grad.
#[test]
fn out_variants_write_the_functional_result_and_refuse_grad() {
    for c in out_cases::<T>() {
        check_out(&c).unwrap_or_else(|e| panic!("{}: {e}", c.op));
    }
}

/// Second derivatives through every in-place op. Those whose formula uses the original `self`
/// (`mul_`, `div_`, `log_`, `sin_`, ...) depend on the generated wrapper saving a recorded copy
/// of `self` (`clone_var`, PyTorch's `self.clone()`), so the terms through it are kept.
#[test]
fn inplace_second_derivatives_match() {
    use autograd::gradcheck::{Tolerances, gradgradcheck};
    let tol = Tolerances {
        eps: 1e-5,
        atol: 1e-4,
        rtol: 1e-3,
    };
    let mut failures = Vec::new();
    for c in inplace_cases() {
        let inputs: Vec<T> = std::iter::once(c.x.clone())
            .chain(c.others.iter().cloned())
            .collect();
        let f = |x: &[Var]| {
            let t = mul_scalar(&x[0], 1.0).unwrap();
            (c.inplace)(&t, &x[1..]);
            t
        };
        if let Err(e) = gradgradcheck(f, &inputs, tol) {
            failures.push(format!("{}: {e}", c.op));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn inplace_second_derivatives_through_saved_results() {
    use autograd::gradcheck::{Tolerances, gradgradcheck};
    let r = Rng::new(4);
    let tol = Tolerances {
        eps: 1e-5,
        atol: 1e-4,
        rtol: 1e-3,
    };
    for (name, f) in [
        (
            "exp_",
            exp_ as fn(&Var) -> Result<Var, autograd::runtime::AutogradError>,
        ),
        ("tanh_", tanh_),
        ("sigmoid_", sigmoid_),
        ("sqrt_", sqrt_),
    ] {
        let g = move |x: &[Var]| {
            let t = mul_scalar(&x[0], 1.0).unwrap();
            f(&t).unwrap();
            t
        };
        gradgradcheck(g, &[r.pos(&[2, 3])], tol).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn cat_keeps_only_sizes_so_inputs_may_change_afterwards() {
    // PyTorch: y = torch.cat([a, b]); a.mul_(2) (a a non-leaf); y.sum().backward() is fine.
    let x = param(T::from_vec(vec![1.0, 2.0], &[2]));
    let a = mul_scalar(&x, 1.0).unwrap();
    let b = mul_scalar(&x, 3.0).unwrap();
    let y = cat(&[a.clone(), b], 0).unwrap();
    mul_scalar_(&a, 2.0).unwrap();
    sum(&y, None).unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().data().to_vec(), vec![4.0, 4.0]);
}
