//! The kit's results as records, one per check: an operator's gradcheck, gradgradcheck,
//! forward-mode check and raw-form check on each of its cases, and each PyTorch fixture.
//! A check that failed with PyTorch's "Could not run 'aten::op' with arguments from the 'X'
//! backend" error (a kernel the backend has not written, the generated trait's default) is
//! told apart as not implemented. When the environment variable `OPSET_KIT_REPORT` names a
//! file, [`write_report`] appends one JSON object per record to it:
//! `{"backend", "op", "check", "dtype", "status", "detail"}`.

use std::collections::BTreeMap;
use std::io::Write;

/// A check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// It passed.
    Pass,
    /// It failed.
    Fail,
    /// It needs a kernel the backend has not written.
    NotImplemented,
}

impl Status {
    /// The report's spelling: `pass`, `fail`, `not_implemented`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::NotImplemented => "not_implemented",
        }
    }
}

/// One check of one operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The operator overload as native_functions.yaml names it (`mul.Tensor`), or the
    /// fixture's name for a fixture.
    pub op: String,
    /// `gradcheck`, `gradgradcheck`, `forward`, `raw form`, `fixture`.
    pub check: String,
    /// The dtype it ran in (`f64`).
    pub dtype: &'static str,
    /// What happened.
    pub status: Status,
    /// The case (`mul.Tensor (broadcast)`) and, unless it passed, what went wrong.
    pub detail: String,
}

impl Record {
    /// The record of a check that returned `result`.
    pub fn of(op: &str, check: &str, case: &str, result: Result<(), String>) -> Self {
        let (status, detail) = match result {
            Ok(()) => (Status::Pass, case.to_string()),
            Err(e) => (classify(&e), format!("{case}: {e}")),
        };
        Record {
            op: op.to_string(),
            check: check.to_string(),
            dtype: "f64",
            status,
            detail,
        }
    }

    /// The record as one JSON object, for `backend`.
    pub fn to_json(&self, backend: &str) -> String {
        serde_json::json!({
            "backend": backend,
            "op": self.op,
            "check": self.check,
            "dtype": self.dtype,
            "status": self.status.as_str(),
            "detail": self.detail,
        })
        .to_string()
    }
}

/// `not_implemented` for PyTorch's "Could not run 'aten::...'" error, `fail` otherwise.
pub fn classify(error: &str) -> Status {
    if error.contains("Could not run 'aten::") {
        Status::NotImplemented
    } else {
        Status::Fail
    }
}

/// The operators (or fixtures) with a not-implemented check, once each, sorted, with the
/// kernels their checks needed (`aten::mul.Scalar`), sorted.
pub fn not_implemented(records: &[Record]) -> Vec<(String, Vec<String>)> {
    let mut ops: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.status == Status::NotImplemented)
    {
        let needs = ops.entry(r.op.clone()).or_default();
        needs.extend(missing_kernel(&r.detail));
        needs.sort();
        needs.dedup();
    }
    ops.into_iter().collect()
}

/// The kernel a "Could not run 'aten::OP' ..." error names.
fn missing_kernel(error: &str) -> Option<String> {
    let rest = &error[error.find("Could not run '")? + "Could not run '".len()..];
    Some(rest[..rest.find('\'')?].to_string())
}

/// Per status, how many records: `pass 412, fail 0, not_implemented 3`.
pub fn summary(records: &[Record]) -> String {
    let mut counts: BTreeMap<Status, usize> = BTreeMap::new();
    for r in records {
        *counts.entry(r.status).or_default() += 1;
    }
    [Status::Pass, Status::Fail, Status::NotImplemented]
        .iter()
        .map(|s| format!("{} {}", s.as_str(), counts.get(s).copied().unwrap_or(0)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Appends `records` (for `backend`) to the file `OPSET_KIT_REPORT` names, one JSON object
/// a line; nothing when it is unset. An error names the file.
pub fn write_report(backend: &str, records: &[Record]) -> Result<(), String> {
    match std::env::var_os("OPSET_KIT_REPORT") {
        Some(path) => append_report(std::path::Path::new(&path), backend, records),
        None => Ok(()),
    }
}

/// Appends `records` (for `backend`) to the file at `path`, one JSON object a line.
pub fn append_report(
    path: &std::path::Path,
    backend: &str,
    records: &[Record],
) -> Result<(), String> {
    let shown = path.display().to_string();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("OPSET_KIT_REPORT: cannot open {shown}: {e}"))?;
    let text: String = records.iter().map(|r| r.to_json(backend) + "\n").collect();
    f.write_all(text.as_bytes())
        .map_err(|e| format!("OPSET_KIT_REPORT: cannot write {shown}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_could_not_run_error_is_not_implemented() {
        let e = "panicked: called `Result::unwrap()` on an `Err` value: Backend(Could not run \
                 'aten::exp' with arguments from the 'Mine' backend.)";
        assert_eq!(classify(e), Status::NotImplemented);
        assert_eq!(classify("shape mismatch"), Status::Fail);
        let rs = vec![
            Record::of("exp", "gradcheck", "exp ()", Err(e.into())),
            Record::of("exp", "forward", "exp ()", Err(e.into())),
            Record::of("mul.Tensor", "gradcheck", "mul.Tensor ()", Ok(())),
            Record::of("sin", "gradcheck", "sin ()", Err("wrong".into())),
        ];
        let missing = not_implemented(&rs);
        assert_eq!(
            missing,
            [("exp".to_string(), vec!["aten::exp".to_string()])]
        );
        assert_eq!(summary(&rs), "pass 1, fail 1, not_implemented 2");
        let j: serde_json::Value = serde_json::from_str(&rs[2].to_json("B")).unwrap();
        assert_eq!(j["status"], "pass");
        assert_eq!(j["op"], "mul.Tensor");
        assert_eq!(j["backend"], "B");
    }
}
