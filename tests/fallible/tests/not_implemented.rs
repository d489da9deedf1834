//! A fallible backend may leave kernels out: the generated `Backend` trait gives each one a
//! default returning PyTorch's "Could not run 'aten::OP' with arguments from the 'X' backend"
//! error (here `cos`, which `Vector` does not write), converted into the backend's error.

use autograd::runtime::{AutogradError, Variable};
use autograd_fallible::{Vector, ops};

#[test]
fn a_kernel_left_out_returns_pytorchs_error_naming_op_and_backend() {
    let x = Variable::new(Vector::vec(vec![0.5, 1.0]), true);
    let err = ops::cos(&x).unwrap_err();
    assert!(matches!(err, AutogradError::Backend(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "Could not run 'aten::cos' with arguments from the 'autograd_fallible::Vector' backend. \
         This could be because the operator doesn't exist for this backend, or was omitted \
         during the selective/custom build process (if using custom build)."
    );
}

#[test]
fn the_kernels_it_writes_still_run() {
    let x = Variable::new(Vector::vec(vec![0.5, 1.0]), true);
    let y = ops::exp(&x).unwrap();
    assert!((y.data().data[1] - 1f64.exp()).abs() < 1e-12);
}
