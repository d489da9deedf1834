//! Entry points shared by the CLI, build scripts and the proc-macro.

use crate::analysis::{self, Analysis, AnalysisOptions};
use crate::diagnostics::{Ctxt, Diagnostics, Location};
use crate::model::autogen::add_generated_native_functions;
use crate::model::derivatives::parse_derivatives;
use crate::model::native::{parse_native_functions, parse_tags};
use std::path::Path;
use std::sync::Arc;

/// Input texts of an analysis, with the file names messages should show.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// `(file name, text)` of native_functions.yaml.
    pub native: (String, String),
    /// `(file name, text)` of derivatives.yaml.
    pub derivatives: (String, String),
    /// `(file name, text)` of tags.yaml, if any.
    pub tags: Option<(String, String)>,
}

impl Sources {
    /// Read the files from disk; a missing file is an error naming it.
    pub fn read(
        native: &Path,
        derivatives: &Path,
        tags: Option<&Path>,
    ) -> Result<Sources, Diagnostics> {
        let read = |p: &Path| {
            std::fs::read_to_string(p)
                .map(|t| (p.display().to_string(), t))
                .map_err(|e| {
                    Diagnostics(vec![crate::diagnostics::Diagnostic {
                        location: Location {
                            file: Arc::from(p.display().to_string()),
                            line: 0,
                            column: 0,
                        },
                        entry: None,
                        message: format!("cannot read file: {e}"),
                    }])
                })
        };
        Ok(Sources {
            native: read(native)?,
            derivatives: read(derivatives)?,
            tags: tags.map(read).transpose()?,
        })
    }
}

/// Parse everything and run torchgen's analysis. All errors of all files are returned together.
pub fn analyze_sources(src: &Sources, options: &AnalysisOptions) -> Result<Analysis, Diagnostics> {
    let mut cx = Ctxt::new();
    let valid_tags = match &src.tags {
        Some((name, text)) => parse_tags(&Arc::from(name.as_str()), text, &mut cx),
        None => Default::default(),
    };
    // derivatives.yaml is read on its own thread while native_functions.yaml is read here.
    let (fns, (entries, derivatives_cx)) = std::thread::scope(|s| {
        let derivatives = s.spawn(|| {
            let mut cx = Ctxt::new();
            let entries = parse_derivatives(
                &Arc::from(src.derivatives.0.as_str()),
                &src.derivatives.1,
                &mut cx,
            );
            (entries, cx)
        });
        let mut fns = parse_native_functions(
            &Arc::from(src.native.0.as_str()),
            &src.native.1,
            &valid_tags,
            &mut cx,
        );
        add_generated_native_functions(&mut fns, &mut cx);
        let derivatives = derivatives
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (fns, derivatives)
    });
    cx.append(derivatives_cx);
    let parse_errors = cx.check(());
    match (parse_errors, analysis::analyze(fns, &entries, options)) {
        (Ok(()), r) => r,
        (Err(mut e), Err(more)) => {
            e.0.extend(more.0);
            Err(e)
        }
        (Err(e), Ok(_)) => Err(e),
    }
}

/// The folder with PyTorch's data files (`native_functions.yaml`, `derivatives.yaml`,
/// `tags.yaml`, `golden-public.json`): `$AUTOGRAD_PYTORCH_DIR`, else `shared/pytorch` next to
/// the repository. When it is absent, prints one line saying so, naming `what` is skipped,
/// and returns `None` (tests and benchmarks that need the corpus use this).
pub fn pytorch_data_dir(what: &str) -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("AUTOGRAD_PYTORCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/pytorch"));
    if dir.join("native_functions.yaml").exists() {
        Some(dir)
    } else {
        println!(
            "PyTorch data not found at {} (set AUTOGRAD_PYTORCH_DIR): {what} skipped",
            dir.display()
        );
        None
    }
}

impl Sources {
    /// The three files of PyTorch's corpus in `dir` (see [`pytorch_data_dir`]).
    pub fn pytorch(dir: &Path) -> Result<Sources, Diagnostics> {
        Sources::read(
            &dir.join("native_functions.yaml"),
            &dir.join("derivatives.yaml"),
            Some(&dir.join("tags.yaml")),
        )
    }
}
