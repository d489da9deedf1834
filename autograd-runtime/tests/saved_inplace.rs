#![allow(clippy::cloned_ref_to_slice_refs)] // `&[x.clone()]` reads better in tests
mod common;
use common::*;

const HINT: &str = " Hint: enable anomaly detection to find the operation that failed to compute its gradient, with autograd_runtime::set_detect_anomaly(true).";

#[test]
fn version_counter_error_on_saved_output() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y = exp(&x); // saves its output at version 0
    assert_eq!(y.version(), 0);
    add_scalar_(&y, 1.0).unwrap();
    assert_eq!(y.version(), 1);
    let err = sum(&y).backward().unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "one of the variables needed for gradient computation has been modified by an inplace operation: [Tensor<f64> [3]], which is output 0 of ExpBackward0, is at version 1; expected version 0 instead.{HINT}"
        )
    );
}

#[test]
fn version_counter_error_on_saved_input_after_two_changes() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let a = mul_scalar(&x, 1.0);
    add_scalar_(&a, 1.0).unwrap(); // version 1
    let w = leaf(&[3.0, 4.0], &[2]);
    let y = mul(&a, &w); // saves a at version 1
    add_scalar_(&a, 1.0).unwrap(); // version 2
    let err = sum(&y).backward().unwrap_err();
    assert_eq!(
        err,
        AutogradError::VersionMismatch {
            tensor: "Tensor<f64> [2]".into(),
            output_of: Some((0, "AddBackward1".into())),
            current: 2,
            expected: 1,
            anomaly: false,
        }
    );
    assert!(err.to_string().contains(
        "[Tensor<f64> [2]], which is output 0 of AddBackward1, is at version 2; expected version 1 instead."
    ));
}

#[test]
fn saved_leaf_modified_under_no_grad() {
    let w = leaf(&[2.0], &[1]);
    let x = leaf(&[3.0], &[1]);
    let y = mul(&x, &w);
    {
        let _g = no_grad();
        add_scalar_(&w, 1.0).unwrap(); // allowed: optimizer-style update
    }
    let err = y.backward().unwrap_err();
    assert!(
        err.to_string()
            .contains("[Tensor<f64> [1]] is at version 1; expected version 0 instead."),
        "{err}"
    );
}

#[test]
fn views_and_detach_share_the_version_counter() {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let y = exp(&x);
    let v = view(&y, &[2, 2]);
    assert_eq!(v.version(), 0);
    add_scalar_(&v, 1.0).unwrap(); // in-place on the view bumps the base's counter
    assert_eq!(y.version(), 1);
    let err = sum(&y).backward().unwrap_err();
    assert!(
        matches!(
            err,
            AutogradError::VersionMismatch {
                current: 1,
                expected: 0,
                ..
            }
        ),
        "{err}"
    );

    let x = leaf(&[1.0], &[1]);
    let y = exp(&x);
    let d = y.detach();
    assert!(!d.requires_grad() && d.is_leaf());
    add_scalar_(&d, 1.0).unwrap();
    assert_eq!(y.version(), 1);
    assert!(y.backward().is_err());
    let a = x.alias(x.data());
    a.bump_version();
    assert_eq!(x.version(), 1);
}

#[test]
fn view_of_saved_output_after_the_output_is_dropped() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = exp(&x);
    let v = view(&y, &[2]);
    let s = sum(&y);
    drop(y);
    add_scalar_(&v, 1.0).unwrap();
    assert!(matches!(
        s.backward().unwrap_err(),
        AutogradError::VersionMismatch { .. }
    ));
}

#[test]
fn saved_variable_unpack_states() {
    let x = leaf(&[1.0], &[1]);
    let mut s = SavedVariable::new(&x, false);
    assert!(s.unpack().unwrap().ptr_eq(&x));
    assert_eq!(s.shape(), Some(vec![1]));
    s.reset();
    assert!(s.was_released());
    assert_eq!(s.unpack().unwrap_err(), AutogradError::BackwardTwice);
    let e: SavedVariable<TT> = SavedVariable::default();
    assert!(e.unpack_opt().unwrap().is_none());
    assert_eq!(
        e.unpack().unwrap_err(),
        AutogradError::UndefinedSavedVariable
    );
    assert!(SavedVariable::<TT>::new_opt(None, false).is_empty());
}

#[test]
fn saved_output_is_rebuilt_with_its_grad_fn_and_is_weak() {
    let x = leaf(&[0.0], &[1]);
    let y = exp(&x);
    let f = y.grad_fn().unwrap();
    let saved = SavedVariable::new(&y, true);
    let u = saved.unpack().unwrap();
    assert!(u.grad_fn().unwrap().ptr_eq(&f));
    assert_eq!(u.output_nr(), 0);
    assert_eq!(u.version(), y.version());
    assert_eq!(
        f.saved_tensors(),
        vec![("result".to_string(), Some(vec![1]))]
    );
    // The node does not keep itself alive through its saved output.
    let before = live_nodes();
    drop((y, f, u));
    assert_eq!(live_nodes(), before - 1);
    // With the node gone, the saved output unpacks to a variable without history.
    let orphan = saved.unpack().unwrap();
    assert!(orphan.grad_fn().is_none());
}

#[test]
fn inplace_on_leaf_requiring_grad_is_an_error() {
    let x = leaf(&[1.0], &[1]);
    let err = add_scalar_(&x, 1.0).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a leaf Variable that requires grad is being used in an in-place operation."
    );
    assert_eq!(x.version(), 0);
    assert_close(&vals(&x), &[1.0]);
    let _g = no_grad();
    add_scalar_(&x, 1.0).unwrap();
    assert_close(&vals(&x), &[2.0]);
    assert_eq!(x.version(), 1);
    assert!(x.is_leaf());
}

#[test]
fn inplace_rebases_history() {
    // a = x * 2 ; a *= w (in place) ; y = sum(a) => dy/dx = 2w, dy/dw = 2x
    let x = leaf(&[1.0, 2.0], &[2]);
    let w = leaf(&[3.0, 5.0], &[2]);
    let a = mul_scalar(&x, 2.0);
    let old = a.grad_fn().unwrap();
    mul_(&a, &w).unwrap();
    assert_close(&vals(&a), &[6.0, 20.0]);
    assert_eq!(a.version(), 1);
    let f = a.grad_fn().unwrap();
    assert_eq!(f.name(), "MulBackward0");
    assert_eq!(a.output_nr(), 0);
    assert!(
        f.next_edges()[0]
            .as_ref()
            .unwrap()
            .node()
            .unwrap()
            .ptr_eq(&old)
    );
    sum(&a).backward().unwrap();
    assert_close(&grad_vals(&x), &[6.0, 10.0]);
    assert_close(&grad_vals(&w), &[2.0, 4.0]);
}

#[test]
fn inplace_on_a_value_that_does_not_require_grad_becomes_differentiable() {
    let c = constant(&[1.0, 1.0], &[2]);
    let w = leaf(&[3.0, 4.0], &[2]);
    mul_(&c, &w).unwrap();
    assert!(c.requires_grad() && !c.is_leaf());
    sum(&c).backward().unwrap();
    assert_close(&grad_vals(&w), &[1.0, 1.0]);
}

#[test]
fn retained_grad_follows_inplace_rebase() {
    let x = leaf(&[1.0], &[1]);
    let a = mul_scalar(&x, 2.0);
    a.retain_grad().unwrap();
    add_scalar_(&a, 1.0).unwrap();
    mul_scalar(&a, 3.0).backward().unwrap();
    assert_close(&grad_vals(&a), &[3.0]);
}

#[test]
fn out_variants_refuse_inputs_that_require_grad() {
    use autograd_runtime::__private::check_out;
    let x = leaf(&[1.0], &[1]);
    let c = constant(&[1.0], &[1]);
    assert!(check_out("mul", &[&c]).is_ok());
    assert_eq!(
        check_out("mul", &[&c, &x]).unwrap_err().to_string(),
        "mul(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."
    );
    let _g = no_grad();
    assert!(check_out("mul", &[&x]).is_ok());
}

#[test]
fn saved_output_unpacks_with_its_grad_fn_and_shared_counter_in_any_mode() {
    let x = leaf(&[0.5], &[1]);
    let y = mul_scalar(&x, 2.0); // a node that saves nothing
    let f = y.grad_fn().unwrap();
    let saved = SavedVariable::new(&y, true);
    let (a, b) = {
        let _g = no_grad();
        (saved.unpack().unwrap(), saved.unpack().unwrap())
    };
    // As PyTorch's SavedVariable::unpack: a new variable each time, with the
    // node as grad_fn whether or not grad mode is on.
    assert!(!a.ptr_eq(&b) && !a.ptr_eq(&y));
    assert!(a.grad_fn().unwrap().ptr_eq(&f) && a.requires_grad());
    assert_eq!(a.output_nr(), 0);
    assert_close(&vals(&a), &vals(&y));
    // It shares y's version counter, in both directions.
    add_scalar_(&y, 1.0).unwrap();
    assert_eq!((a.version(), b.version()), (1, 1));
    assert!(matches!(
        saved.unpack().unwrap_err(),
        AutogradError::VersionMismatch {
            current: 1,
            expected: 0,
            ..
        }
    ));
    {
        let _g = no_grad();
        add_scalar_(&a, 1.0).unwrap();
    }
    assert_eq!(y.version(), 2);
    // Saving allocated no counter of its own: a detached alias shares it too.
    let d = y.detach();
    bump_and_check(&d, &[&y, &a, &b]);
    // With grad mode on the unpacked output has its history too.
    let z = mul_scalar(&x, 3.0);
    let saved = SavedVariable::new(&z, true);
    let u = saved.unpack().unwrap();
    assert!(u.grad_fn().unwrap().ptr_eq(&z.grad_fn().unwrap()));
}

/// Bumps `v`'s version and checks that every alias sees it.
fn bump_and_check(v: &V, aliases: &[&V]) {
    let before = v.version();
    v.bump_version();
    for a in aliases {
        assert_eq!(a.version(), before + 1);
    }
}

#[test]
fn second_output_and_aliases_share_counters() {
    // Output 1 of a two-output node keeps its counter in the node too; an
    // alias of it and a saved copy follow it, and output 0 is independent.
    let x = leaf(&[1.0, 2.0], &[2]);
    let (a, b) = split2(&x);
    let sb = SavedVariable::new(&b, true);
    let alias = b.alias(b.data());
    bump_and_check(&alias, &[&b]);
    assert_eq!(a.version(), 0);
    assert!(matches!(
        sb.unpack().unwrap_err(),
        AutogradError::VersionMismatch {
            current: 1,
            expected: 0,
            ..
        }
    ));
    // A view that shares its base's counter: saving the view checks the base's.
    let base = exp(&x);
    let view = mul_scalar(&base, 1.0);
    view.share_version_counter(&base).unwrap();
    let sv = SavedVariable::new(&view, true);
    base.bump_version();
    assert_eq!(view.version(), 1);
    assert!(sv.unpack().is_err());
    // A leaf's inline counter moves to a shared cell when first aliased.
    let l = constant(&[1.0], &[1]);
    l.bump_version();
    let d = l.detach();
    assert_eq!(d.version(), 1);
    bump_and_check(&l, &[&d]);
    bump_and_check(&d, &[&l]);
}

#[test]
fn saved_output_of_a_variable_detached_earlier_keeps_its_current_data() {
    // PyTorch: `d = y.detach(); y.add_(1)` changes d too (detach shares storage).
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = exp(&x);
    let d = y.detach(); // the shared counter is created here, with y's data
    add_scalar_(&y, 1.0).unwrap(); // y's data replaced, version 1
    let saved = SavedVariable::new(&y, true);
    let u = {
        let _g = no_grad();
        saved.unpack().unwrap()
    };
    assert_close(&vals(&u), &vals(&y));
    assert_eq!(u.version(), 1);
    assert_eq!(d.version(), 1);
    assert_close(&vals(&d), &[1f64.exp() + 1.0, 2f64.exp() + 1.0]);
    assert!(y.grad_fn().is_some() && d.grad_fn().is_none() && d.base().is_none());
    // (Writes through `d` reach y in generated in-place ops: ndtensor's `detach/*` fixtures.)
}

#[test]
fn replaced_data_is_read_everywhere() {
    let x = constant(&[1.0], &[1]);
    let c = x.clone();
    x.set_data(tensor(&[7.0], &[1]));
    assert_close(&vals(&c), &[7.0]);
    assert_eq!(c.shape(), vec![1]);
    assert_eq!(x.version(), 0); // set_data alone does not bump
    // a variable created afterwards from it sees the new data too
    assert_close(&vals(&x.detach()), &[7.0]);
}

/// A node with three outputs whose backward sums their gradients.
struct ThreeBackward;
impl Node<TT> for ThreeBackward {
    fn name(&self) -> &str {
        "ThreeBackward"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        let mut sum: Option<V> = None;
        for g in grads.iter().flatten() {
            sum = Some(match sum {
                None => g.clone(),
                Some(s) => add(&s, g),
            });
        }
        Ok(variable_list![sum])
    }
}

#[test]
fn outputs_beyond_the_node_slots_have_counters_of_their_own() {
    let x = leaf(&[1.0], &[1]);
    let (outs, _) = record_vec(
        ThreeBackward,
        &[Some(&x)],
        vec![x.data(), x.data(), x.data()],
    );
    let [o0, o1, o2] = [&outs[0], &outs[1], &outs[2]];
    let saved = SavedVariable::new(o2, true);
    let d = o2.detach();
    bump_and_check(&d, &[o2]);
    assert_eq!((o0.version(), o1.version()), (0, 0));
    assert!(matches!(
        saved.unpack().unwrap_err(),
        AutogradError::VersionMismatch {
            current: 1,
            expected: 0,
            ..
        }
    ));
    // Each output's counter is its own.
    bump_and_check(o1, &[]);
    assert_eq!((o0.version(), o1.version(), o2.version()), (0, 1, 1));
    let s0 = SavedVariable::new(o0, true);
    let u = s0.unpack().unwrap();
    assert_eq!(u.output_nr(), 0);
    bump_and_check(&u, &[o0]);
    // Backward through all three still works.
    let total = add(&add(o0, o1), o2);
    let before = x.grad();
    assert!(before.is_none());
    sum(&total).backward().unwrap();
    assert_close(&grad_vals(&x), &[3.0]);
}

#[test]
fn data_ref_borrows_checks_versions_and_follows_the_states() {
    // A saved input: its variable's data, read under the lock, equal to `unpack_data`.
    let x = leaf(&[1.0, 2.0], &[2]);
    let s = SavedVariable::new(&x, false);
    assert_eq!(
        s.data_ref().unwrap().shape(),
        s.unpack_data().unwrap().shape()
    );
    // A saved output: the saved data itself.
    let y = exp(&x);
    let o = SavedVariable::new(&y, true);
    assert_eq!(
        format!("{:?}", &*o.data_ref().unwrap()),
        format!("{:?}", y.data())
    );
    // Modified in place: the same error as `unpack`.
    add_scalar_(&y, 1.0).unwrap();
    assert_eq!(
        o.data_ref().err().map(|e| e.to_string()),
        o.unpack().err().map(|e| e.to_string())
    );
    assert!(o.data_ref().is_err());
    // Released and empty, as `unpack`.
    let mut r = SavedVariable::new(&x, false);
    r.reset();
    assert_eq!(r.data_ref().err(), Some(AutogradError::BackwardTwice));
    let e: SavedVariable<TT> = SavedVariable::default();
    assert_eq!(
        e.data_ref().err(),
        Some(AutogradError::UndefinedSavedVariable)
    );
}
