//! The gradcheck cases of the embedding-bag family (`_embedding_bag` and the composites
//! `embedding_bag`, `embedding_bag.padding_idx`: modes sum, mean and
//! max, `per_sample_weights`, `padding_idx`, `include_last_offset`, `scale_grad_by_freq`,
//! empty bags; `scale_grad_by_freq` has none: its gradient is scaled, not the derivative, in
//! PyTorch as in the op set: the fixtures record it), the cases of the backward ops (their
//! refusal of backward) and the fixture dispatch of the family. No gradgradcheck: PyTorch's
//! `_embedding_bag_backward` has no derivative (`not_implemented`), nor has the op set's;
//! no forward mode: PyTorch 2.15 refuses it ([`super::cases::NO_FORWARD_FORMULA`]).

use super::args::{Args, R, ip};
use super::case::{Case, c, case};
use super::*;
use crate::ops::*;
use autograd::runtime::{AutogradError, Variable};

const NO_GRADGRAD: &str = "PyTorch's _embedding_bag_backward has no derivative (not_implemented)";

/// One `_embedding_bag` case: the bags' values as a function of `weight` (and of
/// `per_sample_weights`, the second input, when `psw`).
#[allow(clippy::too_many_arguments)]
fn bag_case<B: ConformanceTensor>(
    label: &str,
    inputs: Vec<B>,
    indices: &[i64],
    offsets: &[i64],
    mode: i64,
    scale: bool,
    last: bool,
    padding_idx: i64,
) -> Case<B> {
    let idx: B = iv(indices, &[indices.len()]);
    let off: B = iv(offsets, &[offsets.len()]);
    let mut k = case("_embedding_bag", label, inputs, move |x| {
        let psw = x.get(1);
        _embedding_bag(
            &x[0],
            &c(&idx),
            &c(&off),
            scale,
            mode,
            false,
            psw,
            last,
            padding_idx,
        )
        .unwrap()
        .0
    });
    k.no_gradgrad = Some(NO_GRADGRAD);
    k
}

/// The cases, appended to [`cases::cases`](super::cases::cases).
pub fn cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(3300);
    let idx = [1, 2, 4, 4, 3, 0];
    vec![
        bag_case(
            "sum, an empty bag",
            vec![r.t(&[5, 3])],
            &idx,
            &[0, 2, 2, 5],
            0,
            false,
            false,
            -1,
        ),
        bag_case(
            "mean, padding_idx 4",
            vec![r.nc(&[5, 2])],
            &idx,
            &[0, 2, 2, 5],
            1,
            false,
            false,
            4,
        ),
        bag_case(
            "max, include_last_offset",
            vec![r.t(&[5, 3])],
            &idx,
            &[0, 2, 6],
            2,
            false,
            true,
            -1,
        ),
        bag_case(
            "sum, per_sample_weights",
            vec![r.t(&[5, 2]), r.t(&[6])],
            &idx,
            &[0, 3],
            0,
            false,
            false,
            -1,
        ),
        bag_case(
            "sum, trailing empty bag",
            vec![r.t(&[5, 2])],
            &idx,
            &[0, 1, 6],
            0,
            false,
            false,
            -1,
        ),
        bag_case(
            "max, padding_idx 4, all-padding bag",
            vec![r.t(&[5, 2])],
            &[4, 4, 1, 3],
            &[0, 2],
            2,
            false,
            false,
            4,
        ),
        composite_case("embedding_bag", "mean", vec![r.t(&[5, 2])], None),
        composite_case(
            "embedding_bag.padding_idx",
            "sum, padding_idx -1 (row 4)",
            vec![r.t(&[5, 2])],
            Some(-1),
        ),
        backward_case("_embedding_bag_backward", "sum", vec![r.t(&[3, 2])]),
        backward_case("_embedding_bag_dense_backward", "mean", vec![r.t(&[3, 2])]),
    ]
}

/// A case of the composites `embedding_bag` (`padding_idx` `None`) and
/// `embedding_bag.padding_idx` (mode sum with `padding_idx`, mean without).
fn composite_case<B: ConformanceTensor>(
    op: &'static str,
    label: &str,
    inputs: Vec<B>,
    pad: Option<i64>,
) -> Case<B> {
    let idx: B = iv(&[1, 2, 4, 4, 3, 0], &[6]);
    let off: B = iv(&[0, 2, 2], &[3]);
    let mut k = case(op, label, inputs, move |x| {
        let (i, o) = (c(&idx), c(&off));
        match pad {
            None => embedding_bag(&x[0], &i, &o, false, 1, false, None, false),
            Some(p) => {
                embedding_bag_padding_idx(&x[0], &i, &o, false, 0, false, None, false, Some(p))
            }
        }
        .unwrap()
        .0
    });
    k.no_gradgrad = Some(NO_GRADGRAD);
    k
}

/// A case of a backward op, whose derivatives PyTorch leaves `not_implemented`: backward
/// fails with its text (`grad`: the input, bags `[0, 2, 2]` of six indices).
fn backward_case<B: ConformanceTensor>(op: &'static str, label: &str, inputs: Vec<B>) -> Case<B> {
    let idx: B = iv(&[1, 2, 4, 4, 3, 0], &[6]);
    let off: B = iv(&[0, 2, 2], &[3]);
    let o2b: B = iv(&[0, 0, 2, 2, 2, 2], &[6]);
    let size: B = iv(&[2, 0, 4], &[3]);
    let mut k = case(op, label, inputs, move |x| {
        let (i, o, b, s) = (c(&idx), c(&off), c(&o2b), c(&size));
        match op {
            "_embedding_bag_backward" => {
                _embedding_bag_backward(&x[0], &i, &o, &b, &s, &s, 5, false, 0, false, None, -1)
            }
            _ => _embedding_bag_dense_backward(&x[0], &i, &b, &s, &s, 5, false, 1, None, -1),
        }
        .unwrap()
    });
    k.backward_refusal = Some(match op {
        "_embedding_bag_backward" => {
            "the derivative for '_embedding_bag_backward' is not implemented."
        }
        _ => "the derivative for '_embedding_bag_dense_backward' is not implemented.",
    });
    k
}

/// A four-output op's result.
type Four<B> = Result<(Variable<B>, Variable<B>, Variable<B>, Variable<B>), AutogradError>;

/// The four outputs of `_embedding_bag`.
fn four<B: ConformanceTensor>(r: Four<B>) -> R<Vec<Variable<B>>> {
    r.map(|(a, b, c, d)| vec![a, b, c, d])
        .map_err(|e| e.to_string())
}

/// The fixture dispatch of these operators (`None`: not one of them).
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> Option<R<Vec<Variable<B>>>> {
    dispatch_bag(op, a).transpose()
}

/// `Ok(None)` for an operator that is not one of these.
fn dispatch_bag<B: ConformanceTensor>(op: &str, a: &Args<B>) -> R<Option<Vec<Variable<B>>>> {
    let r = match op {
        "_embedding_bag" => four(_embedding_bag(
            &a.t("weight")?,
            &a.t("indices")?,
            &a.t("offsets")?,
            a.b("scale_grad_by_freq")?,
            a.i("mode")?,
            a.b("sparse")?,
            a.ot("per_sample_weights")?.as_ref(),
            a.b("include_last_offset")?,
            a.i("padding_idx")?,
        )),
        "embedding_bag" => four(embedding_bag(
            &a.t("weight")?,
            &a.t("indices")?,
            &a.t("offsets")?,
            a.b("scale_grad_by_freq")?,
            a.i("mode")?,
            a.b("sparse")?,
            a.ot("per_sample_weights")?.as_ref(),
            a.b("include_last_offset")?,
        )),
        "embedding_bag.padding_idx" => four(embedding_bag_padding_idx(
            &a.t("weight")?,
            &a.t("indices")?,
            &a.t("offsets")?,
            a.b("scale_grad_by_freq")?,
            a.i("mode")?,
            a.b("sparse")?,
            a.ot("per_sample_weights")?.as_ref(),
            a.b("include_last_offset")?,
            a.oi("padding_idx")?,
        )),
        "_embedding_bag_backward" => ip(_embedding_bag_backward(
            &a.t("grad")?,
            &a.t("indices")?,
            &a.t("offsets")?,
            &a.t("offset2bag")?,
            &a.t("bag_size")?,
            &a.t("maximum_indices")?,
            a.i("num_weights")?,
            a.b("scale_grad_by_freq")?,
            a.i("mode")?,
            a.b("sparse")?,
            a.ot("per_sample_weights")?.as_ref(),
            a.i("padding_idx")?,
        )),
        "_embedding_bag_dense_backward" => ip(_embedding_bag_dense_backward(
            &a.t("grad")?,
            &a.t("indices")?,
            &a.t("offset2bag")?,
            &a.t("bag_size")?,
            &a.t("maximum_indices")?,
            a.i("num_weights")?,
            a.b("scale_grad_by_freq")?,
            a.i("mode")?,
            a.ot("per_sample_weights")?.as_ref(),
            a.i("padding_idx")?,
        )),
        "_embedding_bag_per_sample_weights_backward" => {
            ip(_embedding_bag_per_sample_weights_backward(
                &a.t("grad")?,
                &a.t("weight")?,
                &a.t("indices")?,
                &a.t("offsets")?,
                &a.t("offset2bag")?,
                a.i("mode")?,
                a.i("padding_idx")?,
            ))
        }
        _ => return Ok(None),
    };
    r.map(Some)
}
