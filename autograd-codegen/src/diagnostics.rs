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

/// The error accumulator. As serde_derive's `Ctxt`, it must be consumed with
/// [`Ctxt::check`] (or merged into another with [`Ctxt::append`]): dropping one unread is a bug
/// in the caller (errors would be lost), and panics.
#[derive(Debug)]
pub struct Ctxt {
    errors: Option<Vec<Diagnostic>>,
}

impl Default for Ctxt {
    fn default() -> Self {
        Ctxt {
            errors: Some(Vec::new()),
        }
    }
}

impl Ctxt {
    /// A new, empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    fn errors_mut(&mut self) -> &mut Vec<Diagnostic> {
        self.errors
            .as_mut()
            .expect("Ctxt used after check() consumed it")
    }

    /// Record an error.
    pub fn error(&mut self, location: &Location, entry: Option<&str>, message: impl Into<String>) {
        self.errors_mut().push(Diagnostic {
            location: location.clone(),
            entry: entry.map(str::to_string),
            message: message.into(),
        });
    }

    /// Record errors found elsewhere.
    pub fn extend(&mut self, d: Diagnostics) {
        self.errors_mut().extend(d.0);
    }

    /// Any errors so far?
    pub fn has_errors(&self) -> bool {
        self.errors.as_ref().is_some_and(|e| !e.is_empty())
    }

    /// Add `other`'s errors after this one's (as if they had been reported here); `other` is
    /// consumed.
    pub fn append(&mut self, mut other: Ctxt) {
        let theirs = other.errors.take().unwrap_or_default();
        self.errors_mut().extend(theirs);
    }

    /// Throw the errors away on purpose (work that is redone, and reports them, elsewhere).
    pub fn discard(mut self) {
        self.errors = None;
    }

    /// `Ok(value)` when nothing went wrong, else every error, in file order.
    pub fn check<T>(mut self, value: T) -> Result<T, Diagnostics> {
        let mut errors = self.errors.take().unwrap_or_default();
        if errors.is_empty() {
            Ok(value)
        } else {
            errors.sort_by(|a, b| {
                (&a.location.file, a.location.line).cmp(&(&b.location.file, b.location.line))
            });
            Err(Diagnostics(errors))
        }
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.is_some() {
            panic!("a Ctxt was dropped without check(): its errors would be lost");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "dropped without check")]
    fn dropping_an_unchecked_ctxt_panics() {
        let mut cx = Ctxt::new();
        cx.error(&Location::default(), None, "lost");
    }

    #[test]
    fn append_consumes_and_check_sorts_by_line() {
        let at = |line| Location {
            file: Arc::from("f.yaml"),
            line,
            column: 0,
        };
        let mut a = Ctxt::new();
        a.error(&at(9), None, "late");
        let mut b = Ctxt::new();
        b.error(&at(2), Some("e"), "early");
        a.append(b);
        let e = a.check(()).unwrap_err();
        assert_eq!(e.0[0].message, "early");
        assert_eq!(e.0[1].message, "late");
    }
}
