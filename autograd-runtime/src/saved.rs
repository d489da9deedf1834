//! [`SavedVariable`]: a variable saved for backward, with its version.

use std::fmt;

use crate::error::AutogradError;
use crate::mode::is_anomaly_enabled;
use crate::node::WeakNode;
use crate::tensor::Tensor;
use crate::variable::{SharedCounter, Variable};

/// A snapshot of a variable at a certain version, saved by a node for its
/// backward formula (PyTorch's `SavedVariable`).
///
/// * [`unpack`](Self::unpack) fails with PyTorch's message if the variable was
///   modified in place since it was saved (its version counter moved on), and
///   with "Trying to backward through the graph a second time …" after
///   [`reset`](Self::reset) (which the engine triggers through
///   [`Node::release_variables`](crate::Node::release_variables)).
/// * Saving an op's **own output** (`is_output = true`) keeps only the raw
///   data and a *weak* reference to the node (whose header holds the
///   output's version counter), so node → saved output → node is not a
///   reference cycle and saving allocates nothing; unpacking rebuilds a
///   variable with the node as `grad_fn` sharing that counter, as PyTorch
///   does (with or without grad mode).
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
        data: T,
        grad_fn: WeakNode<T>,
        output_nr: u32,
        version: u32,
        /// The version counter when it is not the node's own slot for this
        /// output (the output shares another variable's, or had its history
        /// replaced by an in-place op).
        counter: Option<SharedCounter<T>>,
        /// Its tangents when it was saved under forward AD (forward-over-reverse: the
        /// backward formula that unpacks it sees them).
        fw: Option<crate::forward::Snapshot<T>>,
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
            && let Some((node, output_nr)) = var.with_history(|f, nr| f.map(|f| (f.clone(), nr)))
        {
            return SavedVariable {
                state: State::Output {
                    data: var.data(),
                    grad_fn: node.downgrade(),
                    counter: var.saved_output_counter(&node, output_nr),
                    output_nr,
                    version,
                    fw: crate::forward::snapshot(var),
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
            State::Output { data, .. } => Some(data.shape().to_vec()),
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
                data,
                grad_fn,
                output_nr,
                version,
                counter,
                fw,
            } => {
                let current = output_version(grad_fn, *output_nr, counter);
                if current != *version {
                    // The node that saved its output is usually the one
                    // unpacking it, inside `apply`, with its lock held: the
                    // engine fills in the name when it cannot be read here.
                    let output_of = grad_fn
                        .upgrade()
                        .map(|f| (*output_nr as usize, f.try_name().unwrap_or_default()));
                    return Err(mismatch(data, output_of, current, *version));
                }
                let v = match (grad_fn.upgrade(), counter) {
                    (Some(node), None) => Variable::with_grad_fn(data.clone(), node, *output_nr),
                    (node, counter) => {
                        let counter = counter
                            .clone()
                            .unwrap_or_else(|| SharedCounter::Node(grad_fn.clone(), *output_nr));
                        let requires_grad = node.is_some();
                        Variable::reconstructed(
                            data.clone(),
                            node,
                            *output_nr,
                            requires_grad,
                            counter,
                        )
                    }
                };
                if let Some(fw) = fw {
                    crate::forward::restore(&v, fw);
                }
                Ok(Some(v))
            }
        }
    }

    /// The saved raw tensor only, checked like [`unpack`](Self::unpack) but
    /// without building a variable. Use it only for values a formula treats
    /// as constants (their gradient is never needed, even with `create_graph`).
    pub fn unpack_data(&self) -> Result<T, AutogradError> {
        match &self.state {
            State::Output {
                data,
                grad_fn,
                output_nr,
                version,
                counter,
                ..
            } if output_version(grad_fn, *output_nr, counter) == *version => Ok(data.clone()),
            _ => self.unpack().map(|v| v.data()),
        }
    }
}

/// The current version of a saved output: its node's slot, or the counter
/// it shares.
fn output_version<T: Tensor>(
    grad_fn: &WeakNode<T>,
    output_nr: u32,
    counter: &Option<SharedCounter<T>>,
) -> u32 {
    match counter {
        None => grad_fn.version_slot(output_nr),
        Some(c) => c.atomic(),
    }
    .load(std::sync::atomic::Ordering::Acquire)
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
