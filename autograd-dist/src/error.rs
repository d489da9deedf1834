//! The crate's error type: every failure of MPI, of a peer or of the autograd pass is one of
//! these, returned, never a panic or an abort.

use autograd::runtime::AutogradError;
use std::fmt;
use std::time::Duration;

/// What went wrong in a distributed step.
#[derive(Debug, Clone)]
pub enum DistError {
    /// An MPI call returned an error code (the communicators use `MPI_ERRORS_RETURN`).
    Mpi {
        /// The MPI function.
        call: &'static str,
        /// Its return code.
        code: i32,
        /// `MPI_Error_string`'s text for the code.
        text: String,
    },
    /// Another rank reported a failure (its error's text) and stopped taking part.
    PeerFailed {
        /// The rank that failed.
        rank: usize,
        /// What it reported.
        message: String,
    },
    /// Another rank left the process group (dropped it, or its program ended) while this
    /// rank still waited for a collective operation with it.
    PeerLeft {
        /// The rank that left.
        rank: usize,
        /// The operation this rank waited for.
        waiting_for: String,
    },
    /// A collective operation did not complete within the process group's timeout.
    Timeout {
        /// The operation.
        what: String,
        /// The timeout.
        after: Duration,
    },
    /// The process group cannot be used any more: an earlier error ended it.
    Closed(String),
    /// The data-parallel protocol was not followed (PyTorch's reducer's errors).
    Protocol(String),
    /// The backward pass (or a hook in it) failed.
    Autograd(AutogradError),
}

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistError::Mpi { call, code, text } => {
                write!(f, "{call} failed with MPI error {code}: {text}")
            }
            DistError::PeerFailed { rank, message } => write!(f, "rank {rank} failed: {message}"),
            DistError::PeerLeft { rank, waiting_for } => write!(
                f,
                "rank {rank} left the process group while this rank waited for {waiting_for}"
            ),
            DistError::Timeout { what, after } => write!(
                f,
                "{what} did not complete within {:.1} s (the process group's timeout): \
                 another rank is stuck, slower, or never started it",
                after.as_secs_f64()
            ),
            DistError::Closed(why) => write!(f, "the process group is closed: {why}"),
            DistError::Protocol(msg) => f.write_str(msg),
            DistError::Autograd(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DistError {}

impl From<AutogradError> for DistError {
    fn from(e: AutogradError) -> Self {
        DistError::Autograd(e)
    }
}
