//! Forward mode's dual levels, per thread: which are live, which are hidden while a forward
//! formula runs, and what holds tangents of each (cleared when the level exits). Nothing here
//! knows a variable: the tangents themselves are `variable/fw.rs`'s, their propagation
//! `tangents.rs`'s; the public module `forward` (`lib.rs`) gives all three.

use crate::error::AutogradError;
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::Weak;
use std::sync::atomic::{AtomicU64, Ordering};

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
    /// The length of `HOLDERS` at which [`register`] lets the dead ones go next.
    static SWEEP_AT: Cell<usize> = const { Cell::new(MIN_SWEEP) };
    /// The level whose forward formula [`propagate`](crate::forward::propagate) is running, if any.
    static FORMULA_LEVEL: Cell<Option<Level>> = const { Cell::new(None) };
}

/// The level whose forward formula is running (inside [`propagate`](crate::forward::propagate)), for helpers that read
/// their inputs' tangents themselves, as PyTorch's `cat_jvp(tensors, dim)` does; `None`
/// outside a forward formula.
pub fn formula_level() -> Option<Level> {
    FORMULA_LEVEL.with(Cell::get)
}

/// While alive, [`formula_level`] is the level it was made for; it restores the one before
/// (a formula's ops may run formulas of their own at other levels).
pub(crate) struct InFormula(Option<Level>);

impl InFormula {
    pub(crate) fn enter(level: Level) -> Self {
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
    /// Whether the holder is alive (once dead, it stays dead).
    fn is_alive(&self) -> bool;
}

impl<H: HoldsTangents> WeakHolder for Weak<H> {
    fn clear_level(&self, level: Level) {
        if let Some(x) = self.upgrade() {
            x.clear_level(level);
        }
    }
    fn is_alive(&self) -> bool {
        self.strong_count() > 0
    }
}

/// Registers `holder` as holding a tangent of `level`. The holders that died are let go
/// whenever the list has doubled since they last were (PyTorch's level forgets a tensor's
/// tangent when the tensor dies): a long loop inside one level keeps what is alive, not a
/// weak reference, and the memory it keeps, per op it ran.
pub(crate) fn register(level: Level, holder: Box<dyn WeakHolder>) {
    HOLDERS.with(|h| {
        let mut h = h.borrow_mut();
        h.push((level, holder));
        if h.len() >= SWEEP_AT.with(Cell::get) {
            // Dropping a dead holder's weak reference frees memory only: no value drops.
            h.retain(|(_, w)| w.is_alive());
            SWEEP_AT.with(|s| s.set((2 * h.len()).max(MIN_SWEEP)));
        }
    });
}

/// The fewest holders at which [`register`] looks for dead ones.
pub(crate) const MIN_SWEEP: usize = 64;

/// How many holders are registered on this thread (alive or not yet let go).
#[cfg(test)]
pub(crate) fn holders() -> usize {
    HOLDERS.with(|h| h.borrow().len())
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
