//! The gradcheck cases and the fixture dispatch of the embedding family
//! (`embedding_dense_backward`): repeated indices, `padding_idx`, indices of several dims.
//! `scale_grad_by_freq` has no case: PyTorch's double backward of
//! `embedding_dense_backward` (its entry, as written) leaves out the `1 / count`, so
//! gradcheck of that case fails as PyTorch's own does; the fixtures record PyTorch's values.

use super::args::{Args, R, ip};
use super::case::{Case, c, case};
use super::*;
use crate::ops::*;
use autograd::runtime::Variable;

/// The cases, appended to [`cases::cases`](super::cases::cases).
pub fn cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(3190);
    let idx = iv::<B>(&[1, 4, 1, 0, 2, 1], &[2, 3]);
    let pad = idx.clone();
    let flat = iv::<B>(&[3, 0, 3, 3], &[4]);
    vec![
        case(
            "embedding_dense_backward",
            "indices [2, 3], repeated, 5 weights",
            vec![r.t(&[2, 3, 4])],
            move |x| embedding_dense_backward(&x[0], &c(&idx), 5, -1, false).unwrap(),
        ),
        case(
            "embedding_dense_backward",
            "padding_idx 1 (its rows not added), non-contiguous gradient",
            vec![r.nc(&[2, 3, 2])],
            move |x| embedding_dense_backward(&x[0], &c(&pad), 6, 1, false).unwrap(),
        ),
        case(
            "embedding_dense_backward",
            "1-d indices, unused rows",
            vec![r.t(&[4, 3])],
            move |x| embedding_dense_backward(&x[0], &c(&flat), 5, -1, false).unwrap(),
        ),
    ]
}

/// The fixture dispatch of these operators (`None`: not one of them).
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> Option<R<Vec<Variable<B>>>> {
    dispatch_embedding(op, a).transpose()
}

/// `Ok(None)` for an operator that is not one of these.
fn dispatch_embedding<B: ConformanceTensor>(op: &str, a: &Args<B>) -> R<Option<Vec<Variable<B>>>> {
    let r = match op {
        "embedding_dense_backward" => ip(embedding_dense_backward(
            &a.t("grad_output")?,
            &a.t("indices")?,
            a.i("num_weights")?,
            a.i("padding_idx")?,
            a.b("scale_grad_by_freq")?,
        )),
        _ => return Ok(None),
    };
    r.map(Some)
}
