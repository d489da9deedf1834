//! Proc-macro shell.
