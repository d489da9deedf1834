//! The one entry point shared by the proc-macro, the CLI and build scripts: [`analyze_into`]
//! (and [`analyze_sources`]) parse the inputs and run torchgen's analysis; code generation
//! ([`crate::emit::generate`]) starts from the same call.

use crate::analysis::{self, Analysis, AnalysisOptions};
use crate::diagnostics::{Ctxt, Diagnostic, Diagnostics, Location};
use crate::model::autogen::add_generated_native_functions;
use crate::model::derivatives::{DerivativeEntry, parse_derivatives};
use crate::model::native::{NativeFunction, Variant, parse_native_functions, parse_tags};
use crate::model::schema::FunctionSchema;
use crate::translate::{CppFormulas, translate_in_place};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Input texts of an analysis, with the file names messages should show.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// `(file name, text)` of native_functions.yaml; without one, the `name:` schemas of
    /// derivatives.yaml declare the functions.
    pub native: Option<(String, String)>,
    /// `(file name, text)` of derivatives.yaml.
    pub derivatives: (String, String),
    /// `(file name, text)` of tags.yaml, if any.
    pub tags: Option<(String, String)>,
    /// The formulas are PyTorch's C++, lowered to Rust before the analysis
    /// ([`crate::translate`]); `None`: they are Rust.
    pub cpp: Option<CppFormulas>,
}

/// A file that cannot be read, as a diagnostic naming it.
pub(crate) fn unreadable(shown: &Path, e: &std::io::Error) -> Diagnostics {
    Diagnostics(vec![Diagnostic {
        location: Location {
            file: Arc::from(shown.display().to_string()),
            line: 0,
            column: 0,
        },
        entry: None,
        message: format!("cannot read `{}`: {e}", shown.display()),
    }])
}

/// Read `shown` (resolved against `base` when relative) as `(shown name, text)`.
pub fn read_file(base: &Path, shown: &Path) -> Result<(String, String), Diagnostics> {
    let path: PathBuf = if shown.is_absolute() {
        shown.to_path_buf()
    } else {
        base.join(shown)
    };
    std::fs::read_to_string(&path)
        .map(|t| (shown.display().to_string(), t))
        .map_err(|e| unreadable(shown, &e))
}

impl Sources {
    /// Read the files from disk; a missing file is an error naming it (all of them, when
    /// several are missing).
    pub fn read(
        native: Option<&Path>,
        derivatives: &Path,
        tags: Option<&Path>,
    ) -> Result<Sources, Diagnostics> {
        let here = Path::new("");
        let mut errors = Vec::new();
        let mut get = |p: &Path| read_file(here, p).map_err(|d| errors.extend(d.0)).ok();
        let native = native.map(&mut get);
        let derivatives = get(derivatives);
        let tags = tags.map(&mut get);
        match (errors.is_empty(), derivatives) {
            (true, Some(derivatives)) => Ok(Sources {
                native: native.flatten(),
                derivatives,
                tags: tags.flatten(),
                cpp: None,
            }),
            _ => Err(Diagnostics(errors)),
        }
    }

    /// The three files of PyTorch's corpus in `dir` (see [`pytorch_data_dir`]).
    pub fn pytorch(dir: &Path) -> Result<Sources, Diagnostics> {
        Sources::read(
            Some(&dir.join("native_functions.yaml")),
            &dir.join("derivatives.yaml"),
            Some(&dir.join("tags.yaml")),
        )
    }
}

/// Parse everything and run torchgen's analysis. All errors of all files are returned together.
pub fn analyze_sources(src: &Sources, options: &AnalysisOptions) -> Result<Analysis, Diagnostics> {
    let mut cx = Ctxt::new();
    let a = analyze_into(src, options, &mut cx);
    cx.check(a)
}

/// [`analyze_sources`] into an error accumulator the caller goes on with (code generation
/// adds its own errors): the analysis of whatever could be read is returned either way.
pub fn analyze_into(src: &Sources, options: &AnalysisOptions, cx: &mut Ctxt) -> Analysis {
    let valid_tags = match &src.tags {
        Some((name, text)) => parse_tags(&Arc::from(name.as_str()), text, cx),
        None => Default::default(),
    };
    // derivatives.yaml is read on its own thread while native_functions.yaml is read here.
    let (functions, (mut entries, derivatives_cx)) = std::thread::scope(|s| {
        let derivatives = s.spawn(|| {
            let mut cx = Ctxt::new();
            let (name, text) = &src.derivatives;
            let entries = parse_derivatives(&Arc::from(name.as_str()), text, &mut cx);
            (entries, cx)
        });
        let fns = src.native.as_ref().map(|(name, text)| {
            let mut fns = parse_native_functions(&Arc::from(name.as_str()), text, &valid_tags, cx);
            add_generated_native_functions(&mut fns, cx);
            fns
        });
        let derivatives = derivatives
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (fns, derivatives)
    });
    cx.append(derivatives_cx);
    let functions = functions.unwrap_or_else(|| {
        let fns = functions_from_entries(&entries, cx);
        // Entries whose schema is invalid were reported already.
        entries.retain(|e| fns.iter().any(|f| f.schema == e.name));
        fns
    });
    if let Some(cpp) = &src.cpp {
        translate_in_place(&mut entries, &functions, cpp, cx);
    }
    let mut infos = analysis::load_infos(&functions, &entries, options, cx);
    let results = analysis::match_infos(&functions, &mut infos, cx);
    Analysis { functions, results }
}

/// Without a native_functions.yaml: one function per entry, declared by its `name:` schema.
fn functions_from_entries(entries: &[DerivativeEntry], cx: &mut Ctxt) -> Vec<NativeFunction> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for e in entries {
        match FunctionSchema::parse(&e.name) {
            Err(err) => cx.error(&e.loc, Some(&e.name), format!("invalid schema: {err}")),
            Ok(func) => {
                if !seen.insert(e.name.clone()) {
                    // Duplicate entries are reported by the analysis' cross-entry checks.
                    continue;
                }
                out.push(NativeFunction {
                    func,
                    schema: e.name.clone(),
                    loc: e.loc.clone(),
                    variants: [Variant::Function, Variant::Method].into_iter().collect(),
                    tags: BTreeSet::new(),
                    dispatch_keys: ["CPU".to_string()].into_iter().collect(),
                    structured: false,
                    structured_delegate: None,
                    autogen: Vec::new(),
                    manual_cpp_binding: false,
                    is_abstract: true,
                    composite_kernel: None,
                    explicit_kernel: None,
                });
            }
        }
    }
    out
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
