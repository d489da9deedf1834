//! Dual variables ([`make_dual`], [`unpack_dual`]: PyTorch's `forward_ad.make_dual` and
//! `unpack_dual`), which alias their primal through a view, and [`original`], the copy of
//! `self` an in-place op's forward formula reads. The levels are `levels.rs`'s, a variable's
//! tangents `variable/fw.rs`'s.

use crate::error::AutogradError;
use crate::levels::{
    ERR_NO_LEVEL, Hidden, Level, current_level, is_forward_ad_enabled, is_visible, visible_levels,
};
use crate::tangents::size_mismatch;
use crate::tensor::Tensor;
use crate::variable::{Tangent, Variable};

/// A dual variable taken apart ([`unpack_dual`]).
#[derive(Debug, Clone)]
pub struct UnpackedDual<T: Tensor> {
    /// The primal value: a view of the variable without its tangent at that level.
    pub primal: Variable<T>,
    /// The tangent, `None` when it has none at that level.
    pub tangent: Option<Variable<T>>,
}

/// A new variable aliasing `primal` (same data and version counter; gradients flow back to
/// `primal`; in-place changes of either are seen by both) with `tangent` at the innermost
/// level (PyTorch's `forward_ad.make_dual`).
pub fn make_dual<T: Tensor>(
    primal: &Variable<T>,
    tangent: &Variable<T>,
) -> Result<Variable<T>, AutogradError> {
    let level = current_level().ok_or_else(|| AutogradError::msg(ERR_NO_LEVEL))?;
    make_dual_at(primal, tangent, level)
}

/// A differentiable copy of `v` without tangents at any level.
fn without_tangents<T: Tensor>(v: &Variable<T>) -> Variable<T> {
    let _hidden: Vec<Hidden> = visible_levels().into_iter().map(Hidden::new).collect();
    crate::ops::clone(v)
}

/// [`make_dual`] at a given live level.
pub fn make_dual_at<T: Tensor>(
    primal: &Variable<T>,
    tangent: &Variable<T>,
    level: Level,
) -> Result<Variable<T>, AutogradError> {
    if !is_visible(level) {
        return Err(AutogradError::msg(ERR_NO_LEVEL));
    }
    let (p, t) = (primal.shape(), tangent.shape());
    if p != t {
        return Err(size_mismatch(&p, &t));
    }
    if primal.own_tangent(level).is_some() {
        return Err(AutogradError::msg(format!(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the same level {} is not supported.",
            level.0
        )));
    }
    let dual = {
        let _h = Hidden::new(level);
        crate::ops::clone(primal)
    };
    let view_fn: crate::view::ViewFn<T> = std::sync::Arc::new(|b| Ok(crate::ops::clone(b)));
    // Writes reach the primal's data and history, not its tangents: the dual keeps them
    // (PyTorch: after `dual.mul_(3)` the primal still has no tangent).
    let inverse: crate::view::ScatterFn<T> =
        std::sync::Arc::new(|_, new| Ok(without_tangents(new)));
    crate::view::make_view(
        &dual,
        primal,
        view_fn,
        crate::view::ViewInverse::Scatter(inverse),
    );
    dual.set_own_tangent(level, Tangent::Value(tangent.clone()));
    Ok(dual)
}

/// The primal and the tangent of `v` at the innermost level (PyTorch's
/// `forward_ad.unpack_dual`); outside of any level the tangent is `None`. Fails with the error
/// an op without a forward formula stored as the tangent.
pub fn unpack_dual<T: Tensor>(v: &Variable<T>) -> Result<UnpackedDual<T>, AutogradError> {
    match current_level() {
        Some(level) => unpack_dual_at(v, level),
        None => Ok(UnpackedDual {
            primal: v.clone(),
            tangent: None,
        }),
    }
}

/// [`unpack_dual`] at a given level.
pub fn unpack_dual_at<T: Tensor>(
    v: &Variable<T>,
    level: Level,
) -> Result<UnpackedDual<T>, AutogradError> {
    let tangent = v.fw_grad_at(level)?;
    let primal = {
        let _h = Hidden::new(level);
        crate::ops::clone(v)
    };
    Ok(UnpackedDual { primal, tangent })
}

/// Generated code, in-place ops: a differentiable copy of `self` with its tangents, taken
/// before the op when a dual level is live (the formula's `self_p` / `self_t`).
pub fn original<T: Tensor>(v: &Variable<T>) -> Option<Variable<T>> {
    is_forward_ad_enabled().then(|| crate::ops::clone(v))
}

#[cfg(test)]
mod tests {
    use super::{make_dual, unpack_dual};
    use crate::levels::{MIN_SWEEP, dual_level, holders};
    use crate::tensor::testing::val;
    use crate::variable::Variable;

    #[test]
    fn a_level_lets_go_of_the_tangents_of_variables_that_died() {
        let _level = dual_level();
        let kept = make_dual(
            &Variable::from_data(val(1.0)),
            &Variable::from_data(val(2.0)),
        )
        .unwrap();
        // Without the sweep, each of these would leave a holder behind: 10,000, or under
        // Miri (slow) 8 * MIN_SWEEP, twice what the assertion allows.
        let n = if cfg!(miri) { 8 * MIN_SWEEP } else { 10_000 };
        for i in 0..n {
            let d = make_dual(
                &Variable::from_data(val(i as f64)),
                &Variable::from_data(val(1.0)),
            )
            .unwrap();
            drop(d);
        }
        assert!(holders() < 4 * MIN_SWEEP, "{} holders", holders());
        // The living keep their tangents.
        assert_eq!(
            unpack_dual(&kept).unwrap().tangent.unwrap().data(),
            val(2.0)
        );
    }
}
