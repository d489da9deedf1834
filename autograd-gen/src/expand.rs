//! `autograd-gen expand`: print the code `autograd_ops!` would generate, formatted.

use autograd_codegen::emit::{Config, generate_pretty};
use std::path::PathBuf;
use std::process::ExitCode;

/// Usage of the subcommand.
pub const USAGE: &str = "usage: autograd-gen expand --derivatives PATH [--native PATH] [--helpers RUST_PATH] [--raw-helpers RUST_PATH] [--crate RUST_PATH] [--fallible] [--error-from RUST_PATH] [--cpp [--header PATH]]";

/// Run `expand` with the arguments after the subcommand name.
pub fn run(mut it: impl Iterator<Item = String>) -> ExitCode {
    let mut derivatives = None;
    let mut config = Config::new("");
    config.track_files = false;
    while let Some(a) = it.next() {
        if a == "-h" || a == "--help" {
            println!("{USAGE}\n(autograd-gen --help describes the options)");
            return ExitCode::SUCCESS;
        }
        if a == "--fallible" {
            config.fallible = true;
            continue;
        }
        if a == "--cpp" {
            config.cpp = true;
            continue;
        }
        let Some(value) = it.next() else {
            eprintln!("{a} needs a value\n{USAGE}");
            return ExitCode::from(2);
        };
        match a.as_str() {
            "--derivatives" => derivatives = Some(PathBuf::from(value)),
            "--native" => config.native = Some(PathBuf::from(value)),
            "--header" => config.header = Some(PathBuf::from(value)),
            "--helpers" | "--raw-helpers" | "--crate" | "--error-from" => {
                match syn::parse_str::<syn::Path>(&value) {
                    Ok(p) if a == "--helpers" => config.helpers = Some(p),
                    Ok(p) if a == "--error-from" => config.error_from = Some(p),
                    Ok(p) if a == "--raw-helpers" => config.raw_helpers = Some(p),
                    Ok(p) => config.krate = p,
                    Err(e) => {
                        eprintln!("{a}: `{value}` is not a Rust path: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            other => {
                eprintln!("unknown option `{other}`\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(d) = derivatives else {
        eprintln!("--derivatives is required\n{USAGE}");
        return ExitCode::from(2);
    };
    config.derivatives = d;
    match generate_pretty(&config) {
        Ok(code) => {
            print!("{code}");
            ExitCode::SUCCESS
        }
        Err(diags) => {
            eprintln!("{diags}");
            eprintln!("autograd-gen: {} error(s)", diags.0.len());
            ExitCode::FAILURE
        }
    }
}
