//! One case per in-place operator (shared by `inplace.rs` and `forward.rs`).

use super::*;
use crate::ops::*;
use autograd::runtime::Variable;

/// An in-place op (or its functional twin) on `x` and the other inputs.
pub type Op<B> = Box<dyn Fn(&Variable<B>, &[Variable<B>]) -> Variable<B>>;

/// One in-place operator: its in-place and functional forms and inputs.
pub struct InplaceCase<B: ConformanceTensor> {
    pub op: &'static str,
    pub inplace: Op<B>,
    pub functional: Op<B>,
    pub x: B,
    pub others: Vec<B>,
}

pub fn ic<B: ConformanceTensor>(
    op: &'static str,
    x: B,
    others: Vec<B>,
    inplace: impl Fn(&Variable<B>, &[Variable<B>]) -> Variable<B> + 'static,
    functional: impl Fn(&Variable<B>, &[Variable<B>]) -> Variable<B> + 'static,
) -> InplaceCase<B> {
    InplaceCase {
        op,
        inplace: Box::new(inplace),
        functional: Box::new(functional),
        x,
        others,
    }
}

/// One case per in-place operator (long on purpose: a flat table of the operators).
#[allow(
    clippy::too_many_lines,
    reason = "a flat table, one case per in-place operator"
)]
pub fn inplace_cases<B: ConformanceTensor>() -> Vec<InplaceCase<B>> {
    let r = Rng::new(77);
    let s = r.shape(2);
    let row = [s[1]];
    vec![
        ic(
            "add_.Tensor",
            r.t(&s),
            vec![r.t(&row)],
            |x, o| add_tensor_(x, &o[0], 2.0).unwrap(),
            |x, o| add_tensor(x, &o[0], 2.0).unwrap(),
        ),
        ic(
            "add_.Scalar",
            r.t(&s),
            vec![],
            |x, _| add_scalar_(x, 1.5, 2.0).unwrap(),
            |x, _| add_scalar(x, 1.5, 2.0).unwrap(),
        ),
        ic(
            "sub_.Tensor",
            r.t(&s),
            vec![r.t(&s)],
            |x, o| sub_tensor_(x, &o[0], 0.5).unwrap(),
            |x, o| sub_tensor(x, &o[0], 0.5).unwrap(),
        ),
        ic(
            "mul_.Tensor",
            r.t(&s),
            vec![r.t(&row)],
            |x, o| mul_tensor_(x, &o[0]).unwrap(),
            |x, o| mul_tensor(x, &o[0]).unwrap(),
        ),
        ic(
            "mul_.Scalar",
            r.t(&s),
            vec![],
            |x, _| mul_scalar_(x, -3.0).unwrap(),
            |x, _| mul_scalar(x, -3.0).unwrap(),
        ),
        ic(
            "div_.Tensor",
            r.t(&s),
            vec![r.pos(&s)],
            |x, o| div_tensor_(x, &o[0]).unwrap(),
            |x, o| div_tensor(x, &o[0]).unwrap(),
        ),
        ic(
            "div_.Scalar",
            r.t(&s),
            vec![],
            |x, _| div_scalar_(x, 4.0).unwrap(),
            |x, _| div_scalar(x, 4.0).unwrap(),
        ),
        ic(
            "neg_",
            r.t(&s),
            vec![],
            |x, _| neg_(x).unwrap(),
            |x, _| neg(x).unwrap(),
        ),
        ic(
            "exp_",
            r.t(&s),
            vec![],
            |x, _| exp_(x).unwrap(),
            |x, _| exp(x).unwrap(),
        ),
        ic(
            "log_",
            r.pos(&s),
            vec![],
            |x, _| log_(x).unwrap(),
            |x, _| log(x).unwrap(),
        ),
        ic(
            "sqrt_",
            r.pos(&s),
            vec![],
            |x, _| sqrt_(x).unwrap(),
            |x, _| sqrt(x).unwrap(),
        ),
        ic(
            "sin_",
            r.t(&s),
            vec![],
            |x, _| sin_(x).unwrap(),
            |x, _| sin(x).unwrap(),
        ),
        ic(
            "tanh_",
            r.t(&s),
            vec![],
            |x, _| tanh_(x).unwrap(),
            |x, _| tanh(x).unwrap(),
        ),
        ic(
            "sigmoid_",
            r.t(&s),
            vec![],
            |x, _| sigmoid_(x).unwrap(),
            |x, _| sigmoid(x).unwrap(),
        ),
        ic(
            "relu_",
            r.away(&s),
            vec![],
            |x, _| relu_(x).unwrap(),
            |x, _| relu(x).unwrap(),
        ),
        ic(
            "gelu_",
            r.t(&s),
            vec![],
            |x, _| gelu_(x, "tanh").unwrap(),
            |x, _| gelu(x, "tanh").unwrap(),
        ),
        ic(
            "clamp_",
            r.away(&s),
            vec![],
            |x, _| clamp_(x, Some(-0.5), Some(0.5)).unwrap(),
            |x, _| clamp(x, Some(-0.5), Some(0.5)).unwrap(),
        ),
        ic(
            "sub_.Scalar",
            r.t(&s),
            vec![],
            |x, _| sub_scalar_(x, 0.5, 2.0).unwrap(),
            |x, _| sub_scalar(x, 0.5, 2.0).unwrap(),
        ),
        ic(
            "abs_",
            r.away(&s),
            vec![],
            |x, _| abs_(x).unwrap(),
            |x, _| abs(x).unwrap(),
        ),
        ic(
            "pow_.Scalar",
            r.t(&s),
            vec![],
            |x, _| pow_scalar_(x, 2.0).unwrap(),
            |x, _| pow_tensor_scalar(x, 2.0).unwrap(),
        ),
        ic(
            "leaky_relu_",
            r.away(&s),
            vec![],
            |x, _| leaky_relu_(x, 0.1).unwrap(),
            |x, _| leaky_relu(x, 0.1).unwrap(),
        ),
        // The old values no longer matter: the gradient through them is zero.
        ic(
            "zero_",
            r.t(&s),
            vec![],
            |x, _| zero_(x).unwrap(),
            |x, _| mul_scalar(x, 0.0).unwrap(),
        ),
        ic(
            "fill_.Scalar",
            r.t(&s),
            vec![],
            |x, _| fill_scalar_(x, 0.25).unwrap(),
            |x, _| add_scalar(&mul_scalar(x, 0.0).unwrap(), 0.25, 1.0).unwrap(),
        ),
    ]
}
