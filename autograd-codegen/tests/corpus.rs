//! The real PyTorch corpus: every schema parses and prints back exactly.
//! Needs `../shared/pytorch` (or `$AUTOGRAD_PYTORCH_DIR`); says so in one line when absent.

use autograd_codegen::diagnostics::Ctxt;
use autograd_codegen::model::native::{parse_native_functions, parse_tags};
use std::sync::Arc;

#[test]
fn every_native_schema_round_trips() {
    let Some(dir) = autograd_codegen::api::pytorch_data_dir("corpus test") else {
        return;
    };
    let text = std::fs::read_to_string(dir.join("native_functions.yaml")).unwrap();
    let tags_text = std::fs::read_to_string(dir.join("tags.yaml")).unwrap();
    let mut cx = Ctxt::new();
    let tags = parse_tags(&Arc::from("tags.yaml"), &tags_text, &mut cx);
    let fns = parse_native_functions(&Arc::from("native_functions.yaml"), &text, &tags, &mut cx);
    let fns = cx.check(fns).unwrap_or_else(|e| panic!("{e}"));
    let funcs_in_file = text.lines().filter(|l| l.starts_with("- func: ")).count();
    assert_eq!(fns.len(), funcs_in_file);
    assert_eq!(fns.len(), 2590);
    for (f, line) in fns
        .iter()
        .zip(text.lines().filter_map(|l| l.strip_prefix("- func: ")))
    {
        assert_eq!(f.func.to_string(), line);
    }
}
