//! The fallible backend: every op gradient-checked (first and second order) through the
//! generated `Result`-returning wrappers, and kernel errors reaching the caller whole.

use autograd::gradcheck::{Tolerances, gradcheck, gradgradcheck};
use autograd::runtime::{AutogradError, Variable};
use autograd_fallible::ops::*;
use autograd_fallible::{KernelError, Vector};

type F = fn(&[Variable<Vector>]) -> Result<Variable<Vector>, AutogradError>;

fn v(x: &[f64]) -> Vector {
    Vector::vec(x.to_vec())
}

/// (name, function, inputs); the names are the functions of derivatives.yaml.
fn cases() -> Vec<(&'static str, F, Vec<Vector>)> {
    let a = v(&[0.3, 1.2, 0.7]);
    let b = v(&[1.1, 0.4, 2.5]);
    vec![
        (
            "add.Tensor",
            |x| add_tensor(&x[0], &x[1]),
            vec![a.clone(), b.clone()],
        ),
        (
            "mul.Tensor",
            |x| mul_tensor(&x[0], &x[1]),
            vec![a.clone(), b.clone()],
        ),
        (
            "div.Tensor",
            |x| div_tensor(&x[0], &x[1]),
            vec![a.clone(), b.clone()],
        ),
        ("exp", |x| exp(&x[0]), vec![a.clone()]),
        ("log", |x| log(&x[0]), vec![b.clone()]),
        ("neg", |x| neg(&x[0]), vec![a.clone()]),
        ("sum", |x| sum(&x[0]), vec![a.clone()]),
        ("expand", |x| expand(&x[0], &[3]), vec![Vector::scalar(0.4)]),
    ]
}

#[test]
fn every_op_passes_gradcheck_and_gradgradcheck() {
    let names: Vec<&str> = cases().iter().map(|c| c.0).collect();
    // No op of the YAML escapes: the list is compared with the analysis.
    let yaml = include_str!("../derivatives.yaml");
    let entries: Vec<&str> = yaml
        .lines()
        .filter_map(|l| l.strip_prefix("- name: "))
        .map(|s| s.split('(').next().unwrap_or_default())
        .collect();
    assert_eq!(names, entries);
    for (name, f, inputs) in cases() {
        let g = |x: &[Variable<Vector>]| f(x).expect("forward succeeds");
        gradcheck(g, &inputs, Tolerances::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        gradgradcheck(g, &inputs, Tolerances::default())
            .unwrap_or_else(|e| panic!("{name} (second order): {e}"));
    }
}

#[test]
fn kernel_errors_reach_the_caller_with_their_type() {
    let x = Variable::new(v(&[1.0, 2.0]), true);
    let y = Variable::new(v(&[1.0, 2.0, 3.0]), true);
    let err = mul_tensor(&x, &y).unwrap_err();
    assert_eq!(
        err.to_string(),
        "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
    );
    let AutogradError::Backend(inner) = &err else {
        panic!("not a backend error: {err:?}")
    };
    assert_eq!(
        inner.downcast_ref::<KernelError>(),
        Some(&KernelError::Shape(vec![2], vec![3]))
    );
    let neg_input = Variable::new(v(&[-1.0]), true);
    assert_eq!(
        log(&neg_input).unwrap_err().to_string(),
        "log: negative input"
    );
}

#[test]
fn in_place_and_out_variants_propagate_kernel_errors() {
    let a = Variable::new(v(&[1.0, 2.0]), false);
    let ok = Variable::new(v(&[3.0, 4.0]), false);
    let bad = Variable::new(v(&[1.0, 2.0, 3.0]), false);
    mul_tensor_(&a, &ok).unwrap();
    assert_eq!(*a.data().data, vec![3.0, 8.0]);
    assert!(mul_tensor_(&a, &bad).is_err());
    assert_eq!(
        *a.data().data,
        vec![3.0, 8.0],
        "a failed kernel leaves self as it was"
    );
    let out = Variable::new(v(&[0.0, 0.0]), false);
    mul_out(&a, &ok, &out).unwrap();
    assert_eq!(*out.data().data, vec![9.0, 32.0]);
    assert!(mul_out(&a, &bad, &out).is_err());
}

#[test]
fn backward_runs_the_fallible_formulas() {
    // expand's backward sums; sum's backward expands back to the saved sizes (`?` on each).
    let x = Variable::new(Vector::scalar(2.0), true);
    let y = expand(&x, &[3]).unwrap();
    let z = sum(&mul_tensor(&y, &y).unwrap()).unwrap();
    z.backward().unwrap();
    assert_eq!(*x.grad().unwrap().data().data, vec![12.0]);
}

#[test]
fn every_forward_formula_passes_check_forward() {
    use autograd::gradcheck::check_forward;
    for (name, f, inputs) in cases() {
        let g = |x: &[Variable<Vector>]| f(x).expect("forward succeeds");
        if name == "log" {
            continue; // no forward formula: see below
        }
        check_forward(g, &inputs, Tolerances::default())
            .unwrap_or_else(|e| panic!("{name} (forward): {e}"));
    }
}

#[test]
fn a_function_without_a_forward_formula_returns_pytorchs_error() {
    use autograd::runtime::{dual_level, make_dual};
    let _l = dual_level();
    let x = make_dual(
        &Variable::from_data(v(&[1.0, 2.0])),
        &Variable::from_data(v(&[1.0, 1.0])),
    )
    .unwrap();
    let err = log(&x).unwrap_err().to_string();
    assert!(
        err.starts_with(
            "Trying to use forward AD with log that does not support it because it has not been implemented yet."
        ),
        "{err}"
    );
    let err = mul_out(&x, &x, &Variable::from_data(v(&[0.0, 0.0])))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "Trying to use forward AD with mul_out that does not support it because it is an out= function"
    );
    // In place: the functional formula with `self` before the op.
    let t = neg(&x).unwrap();
    mul_tensor_(&t, &Variable::from_data(v(&[3.0, 3.0]))).unwrap();
    let tt = autograd::runtime::unpack_dual(&t).unwrap().tangent.unwrap();
    assert_eq!(*tt.data().data, vec![-3.0, -3.0]);
}
