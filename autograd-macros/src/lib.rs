//! `autograd_ops!`: a thin shell over `autograd_codegen::emit`.

use proc_macro::TokenStream;

/// Generate the autograd layer from a `derivatives.yaml` with Rust formulas.
///
/// `autograd_ops!("derivatives.yaml")`, optionally with `native = "native_functions.yaml"`,
/// `helpers = crate::path` (a module formulas may use), `raw_helpers = crate::path::raw` (the
/// same helpers over raw tensors, for the formulas' raw form), `fallible = true`,
/// `types = { Scalar = f32 }` and `crate = ::autograd` (the facade's path). Paths are relative to the crate's `CARGO_MANIFEST_DIR`. See the `autograd` crate for
/// what is generated.
#[proc_macro]
pub fn autograd_ops(input: TokenStream) -> TokenStream {
    // This crate's build directory (it has a build script for it): inside the target
    // directory, removed by `cargo clean`, one per version of the macro.
    let out_dir = std::path::Path::new(env!("OUT_DIR"));
    // The invoking file's folder: relative paths not found under CARGO_MANIFEST_DIR are
    // looked up there.
    let file = proc_macro::Span::call_site().local_file();
    let caller = file.as_deref().and_then(std::path::Path::parent);
    autograd_codegen::emit::expand_macro(input.into(), Some(out_dir), caller).into()
}
