//! The macro's whole expansion: arguments to [`Config`], code to a file under the build's
//! own `OUT_DIR`, `include!` of it; errors as `compile_error!`.

use super::config::tracking;
use super::output::generate_compact;
use super::{Config, MacroArgs, generate};
use crate::diagnostics::Diagnostics;
use proc_macro2::TokenStream;
use quote::quote;
use std::path::{Path, PathBuf};

/// Errors as `compile_error!` invocations, one per error.
pub fn compile_errors(d: &Diagnostics) -> TokenStream {
    let errs = d.0.iter().map(|e| {
        let msg = e.to_string();
        quote!(::core::compile_error!(#msg);)
    });
    quote!(#(#errs)*)
}

/// The whole macro: parse the arguments, read the files relative to `CARGO_MANIFEST_DIR`,
/// generate; errors become `compile_error!`s.
///
/// The code is written to a file (named by a hash of its text, under `autograd-ops/` of the
/// calling crate's `OUT_DIR` when it has a build script, else of `own_out_dir`: the macro
/// crate's own `OUT_DIR`, inside the same target directory; never a shared folder) and
/// `include!`d: rustc's errors inside a formula then point at a line of real code that names
/// the formula's `derivatives.yaml:LINE`. Where no file can be written, the tokens are
/// returned directly.
pub fn expand_macro(
    input: TokenStream,
    own_out_dir: Option<&Path>,
    caller_dir: Option<&Path>,
) -> TokenStream {
    let args: MacroArgs = match syn::parse2(input) {
        Ok(a) => a,
        Err(e) => return e.to_compile_error(),
    };
    let mut config = macro_config(args);
    config.caller_dir = caller_dir.map(Path::to_path_buf);
    // Formulas are tokenized with proc-macro2's own lexer (faster, and its spans know byte
    // offsets into the formula).
    proc_macro2::fallback::force();
    let compact = {
        let mut c = config.clone();
        c.track_files = false;
        generate_compact(&c)
    };
    proc_macro2::fallback::unforce();
    let text = match compact {
        Ok(t) => t,
        Err(d) => return compile_errors(&d),
    };
    let track = tracking(&config);
    match write_generated(&text, own_out_dir) {
        Some(path) => {
            let p = path.display().to_string();
            quote!(#track include!(#p);)
        }
        // No file: the tokens themselves (errors in formulas then point at the macro call).
        None => generate(&config).unwrap_or_else(|d| compile_errors(&d)),
    }
}

fn macro_config(args: MacroArgs) -> Config {
    let base = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut config = Config::new(
        args.derivatives
            .as_ref()
            .map_or_else(|| "<inline yaml>".to_string(), |d| d.value()),
    );
    config.derivatives_text = args.yaml.map(|y| y.value());
    config.base_dir = base;
    config.native = args.native.map(|n| PathBuf::from(n.value()));
    config.helpers = args.helpers;
    config.raw_helpers = args.raw_helpers;
    if let Some(k) = args.krate {
        config.krate = k;
    }
    config.type_overrides = args.types;
    config.fallible = args.fallible;
    config.error_from = args.error_from;
    config.cpp = args.cpp;
    config.header = args.header.map(|h| PathBuf::from(h.value()));
    config
}

/// Write `text` to a file named by its hash (once; concurrent builds write the same bytes
/// through a rename) under the calling crate's `OUT_DIR`, else `fallback`; `None` when there
/// is neither or writing fails.
fn write_generated(text: &str, fallback: Option<&Path>) -> Option<PathBuf> {
    let dir = std::env::var_os("OUT_DIR")
        .map(PathBuf::from)
        .or_else(|| fallback.map(Path::to_path_buf))?
        .join("autograd-ops");
    // FNV-1a: the same name for the same text on every toolchain and machine.
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let pkg = std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| "crate".into());
    let path = dir.join(format!("{pkg}-{hash:016x}.rs"));
    if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
        return Some(path);
    }
    std::fs::create_dir_all(&dir).ok()?;
    let tmp = dir.join(format!(
        ".{}-{:?}.tmp",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&tmp, text).ok()?;
    std::fs::rename(&tmp, &path).ok()?;
    Some(path)
}
