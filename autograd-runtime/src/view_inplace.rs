//! In-place operations on views ([`inplace_on_view`], [`check_inplace_view`]): an in-place op
//! on a view runs on a copy of the view, the result is scattered into the base
//! (differentiably: the base's history becomes the scatter's, PyTorch's `CopySlices` in
//! composed form), and the shared version counter is bumped. What a view is and how it is
//! computed again from its base are `view_meta.rs`'s; the public module `view` (`lib.rs`) gives
//! both.

use crate::error::AutogradError;
use crate::mode::{enable_grad, is_grad_enabled};
use crate::tensor::Tensor;
use crate::variable::Variable;
use crate::view_meta::*;

/// PyTorch's message for an in-place op on a view made in no_grad mode.
pub const ERR_NO_GRAD_VIEW: &str = "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).";

/// PyTorch's message for an in-place op on a view of a leaf that requires grad.
pub const ERR_VIEW_OF_LEAF: &str =
    "a view of a leaf Variable that requires grad is being used in an in-place operation.";

/// PyTorch's message for an in-place op on a tensor whose elements overlap.
pub const ERR_OVERLAP: &str = "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.";

/// The view's tangent after an in-place op on it: the view of the base's when the base has
/// one (the write reached it), else the op's result's own (a dual made by `make_dual`, whose
/// primal never takes its tangent).
fn tangent_after_inplace<T: Tensor>(view: &Variable<T>, base: &Variable<T>, copy: &Variable<T>) {
    for level in crate::tangents::visible_levels() {
        if !matches!(base.fw_grad_at(level), Ok(None)) {
            view.clear_own_tangent(level);
            continue;
        }
        match copy.fw_grad_at(level) {
            Ok(Some(t)) => view.set_own_tangent(level, crate::tangents::Tangent::Value(t)),
            Ok(None) => {}
            Err(e) => view.set_own_tangent(level, crate::tangents::Tangent::Error(e)),
        }
    }
}

/// PyTorch's `check_inplace` for a view: `requires_grad` is whether the in-place op records
/// (some input requires grad).
pub fn check_inplace_view<T: Tensor>(
    view: &Variable<T>,
    requires_grad: bool,
) -> Result<(), AutogradError> {
    let Some(Parent {
        base,
        inverse,
        no_grad,
        ..
    }) = parent(view)
    else {
        return Ok(());
    };
    if matches!(inverse, ViewInverse::DataAlias) {
        return Ok(());
    }
    if matches!(inverse, ViewInverse::Overlapping) {
        return Err(AutogradError::msg(ERR_OVERLAP));
    }
    if !(requires_grad && is_grad_enabled()) {
        return Ok(());
    }
    if no_grad {
        return Err(AutogradError::msg(ERR_NO_GRAD_VIEW));
    }
    if let ViewInverse::MultiOutput { op, index } = &inverse {
        return Err(AutogradError::msg(format!(
            "Output {index} of {op} is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one."
        )));
    }
    if view.requires_grad() && base.is_leaf() && base.requires_grad() {
        return Err(AutogradError::msg(ERR_VIEW_OF_LEAF));
    }
    Ok(())
}

/// An in-place op on a view: checks it as PyTorch does, runs `op` on a differentiable copy
/// of the view, writes the result into the base, and returns the view (current again when
/// next read).
pub fn inplace_on_view<T: Tensor>(
    view: &Variable<T>,
    requires_grad: bool,
    op: impl FnOnce(&Variable<T>) -> Result<(), AutogradError>,
) -> Result<Variable<T>, AutogradError> {
    check_inplace_view(view, requires_grad)?;
    let Some(Parent {
        base,
        inverse,
        view_fn,
        ..
    }) = parent(view)
    else {
        // A detached alias whose origin is gone: a tensor of its own.
        return inplace_on_alias(view, None, op);
    };
    if matches!(inverse, ViewInverse::DataAlias) {
        return inplace_on_alias(view, Some(&base), op);
    }
    let copy = crate::ops::clone(view);
    let new_base = match inverse {
        ViewInverse::Scatter(scatter) => {
            op(&copy)?;
            scatter(&base, &copy)?
        }
        ViewInverse::MultiOutput { .. } => {
            op(&copy)?;
            multi_output_scatter(&base, &view_fn, &copy)?
        }
        _ => return Err(AutogradError::msg(ERR_OVERLAP)),
    };
    base.replace_with(&new_base);
    // The base may be a detached alias: its values are also its origin's.
    let bumped = match parent(&base) {
        Some(p) if matches!(p.inverse, ViewInverse::DataAlias) => {
            write_values(&p.base, new_base.data())?
        }
        _ => false,
    };
    if !bumped {
        base.bump_version();
    }
    if crate::tangents::is_forward_ad_enabled() {
        tangent_after_inplace(view, &base, &copy);
    }
    Ok(view.clone())
}

/// The inverse of one of several views returned by one op (`unbind`, `split`, `chunk`),
/// which has none of its own, where nothing records (PyTorch refuses such writes where
/// something would: [`check_inplace_view`]): the view's backward, the adjoint `f^T` of its
/// view function `f`, puts a view-shaped value at the view's elements of zeros shaped like
/// the base, so the new base is `f^T(new)` where `f^T(ones)` is one and the base elsewhere
/// ([`crate::ops::select_where`]): values and tangents, no history.
fn multi_output_scatter<T: Tensor>(
    base: &Variable<T>,
    view_fn: &ViewFn<T>,
    new: &Variable<T>,
) -> Result<Variable<T>, AutogradError> {
    let ones = Variable::from_data(new.with_data(T::ones_like));
    let mask = adjoint(base, view_fn, &ones)?;
    let placed = adjoint(base, view_fn, new)?;
    crate::ops::select_where(base, &mask, &placed)
}

/// `f^T(v)`: the backward of the view function `f` at `base`'s values with `v` as the
/// view's gradient (differentiable, so it carries `v`'s tangents, under a live dual level).
fn adjoint<T: Tensor>(
    base: &Variable<T>,
    view_fn: &ViewFn<T>,
    v: &Variable<T>,
) -> Result<Variable<T>, AutogradError> {
    let _g = enable_grad();
    let b = Variable::new(base.data(), true);
    let y = view_fn(&b)?;
    let fw = crate::tangents::is_forward_ad_enabled();
    let g = crate::engine::grad(&[y], &[b], &[Some(v.clone())], Some(false), fw, true)?;
    let g = g.into_iter().next().flatten();
    // An unused base (a view of no element) takes nothing.
    Ok(g.unwrap_or_else(|| Variable::from_data(base.with_data(T::zeros_like))))
}

/// An in-place op on a detached alias: the alias takes the result (its own history), the
/// values reach what it aliases (a view's through that view's inverse, recording nothing),
/// and the shared version counter moves once.
fn inplace_on_alias<T: Tensor>(
    alias: &Variable<T>,
    base: Option<&Variable<T>>,
    op: impl FnOnce(&Variable<T>) -> Result<(), AutogradError>,
) -> Result<Variable<T>, AutogradError> {
    let copy = crate::ops::clone(alias);
    op(&copy)?;
    alias.replace_with(&copy);
    let bumped = match base {
        Some(b) => write_values(b, copy.data())?,
        None => false,
    };
    if !bumped {
        alias.bump_version();
    }
    set_synced(alias, alias.version());
    Ok(alias.clone())
}

/// Writes `data` as the new values of `v` without touching its history; whether the version
/// counter moved already (a view's write-through bumps it).
fn write_values<T: Tensor>(v: &Variable<T>, data: T) -> Result<bool, AutogradError> {
    match parent(v) {
        Some(p) if matches!(p.inverse, ViewInverse::DataAlias) => {
            v.set_data(data.clone());
            write_values(&p.base, data)
        }
        Some(_) => {
            let _g = crate::mode::no_grad();
            inplace_on_view(v, false, |c| {
                c.set_data(data);
                Ok(())
            })?;
            Ok(true)
        }
        None => {
            v.set_data(data);
            Ok(false)
        }
    }
}
