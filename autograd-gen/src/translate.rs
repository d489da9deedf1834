//! `autograd-gen translate`: PyTorch's C++ formulas lowered to the Rust formula dialect, one
//! formula at a time, with a count at the end.

use autograd_codegen::api::read_file;
use autograd_codegen::translate::{Translation, translate_sources};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Usage of the subcommand.
pub const USAGE: &str = "usage: autograd-gen translate --native PATH --derivatives PATH [--header PATH] [--fallible] [--errors-only]";

struct Args {
    native: PathBuf,
    derivatives: PathBuf,
    header: Option<PathBuf>,
    fallible: bool,
    errors_only: bool,
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut native, mut derivatives, mut header) = (None, None, None);
    let (mut fallible, mut errors_only) = (false, false);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--fallible" => fallible = true,
            "--errors-only" => errors_only = true,
            "--native" | "--derivatives" | "--header" => {
                let v = it.next().ok_or_else(|| format!("{a} needs a value"))?;
                let slot = match a.as_str() {
                    "--native" => &mut native,
                    "--derivatives" => &mut derivatives,
                    _ => &mut header,
                };
                *slot = Some(PathBuf::from(v));
            }
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    let native = native.ok_or("--native is required")?;
    let derivatives = derivatives.ok_or("--derivatives is required")?;
    Ok(Args {
        native,
        derivatives,
        header,
        fallible,
        errors_only,
    })
}

/// The header beside derivatives.yaml when none is named (`FunctionsManual.h`).
fn default_header(derivatives: &Path) -> Option<PathBuf> {
    let p = derivatives.parent()?.join("FunctionsManual.h");
    p.is_file().then_some(p)
}

fn print(t: &Translation, errors_only: bool) {
    match &t.rust {
        Ok(code) if !errors_only => println!("{}: {} | {}:\n    {code}", t.loc, t.entry, t.key),
        Ok(_) => {}
        Err(e) => println!(
            "{}:{}: error: {} (entry `{}`, formula `{}`)",
            t.loc,
            t.loc.column + e.offset + 1,
            e.message,
            t.entry,
            t.key
        ),
    }
}

/// Run `translate` with the arguments after the subcommand name.
pub fn run(it: impl Iterator<Item = String>) -> ExitCode {
    let args: Vec<String> = it.collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}\n(autograd-gen --help describes the options)");
        return ExitCode::SUCCESS;
    }
    let args = match parse_args(args.into_iter()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let here = Path::new("");
    let header = args
        .header
        .clone()
        .or_else(|| default_header(&args.derivatives));
    let files = (|| {
        let n = read_file(here, &args.native)?;
        let d = read_file(here, &args.derivatives)?;
        let h = header.as_deref().map(|h| read_file(here, h)).transpose()?;
        translate_sources(&n, &d, h.as_ref(), args.fallible)
    })();
    let translations = match files {
        Ok(t) => t,
        Err(diags) => {
            eprintln!("{diags}");
            return ExitCode::FAILURE;
        }
    };
    for t in &translations {
        print(t, args.errors_only);
    }
    let ok = translations.iter().filter(|t| t.rust.is_ok()).count();
    println!("translated: {ok}/{} formulas", translations.len());
    if ok == translations.len() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
