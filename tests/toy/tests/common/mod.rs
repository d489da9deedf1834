//! The toy's case table, shared by the reverse-mode (gradcheck.rs) and forward-mode
//! (forward.rs) checks: one case per function of the YAML at least, named by its schema.
#![allow(dead_code)]

use autograd::runtime::Variable;
use autograd_toy::Toy;
use autograd_toy::ops::*;

pub fn v(x: &[f64]) -> Toy {
    Toy::vec(x.to_vec())
}

pub fn c(x: &[f64]) -> Variable<Toy> {
    Variable::from_data(v(x))
}

pub type F = fn(&[Variable<Toy>]) -> Variable<Toy>;

/// (schema name, function of the inputs, inputs); long on purpose: a flat table, one entry
/// per function of the YAML, reads and diffs better than groups of functions.
#[allow(
    clippy::too_many_lines,
    reason = "a flat table, one gradcheck case per operator"
)]
pub fn cases() -> Vec<(&'static str, F, Vec<Toy>)> {
    let a = v(&[0.3, -1.2, 0.7]);
    let b = v(&[1.1, 0.4, -0.5]);
    let s = Toy::scalar(0.8);
    vec![
        (
            "add.Tensor",
            |x| add_tensor(&x[0], &x[1], 2.0),
            vec![a.clone(), b.clone()],
        ),
        (
            "add.Tensor",
            |x| add_tensor(&x[0], &x[1], 0.5),
            vec![a.clone(), s.clone()],
        ),
        (
            "add.Scalar",
            |x| add_scalar(&x[0], 3.0, 2.0),
            vec![a.clone()],
        ),
        (
            "mul.Tensor",
            |x| mul_tensor(&x[0], &x[1]),
            vec![a.clone(), b.clone()],
        ),
        (
            "mul.Tensor",
            |x| mul_tensor(&x[1], &x[0]),
            vec![a.clone(), s.clone()],
        ),
        ("mul.Scalar", |x| mul_scalar(&x[0], -1.5), vec![a.clone()]),
        ("neg", |x| neg(&x[0]), vec![a.clone()]),
        ("exp", |x| exp(&x[0]), vec![a.clone()]),
        ("tanh", |x| tanh(&x[0]), vec![a.clone()]),
        (
            "pow.Tensor_Scalar",
            |x| pow_tensor_scalar(&x[0], 3.0),
            vec![a.clone()],
        ),
        (
            "pow.Tensor_Scalar",
            |x| pow_tensor_scalar(&x[0], 0.0),
            vec![a.clone()],
        ),
        ("sum", |x| sum(&x[0]), vec![a.clone()]),
        ("expand", |x| expand(&x[0], &[4]), vec![s.clone()]),
        ("sum_to_size", |x| sum_to_size(&x[0], &[]), vec![a.clone()]),
        ("max.dim", |x| max_dim(&x[0], 0, false).0, vec![a.clone()]),
        (
            "index_scatter",
            |x| index_scatter(&x[0], &Variable::from_data(Toy::scalar(1.0)), 3),
            vec![s.clone()],
        ),
        (
            "gather",
            |x| gather(&x[0], &Variable::from_data(Toy::scalar(2.0))),
            vec![a.clone()],
        ),
        (
            "cat",
            |x| cat(&[x[0].clone(), x[1].clone()], 0),
            vec![a.clone(), b.clone()],
        ),
        (
            "stack",
            |x| stack(&[x[0].clone(), x[1].clone()], 0),
            vec![s.clone(), Toy::scalar(-0.2)],
        ),
        (
            "unbind.int",
            |x| unbind_int(&x[0], 0)[1].clone(),
            vec![a.clone()],
        ),
        (
            "where.self",
            |x| where_self(&c(&[1.0, 0.0, 1.0]), &x[0], &x[1]),
            vec![a.clone(), b.clone()],
        ),
        ("clone", |x| clone(&x[0], None), vec![a.clone()]),
        (
            "composite",
            |x| tanh(&mul_tensor(&exp(&x[0]), &add_scalar(&x[1], 1.0, 1.0))),
            vec![a.clone(), b.clone()],
        ),
        (
            "mul_.Tensor",
            |x| {
                let t = mul_scalar(&x[0], 1.0);
                mul_tensor_(&t, &x[1]).unwrap();
                t
            },
            vec![a.clone(), b.clone()],
        ),
        (
            "exp_",
            |x| {
                let t = mul_scalar(&x[0], 1.0);
                exp_(&t).unwrap();
                t
            },
            vec![a.clone()],
        ),
        (
            "tanh_",
            |x| {
                let t = add_scalar(&x[0], 0.1, 1.0);
                tanh_(&t).unwrap()
            },
            vec![a.clone()],
        ),
        (
            "add_.Tensor",
            |x| {
                let t = mul_scalar(&x[0], 2.0);
                add_tensor_(&t, &x[1], -0.5).unwrap()
            },
            vec![a.clone(), b.clone()],
        ),
    ]
}
