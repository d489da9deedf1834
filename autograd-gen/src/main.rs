//! `autograd-gen`: torchgen's autograd analysis, and the code `autograd_ops!` generates, from
//! the command line.

mod expand;
mod translate;

use autograd_codegen::analysis::{Analysis, AnalysisOptions, json};
use autograd_codegen::api::{Sources, analyze_sources};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "\
usage: autograd-gen analyze --native PATH --derivatives PATH [--tags PATH] [--rust] [-o PATH | --json]
       autograd-gen expand --derivatives PATH [--native PATH] [--helpers RUST_PATH] [--crate RUST_PATH] [--fallible] [--cpp [--header PATH]]
       autograd-gen translate --native PATH --derivatives PATH [--header PATH] [--fallible] [--errors-only]
       autograd-gen --help";

const HELP: &str = "\
autograd-gen: torchgen's autograd analysis of derivatives.yaml, and the Rust code that
autograd_ops! generates from it.

analyze   read the files, run the analysis, print a summary (or write the analysis as JSON)
  --native PATH        native_functions.yaml (in PyTorch's source tree:
                       aten/src/ATen/native/native_functions.yaml)
  --derivatives PATH   derivatives.yaml (PyTorch: tools/autograd/derivatives.yaml)
  --tags PATH          tags.yaml (PyTorch: aten/src/ATen/native/tags.yaml); optional
  --rust               formulas are Rust (the macro's rules), not PyTorch's C++
  -o, --output PATH    write the analysis as JSON to PATH and print the summary;
                       `-o -` writes the JSON to standard output instead, and nothing else
  --json               the JSON on standard output; refused when that is a terminal (use -o)
  The JSON's shape: docs/analysis-json.md. Errors in the files are printed on standard
  error, each naming file:line and the entry, and the exit status is 1.

expand    print the code autograd_ops! generates for a derivatives.yaml, formatted
  --derivatives PATH   derivatives.yaml (formulas in Rust)
  --native PATH        native_functions.yaml (adds in-place and out= variants)
  --helpers RUST_PATH  the module formulas may call (the macro's `helpers = ...`)
  --raw-helpers RUST_PATH
                       the same helpers over raw tensors (the macro's `raw_helpers = ...`)
  --crate RUST_PATH    the facade crate's path (default ::autograd)
  --fallible           kernels return Result<_, Self::Error> (the macro's `fallible = true`)
  --error-from RUST_PATH
                       Backend::Error converts from this type (the macro's `error_from = ...`)
  --cpp                formulas are PyTorch's C++ (the macro's `formulas = \"cpp\"`)
  --header PATH        with --cpp: the header declaring the helpers (the macro's `header`)

translate print each C++ formula of a derivatives.yaml lowered to Rust, or its error
  --native PATH        native_functions.yaml: the operators formulas may call
  --derivatives PATH   derivatives.yaml with PyTorch's C++ formulas
  --header PATH        the header declaring the helpers formulas may call (default:
                       FunctionsManual.h beside derivatives.yaml, when it exists)
  --fallible           calls end in `?` (kernels and helpers return Result)
  --errors-only        print only the formulas that do not translate
  The last line is `translated: K/N formulas`; the exit status is 1 unless K = N.

Small demo inputs ship in autograd-gen/demo/ (see its README).";

/// Where the analysis goes.
#[derive(Debug, PartialEq)]
enum Output {
    /// A summary on standard output.
    Summary,
    /// The JSON on standard output, nothing else.
    JsonStdout,
    /// The JSON to a file, the summary on standard output.
    JsonFile(PathBuf),
}

#[derive(Debug)]
struct Args {
    native: PathBuf,
    derivatives: PathBuf,
    tags: Option<PathBuf>,
    rust: bool,
    output: Output,
}

/// Parse `analyze`'s arguments (after the subcommand). `stdout_is_terminal` decides whether
/// `--json` without `-o` may write to standard output.
fn parse_args(
    mut it: impl Iterator<Item = String>,
    stdout_is_terminal: bool,
) -> Result<Args, String> {
    let (mut native, mut derivatives, mut tags, mut json, mut rust, mut output) =
        (None, None, None, false, false, None);
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .map(PathBuf::from)
                .ok_or_else(|| format!("{name} needs a path\n{USAGE}"))
        };
        match a.as_str() {
            "--native" => native = Some(value("--native")?),
            "--derivatives" => derivatives = Some(value("--derivatives")?),
            "--tags" => tags = Some(value("--tags")?),
            "-o" | "--output" => output = Some(value(&a)?),
            "--json" => json = true,
            "--rust" => rust = true,
            other => return Err(format!("unknown option `{other}`\n{USAGE}")),
        }
    }
    let output = match output {
        Some(p) if p.as_os_str() == "-" => Output::JsonStdout,
        Some(p) => Output::JsonFile(p),
        None if !json => Output::Summary,
        None if !stdout_is_terminal => Output::JsonStdout,
        None => {
            return Err(format!(
                "--json: standard output is a terminal, and the JSON is large (about 2 MB for \
                 PyTorch's files); write it to a file with `-o PATH`, or use `-o -` or a pipe\n{USAGE}"
            ));
        }
    };
    Ok(Args {
        native: native.ok_or_else(|| format!("--native is required\n{USAGE}"))?,
        derivatives: derivatives.ok_or_else(|| format!("--derivatives is required\n{USAGE}"))?,
        tags,
        rust,
        output,
    })
}

/// mimalloc's `mi_option_purge_delay` (the same index in its v2 and v3 option enums).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    // A short-lived process: never hand freed memory back to the OS (each purge is an
    // madvise call, ~290 of them per analysis, and the pages fault in again when reused).
    // SAFETY: sets a plain integer option; mimalloc allows this at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("analyze") => {}
        Some("expand") => return expand::run(args),
        Some("translate") => return translate::run(args),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}\n\n{HELP}");
            return ExitCode::SUCCESS;
        }
        None => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
        Some(other) => {
            eprintln!("unknown command `{other}`\n{USAGE}");
            return ExitCode::from(2);
        }
    }
    let args: Vec<String> = args.collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}\n\n{HELP}");
        return ExitCode::SUCCESS;
    }
    match parse_args(args.into_iter(), std::io::stdout().is_terminal()) {
        Ok(a) => analyze(&a),
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

fn analyze(args: &Args) -> ExitCode {
    let options = if args.rust {
        AnalysisOptions::rust()
    } else {
        AnalysisOptions::torchgen()
    };
    let result = Sources::read(Some(&args.native), &args.derivatives, args.tags.as_deref())
        .and_then(|s| {
            let r = analyze_sources(&s, &options);
            // The process ends soon: freeing the inputs piece by piece is wasted work.
            std::mem::forget(s);
            r
        });
    let analysis = match result {
        Ok(a) => a,
        Err(diags) => {
            eprintln!("{diags}");
            eprintln!("autograd-gen: {} error(s)", diags.0.len());
            return ExitCode::FAILURE;
        }
    };
    let written = match &args.output {
        Output::Summary => with_stdout(|out| {
            summary(&analysis, out)?;
            writeln!(
                out,
                "(the whole analysis as JSON: add `-o FILE`; its format: docs/analysis-json.md)"
            )
        }),
        Output::JsonStdout => with_stdout(|out| write_json(out, &analysis)),
        Output::JsonFile(path) => write_file(path, &analysis).and_then(|bytes| {
            with_stdout(|out| {
                summary(&analysis, out)?;
                writeln!(out, "JSON written to {} ({})", path.display(), size(bytes))
            })
        }),
    };
    // As above: the analysis is freed with the process, not node by node.
    std::mem::forget(analysis);
    if let Err(e) = written {
        eprintln!("autograd-gen: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Run `f` on a buffered standard output and flush it; errors say what failed.
fn with_stdout(f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), String> {
    // The JSON is ~2 MB: write it in a few large chunks, not 8 KiB ones.
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    f(&mut out)
        .and_then(|_| out.flush())
        .map_err(|e| format!("cannot write to standard output: {e}"))
}

/// Write the JSON to `path`; returns the number of bytes written.
fn write_file(path: &Path, analysis: &Analysis) -> Result<u64, String> {
    let err = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(err)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    write_json(&mut out, analysis).map_err(err)?;
    let file = out.into_inner().map_err(|e| err(e.into_error()))?;
    Ok(file.metadata().map_err(err)?.len())
}

fn write_json(out: &mut dyn Write, analysis: &Analysis) -> std::io::Result<()> {
    let source =
        serde_json::json!({"generator": "autograd-gen", "version": env!("CARGO_PKG_VERSION")});
    json::write_json(&mut { out }, analysis, &source)
}

/// `2.0 MB`, `14.2 kB`, `512 bytes`.
fn size(bytes: u64) -> String {
    match bytes {
        0..1_000 => format!("{bytes} bytes"),
        1_000..1_000_000 => format!("{:.1} kB", bytes as f64 / 1e3),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

/// The summary: counts of functions, of those with derivative information, of backward nodes
/// and of errors (functions whose differentiable outputs cannot be computed: `{"error": ...}`
/// in the JSON), then per schema kind: functions, differentiable ones, and how many of those
/// with a differentiable output have a forward formula (their own or, for in-place variants,
/// their functional entry's; out= functions never support forward AD).
fn summary(a: &Analysis, out: &mut dyn Write) -> std::io::Result<()> {
    let mut kinds: BTreeMap<&str, (usize, usize, usize, usize)> = BTreeMap::new();
    let mut ops = BTreeSet::new();
    for r in &a.results {
        let k = kinds
            .entry(a.functions[r.func].func.kind().as_str())
            .or_default();
        k.0 += 1;
        if let Some(info) = r.main_info() {
            k.1 += 1;
            let needs = !a.functions[r.func].func.is_out_fn()
                && r.differentiable_outputs
                    .as_ref()
                    .is_ok_and(|o| !o.is_empty());
            k.2 += usize::from(needs);
            k.3 += usize::from(needs && !info.forward_derivatives.is_empty());
            if let Some(op) = &info.op {
                ops.insert(op.clone());
            }
        }
    }
    let with_info = a.results.iter().filter(|r| r.infos.is_some()).count();
    let errors: Vec<(&str, &str)> = a
        .results
        .iter()
        .filter_map(|r| {
            let e = r.differentiable_outputs.as_ref().err()?;
            Some((a.functions[r.func].schema.as_str(), e.as_str()))
        })
        .collect();
    writeln!(
        out,
        "{} native functions, {} with derivative information, {} backward nodes, {} errors",
        a.results.len(),
        with_info,
        ops.len(),
        errors.len()
    )?;
    for (kind, (n, d, o, f)) in kinds {
        write!(out, "  {kind:<10} {n:>5} functions, {d:>5} differentiable")?;
        match o {
            0 => writeln!(out)?,
            _ => writeln!(out, ", forward formulas for {f} of {o}")?,
        }
    }
    for (schema, e) in errors.iter().take(5) {
        writeln!(out, "  error: `{schema}`: {e}")?;
    }
    if errors.len() > 5 {
        writeln!(out, "  ... and {} more", errors.len() - 5)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str], terminal: bool) -> Result<Args, String> {
        let base = ["--native", "n.yaml", "--derivatives", "d.yaml"];
        parse_args(base.iter().chain(args).map(|s| s.to_string()), terminal)
    }

    #[test]
    fn where_the_analysis_goes() {
        for terminal in [false, true] {
            assert_eq!(parse(&[], terminal).unwrap().output, Output::Summary);
            assert_eq!(
                parse(&["-o", "-"], terminal).unwrap().output,
                Output::JsonStdout
            );
            assert_eq!(
                parse(&["--json", "--output", "a.json"], terminal)
                    .unwrap()
                    .output,
                Output::JsonFile("a.json".into())
            );
            assert_eq!(
                parse(&["-o", "a.json"], terminal).unwrap().output,
                Output::JsonFile("a.json".into())
            );
        }
        assert_eq!(
            parse(&["--json"], false).unwrap().output,
            Output::JsonStdout
        );
        let err = parse(&["--json"], true).unwrap_err();
        assert!(err.contains("-o PATH"), "{err}");
    }

    #[test]
    fn sizes() {
        assert_eq!(size(512), "512 bytes");
        assert_eq!(size(14_200), "14.2 kB");
        assert_eq!(size(1_954_651), "2.0 MB");
    }
}
