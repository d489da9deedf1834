//! The backend's kernels only compute: every PyTorch error text they return comes from the
//! op set (meta functions, shape and dtype rules), none is retyped in the backend's sources.

#[test]
fn no_pytorch_error_text_is_written_in_the_backend() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = autograd_opset::conformance::source::pytorch_texts_in_sources(&src);
    assert!(found.is_empty(), "{}", found.join("\n"));
}
