//! Views on tensors that are values, not shared memory: PyTorch's view semantics through
//! functionalization.
//!
//! A tensor library built on this runtime need not have strided storage (candle's, burn's and
//! ndtensor's tensors are values). A view is then a variable that knows its base (the root
//! of a chain of views), how to compute itself from the base (`view_fn`, replaying the view
//! ops differentiably) and how to write a new value of itself back into the base (the
//! inverse: `slice_scatter` for a slice, a reshape back for a reshape, ...). With those:
//!
//! * an in-place op on a view runs on a copy of the view, the result is scattered into the
//!   base (differentiably: the base's history becomes the scatter's, PyTorch's `CopySlices`
//!   in composed form), and the shared version counter is bumped;
//! * any view whose base changed since it was last computed (the shared version counter
//!   moved) computes its data and history again from the base before they are read, so
//!   writes to a base or to another view of it are seen, and its `grad_fn` leads to the
//!   base's new history (PyTorch regenerates a view's `grad_fn` the same way);
//! * a view shares its base's version counter: saving a view and then modifying the base is
//!   the usual version error.
//!
//! Programs without views pay nothing: a variable that is not a view takes no other path.
//! Generated code calls [`make_view`] for ops whose schema returns an alias of an input
//! (`Tensor(a) self -> Tensor(a)`) and [`inplace_on_view`] at the start of in-place ops.
//!
//! What a view keeps and how it is computed again from its base are `variable/view.rs`'s
//! (part of a variable); this module makes views and runs in-place ops on them.

use crate::error::AutogradError;
use crate::levels::{is_forward_ad_enabled, visible_levels};
use crate::mode::{enable_grad, is_grad_enabled};
use crate::tensor::Tensor;
use crate::variable::{BaseRef, Parent, Tangent, Variable, ViewMeta, parent, set_synced};
use std::sync::Arc;

pub use crate::variable::{ScatterFn, ViewFn, ViewInverse};

/// PyTorch's message for an in-place op on a view made in no_grad mode.
pub const ERR_NO_GRAD_VIEW: &str = "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).";

/// PyTorch's message for an in-place op on a view of a leaf that requires grad.
pub const ERR_VIEW_OF_LEAF: &str =
    "a view of a leaf Variable that requires grad is being used in an in-place operation.";

/// PyTorch's message for an in-place op on a tensor whose elements overlap.
pub const ERR_OVERLAP: &str = "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.";

/// Makes `view` (an op's fresh output, computed from `base`) a view of `base`: it shares the
/// base's version counter, and follows changes of the base from now on. When `base` is
/// itself a view, `view` becomes a view of its root, with the functions composed. `view` must
/// be fresh (not yet sharing a version counter).
pub fn make_view<T: Tensor>(
    view: &Variable<T>,
    base: &Variable<T>,
    view_fn: ViewFn<T>,
    inverse: ViewInverse<T>,
) {
    let (root, view_fn, inverse, no_grad) = match parent(base) {
        // A detached alias is a tensor of its own for autograd: views of it are its views.
        Some(p) if !matches!(p.inverse, ViewInverse::DataAlias) => compose(p, view_fn, inverse),
        _ => (base.clone(), view_fn, inverse, false),
    };
    let shared = view.share_version_counter(&root);
    debug_assert!(
        shared.is_ok(),
        "make_view on a variable that shares a counter already"
    );
    view.set_view(ViewMeta {
        synced: root.version(),
        base: BaseRef::Strong(root),
        view_fn,
        inverse,
        no_grad: no_grad || !is_grad_enabled(),
    });
}

/// A view of a view: replay the parent from the root, then this view; write back through
/// this view's inverse, then the parent's.
pub(crate) fn compose<T: Tensor>(
    p: Parent<T>,
    view_fn: ViewFn<T>,
    inverse: ViewInverse<T>,
) -> (Variable<T>, ViewFn<T>, ViewInverse<T>, bool) {
    let Parent {
        base: root,
        view_fn: parent_fn,
        inverse: parent_inv,
        no_grad,
        ..
    } = p;
    let pf = parent_fn.clone();
    let composed: ViewFn<T> = Arc::new(move |r| view_fn(&pf(r)?));
    let inverse = match (parent_inv, inverse) {
        (ViewInverse::Scatter(outer), ViewInverse::Scatter(inner)) => {
            ViewInverse::Scatter(Arc::new(move |r: &Variable<T>, new: &Variable<T>| {
                let mid = parent_fn(r)?;
                outer(r, &inner(&mid, new)?)
            }))
        }
        // A restriction of the parent holds for what is viewed through it.
        (ViewInverse::Scatter(_), restricted) | (restricted, _) => restricted,
    };
    (root, composed, inverse, no_grad)
}

/// The view's tangent after an in-place op on it: the view of the base's when the base has
/// one (the write reached it), else the op's result's own (a dual made by `make_dual`, whose
/// primal never takes its tangent).
fn tangent_after_inplace<T: Tensor>(view: &Variable<T>, base: &Variable<T>, copy: &Variable<T>) {
    for level in visible_levels() {
        if !matches!(base.fw_grad_at(level), Ok(None)) {
            view.clear_own_tangent(level);
            continue;
        }
        match copy.fw_grad_at(level) {
            Ok(Some(t)) => view.set_own_tangent(level, Tangent::Value(t)),
            Ok(None) => {}
            Err(e) => view.set_own_tangent(level, Tangent::Error(e)),
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
    if is_forward_ad_enabled() {
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
    let fw = is_forward_ad_enabled();
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
