//! The kit's machine-readable report: one JSON object per check, appended.

#![cfg(feature = "conformance")]

use autograd_opset::conformance::report::{Record, Status, append_report};

#[test]
fn records_are_appended_as_json_lines() {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("kit-report.jsonl");
    std::fs::remove_file(&path).ok();
    let could_not_run = "Could not run 'aten::exp' with arguments from the 'Mine' backend.";
    let a = [Record::of(
        "exp",
        "gradcheck",
        "exp ()",
        Err(could_not_run.into()),
    )];
    let b = [Record::of("mul.Tensor", "forward", "mul.Tensor ()", Ok(()))];
    append_report(&path, "Mine", &a).unwrap();
    append_report(&path, "Mine", &b).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["status"], "not_implemented");
    assert_eq!(lines[0]["op"], "exp");
    assert_eq!(lines[1]["status"], "pass");
    assert_eq!(lines[1]["check"], "forward");
    assert_eq!(a[0].status, Status::NotImplemented);
    let e = append_report(std::path::Path::new("/nonexistent/dir/r.jsonl"), "Mine", &b);
    assert!(e.unwrap_err().contains("/nonexistent/dir/r.jsonl"));
}
