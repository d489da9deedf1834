//! The gradcheck cases of `_softmax`, `_log_softmax` and their backward functions (issue
//! 30), appended to [`super::cases::cases`]: the backward functions on their own, so that
//! their entries (PyTorch's `softmax_double_backward`, the log-softmax formula) are checked
//! to the third order; and the program-format dispatch of the four operators.

use super::case::{Case, case};
use super::*;
use crate::ops::*;
use autograd::types::ScalarType;

/// The softmax cases.
pub fn softmax_cases<B: ConformanceTensor>(r: &Rng, cs: &mut Vec<Case<B>>) {
    cs.push(case(
        "_softmax",
        "dim 1, non-contiguous",
        vec![r.nc(&[2, 3, 2])],
        |x| _softmax(&x[0], 1, false).unwrap(),
    ));
    cs.push(case("_softmax", "last dim", vec![r.t(&[3, 4])], |x| {
        _softmax(&x[0], -1, false).unwrap()
    }));
    cs.push(case("_log_softmax", "dim 0", vec![r.t(&[3, 2])], |x| {
        _log_softmax(&x[0], 0, false).unwrap()
    }));
    cs.push(case(
        "_log_softmax",
        "last dim, non-contiguous",
        vec![r.nc(&[2, 4])],
        |x| _log_softmax(&x[0], -1, false).unwrap(),
    ));
    cs.push(case(
        "_softmax_backward_data",
        "grad_output and output",
        vec![r.t(&[2, 3]), r.t(&[2, 3])],
        |x| _softmax_backward_data(&x[0], &x[1], 1, ScalarType::F64).unwrap(),
    ));
    cs.push(case(
        "_softmax_backward_data",
        "dim 0, non-contiguous",
        vec![r.nc(&[3, 2]), r.t(&[3, 2])],
        |x| _softmax_backward_data(&x[0], &x[1], 0, ScalarType::F64).unwrap(),
    ));
    cs.push(case(
        "_log_softmax_backward_data",
        "grad_output and output",
        vec![r.t(&[2, 3]), r.t(&[2, 3])],
        |x| _log_softmax_backward_data(&x[0], &x[1], -1, ScalarType::F64).unwrap(),
    ));
    cs.push(case(
        "_log_softmax_backward_data",
        "dim 0, 3-d",
        vec![r.t(&[3, 2, 2]), r.nc(&[3, 2, 2])],
        |x| _log_softmax_backward_data(&x[0], &x[1], 0, ScalarType::F64).unwrap(),
    ));
}

/// The four operators of a fixture program, `None` for another.
pub fn dispatch<B: ConformanceTensor>(
    op: &str,
    a: &super::args::Args<B>,
) -> Option<super::args::R<Vec<Variable<B>>>> {
    let one = |r: Result<Variable<B>, autograd::runtime::AutogradError>| {
        r.map(|v| vec![v]).map_err(|e| e.to_string())
    };
    let call = || -> super::args::R<Vec<Variable<B>>> {
        let input_dtype = || {
            a.dtype("input_dtype")?
                .ok_or_else(|| "input_dtype: missing".to_string())
        };
        match op {
            "_softmax" => one(_softmax(&a.t("self")?, a.i("dim")?, a.b("half_to_float")?)),
            "_log_softmax" => one(_log_softmax(
                &a.t("self")?,
                a.i("dim")?,
                a.b("half_to_float")?,
            )),
            "_softmax_backward_data" => one(_softmax_backward_data(
                &a.t("grad_output")?,
                &a.t("output")?,
                a.i("dim")?,
                input_dtype()?,
            )),
            _ => one(_log_softmax_backward_data(
                &a.t("grad_output")?,
                &a.t("output")?,
                a.i("dim")?,
                input_dtype()?,
            )),
        }
    };
    matches!(
        op,
        "_softmax" | "_log_softmax" | "_softmax_backward_data" | "_log_softmax_backward_data"
    )
    .then(call)
}
