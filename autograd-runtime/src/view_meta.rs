//! What a view is ([`ViewMeta`]: its base, how it is computed from the base and how a new
//! value of it reaches the base) and how it is computed again when its base changed
//! ([`refreshed`]). The public module `view` (`lib.rs`) says what views are; in-place ops on
//! them are `view_inplace.rs`'s.

use crate::error::AutogradError;
use crate::mode::{enable_grad, is_grad_enabled};
use crate::node::NodeRef;
use crate::tensor::Tensor;
use crate::variable::Variable;
use std::sync::Arc;

/// Computes a view from its base (differentiably: it calls the view ops).
pub type ViewFn<T> = Arc<dyn Fn(&Variable<T>) -> Result<Variable<T>, AutogradError> + Send + Sync>;

/// Writes a new value of a view into its base: `(base, new view value) -> new base`.
pub type ScatterFn<T> =
    Arc<dyn Fn(&Variable<T>, &Variable<T>) -> Result<Variable<T>, AutogradError> + Send + Sync>;

/// How an in-place change of a view reaches its base.
pub enum ViewInverse<T: Tensor> {
    /// Through this function.
    Scatter(ScatterFn<T>),
    /// Not at all: several elements of the view are one element of the base (`expand`);
    /// PyTorch refuses in-place ops on such tensors.
    Overlapping,
    /// The values only: the variable shares the base's data but not its history (PyTorch's
    /// `detach()`, whose result shares storage without being a view for autograd). Writes
    /// through it change the base's values, never its `grad_fn`; no check applies.
    DataAlias,
    /// Not at all: one of several views returned by one op (`unbind`, `split`, `chunk`),
    /// named as PyTorch names it (`Output 0 of Unbind`).
    MultiOutput {
        /// The op's name as PyTorch prints it (`Unbind`).
        op: String,
        /// Which output.
        index: usize,
    },
}

impl<T: Tensor> Clone for ViewInverse<T> {
    fn clone(&self) -> Self {
        match self {
            ViewInverse::Scatter(f) => ViewInverse::Scatter(f.clone()),
            ViewInverse::Overlapping => ViewInverse::Overlapping,
            ViewInverse::DataAlias => ViewInverse::DataAlias,
            ViewInverse::MultiOutput { op, index } => ViewInverse::MultiOutput {
                op: op.clone(),
                index: *index,
            },
        }
    }
}

/// A view's base: held strongly by a view (its replay needs it), weakly by a detached alias
/// (PyTorch's `detach()` result keeps the storage, not the origin and its graph, alive).
pub(crate) enum BaseRef<T: Tensor> {
    Strong(Variable<T>),
    Weak(crate::mem::VarWeak<crate::variable::VarInner<T>>),
}

impl<T: Tensor> BaseRef<T> {
    /// The base, while it lives.
    pub(crate) fn get(&self) -> Option<Variable<T>> {
        match self {
            BaseRef::Strong(v) => Some(v.clone()),
            BaseRef::Weak(w) => w.upgrade().map(Variable),
        }
    }
}

/// What a view keeps (in its variable's rarely written part).
pub(crate) struct ViewMeta<T: Tensor> {
    pub(crate) base: BaseRef<T>,
    view_fn: ViewFn<T>,
    inverse: ViewInverse<T>,
    /// Made in no_grad mode (PyTorch's `CreationMeta::NO_GRAD_MODE`).
    no_grad: bool,
    /// The base's version when data and history were last computed.
    synced: u32,
}

impl<T: Tensor> ViewMeta<T> {
    /// A detached alias (`detach()`), not a view for autograd.
    pub(crate) fn is_data_alias(&self) -> bool {
        matches!(self.inverse, ViewInverse::DataAlias)
    }
}

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

/// Makes `alias` (fresh, holding `base`'s data) share `base`'s values and version counter
/// but not its history: PyTorch's `detach()`. In-place changes of either are seen by both.
pub(crate) fn make_data_alias<T: Tensor>(alias: &Variable<T>, base: &Variable<T>) {
    let shared = alias.share_version_counter(base);
    debug_assert!(shared.is_ok(), "make_data_alias on a shared variable");
    alias.set_view(ViewMeta {
        synced: base.version(),
        base: BaseRef::Weak(crate::mem::VarArc::downgrade(&base.0)),
        view_fn: Arc::new(|b: &Variable<T>| Ok(Variable::from_data(b.data()))),
        inverse: ViewInverse::DataAlias,
        no_grad: false,
    });
}

/// A view's meta, cloned out of its lock.
pub(crate) struct Parent<T: Tensor> {
    pub(crate) base: Variable<T>,
    pub(crate) view_fn: ViewFn<T>,
    pub(crate) inverse: ViewInverse<T>,
    pub(crate) no_grad: bool,
    pub(crate) synced: u32,
}

/// The view meta of `v`, if it is a view.
pub(crate) fn parent<T: Tensor>(v: &Variable<T>) -> Option<Parent<T>> {
    if !v.is_view() {
        return None;
    }
    let g = v.mutable();
    let m = g.as_ref()?.view.as_ref()?;
    Some(Parent {
        // A detached alias whose origin is gone is a tensor of its own.
        base: m.base.get()?,
        view_fn: m.view_fn.clone(),
        inverse: m.inverse.clone(),
        no_grad: m.no_grad,
        synced: m.synced,
    })
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

/// A stale view's new `(data, history, requires_grad)`, computed from its base; `None` when
/// it is current (or the replay fails: the old values stay, and the op that reads them
/// reports the problem). A detached alias gets the base's data and keeps its own history
/// (`None`).
pub(crate) type Fresh<T> = (T, Option<(Option<NodeRef<T>>, u32)>, bool);

pub(crate) fn refreshed<T: Tensor>(view: &Variable<T>) -> Option<Fresh<T>> {
    let Parent {
        base,
        view_fn,
        synced,
        inverse,
        ..
    } = parent(view)?;
    let now = base.version();
    if now == synced {
        return None;
    }
    if matches!(inverse, ViewInverse::DataAlias) {
        set_synced(view, now);
        return Some((base.data(), None, false));
    }
    let fresh = {
        // The view's history follows its base's whatever the mode now.
        let _g = base.requires_grad().then(enable_grad);
        view_fn(&base).ok()?
    };
    set_synced(view, now);
    if crate::tangents::is_forward_ad_enabled() {
        // The base's tangent is the view's from now on (PyTorch: a view's tangent is the view
        // of its base's).
        for level in crate::tangents::visible_levels() {
            if !matches!(base.fw_grad_at(level), Ok(None)) {
                view.clear_own_tangent(level);
            }
        }
    }
    let history = (fresh.grad_fn(), fresh.output_nr() as u32);
    Some((fresh.data(), Some(history), fresh.requires_grad()))
}

/// Records that `view` is current with its base's version `now`.
pub(crate) fn set_synced<T: Tensor>(view: &Variable<T>, now: u32) {
    let mut g = view.mutable();
    if let Some(m) = g.as_mut().and_then(|m| m.view.as_mut()) {
        m.synced = now;
    }
}

/// A view's base and the function computing the view from it (`None` for a non-view).
/// A detached alias has none: it shares values, not tangents (PyTorch's `detach()` drops
/// the forward gradient too).
pub(crate) fn base_and_fn<T: Tensor>(v: &Variable<T>) -> Option<(Variable<T>, ViewFn<T>)> {
    parent(v)
        .filter(|p| !matches!(p.inverse, ViewInverse::DataAlias))
        .map(|p| (p.base, p.view_fn))
}
