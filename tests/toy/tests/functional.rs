//! `autograd::functional` on the toy backend: forward and reverse Jacobians agree, the
//! Hessian by forward over reverse matches double backward, and errors come back.

use autograd::functional::{Mode, hessian, hvp, jacobian, jacobian_with, jvp, vjp};
use autograd::runtime::{GradOptions, Variable, grad_with};
use autograd_toy::Toy;
use autograd_toy::ops::*;

fn c(x: &[f64]) -> Variable<Toy> {
    Variable::from_data(Toy::vec(x.to_vec()))
}

fn f(p: &[Variable<Toy>]) -> Variable<Toy> {
    // [3] x [3] -> [3], mixing both inputs nonlinearly
    tanh(&mul_tensor(&exp(&p[0]), &add_scalar(&p[1], 1.0, 1.0)))
}

#[test]
fn forward_and_reverse_jacobians_agree() {
    let xs = [c(&[0.3, -0.2, 0.5]), c(&[1.0, 0.1, -0.4])];
    let fwd = jacobian_with(f, &xs, Mode::Forward).unwrap();
    let rev = jacobian_with(f, &xs, Mode::Reverse).unwrap();
    assert_eq!(fwd.len(), 2);
    for (a, b) in fwd.iter().zip(&rev) {
        assert_eq!((a.rows, a.cols), (3, 3));
        for (x, y) in a.data.iter().zip(&b.data) {
            assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
        }
    }
    // A scalar output of three inputs picks reverse mode; the same values.
    let s = |p: &[Variable<Toy>]| sum(&f(p));
    let j = jacobian(s, &xs).unwrap();
    assert_eq!((j[0].rows, j[0].cols), (1, 3));
    let fw = jacobian_with(s, &xs, Mode::Forward).unwrap();
    assert!(j.iter().zip(&fw).all(|(a, b)| {
        a.data
            .iter()
            .zip(&b.data)
            .all(|(x, y)| (x - y).abs() < 1e-12)
    }));
}

#[test]
fn hessian_by_forward_over_reverse_matches_double_backward() {
    let s = |p: &[Variable<Toy>]| sum(&f(p));
    let xs = [c(&[0.3, -0.2, 0.5]), c(&[1.0, 0.1, -0.4])];
    let h = hessian(s, &xs).unwrap();
    assert_eq!((h.rows, h.cols), (6, 6));
    // Row by row with double backward.
    let leaves: Vec<Variable<Toy>> = xs.iter().map(|x| Variable::new(x.data(), true)).collect();
    let opts = |cg| GradOptions {
        create_graph: cg,
        retain_graph: Some(true),
        allow_unused: true,
        materialize_grads: true,
    };
    let g = grad_with(&[s(&leaves)], &leaves, &[], opts(true)).unwrap();
    let flat: Vec<(usize, usize)> = (0..2).flat_map(|i| (0..3).map(move |k| (i, k))).collect();
    for (row, &(i, k)) in flat.iter().enumerate() {
        let gi = unbind_int(g[i].as_ref().unwrap(), 0)[k].clone();
        let gg = grad_with(&[gi], &leaves, &[], opts(false)).unwrap();
        let r: Vec<f64> = gg
            .iter()
            .flat_map(|x| x.as_ref().unwrap().data().data.to_vec())
            .collect();
        for (col, x) in r.iter().enumerate() {
            assert!((h.at(row, col) - x).abs() < 1e-10, "({row}, {col})");
            assert!((h.at(row, col) - h.at(col, row)).abs() < 1e-10);
        }
    }
}

#[test]
fn jvp_and_vjp_are_adjoint_and_errors_come_back() {
    let xs = [c(&[0.3, -0.2, 0.5]), c(&[1.0, 0.1, -0.4])];
    let ts = [c(&[1.0, 2.0, 3.0]), c(&[-1.0, 0.5, 0.0])];
    let (out, jv) = jvp(f, &xs, &ts).unwrap();
    let (out2, vjp_fn) = vjp(f, &xs).unwrap();
    assert_eq!(out.data(), out2.data());
    let u = c(&[0.7, -0.3, 0.2]);
    let ju = vjp_fn.call(&u).unwrap();
    let dot = |a: &Toy, b: &Toy| {
        a.data
            .iter()
            .zip(b.data.iter())
            .map(|(x, y)| x * y)
            .sum::<f64>()
    };
    let lhs = dot(&u.data(), &jv.data());
    let rhs: f64 = ju
        .iter()
        .zip(&ts)
        .map(|(g, t)| dot(&g.data(), &t.data()))
        .sum();
    assert!((lhs - rhs).abs() < 1e-12);
    // Mismatched structure, and an op without a forward formula.
    let err = jvp(f, &xs, &ts[..1]).unwrap_err().to_string();
    assert!(err.contains("same python structure"), "{err}");
    let err = jvp(|p| sin(&p[0]), &xs[..1], &ts[..1])
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("Trying to use forward AD with sin that does not support it"),
        "{err}"
    );
    let err = hvp(f, &xs, &ts).unwrap_err().to_string();
    assert!(err.contains("single-element"), "{err}");
}

#[test]
fn forward_mode_frees_its_graphs() {
    use autograd::runtime::live_nodes;
    let s = |p: &[Variable<Toy>]| sum(&f(p));
    let xs = [c(&[0.3, -0.2, 0.5]), c(&[1.0, 0.1, -0.4])];
    let ts = [c(&[1.0, 2.0, 3.0]), c(&[-1.0, 0.5, 0.0])];
    let before = live_nodes();
    for _ in 0..20 {
        hvp(s, &xs, &ts).unwrap();
        jvp(f, &xs, &ts).unwrap();
        hessian(s, &xs).unwrap();
    }
    assert_eq!(live_nodes(), before);
}

/// Values recorded with PyTorch 2.15 (float64, `torch.func.jvp`, `jvp(grad(g))`, `hessian`)
/// for the same functions and points.
#[test]
fn matches_pytorch_2_15() {
    let close = |a: &[f64], b: &[f64]| {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
        }
    };
    let xs = [c(&[0.3, -0.2, 0.5]), c(&[1.0, 0.1, -0.4])];
    let ts = [c(&[1.0, 2.0, 3.0]), c(&[-1.0, 0.5, 0.0])];
    let (out, t) = jvp(f, &xs, &ts).unwrap();
    close(
        &out.data().data,
        &[0.9910023963806397, 0.7165917575750391, 0.7570349821936008],
    );
    close(
        &t.data().data,
        &[0.024181708640136284, 1.0754354976343046, 1.2669045694859156],
    );
    let g = |p: &[Variable<Toy>]| {
        mul_tensor(
            &sum(&pow_tensor_scalar(&p[0], 3.0)),
            &sum(&exp(&neg(&p[0]))),
        )
    };
    let (_, hv) = hvp(g, &xs[..1], &ts[..1]).unwrap();
    close(
        &hv[0].data().data,
        &[1.3349042407369751, -9.784697436639586, 17.95434958407471],
    );
    let h = hessian(|p: &[Variable<Toy>]| sum(&f(p)), &xs).unwrap();
    let dxdy: Vec<f64> = (0..3)
        .flat_map(|r| (3..6).map(move |c| (r, c)))
        .map(|(r, c)| h.at(r, c))
        .collect();
    close(
        &dxdy,
        &[
            -0.10521106568391389,
            0.0,
            0.0,
            0.0,
            -0.11580072779042391,
            0.0,
            0.0,
            0.0,
            -0.3503467021766896,
        ],
    );
}
