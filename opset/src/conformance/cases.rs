//! The gradcheck cases of every differentiable operator (shared by `gradcheck.rs`, which
//! checks reverse mode, and `forward.rs`, which checks forward mode on the same inputs).

use super::*;
use crate::ops::*;
use autograd::types::Scalar;

pub use super::case::{
    Case, F, NO_FORWARD_FORMULA, avoid, c, case, dims_of, forward_refusal, refusal_text,
};

/// Every case, one after the other (long on purpose: a flat list, one entry per operator
/// variant, reads and diffs better than groups of functions).
#[allow(
    clippy::too_many_lines,
    reason = "a flat list, one case per operator variant"
)]
pub fn cases<B: ConformanceTensor>() -> Vec<Case<B>> {
    let r = Rng::new(2024);
    let mut cs = Vec::new();
    let s2 = r.shape(2);
    let s3 = r.shape(3);
    let (m, k, n) = (r.size(), r.size(), r.size());

    // ---- pointwise arithmetic, with broadcasting and non-contiguous inputs
    cs.push(case(
        "add.Tensor",
        "same shape, alpha=2",
        vec![r.t(&s2), r.t(&s2)],
        |x| add_tensor(&x[0], &x[1], 2.0).unwrap(),
    ));
    cs.push(case(
        "add.Tensor",
        "broadcast (a,b,c)+(b,1), non-contiguous",
        vec![r.nc(&s3), r.t(&[s3[1], 1])],
        |x| add_tensor(&x[0], &x[1], -0.5).unwrap(),
    ));
    cs.push(case(
        "add.Tensor",
        "broadcast with a 0-d tensor",
        vec![r.t(&[]), r.t(&s2)],
        |x| add_tensor(&x[0], &x[1], 1.0).unwrap(),
    ));
    cs.push(case("add.Scalar", "", vec![r.nc(&s2)], |x| {
        add_scalar(&x[0], 3.0, 0.5).unwrap()
    }));
    cs.push(case(
        "sub.Tensor",
        "broadcast (1,c)",
        vec![r.t(&s2), r.t(&[1, s2[1]])],
        |x| sub_tensor(&x[0], &x[1], 0.7).unwrap(),
    ));
    cs.push(case("sub.Scalar", "", vec![r.t(&s3)], |x| {
        sub_scalar(&x[0], 1.5, 2.0).unwrap()
    }));
    cs.push(case(
        "mul.Tensor",
        "non-contiguous",
        vec![r.nc(&s2), r.nc(&s2)],
        |x| mul_tensor(&x[0], &x[1]).unwrap(),
    ));
    cs.push(case(
        "mul.Tensor",
        "broadcast (a,1,c)*(b,1)",
        vec![r.t(&[s3[0], 1, s3[2]]), r.t(&[s3[1], 1])],
        |x| mul_tensor(&x[0], &x[1]).unwrap(),
    ));
    cs.push(case("mul.Scalar", "", vec![r.t(&s2)], |x| {
        mul_scalar(&x[0], -1.5).unwrap()
    }));
    cs.push(case(
        "div.Tensor",
        "broadcast",
        vec![r.t(&s3), r.pos(&[s3[2]])],
        |x| div_tensor(&x[0], &x[1]).unwrap(),
    ));
    cs.push(case("div.Scalar", "", vec![r.t(&s2)], |x| {
        div_scalar(&x[0], 4.0).unwrap()
    }));
    cs.push(case("neg", "", vec![r.nc(&s2)], |x| neg(&x[0]).unwrap()));

    // ---- pointwise math
    cs.push(case("exp", "", vec![r.nc(&s2)], |x| exp(&x[0]).unwrap()));
    cs.push(case("log", "", vec![r.pos(&s2)], |x| log(&x[0]).unwrap()));
    cs.push(case("sqrt", "", vec![r.pos(&s3)], |x| sqrt(&x[0]).unwrap()));
    cs.push(case("rsqrt", "", vec![r.pos(&s2)], |x| {
        rsqrt(&x[0]).unwrap()
    }));
    cs.push(case("pow.Tensor_Scalar", "x^2.5", vec![r.pos(&s2)], |x| {
        pow_tensor_scalar(&x[0], 2.5).unwrap()
    }));
    cs.push(case(
        "pow.Tensor_Scalar",
        "x^3, negative x",
        vec![r.t(&s2)],
        |x| pow_tensor_scalar(&x[0], 3.0).unwrap(),
    ));
    cs.push(case(
        "pow.Tensor_Tensor",
        "broadcast exponent",
        vec![r.pos(&s2), r.t(&[s2[1]])],
        |x| pow_tensor_tensor(&x[0], &x[1]).unwrap(),
    ));
    cs.push(case("abs", "away from 0", vec![r.away(&s2)], |x| {
        abs(&x[0]).unwrap()
    }));
    cs.push(case("sign", "zero gradient", vec![r.away(&s2)], |x| {
        sign(&x[0]).unwrap()
    }));
    cs.push(case("sin", "", vec![r.nc(&s2)], |x| sin(&x[0]).unwrap()));
    cs.push(case("cos", "", vec![r.t(&s2)], |x| cos(&x[0]).unwrap()));
    cs.push(case("erf", "", vec![r.t(&s2)], |x| erf(&x[0]).unwrap()));
    cs.push(case("zero", "", vec![r.t(&s2)], |x| zero(&x[0]).unwrap()));
    cs.push(case("acos", "", vec![r.u(&s2, -0.9, 0.9)], |x| {
        acos(&x[0]).unwrap()
    }));
    cs.push(case("asin", "", vec![r.u(&s2, -0.9, 0.9)], |x| {
        asin(&x[0]).unwrap()
    }));
    cs.push(case("atan", "", vec![r.t(&s2)], |x| atan(&x[0]).unwrap()));
    cs.push(case("acosh", "", vec![r.u(&s2, 1.2, 2.5)], |x| {
        acosh(&x[0]).unwrap()
    }));
    cs.push(case("asinh", "", vec![r.t(&s2)], |x| asinh(&x[0]).unwrap()));
    cs.push(case("atanh", "", vec![r.u(&s2, -0.9, 0.9)], |x| {
        atanh(&x[0]).unwrap()
    }));
    cs.push(case("sinh", "", vec![r.t(&s2)], |x| sinh(&x[0]).unwrap()));
    cs.push(case("cosh", "", vec![r.t(&s2)], |x| cosh(&x[0]).unwrap()));
    cs.push(case("tan", "", vec![r.t(&s2)], |x| tan(&x[0]).unwrap()));
    cs.push(case("expm1", "", vec![r.t(&s2)], |x| expm1(&x[0]).unwrap()));
    cs.push(case("log1p", "", vec![r.u(&s2, -0.5, 1.5)], |x| {
        log1p(&x[0]).unwrap()
    }));
    cs.push(case("log2", "", vec![r.pos(&s2)], |x| log2(&x[0]).unwrap()));
    cs.push(case("log10", "", vec![r.pos(&s2)], |x| {
        log10(&x[0]).unwrap()
    }));
    cs.push(case("reciprocal", "", vec![r.away(&s2)], |x| {
        reciprocal(&x[0]).unwrap()
    }));

    // ---- activations
    cs.push(case("tanh", "", vec![r.nc(&s2)], |x| tanh(&x[0]).unwrap()));
    cs.push(case("tanh_backward", "", vec![r.t(&s2), r.nc(&s2)], |x| {
        tanh_backward(&x[0], &x[1]).unwrap()
    }));
    cs.push(case("sigmoid", "", vec![r.t(&s3)], |x| {
        sigmoid(&x[0]).unwrap()
    }));
    cs.push(case("relu", "away from 0", vec![r.away(&s3)], |x| {
        relu(&x[0]).unwrap()
    }));
    cs.push(case("leaky_relu", "away from 0", vec![r.away(&s2)], |x| {
        leaky_relu(&x[0], 0.1).unwrap()
    }));
    cs.push(case(
        "threshold_backward",
        "",
        vec![r.t(&s2), r.away(&s2)],
        |x| threshold_backward(&x[0], &x[1], 0.0).unwrap(),
    ));
    cs.push(case(
        "gelu",
        "approximate='none'",
        vec![r.u(&s2, -2.0, 2.0)],
        |x| gelu(&x[0], "none").unwrap(),
    ));
    cs.push(case(
        "gelu",
        "approximate='tanh'",
        vec![r.u(&s2, -2.0, 2.0)],
        |x| gelu(&x[0], "tanh").unwrap(),
    ));
    cs.push(case(
        "clamp",
        "min and max",
        vec![avoid(&r.u(&s2, -2.0, 2.0), &[-0.5, 0.8], 0.05)],
        |x| clamp(&x[0], Some(Scalar::Float(-0.5)), Some(Scalar::Float(0.8))).unwrap(),
    ));
    cs.push(case(
        "clamp",
        "min only",
        vec![avoid(&r.t(&s2), &[0.1], 0.05)],
        |x| clamp(&x[0], Some(Scalar::Float(0.1)), None).unwrap(),
    ));
    {
        // Built from values, not with an op: the case list must not need a kernel.
        let cond: B = r.mask(&[s3[1], s3[2]], 0.5);
        cs.push(case(
            "where.self",
            "broadcast condition and other",
            vec![r.t(&s3), r.t(&[s3[2]])],
            move |x| where_self(&c(&cond), &x[0], &x[1]).unwrap(),
        ));
    }
    {
        let a: B = r.t(&s2);
        let off: B = r.away(&[s2[1]]);
        let b = from_vec::<B>(
            a.to_f64_vec()
                .iter()
                .enumerate()
                .map(|(i, x)| x + off.to_f64_vec()[i % s2[1]])
                .collect(),
            &s2,
        );
        cs.push(case("maximum", "no ties", vec![a, b], |x| {
            maximum(&x[0], &x[1]).unwrap()
        }));
        cs.push(case(
            "maximum",
            "broadcast",
            vec![avoid(&r.t(&s2), &[0.3], 0.05), scalar::<B>(0.3)],
            |x| maximum(&x[0], &x[1]).unwrap(),
        ));
        cs.push(case(
            "minimum",
            "broadcast",
            vec![avoid(&r.t(&s2), &[0.3], 0.05), scalar::<B>(0.3)],
            |x| minimum(&x[0], &x[1]).unwrap(),
        ));
    }

    // ---- linear algebra
    cs.push(case(
        "mm",
        "non-contiguous",
        vec![r.nc(&[m, k]), r.nc(&[k, n])],
        |x| mm(&x[0], &x[1]).unwrap(),
    ));
    cs.push(case(
        "matmul",
        "2-D x 2-D",
        vec![r.t(&[m, k]), r.t(&[k, n])],
        |x| matmul(&x[0], &x[1]).unwrap(),
    ));
    cs.push(case(
        "matmul",
        "1-D x 1-D",
        vec![r.t(&[k]), r.t(&[k])],
        |x| matmul(&x[0], &x[1]).unwrap(),
    ));
    cs.push(case(
        "matmul",
        "1-D x 2-D",
        vec![r.t(&[k]), r.t(&[k, n])],
        |x| matmul(&x[0], &x[1]).unwrap(),
    ));
    cs.push(case(
        "matmul",
        "3-D x 1-D",
        vec![r.t(&[2, m, k]), r.t(&[k])],
        |x| matmul(&x[0], &x[1]).unwrap(),
    ));
    cs.push(case(
        "matmul",
        "batched broadcast (2,1,m,k) x (3,k,n)",
        vec![r.t(&[2, 1, m, k]), r.nc(&[3, k, n])],
        |x| matmul(&x[0], &x[1]).unwrap(),
    ));
    cs.push(case(
        "bmm",
        "",
        vec![r.t(&[2, m, k]), r.nc(&[2, k, n])],
        |x| bmm(&x[0], &x[1]).unwrap(),
    ));

    // ---- reductions
    cs.push(case("sum", "", vec![r.nc(&s3)], |x| {
        sum(&x[0], None).unwrap()
    }));
    cs.push(case(
        "sum.dim_IntList",
        "dims [0,-1]",
        vec![r.t(&s3)],
        |x| sum_dim_intlist(&x[0], Some(&[0, -1]), false, None).unwrap(),
    ));
    cs.push(case("sum.dim_IntList", "keepdim", vec![r.nc(&s3)], |x| {
        sum_dim_intlist(&x[0], Some(&[1]), true, None).unwrap()
    }));
    cs.push(case("sum.dim_IntList", "all dims", vec![r.t(&s2)], |x| {
        sum_dim_intlist(&x[0], None, false, None).unwrap()
    }));
    cs.push(case("mean", "", vec![r.t(&s3)], |x| {
        mean(&x[0], None).unwrap()
    }));
    cs.push(case("mean.dim", "dim 1", vec![r.nc(&s3)], |x| {
        mean_dim(&x[0], Some(&[1]), false, None).unwrap()
    }));
    cs.push(case(
        "mean.dim",
        "keepdim, dims [0,2]",
        vec![r.t(&s3)],
        |x| mean_dim(&x[0], Some(&[0, 2]), true, None).unwrap(),
    ));
    cs.push(case("max.dim", "", vec![r.t(&s3)], |x| {
        max_dim(&x[0], 1, false).unwrap().0
    }));
    cs.push(case(
        "max.dim",
        "keepdim, non-contiguous",
        vec![r.nc(&s2)],
        |x| max_dim(&x[0], -1, true).unwrap().0,
    ));
    cs.push(case("amax", "dims [0,2]", vec![r.t(&s3)], |x| {
        amax(&x[0], &[0, 2], false).unwrap()
    }));
    cs.push(case("amax", "keepdim", vec![r.nc(&s2)], |x| {
        amax(&x[0], &[1], true).unwrap()
    }));
    cs.push(case("softmax.int", "", vec![r.nc(&s3)], |x| {
        softmax_int(&x[0], 1, None).unwrap()
    }));
    cs.push(case("log_softmax.int", "", vec![r.t(&s2)], |x| {
        log_softmax_int(&x[0], -1, None).unwrap()
    }));
    cs.push(case("logsumexp", "", vec![r.t(&s3)], |x| {
        logsumexp(&x[0], &[2], false).unwrap()
    }));
    cs.push(case(
        "logsumexp",
        "keepdim, two dims",
        vec![r.nc(&s3)],
        |x| logsumexp(&x[0], &[0, 1], true).unwrap(),
    ));

    // ---- shapes and views
    cs.push(case("transpose.int", "", vec![r.t(&s3)], |x| {
        transpose_int(&x[0], 0, 2).unwrap()
    }));
    cs.push(case("t", "", vec![r.t(&s2)], |x| {
        mul_tensor(&t(&x[0]).unwrap(), &t(&x[0]).unwrap()).unwrap()
    }));
    cs.push(case("permute", "", vec![r.t(&s3)], |x| {
        permute(&x[0], &[2, 0, 1]).unwrap()
    }));
    {
        let s = s3.clone();
        cs.push(case(
            "reshape",
            "non-contiguous input",
            vec![r.nc(&s3)],
            move |x| reshape(&x[0], &[s[0] as i64, -1]).unwrap(),
        ));
    }
    {
        let s = s3.clone();
        cs.push(case("view", "", vec![r.t(&s3)], move |x| {
            view(&x[0], &[(s[0] * s[1]) as i64, s[2] as i64]).unwrap()
        }));
    }
    {
        let s = s3.clone();
        cs.push(case(
            "expand",
            "(b,1) -> (a,b,c)",
            vec![r.t(&[s3[1], 1])],
            move |x| expand(&x[0], &dims_of(&s), false).unwrap(),
        ));
        cs.push(case("expand", "0-d", vec![r.t(&[])], move |x| {
            expand(&x[0], &[3, 2], false).unwrap()
        }));
    }
    cs.push(case("squeeze", "", vec![r.t(&[s2[0], 1, s2[1], 1])], |x| {
        squeeze(&x[0]).unwrap()
    }));
    cs.push(case(
        "squeeze.dim",
        "",
        vec![r.t(&[s2[0], 1, s2[1]])],
        |x| squeeze_dim(&x[0], 1).unwrap(),
    ));
    cs.push(case("unsqueeze", "", vec![r.t(&s2)], |x| {
        unsqueeze(&x[0], -1).unwrap()
    }));
    cs.push(case(
        "slice.Tensor",
        "step 2",
        vec![r.t(&[5, s2[1]])],
        |x| slice_tensor(&x[0], 0, Some(1), None, 2).unwrap(),
    ));
    cs.push(case(
        "slice.Tensor",
        "negative start, non-contiguous",
        vec![r.nc(&[s2[0], 5])],
        |x| slice_tensor(&x[0], 1, Some(-3), Some(4), 1).unwrap(),
    ));
    cs.push(case("slice_backward", "", vec![r.t(&[2, s2[1]])], |x| {
        slice_backward(&x[0], &[5, x[0].shape()[1] as i64], 0, 1, 5, 2).unwrap()
    }));
    cs.push(case(
        "cat",
        "three inputs, dim 1",
        vec![r.t(&[2, 1]), r.nc(&[2, 3]), r.t(&[2, 2])],
        |x| cat(&[x[0].clone(), x[1].clone(), x[2].clone()], 1).unwrap(),
    ));
    cs.push(case("stack", "dim -1", vec![r.t(&s2), r.nc(&s2)], |x| {
        stack(&[x[0].clone(), x[1].clone()], -1).unwrap()
    }));
    cs.push(case("squeeze.dims", "", vec![r.t(&[2, 1, 3, 1])], |x| {
        squeeze_dims(&x[0], &[1, -1]).unwrap()
    }));
    cs.push(case("clone", "", vec![r.nc(&[2, 3])], |x| {
        let y = clone(&x[0], None).unwrap();
        mul_tensor(&y, &y).unwrap()
    }));
    cs.push(case(
        "narrow",
        "negative start, non-contiguous",
        vec![r.nc(&[s2[0], 5])],
        |x| narrow(&x[0], 1, -3, 2).unwrap(),
    ));
    cs.push(case(
        "diagonal",
        "offset, non-contiguous",
        vec![r.nc(&[3, 4])],
        |x| diagonal(&x[0], 1, 0, 1).unwrap(),
    ));
    cs.push(case(
        "diagonal",
        "3-d, negative offset",
        vec![r.t(&[2, 3, 3])],
        |x| diagonal(&x[0], -1, 1, 2).unwrap(),
    ));
    cs.push(case("diagonal_backward", "", vec![r.t(&[3])], |x| {
        diagonal_backward(&x[0], &[3, 4], 1, 0, 1).unwrap()
    }));
    cs.push(case(
        "as_strided",
        "overlapping windows, offset",
        vec![r.t(&[3, 4])],
        |x| as_strided(&x[0], &[3, 3], &[1, 1], Some(1)).unwrap(),
    ));
    cs.push(case(
        "col2im",
        "kernel (2,3), dilation (1,2), padding (1,0), stride (2,1)",
        vec![r.t(&[2, 18, 6])],
        |x| col2im(&x[0], &[5, 6], &[2, 3], &[1, 2], &[1, 0], &[2, 1]).unwrap(),
    ));
    cs.push(case(
        "col2im",
        "unbatched, overlapping blocks",
        vec![r.t(&[8, 6])],
        |x| col2im(&x[0], &[3, 4], &[2, 2], &[1, 1], &[0, 0], &[1, 1]).unwrap(),
    ));
    cs.push(case(
        "im2col",
        "kernel (2,3), dilation (1,2), padding (1,0), stride (2,1)",
        vec![r.t(&[2, 2, 4, 5])],
        |x| im2col(&x[0], &[2, 3], &[1, 2], &[1, 0], &[2, 1]).unwrap(),
    ));
    cs.push(case(
        "im2col",
        "unbatched, padding 1",
        vec![r.t(&[2, 3, 3])],
        |x| im2col(&x[0], &[2, 2], &[1, 1], &[1, 1], &[1, 1]).unwrap(),
    ));
    cs.push(case(
        "as_strided",
        "stride 0, elements left out",
        vec![r.t(&[6])],
        |x| as_strided(&x[0], &[2, 3], &[0, 2], None).unwrap(),
    ));
    cs.push(case(
        "select.int",
        "negative index",
        vec![r.t(&[4, s2[1]])],
        |x| select_int(&x[0], 0, -2).unwrap(),
    ));
    cs.push(case(
        "split.Tensor",
        "uneven pieces, some unused",
        vec![r.t(&[5, s2[1]])],
        |x| {
            let u = split_tensor(&x[0], 2, 0).unwrap();
            add_tensor(
                &sum(&u[0], None).unwrap(),
                &sum(&mul_tensor(&u[2], &u[2]).unwrap(), None).unwrap(),
                1.0,
            )
            .unwrap()
        },
    ));
    cs.push(case("chunk", "", vec![r.t(&[s2[0], 6])], |x| {
        let u = chunk(&x[0], 3, -1).unwrap();
        mul_tensor(&u[1], &u[2]).unwrap()
    }));
    cs.push(case(
        "unbind.int",
        "some outputs unused",
        vec![r.t(&[3, s2[1]])],
        |x| {
            let u = unbind_int(&x[0], 0).unwrap();
            add_tensor(&u[0], &mul_tensor(&u[2], &u[2]).unwrap(), 1.0).unwrap()
        },
    ));

    // ---- indexing
    {
        let idx = iv(&[2, 0, 2, 1], &[4]);
        cs.push(case(
            "index_select",
            "repeated indices",
            vec![r.t(&[3, s2[1]])],
            move |x| index_select(&x[0], 0, &c(&idx)).unwrap(),
        ));
        let idx = iv(&[1, 1, 0], &[3]);
        cs.push(case(
            "index_add",
            "",
            vec![r.t(&[s2[0], 2]), r.t(&[s2[0], 3])],
            move |x| index_add(&x[0], 1, &c(&idx), &x[1], 0.5).unwrap(),
        ));
        let gi = r.index(&[s2[0], 5], s2[1]);
        cs.push(case("gather", "", vec![r.nc(&s2)], move |x| {
            gather(&x[0], 1, &c(&gi), false).unwrap()
        }));
        let si = r.index(&[4, s2[1]], s2[0]);
        cs.push(case(
            "scatter_add",
            "",
            vec![r.t(&s2), r.t(&[4, s2[1]])],
            move |x| scatter_add(&x[0], 0, &c(&si), &x[1]).unwrap(),
        ));
    }

    // ---- losses
    for red in [0, 1, 2] {
        cs.push(case(
            "mse_loss",
            ["reduction none", "reduction mean", "reduction sum"][red as usize],
            vec![r.t(&s2), r.nc(&s2)],
            move |x| mse_loss(&x[0], &x[1], red).unwrap(),
        ));
    }
    {
        let (nb, nc) = (5, 3);
        let target: B = iv(&[0, 2, 1, 2, 1], &[nb]);
        let ignored: B = iv(&[0, -100, 1, 2, 2], &[nb]);
        let weight: B = v(&[0.5, 2.0, 1.0], &[nc]);
        for red in [0, 1, 2] {
            let (tg, w) = (target.clone(), weight.clone());
            cs.push(case(
                "nll_loss",
                &format!("weight, reduction {red}"),
                vec![r.t(&[nb, nc])],
                move |x| nll_loss(&x[0], &c(&tg), Some(&c(&w)), red, -100).unwrap(),
            ));
        }
        let tg = ignored.clone();
        cs.push(case(
            "nll_loss",
            "ignore_index",
            vec![r.t(&[nb, nc])],
            move |x| nll_loss(&x[0], &c(&tg), None, 1, -100).unwrap(),
        ));
        let tg = target.clone();
        cs.push(case(
            "nll_loss_forward",
            "",
            vec![r.t(&[nb, nc])],
            move |x| nll_loss_forward(&x[0], &c(&tg), None, 1, -100).unwrap().0,
        ));
        let (tg, w) = (target.clone(), weight.clone());
        cs.push(case(
            "nll_loss_backward",
            "reduction none",
            vec![r.t(&[nb]), r.t(&[nb, nc])],
            move |x| {
                let tw = Variable::from_data(scalar::<B>(1.0));
                nll_loss_backward(&x[0], &x[1], &c(&tg), Some(&c(&w)), 0, -100, &tw).unwrap()
            },
        ));
        let tg = target.clone();
        cs.push(case(
            "nll_loss_backward",
            "reduction mean",
            vec![r.t(&[]), r.t(&[nb, nc])],
            move |x| {
                let tw = Variable::from_data(scalar::<B>(5.0));
                nll_loss_backward(&x[0], &x[1], &c(&tg), None, 1, -100, &tw).unwrap()
            },
        ));
        for red in [0, 1, 2] {
            let tg = target.clone();
            cs.push(case(
                "cross_entropy_loss",
                &format!("reduction {red}"),
                vec![r.nc(&[nb, nc])],
                move |x| cross_entropy_loss(&x[0], &c(&tg), None, red, -100, 0.0).unwrap(),
            ));
        }
        let (tg, w) = (ignored.clone(), weight.clone());
        cs.push(case(
            "cross_entropy_loss",
            "weight, ignore_index, label smoothing",
            vec![r.t(&[nb, nc])],
            move |x| cross_entropy_loss(&x[0], &c(&tg), Some(&c(&w)), 1, -100, 0.1).unwrap(),
        ));
        let w = weight.clone();
        cs.push(case(
            "cross_entropy_loss",
            "class probabilities (input and target differentiable), weight, smoothing",
            vec![r.t(&[nb, nc]), r.t(&[nb, nc])],
            move |x| {
                let probs = softmax_int(&x[1], 1, None).unwrap();
                cross_entropy_loss(&x[0], &probs, Some(&c(&w)), 1, -100, 0.1).unwrap()
            },
        ));
        cs.push(case(
            "cross_entropy_loss",
            "(N, C, d) input, reduction none",
            vec![r.t(&[nb, nc, 2])],
            |x| {
                let t: B = iv(&vec![0; x[0].shape()[0] * 2], &[x[0].shape()[0], 2]);
                cross_entropy_loss(&x[0], &c(&t), None, 0, -100, 0.1).unwrap()
            },
        ));
        let tg = target.clone();
        cs.push(case(
            "cross_entropy_loss",
            "label smoothing, reduction none",
            vec![r.t(&[nb, nc])],
            move |x| cross_entropy_loss(&x[0], &c(&tg), None, 0, -100, 0.2).unwrap(),
        ));
    }

    // ---- nn
    cs.push(case(
        "native_dropout",
        "seeded, p=0.4",
        vec![r.t(&s3)],
        |x| {
            B::seed(7);
            native_dropout(&x[0], 0.4, Some(true)).unwrap().0
        },
    ));
    cs.push(case("native_dropout", "eval mode", vec![r.t(&s2)], |x| {
        native_dropout(&x[0], 0.4, Some(false)).unwrap().0
    }));
    {
        let mask = r.mask(&s2, 0.5);
        cs.push(case(
            "native_dropout_backward",
            "",
            vec![r.t(&s2)],
            move |x| native_dropout_backward(&x[0], &c(&mask), 2.0).unwrap(),
        ));
    }
    cs.push(case(
        "layer_norm",
        "weight and bias",
        vec![r.t(&[2, 3, 4]), r.pos(&[4]), r.t(&[4])],
        |x| layer_norm(&x[0], &[4], Some(&x[1]), Some(&x[2]), 1e-5, true).unwrap(),
    ));
    cs.push(case(
        "layer_norm",
        "two normalized dims, no affine, non-contiguous",
        vec![r.nc(&[3, 2, 4])],
        |x| layer_norm(&x[0], &[2, 4], None, None, 1e-5, true).unwrap(),
    ));
    {
        let idx = iv(&[1, 4, 1, 0, 2, 1], &[2, 3]);
        cs.push(case(
            "embedding",
            "repeated indices",
            vec![r.t(&[5, 3])],
            move |x| embedding(&x[0], &c(&idx), -1, false, false).unwrap(),
        ));
    }
    rounding_and_selection(&r, &mut cs);
    divisions_and_activations(&r, &mut cs);
    super::norm_cases::norm_cases(&r, &mut cs);
    super::norms_cases::norms_cases(&r, &mut cs);
    super::softmax_cases::softmax_cases(&r, &mut cs);
    cs.extend(super::conv_cases::cases::<B>());
    cs.extend(super::pool3d_cases::cases::<B>());
    cs.extend(super::resample_cases::cases::<B>());
    cs.extend(super::products_cases::cases::<B>());
    cs.extend(super::index_cases::cases::<B>());
    cs.extend(super::select_cases::cases::<B>());
    cs.extend(super::geom_cases::cases::<B>());
    // group normalization
    cs.extend(super::group_norm_cases::cases::<B>());
    cs.extend(super::grid_cases::cases::<B>());
    super::dist_cases::dist_cases(&r, &mut cs);
    // ---- scatter_reduce
    cs.extend(super::scatter_cases::cases::<B>());
    // Embeddings (issue 30).
    cs.extend(super::embedding_cases::cases::<B>());
    // Embedding bags (issue 30).
    cs.extend(super::bag_cases::cases::<B>());
    // The masked family (issue 30).
    cs.extend(super::masked_cases::cases::<B>());
    cs
}

/// `div` with rounding modes, `remainder` / `fmod` of tensors (divisors in `[10, 11)`, so
/// the quotients of inputs away from 0 do not cross an integer), `atan2`, `elu`,
/// `hardtanh` and their backward ops (inputs away from their kinks).
fn divisions_and_activations<B: ConformanceTensor>(r: &Rng, cs: &mut Vec<Case<B>>) {
    let s2 = r.shape(2);
    let jumps: Vec<f64> = (-8..=8).map(|k| f64::from(k) * 0.5).collect();
    cs.push(case(
        "div.Tensor_mode",
        "no rounding",
        vec![r.t(&s2), r.pos(&s2)],
        |x| div_tensor_mode(&x[0], &x[1], None).unwrap(),
    ));
    cs.push(case(
        "div.Tensor_mode",
        "floor: zero gradient",
        vec![avoid(&r.t(&s2), &jumps, 0.05), r.u(&s2, 0.5, 0.5001)],
        |x| div_tensor_mode(&x[0], &x[1], Some("floor")).unwrap(),
    ));
    cs.push(case(
        "div.Scalar_mode",
        "trunc: zero gradient",
        vec![avoid(&r.t(&s2), &jumps, 0.05)],
        |x| div_scalar_mode(&x[0], 0.5, Some("trunc")).unwrap(),
    ));
    cs.push(case(
        "div.Scalar_mode",
        "no rounding",
        vec![r.nc(&s2)],
        |x| div_scalar_mode(&x[0], -2.5, None).unwrap(),
    ));
    cs.push(case(
        "remainder.Tensor",
        "",
        vec![r.away(&s2), r.u(&[s2[1]], 10.0, 11.0)],
        |x| remainder_tensor(&x[0], &x[1]).unwrap(),
    ));
    cs.push(case(
        "fmod.Tensor",
        "",
        vec![r.away(&s2), r.u(&s2, -11.0, -10.0)],
        |x| fmod_tensor(&x[0], &x[1]).unwrap(),
    ));
    cs.push(case(
        "atan2",
        "broadcast",
        vec![r.away(&s2), r.away(&[s2[1]])],
        |x| atan2(&x[0], &x[1]).unwrap(),
    ));
    cs.push(case(
        "elu",
        "alpha 1.5, scale 2, input_scale 0.5",
        vec![r.away(&s2)],
        |x| elu(&x[0], 1.5, 2, 0.5).unwrap(),
    ));
    cs.push(case(
        "elu_backward",
        "on the input",
        vec![r.t(&s2), r.away(&s2)],
        |x| elu_backward(&x[0], 1.5, 1, 0.5, false, &x[1]).unwrap(),
    ));
    cs.push(case(
        "elu_backward",
        "on the result",
        vec![r.t(&s2), r.away(&s2)],
        |x| elu_backward(&x[0], 1, 1, 1, true, &x[1]).unwrap(),
    ));
    cs.push(case(
        "hardtanh",
        "",
        vec![avoid(&r.u(&s2, -2.0, 2.0), &[-0.5, 0.5], 0.05)],
        |x| hardtanh(&x[0], -0.5, 0.5).unwrap(),
    ));
    cs.push(case(
        "hardtanh_backward",
        "",
        vec![r.t(&s2), avoid(&r.u(&s2, -2.0, 2.0), &[-1.0, 1.0], 0.05)],
        |x| hardtanh_backward(&x[0], &x[1], -1, 1).unwrap(),
    ));
}

/// `ceil`, `floor`, `round`, `trunc`, `remainder.Scalar`, `fmod.Scalar` (inputs away from
/// their jumps), `flip`, `amin`, `min.dim`.
fn rounding_and_selection<B: ConformanceTensor>(r: &Rng, cs: &mut Vec<Case<B>>) {
    let s2 = r.shape(2);
    let s3 = r.shape(3);
    let jumps: Vec<f64> = (-8..=8).map(|k| f64::from(k) * 0.5).collect();
    let off = |t: B| avoid(&t, &jumps, 0.05);
    cs.push(case("ceil", "zero gradient", vec![off(r.t(&s2))], |x| {
        ceil(&x[0]).unwrap()
    }));
    cs.push(case("floor", "zero gradient", vec![off(r.nc(&s2))], |x| {
        floor(&x[0]).unwrap()
    }));
    cs.push(case("round", "zero gradient", vec![off(r.t(&s3))], |x| {
        round(&x[0]).unwrap()
    }));
    cs.push(case("trunc", "zero gradient", vec![off(r.t(&s2))], |x| {
        trunc(&x[0]).unwrap()
    }));
    cs.push(case(
        "remainder.Scalar",
        "by 0.5",
        vec![off(r.t(&s2))],
        |x| remainder_scalar(&x[0], 0.5).unwrap(),
    ));
    cs.push(case("fmod.Scalar", "by -0.5", vec![off(r.nc(&s2))], |x| {
        fmod_scalar(&x[0], -0.5).unwrap()
    }));
    cs.push(case("repeat", "two more dims", vec![r.nc(&s2)], |x| {
        repeat(&x[0], &[2, 1, 3, 1]).unwrap()
    }));
    cs.push(case("alias", "", vec![r.nc(&s3)], |x| {
        alias(&x[0]).unwrap()
    }));
    cs.push(case("flip", "dims [0, -1]", vec![r.t(&s3)], |x| {
        flip(&x[0], &[0, -1]).unwrap()
    }));
    cs.push(case("flip", "non-contiguous", vec![r.nc(&s2)], |x| {
        flip(&x[0], &[1]).unwrap()
    }));
    cs.push(case("amin", "dims [0,2]", vec![r.t(&s3)], |x| {
        amin(&x[0], &[0, 2], false).unwrap()
    }));
    cs.push(case("amin", "keepdim", vec![r.nc(&s2)], |x| {
        amin(&x[0], &[1], true).unwrap()
    }));
    cs.push(case("min.dim", "", vec![r.t(&s3)], |x| {
        min_dim(&x[0], 1, false).unwrap().0
    }));
    cs.push(case(
        "min.dim",
        "keepdim, non-contiguous",
        vec![r.nc(&s2)],
        |x| min_dim(&x[0], -1, true).unwrap().0,
    ));
    // A fill's gradient is zeros; joined with its input so the check sees one.
    cs.push(case(
        "fill.Scalar",
        "times the input",
        vec![r.nc(&s2)],
        |x| mul_tensor(&fill_scalar(&x[0], 2.5).unwrap(), &x[0]).unwrap(),
    ));
    cs.push(case("_to_copy", "same dtype", vec![r.nc(&s3)], |x| {
        _to_copy(&x[0], None, None, None, None, false, None).unwrap()
    }));
}
