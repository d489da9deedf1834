//! `autograd-gen`: torchgen's autograd analysis (and, later, code expansion) from the command line.

mod expand;

use autograd_codegen::analysis::{AnalysisOptions, json};
use autograd_codegen::api::{Sources, analyze_sources};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "usage: autograd-gen analyze --native PATH --derivatives PATH [--tags PATH] [--json] [--rust]\n       autograd-gen expand --derivatives PATH [--native PATH] [--helpers RUST_PATH] [--crate RUST_PATH]";

struct Args {
    native: PathBuf,
    derivatives: PathBuf,
    tags: Option<PathBuf>,
    json: bool,
    rust: bool,
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    match it.next().as_deref() {
        Some("analyze") => {}
        Some("-h" | "--help") | None => return Err(USAGE.into()),
        Some(other) => return Err(format!("unknown command `{other}`\n{USAGE}")),
    }
    let (mut native, mut derivatives, mut tags, mut json, mut rust) =
        (None, None, None, false, false);
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
            "--json" => json = true,
            "--rust" => rust = true,
            other => return Err(format!("unknown option `{other}`\n{USAGE}")),
        }
    }
    Ok(Args {
        native: native.ok_or_else(|| format!("--native is required\n{USAGE}"))?,
        derivatives: derivatives.ok_or_else(|| format!("--derivatives is required\n{USAGE}"))?,
        tags,
        json,
        rust,
    })
}

/// mimalloc's `mi_option_purge_delay` (the same index in its v2 and v3 option enums).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    // A short-lived process: never hand freed memory back to the OS (each purge is an
    // madvise call, ~290 of them per analysis, and the pages fault in again when reused).
    // SAFETY: sets a plain integer option; mimalloc allows this at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    if std::env::args().nth(1).as_deref() == Some("expand") {
        return expand::run(std::env::args().skip(2));
    }
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let options = if args.rust {
        AnalysisOptions::rust()
    } else {
        AnalysisOptions::torchgen()
    };
    let result =
        Sources::read(&args.native, &args.derivatives, args.tags.as_deref()).and_then(|s| {
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
    let stdout = std::io::stdout();
    // The JSON is ~2 MB: write it in a few large chunks, not 8 KiB ones.
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let written = if args.json {
        let source =
            serde_json::json!({"generator": "autograd-gen", "version": env!("CARGO_PKG_VERSION")});
        json::write_json(&mut out, &analysis, &source)
    } else {
        summary(&analysis, &mut out)
    };
    let flushed = written.and_then(|_| out.flush());
    // As above: the analysis is freed with the process, not node by node.
    std::mem::forget(analysis);
    if let Err(e) = flushed {
        eprintln!("autograd-gen: cannot write output: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn summary(a: &autograd_codegen::analysis::Analysis, out: &mut impl Write) -> std::io::Result<()> {
    let mut kinds: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut ops = std::collections::BTreeSet::new();
    for r in &a.results {
        let k = kinds
            .entry(a.functions[r.func].func.kind().as_str())
            .or_default();
        k.0 += 1;
        if let Some(info) = r.main_info() {
            k.1 += 1;
            if let Some(op) = &info.op {
                ops.insert(op.clone());
            }
        }
    }
    let with_info = a.results.iter().filter(|r| r.infos.is_some()).count();
    writeln!(
        out,
        "{} native functions, {} with derivative information, {} backward nodes",
        a.results.len(),
        with_info,
        ops.len()
    )?;
    for (kind, (n, d)) in kinds {
        writeln!(out, "  {kind:<10} {n:>5} functions, {d:>5} differentiable")?;
    }
    Ok(())
}
