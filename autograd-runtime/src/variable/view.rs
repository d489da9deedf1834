//! A variable that is a view: what it keeps ([`ViewMeta`]: its base, how it is computed from
//! the base and how a new value of it reaches the base) and how it is computed again when its
//! base changed ([`refreshed`]). The public module [`crate::view`] says what views are, makes
//! them and runs in-place ops on them.

use super::Variable;
use crate::error::AutogradError;
use crate::mode::enable_grad;
use crate::node::NodeRef;
use crate::tensor::Tensor;
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
    Weak(crate::mem::VarWeak<super::VarInner<T>>),
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
    pub(crate) view_fn: ViewFn<T>,
    pub(crate) inverse: ViewInverse<T>,
    /// Made in no_grad mode (PyTorch's `CreationMeta::NO_GRAD_MODE`).
    pub(crate) no_grad: bool,
    /// The base's version when data and history were last computed.
    pub(crate) synced: u32,
}

impl<T: Tensor> ViewMeta<T> {
    /// A detached alias (`detach()`), not a view for autograd.
    pub(crate) fn is_data_alias(&self) -> bool {
        matches!(self.inverse, ViewInverse::DataAlias)
    }
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
    if crate::levels::is_forward_ad_enabled() {
        // The base's tangent is the view's from now on (PyTorch: a view's tangent is the view
        // of its base's).
        for level in crate::levels::visible_levels() {
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
