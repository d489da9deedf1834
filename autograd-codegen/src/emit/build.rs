//! The generator from a build script: write the generated code to `OUT_DIR`.
//!
//! In `build.rs`:
//!
//! ```no_run
//! autograd_codegen::emit::build::Builder::new("derivatives.yaml")
//!     .native("native_functions.yaml")
//!     .helpers("crate::helpers")
//!     .write_to_out_dir("autograd_ops.rs")
//!     .unwrap_or_else(|e| panic!("{e}"));
//! ```
//!
//! and in `lib.rs`: `mod ops { include!(concat!(env!("OUT_DIR"), "/autograd_ops.rs")); }`.

use super::{Config, generate_pretty};
use crate::diagnostics::{Diagnostic, Diagnostics};
use std::path::{Path, PathBuf};

/// Configures and runs the generator outside the macro. A setting that is not valid (a Rust
/// path that does not parse) is reported by [`Builder::generate`], with the other errors.
#[derive(Debug, Clone)]
pub struct Builder {
    config: Config,
    errors: Vec<Diagnostic>,
}

/// `text` as a Rust path, or an error naming the setting.
fn rust_path(setting: &str, text: &str, errors: &mut Vec<Diagnostic>) -> Option<syn::Path> {
    syn::parse_str(text)
        .map_err(|e| {
            errors.push(Diagnostic {
                location: Default::default(),
                entry: None,
                message: format!("Builder::{setting}(\"{text}\"): not a Rust path: {e}"),
            })
        })
        .ok()
}

impl Builder {
    /// Generate from `derivatives` (relative to `CARGO_MANIFEST_DIR` when set).
    pub fn new(derivatives: impl Into<PathBuf>) -> Self {
        let mut config = Config::new(derivatives);
        if let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") {
            config.base_dir = PathBuf::from(dir);
        }
        // A build script tracks its inputs with `rerun-if-changed` instead.
        config.track_files = false;
        Builder {
            config,
            errors: Vec::new(),
        }
    }

    /// Add a `native_functions.yaml`.
    pub fn native(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.native = Some(path.into());
        self
    }

    /// A module whose items the formulas use, e.g. `"crate::helpers"`.
    pub fn helpers(mut self, path: &str) -> Self {
        self.config.helpers = rust_path("helpers", path, &mut self.errors);
        self
    }

    /// The helpers over raw tensors, e.g. `"crate::helpers::raw"` (see the macro's
    /// `raw_helpers = path`).
    pub fn raw_helpers(mut self, path: &str) -> Self {
        self.config.raw_helpers = rust_path("raw_helpers", path, &mut self.errors);
        self
    }

    /// Kernels return `Result<_, Self::Error>` (see the macro's `fallible = true`).
    pub fn fallible(mut self, fallible: bool) -> Self {
        self.config.fallible = fallible;
        self
    }

    /// `Backend::Error` converts from this type, e.g. `"crate::Error"` (see the macro's
    /// `error_from = path`).
    pub fn error_from(mut self, path: &str) -> Self {
        self.config.error_from = rust_path("error_from", path, &mut self.errors);
        self
    }

    /// The formulas are PyTorch's C++, calling the helpers `header` declares (the macro's
    /// `formulas = "cpp", header = "..."`).
    pub fn cpp(mut self, header: impl Into<PathBuf>) -> Self {
        self.config.cpp = true;
        self.config.header = Some(header.into());
        self
    }

    /// The facade crate's path (default `::autograd`).
    pub fn krate(mut self, path: &str) -> Self {
        if let Some(p) = rust_path("krate", path, &mut self.errors) {
            self.config.krate = p;
        }
        self
    }

    /// Directory relative paths resolve against.
    pub fn base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.base_dir = dir.into();
        self
    }

    /// The generated code, formatted.
    pub fn generate(&self) -> Result<String, Diagnostics> {
        match generate_pretty(&self.config) {
            Ok(code) if self.errors.is_empty() => Ok(code),
            Ok(_) => Err(Diagnostics(self.errors.clone())),
            Err(mut d) => {
                d.0.splice(0..0, self.errors.iter().cloned());
                Err(d)
            }
        }
    }

    /// Write the code to `path` and print `cargo:rerun-if-changed` for the inputs.
    pub fn write_to(&self, path: &Path) -> Result<(), Diagnostics> {
        let code = self.generate()?;
        for input in std::iter::once(&self.config.derivatives).chain(self.config.native.iter()) {
            println!(
                "cargo:rerun-if-changed={}",
                self.config.base_dir.join(input).display()
            );
        }
        std::fs::write(path, code).map_err(|e| {
            Diagnostics(vec![crate::diagnostics::Diagnostic {
                location: Default::default(),
                entry: None,
                message: format!("cannot write `{}`: {e}", path.display()),
            }])
        })
    }

    /// Write the code to `$OUT_DIR/file_name`.
    pub fn write_to_out_dir(&self, file_name: &str) -> Result<PathBuf, Diagnostics> {
        let out = std::env::var_os("OUT_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        let path = out.join(file_name);
        self.write_to(&path)?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_helpers_path_is_reported_not_dropped() {
        let dir = env!("CARGO_MANIFEST_DIR");
        let b = Builder::new("tests/fixtures/small.yaml")
            .base_dir(dir)
            .helpers("crate::not a path");
        let e = b.generate().unwrap_err().to_string();
        assert!(
            e.contains("Builder::helpers(\"crate::not a path\"): not a Rust path"),
            "{e}"
        );
        let ok = Builder::new("tests/fixtures/small.yaml")
            .base_dir(dir)
            .helpers("crate::helpers");
        assert!(ok.generate().unwrap().contains("use crate::helpers::*;"));
    }
}
