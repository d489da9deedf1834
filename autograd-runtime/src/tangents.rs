//! How generated wrappers propagate tangents ([`propagate`]): an op's outputs get theirs
//! from the entry's forward formula at each visible level where an input has one. The levels
//! are `levels.rs`'s, a variable's tangents `variable/fw.rs`'s, dual variables `dual.rs`'s;
//! the public module `forward` (`lib.rs`) gives them all.

use std::sync::{Arc, Mutex};

use crate::error::AutogradError;
use crate::levels::{
    Hidden, InFormula, Level, is_forward_ad_enabled, is_live, register, visible_levels,
};
use crate::tensor::Tensor;
use crate::variable::{Snapshot, Tangent, Tangents, Variable};

/// PyTorch's message for a tangent whose size differs from its primal's.
pub(crate) fn size_mismatch(primal: &[usize], tangent: &[usize]) -> AutogradError {
    AutogradError::msg(format!(
        "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size {primal:?} while the given forward gradient is of size {tangent:?}."
    ))
}

/// Generated code: after an op, computes the tangent of `out` at every visible level where
/// one of `inputs` has a tangent, with `formula(level)` (run with that level hidden). An
/// input whose tangent is an error passes it on. `Err` when a formula fails.
pub fn propagate<T: Tensor, O: SetTangent<T>>(
    out: &O,
    inputs: &[&Variable<T>],
    mut formula: impl FnMut(Level) -> Result<O, AutogradError>,
) -> Result<(), AutogradError> {
    for level in visible_levels() {
        match any_tangent(inputs, level) {
            Ok(false) => {}
            // An input's tangent is an error: the output's is the same error.
            Err(e) => out.set_tangent(level, Err(e)),
            Ok(true) => {
                let t = {
                    let _h = Hidden::new(level);
                    let _f = InFormula::enter(level);
                    formula(level)
                }
                .and_then(|t| out.check_sizes(&t).map(|()| t));
                if let Err(e) = &t {
                    out.set_tangent(level, Err(e.clone()));
                    return Err(e.clone());
                }
                out.set_tangent(level, t);
            }
        }
    }
    Ok(())
}

/// Whether one of `inputs` has a tangent at `level`; the first error stored as a tangent.
fn any_tangent<T: Tensor>(inputs: &[&Variable<T>], level: Level) -> Result<bool, AutogradError> {
    let mut any = false;
    for i in inputs {
        any |= i.fw_grad_at(level)?.is_some();
    }
    Ok(any)
}

/// Generated code, for infallible wrappers: [`propagate`], whose error is kept as the
/// outputs' tangent (already done by [`propagate`]) instead of returned.
pub fn propagate_deferred<T: Tensor, O: SetTangent<T>>(
    out: &O,
    inputs: &[&Variable<T>],
    formula: impl FnMut(Level) -> Result<O, AutogradError>,
) {
    let _ = propagate(out, inputs, formula);
}

/// Generated code: an op without a forward formula (`op` as PyTorch names it) fails with
/// PyTorch's error when one of `inputs` has a tangent at a visible level.
pub fn forbid<T: Tensor>(
    inputs: &[&Variable<T>],
    op: &str,
    out_fn: bool,
) -> Result<(), AutogradError> {
    if !inputs.iter().any(|i| i.has_fw_grad()) {
        return Ok(());
    }
    Err(AutogradError::msg(not_supported(op, out_fn)))
}

/// Generated code, a function without a derivatives entry: PyTorch's autograd fallback
/// refuses an input with a tangent ("Trying to use forward AD with aten::copy that does not
/// support it.").
pub fn forbid_fallback<T: Tensor>(inputs: &[&Variable<T>], op: &str) -> Result<(), AutogradError> {
    if !inputs.iter().any(|i| i.has_fw_grad()) {
        return Ok(());
    }
    Err(AutogradError::msg(format!(
        "Trying to use forward AD with {op} that does not support it."
    )))
}

/// Generated code: stores `err` as the tangent of `out` at every visible level (what an
/// infallible wrapper does with an error it cannot return).
pub fn poison<T: Tensor, O: SetTangent<T>>(out: &O, err: &AutogradError) {
    for level in visible_levels() {
        out.set_tangent(level, Err(err.clone()));
    }
}

/// PyTorch's message for an op without a forward formula.
pub fn not_supported(op: &str, out_fn: bool) -> String {
    let why = if out_fn {
        "because it is an out= function".to_string()
    } else {
        "because it has not been implemented yet.\nPlease file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so that we can prioritize its implementation or submit a PR adding the implementation to derivatives.yaml".to_string()
    };
    format!("Trying to use forward AD with {op} that does not support it {why}")
}

/// The tangent of `v` at `level` for a formula; when it has none, zeros shaped like `v` that
/// stand for the absent tangent ([`Tensor::zero_tensor_like`]: torchgen's `x_t`, PyTorch's
/// `_efficientzerotensor`, whose arithmetic leaves its terms out).
pub fn tangent_or_zeros<T: Tensor>(
    v: &Variable<T>,
    level: Level,
) -> Result<Variable<T>, AutogradError> {
    let t = if is_live(level) {
        v.tangent_at(level)?
    } else {
        None
    };
    Ok(match t {
        Some(t) => t,
        None => Variable::from_data(v.with_data(T::zero_tensor_like)),
    })
}

/// [`tangent_or_zeros`] of each element of a list.
pub fn tangents_or_zeros<T: Tensor>(
    vs: &[Variable<T>],
    level: Level,
) -> Result<Vec<Variable<T>>, AutogradError> {
    vs.iter().map(|v| tangent_or_zeros(v, level)).collect()
}

/// Where a formula's tangent goes: one output, or a list of them (`Tensor[]` results).
pub trait SetTangent<T: Tensor> {
    /// Stores `t` (or the error) as the tangent at `level`.
    fn set_tangent(&self, level: Level, t: Result<Self, AutogradError>)
    where
        Self: Sized;

    /// PyTorch's error (`_set_fw_grad`'s check) when a tangent's size is not its output's.
    fn check_sizes(&self, t: &Self) -> Result<(), AutogradError>
    where
        Self: Sized;
}

impl<T: Tensor> SetTangent<T> for Variable<T> {
    fn set_tangent(&self, level: Level, t: Result<Self, AutogradError>) {
        self.set_own_tangent(
            level,
            match t {
                Ok(t) => Tangent::Value(t),
                Err(e) => Tangent::Error(e),
            },
        );
    }

    fn check_sizes(&self, t: &Self) -> Result<(), AutogradError> {
        // An output a mask left out (PyTorch's undefined tensor) is an empty `[0]` here:
        // PyTorch sets no tangent on it, so it has no size to check.
        let (p, s) = (self.shape(), t.shape());
        if p != s && p != [0] {
            return Err(size_mismatch(&p, &s));
        }
        Ok(())
    }
}

impl<T: Tensor> SetTangent<T> for Vec<Variable<T>> {
    fn set_tangent(&self, level: Level, t: Result<Self, AutogradError>) {
        match t {
            Ok(ts) => {
                for (o, t) in self.iter().zip(ts) {
                    o.set_own_tangent(level, Tangent::Value(t));
                }
            }
            Err(e) => {
                for o in self {
                    o.set_own_tangent(level, Tangent::Error(e.clone()));
                }
            }
        }
    }

    fn check_sizes(&self, t: &Self) -> Result<(), AutogradError> {
        self.iter().zip(t).try_for_each(|(o, t)| o.check_sizes(t))
    }
}

/// The tangents of `v` at the visible levels, for a saved output (`None` without any).
pub(crate) fn snapshot<T: Tensor>(v: &Variable<T>) -> Option<Snapshot<T>> {
    if !is_forward_ad_enabled() {
        return None;
    }
    let ts: Tangents<T> = visible_levels()
        .into_iter()
        .filter_map(|l| match v.fw_grad_at(l) {
            Ok(Some(t)) => Some((l, Tangent::Value(t))),
            Ok(None) => None,
            Err(e) => Some((l, Tangent::Error(e))),
        })
        .collect();
    if ts.is_empty() {
        return None;
    }
    let levels: Vec<Level> = ts.iter().map(|(l, _)| *l).collect();
    let cell: Snapshot<T> = Arc::new(Mutex::new(ts));
    for l in levels {
        register(l, Box::new(Arc::downgrade(&cell)));
    }
    Some(cell)
}

/// Gives a rebuilt saved output the tangents it had when saved (those of live levels).
pub(crate) fn restore<T: Tensor>(v: &Variable<T>, ts: &Snapshot<T>) {
    let ts: Tangents<T> = ts.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for (l, t) in &ts {
        if is_live(*l) {
            v.set_own_tangent(*l, t.clone());
        }
    }
}
