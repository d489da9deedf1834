//! The gradcheck cases of advanced indexing (`index.Tensor`, `index_put`) and `scatter`: integer indices
//! (repeated, negative, broadcast together, adjacent or split by a slice), boolean masks,
//! and `index_put` accumulating into repeated positions or writing distinct ones (with
//! repeated positions and `accumulate=false` only the last write survives, which PyTorch's
//! formula for `values` does not model: its gradient is not checked there).

use super::case::{Case, c, case};
use super::*;
use crate::ops::*;
use autograd::types::Scalar;

fn mask<B: ConformanceTensor>(x: &[bool], shape: &[usize]) -> B {
    B::from_bool(x, shape)
}

/// The cases, appended to [`cases::cases`](super::cases::cases).
pub fn cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(3131);
    let mut cs = Vec::new();
    let i: B = iv(&[2, 0, -1, 2], &[4]);
    cs.push(case(
        "index.Tensor",
        "one index, repeated and negative",
        vec![r.t(&[4, 3])],
        move |x| index_tensor(&x[0], &[Some(c(&i))]).unwrap(),
    ));
    let (i, j): (B, B) = (iv(&[0, 2], &[2, 1]), iv(&[1, 0, 1], &[3]));
    cs.push(case(
        "index.Tensor",
        "two indices broadcast, split by a slice (their dims first), non-contiguous",
        vec![r.nc(&[3, 4, 2])],
        move |x| index_tensor(&x[0], &[Some(c(&i)), None, Some(c(&j))]).unwrap(),
    ));
    let (i, j): (B, B) = (iv(&[1, 3, 1], &[3]), iv(&[0, 2, 2], &[3]));
    cs.push(case(
        "index.Tensor",
        "two adjacent indices after a slice",
        vec![r.t(&[2, 4, 3])],
        move |x| index_tensor(&x[0], &[None, Some(c(&i)), Some(c(&j))]).unwrap(),
    ));
    let m: B = mask(&[true, false, true, false, true, true], &[2, 3]);
    cs.push(case(
        "index.Tensor",
        "a 2-d mask",
        vec![r.t(&[2, 3, 2])],
        move |x| index_tensor(&x[0], &[Some(c(&m))]).unwrap(),
    ));
    let i: B = iv(&[1, 3, 1], &[3]);
    cs.push(case(
        "index_put",
        "accumulate, repeated positions",
        vec![r.t(&[4, 3]), r.t(&[3, 3])],
        move |x| index_put(&x[0], &[Some(c(&i))], &x[1], true).unwrap(),
    ));
    let (i, j): (B, B) = (iv(&[0, 2], &[2]), iv(&[1, 0], &[2]));
    cs.push(case(
        "index_put",
        "write distinct positions, values broadcast",
        vec![r.t(&[3, 2, 2]), r.t(&[2])],
        move |x| index_put(&x[0], &[Some(c(&i)), None, Some(c(&j))], &x[1], false).unwrap(),
    ));
    let m: B = mask(&[false, true, true], &[3]);
    cs.push(case(
        "index_put",
        "a mask, one value broadcast",
        vec![r.nc(&[3, 2]), r.t(&[1])],
        move |x| index_put(&x[0], &[Some(c(&m))], &x[1], false).unwrap(),
    ));
    let i: B = iv(&[2, 0, 1, 1, 2, 0], &[2, 3]);
    cs.push(case(
        "scatter.src",
        "distinct positions per column",
        vec![r.t(&[3, 3]), r.nc(&[2, 3])],
        move |x| scatter_src(&x[0], 0, &c(&i), &x[1]).unwrap(),
    ));
    let i: B = iv(&[1, 0, 2], &[3, 1]);
    cs.push(case(
        "scatter.value",
        "along dim 1",
        vec![r.nc(&[3, 3])],
        move |x| scatter_value(&x[0], 1, &c(&i), Scalar::Float(0.5)).unwrap(),
    ));
    cs
}
