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
use crate::diagnostics::Diagnostics;
use std::path::{Path, PathBuf};

/// Configures and runs the generator outside the macro.
#[derive(Debug, Clone)]
pub struct Builder {
    config: Config,
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
        Builder { config }
    }

    /// Add a `native_functions.yaml`.
    pub fn native(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.native = Some(path.into());
        self
    }

    /// A module whose items the formulas use, e.g. `"crate::helpers"`.
    pub fn helpers(mut self, path: &str) -> Self {
        self.config.helpers = syn::parse_str(path).ok();
        self
    }

    /// The facade crate's path (default `::autograd`).
    pub fn krate(mut self, path: &str) -> Self {
        if let Ok(p) = syn::parse_str(path) {
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
        generate_pretty(&self.config)
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
