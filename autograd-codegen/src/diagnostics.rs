//! Errors that name file, line and entry, and the accumulator that collects all of a file's.
//!
//! As in serde_derive's `Ctxt`: passes push errors and go on; the caller asks for all of them
//! at the end, so one run reports every mistake in a YAML file, not just the first.

use std::fmt;
use std::sync::Arc;

/// Where something is: a file and a 1-based line (and 0-based column when known).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Location {
    /// The file, as given by the caller.
    pub file: Arc<str>,
    /// 1-based line.
    pub line: usize,
    /// 0-based column.
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}", self.file, self.line)
        }
    }
}

/// One error: where, which entry, what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Where the problem is.
    pub location: Location,
    /// The entry it belongs to (a schema or `name:` text), when there is one.
    pub entry: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.location)?;
        if let Some(e) = &self.entry {
            write!(f, "in `{e}`: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diagnostic {}

/// All errors of a run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "error: {d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// The error accumulator.
#[derive(Debug, Default)]
pub struct Ctxt {
    errors: Vec<Diagnostic>,
}

impl Ctxt {
    /// A new, empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record an error.
    pub fn error(&mut self, location: &Location, entry: Option<&str>, message: impl Into<String>) {
        self.errors.push(Diagnostic {
            location: location.clone(),
            entry: entry.map(str::to_string),
            message: message.into(),
        });
    }

    /// Any errors so far?
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// Add `other`'s errors after this one's (as if they had been reported here).
    pub fn append(&mut self, other: Ctxt) {
        self.errors.extend(other.errors);
    }

    /// `Ok(value)` when nothing went wrong, else every error, in file order.
    pub fn check<T>(mut self, value: T) -> Result<T, Diagnostics> {
        if self.errors.is_empty() {
            Ok(value)
        } else {
            self.errors.sort_by(|a, b| {
                (&a.location.file, a.location.line).cmp(&(&b.location.file, b.location.line))
            });
            Err(Diagnostics(self.errors))
        }
    }
}
