//! [`AutogradError`]: every user mistake the runtime detects, with PyTorch's wording.

use std::fmt;

/// PyTorch's message when saved tensors are used after they were freed.
pub(crate) const ERR_BACKWARD_TWICE: &str = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.";

/// An autograd error. `Display` uses PyTorch's wording where PyTorch has one.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AutogradError {
    /// A saved variable was modified in place after it was saved.
    VersionMismatch {
        /// `type_name [dims]`, e.g. `Tensor<f32> [2, 3]`.
        tensor: String,
        /// `(output_nr, node name)` when the variable had a `grad_fn`.
        output_of: Option<(usize, String)>,
        /// The version found at unpack time.
        current: u32,
        /// The version recorded when the variable was saved.
        expected: u32,
        /// Whether anomaly mode was on (changes the hint).
        anomaly: bool,
    },
    /// Saved variables were already released (second backward without `retain_graph`).
    BackwardTwice,
    /// A saved variable that was never filled was unpacked.
    UndefinedSavedVariable,
    /// A node returned the wrong number of gradients.
    InvalidGradientCount {
        /// Node name.
        node: String,
        /// Number of next edges.
        expected: usize,
        /// Number of gradients returned.
        got: usize,
    },
    /// A node returned a gradient of the wrong shape.
    InvalidGradientShape {
        /// Node name.
        node: String,
        /// Output index.
        index: usize,
        /// Shape returned.
        got: Vec<usize>,
        /// Shape of the corresponding forward input.
        expected: Vec<usize>,
    },
    /// A node returned a gradient of the wrong dtype.
    InvalidGradientDtype {
        /// Node name.
        node: String,
        /// Output index.
        index: usize,
        /// dtype returned.
        got: String,
        /// dtype of the corresponding forward input.
        expected: String,
    },
    /// In-place operation on a leaf that requires grad.
    InplaceOnLeaf,
    /// An `out=` operation got an argument that requires grad.
    OutRequiresGrad {
        /// The op name.
        op: String,
    },
    /// A formula is `not_implemented`.
    NotImplemented {
        /// Op (or formula) name.
        op: String,
        /// Optional reason or argument name, appended to the message.
        reason: Option<String>,
    },
    /// `backward()` without a gradient on a non-scalar.
    NonScalarImplicitGrad,
    /// `backward()`/`grad()` on an output that does not require grad.
    DoesNotRequireGrad {
        /// Position of the output.
        index: usize,
    },
    /// Different numbers of outputs and grad_outputs.
    GradOutputsLength {
        /// Number of outputs.
        tensors: usize,
        /// Number of gradients.
        grads: usize,
    },
    /// A grad_output whose shape differs from its output.
    GradOutputShape {
        /// Position.
        index: usize,
        /// Shape of the grad_output.
        grad: Vec<usize>,
        /// Shape of the output.
        output: Vec<usize>,
    },
    /// `grad()` input that does not require grad.
    InputDoesNotRequireGrad,
    /// `backward(inputs=[])` or `grad(outputs, [])`.
    EmptyInputs {
        /// `"backward"` or `"grad"`.
        function: &'static str,
    },
    /// `grad()` input unreachable from the outputs while `allow_unused` is false.
    UnusedInput,
    /// `set_requires_grad` on a non-leaf.
    NonLeafRequiresGrad,
    /// Hook registration on a variable that does not require grad.
    HookOnNoGrad,
    /// `retain_grad()` on a variable that does not require grad.
    RetainGradOnNoGrad,
    /// Anomaly mode: a node produced NaN.
    NanInGradient {
        /// Node name.
        node: String,
        /// Output index.
        index: usize,
    },
    /// Anomaly mode: an error while running a node, with the forward trace.
    Anomaly {
        /// Node name.
        node: String,
        /// Backtrace of the forward call that created the node, if it was
        /// recorded while anomaly mode was on.
        forward_trace: Option<String>,
        /// The underlying error.
        source: Box<AutogradError>,
    },
    /// A hook returned a gradient of another dtype than the one it was given.
    HookChangedType {
        /// The hook's name (see [`Variable::register_hook`](crate::Variable::register_hook)).
        hook: String,
        /// Type name of the gradient it was given.
        was: String,
        /// Type name of the gradient it returned.
        got: String,
    },
    /// A hook returned a gradient of another shape than the one it was given.
    HookChangedSize {
        /// The hook's name.
        hook: String,
    },
    /// A node hook changed the number of gradients in its list.
    HookWrongCount {
        /// The hook's name.
        hook: String,
        /// Length after the hook.
        got: usize,
        /// Length before it.
        expected: usize,
    },
    /// A node hook put a gradient where there was none.
    HookReplacedNone,
    /// The error a hook raised (made with [`AutogradError::hook`], shown as it is; an
    /// [`AutogradError`] a hook returns reaches the caller unchanged).
    Hook(BackendError),
    /// Any other error (for custom nodes).
    Other(String),
    /// A kernel of a fallible backend failed; its message is shown as it is.
    Backend(BackendError),
}

/// An error from outside the runtime (a fallible backend's kernel, or a hook), kept whole: [`BackendError::downcast_ref`] gives
/// the backend's own error type back.
#[derive(Clone)]
pub struct BackendError(std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>);

impl BackendError {
    /// The backend's error, if it is an `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref::<E>()
    }
}

impl fmt::Debug for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl PartialEq for BackendError {
    /// Two backend errors are equal when they say the same.
    fn eq(&self, other: &Self) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl AutogradError {
    /// An [`AutogradError::Other`] with this message.
    pub fn msg(m: impl Into<String>) -> Self {
        AutogradError::Other(m.into())
    }

    /// A backend kernel's error (generated wrappers of fallible backends call this).
    pub fn backend<E: std::error::Error + Send + Sync + 'static>(e: E) -> Self {
        AutogradError::Backend(BackendError(std::sync::Arc::new(e)))
    }

    /// The error of a hook, for the caller of backward to see (PyTorch lets the exception
    /// a hook raises propagate); [`BackendError::downcast_ref`] gives `e` back.
    pub fn hook<E: std::error::Error + Send + Sync + 'static>(e: E) -> Self {
        AutogradError::Hook(BackendError(std::sync::Arc::new(e)))
    }

    /// PyTorch's `not_implemented(name)`: `the derivative for 'name' is not implemented.`
    pub fn not_implemented(op: impl Into<String>, reason: Option<&str>) -> Self {
        AutogradError::NotImplemented {
            op: op.into(),
            reason: reason.map(str::to_string),
        }
    }

    /// The innermost error (unwrapping [`AutogradError::Anomaly`]).
    pub fn root_cause(&self) -> &AutogradError {
        match self {
            AutogradError::Anomaly { source, .. } => source.root_cause(),
            e => e,
        }
    }
}

impl fmt::Display for AutogradError {
    #[allow(
        clippy::too_many_lines,
        reason = "one arm per variant with PyTorch's wording: a table, long on purpose"
    )]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use AutogradError::*;
        match self {
            VersionMismatch {
                tensor,
                output_of,
                current,
                expected,
                anomaly,
            } => {
                write!(
                    f,
                    "one of the variables needed for gradient computation has been modified by an inplace operation: [{tensor}]"
                )?;
                if let Some((nr, name)) = output_of {
                    write!(f, ", which is output {nr} of {name},")?;
                }
                write!(
                    f,
                    " is at version {current}; expected version {expected} instead."
                )?;
                if *anomaly {
                    write!(
                        f,
                        " Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!"
                    )
                } else {
                    write!(
                        f,
                        " Hint: enable anomaly detection to find the operation that failed to compute its gradient, with autograd_runtime::set_detect_anomaly(true)."
                    )
                }
            }
            BackwardTwice => f.write_str(ERR_BACKWARD_TWICE),
            UndefinedSavedVariable => f.write_str("unpacking a SavedVariable that holds no tensor"),
            InvalidGradientCount {
                node,
                expected,
                got,
            } => write!(
                f,
                "Function {node} returned an invalid number of gradients - expected {expected}, but got {got}"
            ),
            InvalidGradientShape {
                node,
                index,
                got,
                expected,
            } => write!(
                f,
                "Function {node} returned an invalid gradient at index {index} - got {got:?} but expected shape compatible with {expected:?}"
            ),
            InvalidGradientDtype {
                node,
                index,
                got,
                expected,
            } => write!(
                f,
                "Function {node} returned an invalid gradient at index {index} - expected dtype {expected} but got {got}"
            ),
            InplaceOnLeaf => f.write_str(
                "a leaf Variable that requires grad is being used in an in-place operation.",
            ),
            OutRequiresGrad { op } => write!(
                f,
                "{op}(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."
            ),
            NotImplemented { op, reason } => {
                write!(f, "the derivative for '{op}' is not implemented.")?;
                if let Some(r) = reason {
                    write!(f, " {r}")?;
                }
                Ok(())
            }
            NonScalarImplicitGrad => {
                f.write_str("grad can be implicitly created only for scalar outputs")
            }
            DoesNotRequireGrad { index } => write!(
                f,
                "element {index} of tensors does not require grad and does not have a grad_fn"
            ),
            GradOutputsLength { tensors, grads } => {
                write!(f, "got {tensors} tensors and {grads} gradients")
            }
            GradOutputShape {
                index,
                grad,
                output,
            } => write!(
                f,
                "Mismatch in shape: grad_output[{index}] has a shape of {grad:?} and output[{index}] has a shape of {output:?}."
            ),
            InputDoesNotRequireGrad => {
                f.write_str("One of the differentiated Tensors does not require grad")
            }
            EmptyInputs { function } => {
                write!(f, "`inputs` argument to `{function}()` cannot be empty.")
            }
            UnusedInput => f.write_str(
                "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.",
            ),
            NonLeafRequiresGrad => f.write_str(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().",
            ),
            HookOnNoGrad => {
                f.write_str("cannot register a hook on a tensor that doesn't require gradient")
            }
            RetainGradOnNoGrad => {
                f.write_str("can't retain_grad on Tensor that has requires_grad=False")
            }
            NanInGradient { node, index } => {
                write!(f, "Function '{node}' returned nan values in its {index}th output.")
            }
            Anomaly {
                node,
                forward_trace,
                source,
            } => {
                write!(f, "{source}\n\nError detected in {node}. ")?;
                match forward_trace {
                    Some(t) => write!(f, "Traceback of forward call that caused the error:\n{t}"),
                    None => f.write_str(
                        "No forward pass information available. Enable detect anomaly during forward pass for more information.",
                    ),
                }
            }
            HookChangedType { hook, was, got } => write!(
                f,
                "hook '{hook}' has changed the type of value (was {was} got {got})"
            ),
            HookChangedSize { hook } => write!(f, "hook '{hook}' has changed the size of value"),
            HookWrongCount {
                hook,
                got,
                expected,
            } => write!(
                f,
                "hook '{hook}' has returned an incorrect number of values (got {got}, but expected {expected})"
            ),
            HookReplacedNone => f.write_str("can't replace a None gradient with a non-None value"),
            Hook(e) => fmt::Display::fmt(&*e.0, f),
            Other(m) => f.write_str(m),
            Backend(e) => fmt::Display::fmt(&*e.0, f),
        }
    }
}

impl std::error::Error for AutogradError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AutogradError::Anomaly { source, .. } => Some(source.as_ref()),
            AutogradError::Backend(e) | AutogradError::Hook(e) => Some(&*e.0),
            _ => None,
        }
    }
}
