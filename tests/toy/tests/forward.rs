//! Forward-mode AD from the toy's derivatives.yaml: every function with a forward formula
//! against finite differences and against reverse mode (the list of functions comes from the
//! analysis, so a new formula cannot escape), PyTorch's errors, dual levels, views, in-place
//! ops, and forward-over-reverse Hessian-vector products.

use autograd::gradcheck::{Tolerances, check_forward};
use autograd::runtime::forward::{
    self, ERR_NO_LEVEL, enter_dual_level, exit_dual_level, make_dual, make_dual_at, unpack_dual,
    unpack_dual_at,
};
use autograd::runtime::{GradOptions, Variable, dual_level, grad_with};
use autograd_codegen::emit::{Config, analyze_config};
use autograd_toy::Toy;
use autograd_toy::ops::*;
use std::collections::BTreeSet;

mod common;
use common::{F, c, cases, v};

/// Functions of the toy's YAML files with a forward formula (functional and in-place).
fn functions_with_forward_formulas() -> Vec<String> {
    let mut c = Config::new("derivatives.yaml");
    c.native = Some("native_functions.yaml".into());
    c.base_dir = env!("CARGO_MANIFEST_DIR").into();
    let a = analyze_config(&c).expect("the toy's YAML files analyse");
    a.results
        .iter()
        .filter(|r| {
            let f = &a.functions[r.func].func;
            !f.is_out_fn()
                && r.main_info()
                    .is_some_and(|i| !i.forward_derivatives.is_empty())
        })
        .map(|r| a.functions[r.func].func.name.to_string())
        .collect()
}

#[test]
fn every_forward_formula_has_a_case() {
    let covered: BTreeSet<&str> = cases().iter().map(|c| c.0).collect();
    let missing: Vec<String> = functions_with_forward_formulas()
        .into_iter()
        .filter(|f| !covered.contains(f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "forward formulas without a case: {missing:?}"
    );
}

#[test]
fn every_forward_formula_passes_check_forward() {
    for (name, f, inputs) in cases() {
        check_forward(f, &inputs, Tolerances::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn check_forward_catches_a_wrong_jvp() {
    // The tangent of `x * detach(x)` is x_t * x, but the finite difference sees 2 x x_t.
    let wrong = |x: &[Variable<Toy>]| mul_tensor(&x[0], &x[0].detach());
    assert!(check_forward(wrong, &[v(&[0.5, 2.0])], Tolerances::default()).is_err());
}

const NOT_SUPPORTED: &str = "Trying to use forward AD with sin that does not support it because it has not been implemented yet.\nPlease file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so that we can prioritize its implementation or submit a PR adding the implementation to derivatives.yaml";

#[test]
fn a_function_without_a_forward_formula_fails_like_pytorch() {
    let _l = dual_level();
    let x = make_dual(&c(&[0.1, 0.2]), &c(&[1.0, 1.0])).unwrap();
    // The infallible wrapper cannot return the error: the tangent holds it, and every op
    // downstream passes it on.
    let y = exp(&sin(&x));
    assert_eq!(unpack_dual(&y).unwrap_err().to_string(), NOT_SUPPORTED);
    // Without a tangent, the same function works under the level.
    let plain = sin(&c(&[0.1]));
    assert!(unpack_dual(&plain).unwrap().tangent.is_none());
    // No entry at all (floor_divide), in place (floor_divide_): PyTorch's autograd fallback
    // and its words; out=.
    let err = unpack_dual(&floor_divide_scalar(&x, 2.0))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "Trying to use forward AD with aten::floor_divide that does not support it."
    );
    let t = clone(&x, None);
    let err = floor_divide_scalar_(&t, 2.0).unwrap_err().to_string();
    assert_eq!(
        err,
        "Trying to use forward AD with aten::floor_divide_ that does not support it."
    );
    let err = mul_out(&x, &x, &c(&[0.0, 0.0])).unwrap_err().to_string();
    assert_eq!(
        err,
        "Trying to use forward AD with mul_out that does not support it because it is an out= function"
    );
}

#[test]
fn dual_level_errors_and_lifetime() {
    assert_eq!(
        make_dual(&c(&[1.0]), &c(&[1.0])).unwrap_err().to_string(),
        ERR_NO_LEVEL
    );
    let y = {
        let _l = dual_level();
        let x = make_dual(&c(&[2.0]), &c(&[3.0])).unwrap();
        let err = make_dual(&c(&[2.0]), &c(&[3.0, 1.0]))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("Trying to set a forward gradient that has a different size"),
            "{err}"
        );
        let y = exp(&x);
        let u = unpack_dual(&y).unwrap();
        assert!((u.tangent.unwrap().data().data[0] - 3.0 * 2f64.exp()).abs() < 1e-12);
        assert!(unpack_dual(&u.primal).unwrap().tangent.is_none());
        y
    };
    // The level is gone, and its tangents with it.
    assert!(!forward::is_forward_ad_enabled());
    assert!(unpack_dual(&y).unwrap().tangent.is_none());
    let l1 = enter_dual_level();
    let l2 = enter_dual_level();
    assert_eq!(
        exit_dual_level(l1).unwrap_err().to_string(),
        forward::ERR_EXIT_ORDER
    );
    exit_dual_level(l2).unwrap();
    exit_dual_level(l1).unwrap();
}

#[test]
fn nested_levels_give_second_derivatives_without_confusion() {
    // f(x) = x^3 at x = 2: the inner level's tangent of the outer level's tangent is f''.
    let outer = dual_level();
    let x = make_dual_at(&c(&[2.0]), &c(&[1.0]), outer.level()).unwrap();
    let inner = dual_level();
    let x = make_dual_at(&x, &c(&[1.0]), inner.level()).unwrap();
    let y = mul_tensor(&mul_tensor(&x, &x), &x);
    let dy_inner = unpack_dual_at(&y, inner.level()).unwrap().tangent.unwrap();
    let dy_outer = unpack_dual_at(&y, outer.level()).unwrap().tangent.unwrap();
    assert_eq!(dy_inner.data().data[0], 12.0); // 3x^2
    assert_eq!(dy_outer.data().data[0], 12.0);
    // d/d(outer) of the inner tangent: 6x.
    let d2 = unpack_dual_at(&dy_inner, outer.level())
        .unwrap()
        .tangent
        .unwrap();
    assert_eq!(d2.data().data[0], 12.0);
    drop(inner);
    drop(outer);
}

#[test]
fn inplace_ops_update_the_tangent_and_views_follow_their_base() {
    let _l = dual_level();
    let x = make_dual(&c(&[0.5, 1.5]), &c(&[1.0, 2.0])).unwrap();
    let t = mul_scalar(&x, 1.0);
    exp_(&t).unwrap();
    let tt = unpack_dual(&t).unwrap().tangent.unwrap().data();
    assert!((tt.data[1] - 2.0 * 1.5f64.exp()).abs() < 1e-12);
    // In place on the dual tensor itself (a view of its primal): the write reaches the
    // primal's data, the tangent stays with the dual (PyTorch 2.15: `y = x.clone(); d =
    // make_dual(y, ones); d.mul_(3)` leaves `unpack_dual(y).tangent` None and d's [3., 3.]).
    let p = c(&[1.0, 2.0]);
    let d = make_dual(&p, &c(&[1.0, 1.0])).unwrap();
    mul_tensor_(&d, &c(&[3.0, 3.0])).unwrap();
    assert_eq!(p.data(), v(&[3.0, 6.0]));
    assert_eq!(d.data(), v(&[3.0, 6.0]));
    assert!(unpack_dual(&p).unwrap().tangent.is_none());
    assert_eq!(
        unpack_dual(&d).unwrap().tangent.unwrap().data(),
        v(&[3.0, 3.0])
    );
    // A view's tangent is the view of its base's: unbind's outputs.
    let parts = unbind_int(&x, 0);
    assert_eq!(
        unpack_dual(&parts[1]).unwrap().tangent.unwrap().data(),
        Toy::scalar(2.0)
    );
}

fn hvp_double_backward(f: F, x: &Toy, v_: &Toy) -> Vec<f64> {
    let xv = Variable::new(x.clone(), true);
    let y = f(std::slice::from_ref(&xv));
    let opts = |cg| GradOptions {
        create_graph: cg,
        retain_graph: Some(true),
        ..Default::default()
    };
    let g = grad_with(&[y], std::slice::from_ref(&xv), &[], opts(true)).unwrap()[0]
        .clone()
        .unwrap();
    let gv = sum(&mul_tensor(&g, &Variable::from_data(v_.clone())));
    grad_with(&[gv], std::slice::from_ref(&xv), &[], opts(false)).unwrap()[0]
        .clone()
        .unwrap()
        .data()
        .data
        .to_vec()
}

fn hvp_forward_over_reverse(f: F, x: &Toy, v_: &Toy) -> Vec<f64> {
    let _l = dual_level();
    let xv = Variable::new(x.clone(), true);
    let dual = make_dual(&xv, &Variable::from_data(v_.clone())).unwrap();
    let y = f(std::slice::from_ref(&dual));
    let opts = GradOptions {
        create_graph: true,
        retain_graph: Some(true),
        ..Default::default()
    };
    let g = grad_with(&[y], std::slice::from_ref(&xv), &[], opts).unwrap()[0]
        .clone()
        .unwrap();
    unpack_dual(&g)
        .unwrap()
        .tangent
        .unwrap()
        .data()
        .data
        .to_vec()
}

#[test]
fn forward_over_reverse_hvp_equals_double_backward() {
    let x = v(&[0.3, -0.7, 1.1]);
    let dir = v(&[0.5, 1.0, -2.0]);
    let fs: Vec<(&str, F)> = vec![
        ("x^3", |x| sum(&pow_tensor_scalar(&x[0], 3.0))),
        ("exp(x) * x", |x| sum(&mul_tensor(&exp(&x[0]), &x[0]))),
        ("tanh(x)^2", |x| {
            sum(&mul_tensor(&tanh(&x[0]), &tanh(&x[0])))
        }),
        ("cross terms", |x| {
            let s = sum(&x[0]);
            mul_tensor(&s, &sum(&exp(&neg(&x[0]))))
        }),
    ];
    for (name, f) in fs {
        let a = hvp_double_backward(f, &x, &dir);
        let b = hvp_forward_over_reverse(f, &x, &dir);
        for (p, q) in a.iter().zip(&b) {
            assert!((p - q).abs() < 1e-10, "{name}: {a:?} vs {b:?}");
        }
    }
}
