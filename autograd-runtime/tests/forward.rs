//! Dual levels and tangents in the runtime alone (ops without forward formulas of their own:
//! only the built-in `ops::add` / `ops::clone` and `make_dual`'s view).

mod common;
use autograd_runtime::forward::{
    ERR_EXIT_ORDER, ERR_NO_LEVEL, enter_dual_level, exit_dual_level, make_dual_at, unpack_dual_at,
};
use autograd_runtime::{dual_level, grad, is_forward_ad_enabled, make_dual, ops, unpack_dual};
use common::*;

#[test]
fn levels_nest_and_exit_in_order() {
    assert!(!is_forward_ad_enabled());
    assert_eq!(
        make_dual(&constant(&[1.0], &[1]), &constant(&[1.0], &[1]))
            .unwrap_err()
            .to_string(),
        ERR_NO_LEVEL
    );
    let a = enter_dual_level();
    let b = enter_dual_level();
    assert!(is_forward_ad_enabled());
    assert_eq!(exit_dual_level(a).unwrap_err().to_string(), ERR_EXIT_ORDER);
    exit_dual_level(b).unwrap();
    exit_dual_level(a).unwrap();
    assert!(!is_forward_ad_enabled());
    // A guard dropped out of order still removes its level.
    let outer = dual_level();
    let inner = dual_level();
    drop(outer);
    assert!(is_forward_ad_enabled());
    drop(inner);
    assert!(!is_forward_ad_enabled());
}

#[test]
fn tangents_live_per_level_and_the_engine_ops_propagate_them() {
    let outer = dual_level();
    let inner = dual_level();
    let x = make_dual_at(
        &constant(&[1.0, 2.0], &[2]),
        &constant(&[1.0, 0.0], &[2]),
        outer.level(),
    )
    .unwrap();
    let y = make_dual_at(
        &constant(&[3.0, 4.0], &[2]),
        &constant(&[0.0, 5.0], &[2]),
        inner.level(),
    )
    .unwrap();
    let s = ops::add(&x, &y);
    assert_eq!(
        vals(&unpack_dual_at(&s, outer.level()).unwrap().tangent.unwrap()),
        [1.0, 0.0]
    );
    assert_eq!(
        vals(&unpack_dual_at(&s, inner.level()).unwrap().tangent.unwrap()),
        [0.0, 5.0]
    );
    // unpack_dual uses the innermost level; its primal has no tangent there.
    let u = unpack_dual(&s).unwrap();
    assert!(unpack_dual(&u.primal).unwrap().tangent.is_none());
    let c = ops::clone(&x);
    assert_eq!(
        vals(&unpack_dual_at(&c, outer.level()).unwrap().tangent.unwrap()),
        [1.0, 0.0]
    );
    drop(inner);
    drop(outer);
    assert!(
        unpack_dual_at(&s, autograd_runtime::forward::enter_dual_level())
            .unwrap()
            .tangent
            .is_none()
    );
    exit_dual_level(autograd_runtime::forward::current_level().unwrap()).unwrap();
}

#[test]
fn a_dual_is_a_differentiable_alias_of_its_primal() {
    let _l = dual_level();
    let p = leaf(&[2.0, 3.0], &[2]);
    let d = make_dual(&p, &constant(&[1.0, 1.0], &[2])).unwrap();
    assert_eq!(d.version(), p.version());
    let y = mul(&d, &d);
    let g = grad(
        &[ops::add(&y, &y)],
        std::slice::from_ref(&p),
        &[Some(constant(&[1.0, 1.0], &[2]))],
        Some(false),
        false,
        false,
    )
    .unwrap();
    assert_eq!(vals(g[0].as_ref().unwrap()), [8.0, 12.0]);
    // A dual of a dual at the same level is refused.
    let err = make_dual(&d, &constant(&[1.0, 1.0], &[2]))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "Making a dual Tensor based on a Tensor that already has a forward gradient"
        ),
        "{err}"
    );
}

#[test]
fn a_custom_node_without_a_forward_rule_gives_pytorchs_error_not_a_zero() {
    // PyTorch: a custom autograd.Function without jvp under forward AD raises
    // "You must implement the jvp function for custom autograd.Function to use it with forward
    // mode AD." The hand-written `exp` of these tests records through `record`.
    let x = leaf(&[1.0, 2.0], &[2]);
    let _level = dual_level();
    let dual = make_dual(&x, &constant(&[1.0, 0.0], &[2])).unwrap();
    let y = exp(&dual);
    let err = unpack_dual(&y).unwrap_err();
    assert_eq!(err.to_string(), autograd_runtime::ERR_NO_JVP);
    // Without a tangent on its inputs, nothing changes.
    let z = exp(&x);
    assert!(unpack_dual(&z).unwrap().tangent.is_none());
}

#[test]
fn a_forward_formula_knows_its_level() {
    // Helpers that read their inputs' tangents themselves (PyTorch's `cat_jvp`) find the
    // level whose formula runs; outside a formula there is none.
    assert_eq!(autograd_runtime::forward::formula_level(), None);
    let level = dual_level();
    let x = make_dual(&leaf(&[1.0, 2.0], &[2]), &constant(&[3.0, 4.0], &[2])).unwrap();
    let out = Variable::from_data(x.data());
    let mut seen = None;
    autograd_runtime::forward::propagate(&out, &[&x], |l| {
        seen = Some((l, autograd_runtime::forward::formula_level()));
        autograd_runtime::forward::tangent_or_zeros(&x, l)
    })
    .unwrap();
    let (l, inside) = seen.expect("the formula ran");
    assert_eq!(inside, Some(l));
    assert_eq!(autograd_runtime::forward::formula_level(), None, "restored");
    assert_eq!(
        vals(&unpack_dual(&out).unwrap().tangent.unwrap()),
        [3.0, 4.0]
    );
    drop(level);
}
