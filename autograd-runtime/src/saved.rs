//! [`SavedVariable`]: a variable saved for backward, with its version.

use std::fmt;

use crate::error::AutogradError;
use crate::mode::{is_anomaly_enabled, is_grad_enabled};
use crate::node::WeakNode;
use crate::tensor::Tensor;
use crate::variable::Variable;

/// A snapshot of a variable at a certain version, saved by a node for its
/// backward formula (PyTorch's `SavedVariable`).
///
/// * [`unpack`](Self::unpack) fails with PyTorch's message if the variable was
///   modified in place since it was saved (its version counter moved on), and
///   with "Trying to backward through the graph a second time …" after
///   [`reset`](Self::reset) (which the engine triggers through
///   [`Node::release_variables`](crate::Node::release_variables)).
/// * Saving an op's **own output** (`is_output = true`) keeps only the raw
///   data, the shared version counter and a *weak* reference to the node, so
///   node → saved output → node is not a reference cycle; unpacking rebuilds
///   a variable with the node as `grad_fn`.
/// * Saving anything else (inputs, leaves) keeps the variable itself.
pub struct SavedVariable<T: Tensor> {
    state: State<T>,
}

enum State<T: Tensor> {
    Empty,
    Released,
    Var {
        var: Variable<T>,
        version: u32,
    },
    Output {
        /// Holds the shared version counter; its data is the saved data
        /// unless `data` is set (the host existed before this save).
        host: Variable<T>,
        data: Option<T>,
        grad_fn: WeakNode<T>,
        output_nr: u32,
        version: u32,
    },
}

impl<T: Tensor> Default for SavedVariable<T> {
    fn default() -> Self {
        SavedVariable {
            state: State::Empty,
        }
    }
}

impl<T: Tensor> fmt::Debug for SavedVariable<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.state {
            State::Empty => f.write_str("SavedVariable(empty)"),
            State::Released => f.write_str("SavedVariable(released)"),
            State::Var { version, .. } | State::Output { version, .. } => {
                write!(f, "SavedVariable({:?}, version {version})", self.shape())
            }
        }
    }
}

impl<T: Tensor> SavedVariable<T> {
    /// Saves `var` at its current version. `is_output` must be true when `var`
    /// is an output of the node that saves it (breaks the reference cycle).
    pub fn new(var: &Variable<T>, is_output: bool) -> Self {
        let version = var.version();
        if is_output
            && let Some((grad_fn, output_nr)) =
                var.with_history(|f, nr| f.map(|f| (f.downgrade(), nr)))
        {
            let (host, fresh) = var.counter_host();
            return SavedVariable {
                state: State::Output {
                    data: (!fresh).then(|| var.data()),
                    host,
                    grad_fn,
                    output_nr,
                    version,
                },
            };
        }
        SavedVariable {
            state: State::Var {
                var: var.clone(),
                version,
            },
        }
    }

    /// Saves an optional variable (`None` unpacks to `None`).
    pub fn new_opt(var: Option<&Variable<T>>, is_output: bool) -> Self {
        var.map_or_else(Self::default, |v| Self::new(v, is_output))
    }

    /// Whether nothing was ever saved (default-constructed).
    pub fn is_empty(&self) -> bool {
        matches!(self.state, State::Empty)
    }

    /// Whether the variable was released by [`reset`](Self::reset).
    pub fn was_released(&self) -> bool {
        matches!(self.state, State::Released)
    }

    /// Frees the saved data; a later `unpack` fails with the "backward through
    /// the graph a second time" error.
    pub fn reset(&mut self) {
        if !matches!(self.state, State::Empty) {
            self.state = State::Released;
        }
    }

    /// Shape of the saved tensor (`None` if empty or released).
    pub fn shape(&self) -> Option<Vec<usize>> {
        match &self.state {
            State::Var { var, .. } => Some(var.shape()),
            State::Output { host, data, .. } => {
                Some(with_output_data(host, data, |d| d.shape().to_vec()))
            }
            _ => None,
        }
    }

    /// The saved variable, checked against in-place modification.
    pub fn unpack(&self) -> Result<Variable<T>, AutogradError> {
        self.unpack_opt()?
            .ok_or(AutogradError::UndefinedSavedVariable)
    }

    /// Like [`unpack`](Self::unpack), but an empty (never saved) variable
    /// gives `Ok(None)` (for optional tensor arguments).
    pub fn unpack_opt(&self) -> Result<Option<Variable<T>>, AutogradError> {
        match &self.state {
            State::Empty => Ok(None),
            State::Released => Err(AutogradError::BackwardTwice),
            State::Var { var, version } => {
                let current = var.version();
                if current != *version {
                    let output_of = var.with_history(|f, nr| f.map(|f| (nr as usize, f.name())));
                    return Err(var.with_data(|d| mismatch(d, output_of, current, *version)));
                }
                Ok(Some(var.clone()))
            }
            State::Output {
                host,
                data,
                grad_fn,
                output_nr,
                version,
            } => {
                let current = host.version();
                if current != *version {
                    // The node that saved its output is usually the one
                    // unpacking it, inside `apply`, with its lock held: the
                    // engine fills in the name when it cannot be read here.
                    let output_of = grad_fn
                        .upgrade()
                        .map(|f| (*output_nr as usize, f.try_name().unwrap_or_default()));
                    return Err(with_output_data(host, data, |d| {
                        mismatch(d, output_of, current, *version)
                    }));
                }
                // Without grad mode (a backward pass without create_graph)
                // the history is not used: hand out the host itself.
                if data.is_none() && !is_grad_enabled() {
                    return Ok(Some(host.clone()));
                }
                let grad_fn = grad_fn.upgrade();
                let requires_grad = grad_fn.is_some();
                Ok(Some(Variable::reconstructed(
                    with_output_data(host, data, T::clone),
                    grad_fn,
                    *output_nr,
                    requires_grad,
                    host.clone(),
                )))
            }
        }
    }

    /// The saved raw tensor only, checked like [`unpack`](Self::unpack) but
    /// without building a variable. Use it only for values a formula treats
    /// as constants (their gradient is never needed, even with `create_graph`).
    pub fn unpack_data(&self) -> Result<T, AutogradError> {
        match &self.state {
            State::Output {
                host,
                data,
                version,
                ..
            } if host.version() == *version => Ok(with_output_data(host, data, T::clone)),
            _ => self.unpack().map(|v| v.data()),
        }
    }
}

/// Runs `f` on a saved output's data: its own copy if it has one, else the host's.
fn with_output_data<T: Tensor, R>(
    host: &Variable<T>,
    data: &Option<T>,
    f: impl FnOnce(&T) -> R,
) -> R {
    match data {
        Some(d) => f(d),
        None => host.with_data(f),
    }
}

fn mismatch<T: Tensor>(
    data: &T,
    output_of: Option<(usize, String)>,
    current: u32,
    expected: u32,
) -> AutogradError {
    AutogradError::VersionMismatch {
        tensor: format!("{} {:?}", data.type_name(), data.shape()),
        output_of,
        current,
        expected,
        anomaly: is_anomaly_enabled(),
    }
}
