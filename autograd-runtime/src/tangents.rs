//! Forward mode's state: the dual levels, the tangents variables carry at each of them, and
//! how generated wrappers propagate them ([`propagate`]). Making and taking apart dual
//! variables is `dual.rs`'s; the public module `forward` (`lib.rs`) gives both.

use crate::error::AutogradError;
use crate::tensor::Tensor;
use crate::variable::Variable;
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// PyTorch's message for [`make_dual`](crate::forward::make_dual) outside of a dual level.
pub const ERR_NO_LEVEL: &str = "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first.";

/// PyTorch's message for exiting a level that is not the innermost one.
pub const ERR_EXIT_ORDER: &str = "Trying to exit a forward AD level that was not the last one that was created. This is not supported.";

/// A dual level's identifier, unique in the process (a tangent of a level that was exited is
/// never seen again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Level(pub(crate) u64);

static NEXT_LEVEL: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The live levels of this thread, innermost last, with whether each is hidden.
    static LEVELS: RefCell<Vec<(Level, bool)>> = const { RefCell::new(Vec::new()) };
    static ANY_LEVEL: Cell<bool> = const { Cell::new(false) };
    /// What holds tangents of each live level: cleared when the level exits (PyTorch's
    /// `ForwardADLevel::grads_`), which also breaks the reference cycles a tangent's graph
    /// can make with the variable it belongs to.
    static HOLDERS: RefCell<Vec<(Level, Box<dyn WeakHolder>)>> = const { RefCell::new(Vec::new()) };
    /// The level whose forward formula [`propagate`] is running, if any.
    static FORMULA_LEVEL: Cell<Option<Level>> = const { Cell::new(None) };
}

/// The level whose forward formula is running (inside [`propagate`]), for helpers that read
/// their inputs' tangents themselves, as PyTorch's `cat_jvp(tensors, dim)` does; `None`
/// outside a forward formula.
pub fn formula_level() -> Option<Level> {
    FORMULA_LEVEL.with(Cell::get)
}

/// While alive, [`formula_level`] is the level it was made for; it restores the one before
/// (a formula's ops may run formulas of their own at other levels).
struct InFormula(Option<Level>);

impl InFormula {
    fn enter(level: Level) -> Self {
        InFormula(FORMULA_LEVEL.with(|c| c.replace(Some(level))))
    }
}

impl Drop for InFormula {
    fn drop(&mut self) {
        FORMULA_LEVEL.with(|c| c.set(self.0));
    }
}

/// Something that holds tangents (a variable, a saved output's snapshot).
pub(crate) trait HoldsTangents: Send + Sync {
    /// Forgets the tangents of `level`.
    fn clear_level(&self, level: Level);
}

/// A weak reference to something that holds tangents.
pub(crate) trait WeakHolder {
    /// Forgets the tangents of `level` if the holder is still alive.
    fn clear_level(&self, level: Level);
}

impl<H: HoldsTangents> WeakHolder for Weak<H> {
    fn clear_level(&self, level: Level) {
        if let Some(x) = self.upgrade() {
            x.clear_level(level);
        }
    }
}

impl<T: Tensor> WeakHolder for crate::mem::VarWeak<crate::variable::VarInner<T>> {
    fn clear_level(&self, level: Level) {
        if let Some(x) = self.upgrade() {
            HoldsTangents::clear_level(&*x, level);
        }
    }
}

/// Registers `holder` as holding a tangent of `level`.
pub(crate) fn register(level: Level, holder: Box<dyn WeakHolder>) {
    HOLDERS.with(|h| h.borrow_mut().push((level, holder)));
}

/// Clears the tangents of an exited level (outside of any borrow: dropping them runs
/// arbitrary drops).
fn clear_exited(level: Level) {
    let holders: Vec<Box<dyn WeakHolder>> = HOLDERS.with(|h| {
        let mut h = h.borrow_mut();
        let (gone, kept): (Vec<_>, Vec<_>) = h.drain(..).partition(|(l, _)| *l == level);
        *h = kept;
        gone.into_iter().map(|(_, w)| w).collect()
    });
    for w in holders {
        w.clear_level(level);
    }
}

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

/// Whether some dual level is live on this thread: the one check generated wrappers make
/// before anything else forward-mode.
#[inline]
pub fn is_forward_ad_enabled() -> bool {
    ANY_LEVEL.with(Cell::get)
}

/// Enters a new dual level (PyTorch's `enter_dual_level`); prefer [`dual_level`].
pub fn enter_dual_level() -> Level {
    let level = Level(NEXT_LEVEL.fetch_add(1, Ordering::Relaxed));
    LEVELS.with(|l| l.borrow_mut().push((level, false)));
    ANY_LEVEL.with(|a| a.set(true));
    level
}

/// Exits `level`, which must be the innermost live one (PyTorch's `exit_dual_level`). The
/// tangents of that level are gone from then on.
pub fn exit_dual_level(level: Level) -> Result<(), AutogradError> {
    LEVELS.with(|l| {
        let mut l = l.borrow_mut();
        if l.last().map(|x| x.0) != Some(level) {
            return Err(AutogradError::msg(ERR_EXIT_ORDER));
        }
        l.pop();
        ANY_LEVEL.with(|a| a.set(!l.is_empty()));
        Ok(())
    })?;
    clear_exited(level);
    Ok(())
}

/// The innermost visible level (what [`make_dual`](crate::forward::make_dual) and [`unpack_dual`](crate::forward::unpack_dual) use), if any.
pub fn current_level() -> Option<Level> {
    LEVELS.with(|l| l.borrow().iter().rev().find(|x| !x.1).map(|x| x.0))
}

/// Whether `level` is live and visible on this thread.
pub(crate) fn is_visible(level: Level) -> bool {
    LEVELS.with(|l| l.borrow().iter().any(|x| x.0 == level && !x.1))
}

/// Whether `level` is live on this thread (hidden or not).
pub(crate) fn is_live(level: Level) -> bool {
    LEVELS.with(|l| l.borrow().iter().any(|x| x.0 == level))
}

/// The live, visible levels, outermost first.
pub fn visible_levels() -> Vec<Level> {
    LEVELS.with(|l| l.borrow().iter().filter(|x| !x.1).map(|x| x.0).collect())
}

/// A live dual level; exits it when dropped (`with torch.autograd.forward_ad.dual_level()`).
/// Not `Send`: levels belong to the thread that entered them.
#[must_use = "the level is exited when the guard is dropped"]
pub struct DualLevel {
    level: Level,
    _not_send: PhantomData<*const ()>,
}

impl DualLevel {
    /// This level.
    pub fn level(&self) -> Level {
        self.level
    }
}

impl Drop for DualLevel {
    fn drop(&mut self) {
        // Guards drop innermost first; one dropped out of order (moved out of its scope)
        // still removes its own level.
        if exit_dual_level(self.level).is_err() {
            LEVELS.with(|l| {
                let mut l = l.borrow_mut();
                l.retain(|x| x.0 != self.level);
                ANY_LEVEL.with(|a| a.set(!l.is_empty()));
            });
            clear_exited(self.level);
        }
    }
}

/// Enters a dual level until the guard drops.
///
/// ```
/// use autograd_runtime::{Variable, dual_level, forward::{make_dual, unpack_dual}};
/// # use autograd_runtime::Tensor;
/// # #[derive(Clone, Debug, PartialEq)] struct S(f64);
/// # impl Tensor for S {
/// #     fn shape(&self) -> &[usize] { &[] }
/// #     fn dtype(&self) -> &'static str { "f64" }
/// #     fn ones_like(&self) -> Self { S(1.0) }
/// #     fn zeros_like(&self) -> Self { S(0.0) }
/// #     fn add(&self, o: &Self) -> Self { S(self.0 + o.0) }
/// #     fn has_nan(&self) -> bool { self.0.is_nan() }
/// # }
/// let x = Variable::from_data(S(2.0));
/// let dual = {
///     let _level = dual_level();
///     let dual = make_dual(&x, &Variable::from_data(S(1.0)))?;
///     assert_eq!(unpack_dual(&dual)?.tangent.unwrap().data(), S(1.0));
///     dual
/// };
/// // After the level, the tangent is gone.
/// assert!(unpack_dual(&dual)?.tangent.is_none());
/// # Ok::<(), autograd_runtime::AutogradError>(())
/// ```
pub fn dual_level() -> DualLevel {
    DualLevel {
        level: enter_dual_level(),
        _not_send: PhantomData,
    }
}

/// Hides `level` until the guard drops: its tangents are invisible to the ops that run
/// meanwhile (a forward formula computing that level's tangent). Dropping it restores the
/// state the level had before, so guards nest: an inner guard of a level an outer one
/// hides leaves it hidden.
pub(crate) struct Hidden {
    level: Level,
    was_hidden: bool,
}

impl Hidden {
    pub(crate) fn new(level: Level) -> Self {
        let was_hidden = LEVELS.with(|l| set_hidden(&mut l.borrow_mut(), level, true));
        Hidden { level, was_hidden }
    }
}

/// Sets whether `level` is hidden; returns whether it was.
fn set_hidden(l: &mut [(Level, bool)], level: Level, hidden: bool) -> bool {
    match l.iter_mut().find(|x| x.0 == level) {
        Some(x) => std::mem::replace(&mut x.1, hidden),
        None => false,
    }
}

impl Drop for Hidden {
    fn drop(&mut self) {
        LEVELS.with(|l| set_hidden(&mut l.borrow_mut(), self.level, self.was_hidden));
    }
}

/// A variable's tangent at one level: a value, or the error an op without a forward formula
/// left there (returned when it is read).
#[derive(Clone)]
pub(crate) enum Tangent<T: Tensor> {
    Value(Variable<T>),
    Error(AutogradError),
}

/// The tangents of one variable, one per level (few: a short list).
pub(crate) type Tangents<T> = Vec<(Level, Tangent<T>)>;

/// PyTorch's message for a tangent whose size differs from its primal's.
pub(crate) fn size_mismatch(primal: &[usize], tangent: &[usize]) -> AutogradError {
    AutogradError::msg(format!(
        "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size {primal:?} while the given forward gradient is of size {tangent:?}."
    ))
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
        let Some((base, view_fn)) = crate::view_meta::base_and_fn(self) else {
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

/// A saved output's tangents.
pub(crate) type Snapshot<T> = Arc<Mutex<Tangents<T>>>;

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

#[cfg(test)]
mod hidden_tests {
    use super::*;

    #[test]
    fn nested_guards_restore_the_state_before_them() {
        let level = enter_dual_level();
        {
            let _outer = Hidden::new(level);
            {
                let _inner = Hidden::new(level);
                assert!(!is_visible(level));
            }
            assert!(
                !is_visible(level),
                "the inner guard must not unhide the outer's level"
            );
        }
        assert!(is_visible(level));
        exit_dual_level(level).unwrap();
    }
}
