//! A variable's tangents ([`crate::forward`]): what one holds at each dual level, and reading
//! them (a view without a tangent of its own has the view of its base's).

use std::sync::Mutex;

use super::{VarInner, Variable};
use crate::error::AutogradError;
use crate::levels::{
    Hidden, HoldsTangents, Level, WeakHolder, current_level, is_forward_ad_enabled, is_live,
    is_visible, register, visible_levels,
};
use crate::mem::VarArc;
use crate::node::lock;
use crate::tensor::Tensor;

/// A variable's tangent at one level: a value, or the error an op without a forward formula
/// left there (returned when it is read).
#[derive(Clone)]
pub(crate) enum Tangent<T: Tensor> {
    Value(Variable<T>),
    Error(AutogradError),
}

/// The tangents of one variable, one per level (few: a short list).
pub(crate) type Tangents<T> = Vec<(Level, Tangent<T>)>;

/// A saved output's tangents.
pub(crate) type Snapshot<T> = std::sync::Arc<Mutex<Tangents<T>>>;

impl<T: Tensor> HoldsTangents for Mutex<Tangents<T>> {
    fn clear_level(&self, level: Level) {
        let taken: Tangents<T> = {
            let mut g = self.lock().unwrap_or_else(|e| e.into_inner());
            let (gone, kept) = g.drain(..).partition(|(l, _)| *l == level);
            *g = kept;
            gone
        };
        drop(taken);
    }
}

impl<T: Tensor> HoldsTangents for VarInner<T> {
    fn clear_level(&self, level: Level) {
        let gone: Tangents<T> = {
            let Some(rare) = self.rare.get() else {
                return;
            };
            let mut g = lock(&rare.mutable);
            match g.as_mut() {
                Some(m) => {
                    let (gone, kept) = m.fw.drain(..).partition(|(l, _)| *l == level);
                    m.fw = kept;
                    gone
                }
                None => Vec::new(),
            }
        };
        drop(gone);
    }
}

impl<T: Tensor> WeakHolder for crate::mem::VarWeak<VarInner<T>> {
    fn clear_level(&self, level: Level) {
        if let Some(x) = self.upgrade() {
            HoldsTangents::clear_level(&*x, level);
        }
    }
    fn is_alive(&self) -> bool {
        crate::mem::VarWeak::is_alive(self)
    }
}

impl<T: Tensor> Variable<T> {
    /// The tangent at `level` (own, or the view of the base's for a view), or the error an op
    /// without a forward formula stored there. `None` for a level that is not live.
    pub fn fw_grad_at(&self, level: Level) -> Result<Option<Variable<T>>, AutogradError> {
        if !is_visible(level) {
            return Ok(None);
        }
        self.tangent_at(level)
    }

    /// The tangent at a live `level`, even while it is hidden (a formula reading the tangents
    /// of the level it computes).
    pub(crate) fn tangent_at(&self, level: Level) -> Result<Option<Variable<T>>, AutogradError> {
        if self.is_view() {
            // A view whose base changed takes the base's tangent (see `view::refreshed`).
            self.with_data(|_| ());
        }
        match self.own_tangent(level) {
            Some(Tangent::Value(t)) => return Ok(Some(t)),
            Some(Tangent::Error(e)) => return Err(e),
            None => {}
        }
        let Some((base, view_fn)) = super::view::base_and_fn(self) else {
            return Ok(None);
        };
        match base.tangent_at(level)? {
            Some(bt) => {
                let _h = Hidden::new(level);
                view_fn(&bt).map(Some)
            }
            None => Ok(None),
        }
    }

    /// The tangent at the innermost level ([`fw_grad_at`](Self::fw_grad_at)).
    pub fn fw_grad(&self) -> Result<Option<Variable<T>>, AutogradError> {
        match current_level() {
            Some(l) => self.fw_grad_at(l),
            None => Ok(None),
        }
    }

    /// Whether some visible level gives this variable a tangent (or an error).
    pub fn has_fw_grad(&self) -> bool {
        if !is_forward_ad_enabled() {
            return false;
        }
        visible_levels()
            .into_iter()
            .any(|l| !matches!(self.fw_grad_at(l), Ok(None)))
    }

    /// The tangent stored on this variable itself at `level` (not derived from a base).
    pub(crate) fn own_tangent(&self, level: Level) -> Option<Tangent<T>> {
        self.peek(|m| {
            m.fw.iter()
                .find(|(l, _)| *l == level)
                .map(|(_, t)| t.clone())
        })
    }

    /// Stores this variable's own tangent at `level` (dropping those of exited levels).
    pub(crate) fn set_own_tangent(&self, level: Level, t: Tangent<T>) {
        let (old, had) = {
            let mut g = self.mutable();
            let fw = &mut Self::mutable_mut(&mut g).fw;
            let had = fw.iter().any(|(l, _)| *l == level);
            let (old, kept): (Vec<_>, Vec<_>) =
                fw.drain(..).partition(|(l, _)| *l == level || !is_live(*l));
            *fw = kept;
            fw.push((level, t));
            (old, had)
        };
        if !had {
            register(level, Box::new(VarArc::downgrade(&self.0)));
        }
        // The old tangents drop here, outside of the lock.
        drop(old);
    }

    /// Takes `new`'s tangents at every visible level where it has one.
    pub(crate) fn take_tangents_of(&self, new: &Variable<T>) {
        for level in visible_levels() {
            match new.fw_grad_at(level) {
                Ok(Some(t)) => self.set_own_tangent(level, Tangent::Value(t)),
                Ok(None) => {}
                Err(e) => self.set_own_tangent(level, Tangent::Error(e)),
            }
        }
    }

    /// Forgets this variable's own tangent at `level`.
    pub(crate) fn clear_own_tangent(&self, level: Level) {
        HoldsTangents::clear_level(&*self.0, level);
    }
}
