//! The kit's results as records, one per check: an operator's gradcheck, gradgradcheck,
//! forward-mode and raw-form checks on each of its cases (and their f32 comparisons), its
//! in-place, out= and view checks, each PyTorch fixture (under the operator it tests) and
//! its no-panic calls. A check that failed with PyTorch's "Could not run 'aten::op' with
//! arguments from the 'X' backend" error (a kernel the backend has not written, the
//! generated trait's default) is told apart as not implemented, and one that ran past the
//! kit's time limit as a timeout. When the environment variable `OPSET_KIT_REPORT` names a
//! file, [`write_report`] appends one JSON object per record to it:
//! `{"backend", "op", "check", "dtype", "status", "detail"}`; [`markdown_table`] turns such
//! records into the table of operators per backend that the backends' READMEs carry
//! ([`check_readme_table`]).

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
    /// It ran past the kit's time limit (its thread is left running).
    Timeout,
}

impl Status {
    /// Every status, in the order of [`summary`] and the table.
    pub const ALL: [Status; 4] = [
        Status::Pass,
        Status::Fail,
        Status::NotImplemented,
        Status::Timeout,
    ];

    /// The report's spelling: `pass`, `fail`, `not_implemented`, `timeout`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::NotImplemented => "not_implemented",
            Status::Timeout => "timeout",
        }
    }

    /// The status the report spells `s`.
    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// One check of one operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The operator overload as native_functions.yaml names it (`mul.Tensor`), or the
    /// fixture's name for a fixture.
    pub op: String,
    /// `gradcheck`, `gradgradcheck`, `forward`, `raw form`; `value`, `gradient`, `jvp` (f32
    /// against f64); `inplace`, `inplace gradgradcheck`, `inplace forward`; `out=`; `view`,
    /// `view gradcheck`; `fixture`; `no panic`; `has a case`.
    pub check: String,
    /// The dtype it ran in (`f64`, `f32`).
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

    /// The same record in `dtype`.
    pub fn in_dtype(mut self, dtype: &'static str) -> Self {
        self.dtype = dtype;
        self
    }

    /// The record of a check of `case` that had not ended after `limit`.
    pub fn timeout(op: &str, check: &str, case: &str, limit: std::time::Duration) -> Self {
        Record {
            op: op.to_string(),
            check: check.to_string(),
            dtype: "f64",
            status: Status::Timeout,
            detail: format!(
                "{case}: no result after {:.1} s (the kit's time limit; its thread is left running)",
                limit.as_secs_f64()
            ),
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

/// The operators with a not-implemented check, once each, sorted, with the kernels their
/// checks needed (`aten::mul.Scalar`; `f32 tensors` for an f32 check of a backend without
/// them), sorted.
pub fn not_implemented(records: &[Record]) -> Vec<(String, Vec<String>)> {
    let mut ops: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.status == Status::NotImplemented)
    {
        let needs = ops.entry(r.op.clone()).or_default();
        // A check in another dtype needs that dtype's tensors when no kernel is missing.
        let dtype = (r.dtype != "f64").then(|| format!("{} tensors", r.dtype));
        needs.extend(missing_kernel(&r.detail).or(dtype));
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

/// How many of `records` have each status, in [`Status::ALL`]'s order.
pub fn counts<'a>(records: impl IntoIterator<Item = &'a Record>) -> [usize; 4] {
    let mut n = [0; 4];
    for r in records {
        n[Status::ALL.iter().position(|s| *s == r.status).unwrap_or(1)] += 1;
    }
    n
}

/// Per status, how many records: `pass 412, fail 0, not_implemented 3, timeout 0`.
pub fn summary(records: &[Record]) -> String {
    let n = counts(records);
    Status::ALL
        .iter()
        .zip(n)
        .map(|(s, n)| format!("{} {n}", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Per operator (sorted), how many of its records have each status ([`Status::ALL`]'s order).
pub fn per_op(records: &[Record]) -> Vec<(String, [usize; 4])> {
    let mut ops: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    for r in records {
        ops.entry(&r.op).or_default().push(r);
    }
    ops.into_iter()
        .map(|(op, rs)| (op.to_string(), counts(rs)))
        .collect()
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

/// The records of a report (the JSON lines [`write_report`] appends), with their backends.
/// An error names the line that does not parse.
pub fn read_report(text: &str) -> Result<Vec<(String, Record)>, String> {
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let bad = |what: &str| format!("report line {}: {what}: {line}", i + 1);
        let j: serde_json::Value = serde_json::from_str(line).map_err(|e| bad(&e.to_string()))?;
        let field = |k: &str| {
            j[k].as_str()
                .ok_or_else(|| bad(&format!("no string {k:?}")))
        };
        let dtype = match field("dtype")? {
            "f64" => "f64",
            "f32" => "f32",
            d => return Err(bad(&format!("unknown dtype {d:?}"))),
        };
        let status = Status::parse(field("status")?).ok_or_else(|| bad("unknown status"))?;
        let record = Record {
            op: field("op")?.to_string(),
            check: field("check")?.to_string(),
            dtype,
            status,
            detail: field("detail")?.to_string(),
        };
        out.push((field("backend")?.to_string(), record));
    }
    Ok(out)
}

/// A backend's name without its module path: `NdTensor<f64>` for
/// `ndtensor::tensor::NdTensor<f64>`.
pub fn short_name(backend: &str) -> &str {
    let path_end = backend.find('<').unwrap_or(backend.len());
    let start = backend[..path_end].rfind("::").map_or(0, |i| i + 2);
    &backend[start..]
}

/// The markdown table of operators per backend: a row per operator (sorted), a column per
/// backend and dtype (`NdTensor<f64>, f64`); a cell says `pass` when every check of the
/// operator in that dtype passed, the other statuses' counts otherwise (`2 fail, 1 not
/// implemented`), `-` without checks.
pub fn markdown_table(records: &[(String, Record)]) -> String {
    let mut columns: Vec<(&str, &str)> = Vec::new();
    let mut cells: BTreeMap<&str, BTreeMap<(&str, &str), Vec<&Record>>> = BTreeMap::new();
    for (backend, r) in records {
        let col = (backend.as_str(), r.dtype);
        if !columns.contains(&col) {
            columns.push(col);
        }
        cells
            .entry(&r.op)
            .or_default()
            .entry(col)
            .or_default()
            .push(r);
    }
    // f64 before f32, each backend in its first record's order.
    columns.sort_by_key(|(b, d)| {
        let first = records.iter().position(|(x, _)| x == b);
        (first, *d != "f64")
    });
    let head: Vec<String> = columns
        .iter()
        .map(|(b, d)| format!("{}, {d}", short_name(b)))
        .collect();
    let mut out = format!(
        "| op | {} |\n|---|{}\n",
        head.join(" | "),
        "---|".repeat(columns.len())
    );
    for (op, by_col) in &cells {
        let row: Vec<String> = columns
            .iter()
            .map(|c| by_col.get(c).map_or("-".to_string(), |rs| cell(rs)))
            .collect();
        out += &format!("| `{op}` | {} |\n", row.join(" | "));
    }
    out
}

/// A table cell: `pass`, or the counts of the other statuses.
fn cell(records: &[&Record]) -> String {
    let n = counts(records.iter().copied());
    if n[1..].iter().all(|k| *k == 0) {
        return "pass".to_string();
    }
    let names = ["pass", "fail", "not implemented", "timeout"];
    (1..4)
        .filter(|i| n[*i] > 0)
        .map(|i| format!("{} {}", n[i], names[i]))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The comment that starts the kit's table in a README.
pub const TABLE_START: &str =
    "<!-- kit table: generated by the conformance test; UPDATE_KIT_TABLE=1 rewrites it -->";
/// The comment that ends it.
pub const TABLE_END: &str = "<!-- end of kit table -->";

/// `text` (a README) with `table` between [`TABLE_START`] and [`TABLE_END`] in place of
/// what is there; an error without the markers.
pub fn with_table(text: &str, table: &str) -> Result<String, String> {
    let missing = || format!("no {TABLE_START:?} ... {TABLE_END:?} markers");
    let start = text.find(TABLE_START).ok_or_else(missing)? + TABLE_START.len();
    let end = start + text[start..].find(TABLE_END).ok_or_else(missing)?;
    Ok(format!("{}\n{table}{}", &text[..start], &text[end..]))
}

/// The README at `readme` carries `table` between [`TABLE_START`] and [`TABLE_END`]. When
/// the environment variable `UPDATE_KIT_TABLE` is `1`, the README is rewritten with
/// `table` instead; otherwise a difference is an error that says so.
pub fn check_readme_table(readme: &std::path::Path, table: &str) -> Result<(), String> {
    let shown = readme.display();
    let text = std::fs::read_to_string(readme).map_err(|e| format!("{shown}: {e}"))?;
    let wanted = with_table(&text, table).map_err(|e| format!("{shown}: {e}"))?;
    if wanted == text {
        return Ok(());
    }
    if std::env::var("UPDATE_KIT_TABLE").is_ok_and(|v| v == "1") {
        return std::fs::write(readme, wanted).map_err(|e| format!("{shown}: {e}"));
    }
    Err(format!(
        "{shown}: the kit's table of operators differs from this run's results; rerun the test \
         with UPDATE_KIT_TABLE=1 to rewrite it (then review the diff)"
    ))
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
        assert_eq!(summary(&rs), "pass 1, fail 1, not_implemented 2, timeout 0");
        let j: serde_json::Value = serde_json::from_str(&rs[2].to_json("B")).unwrap();
        assert_eq!(j["status"], "pass");
        assert_eq!(j["op"], "mul.Tensor");
        assert_eq!(j["backend"], "B");
    }

    #[test]
    fn a_report_reads_back_and_makes_the_table() {
        let limit = std::time::Duration::from_secs(2);
        let rs = [
            Record::of("exp", "gradcheck", "exp ()", Ok(())),
            Record::of(
                "exp",
                "value",
                "exp ()",
                Err("1.0 in f32, 1.1 in f64".into()),
            )
            .in_dtype("f32"),
            Record::of(
                "sin",
                "gradcheck",
                "sin ()",
                Err("Could not run 'aten::sin'".into()),
            ),
            Record::timeout("tanh", "forward", "tanh ()", limit),
            Record::of("tanh", "gradcheck", "tanh ()", Ok(())),
        ];
        let text: String = rs
            .iter()
            .map(|r| r.to_json("my::Tensor<f64>") + "\n")
            .collect();
        let back = read_report(&text).unwrap();
        assert_eq!(back.len(), rs.len());
        assert!(
            back.iter()
                .zip(&rs)
                .all(|((b, x), r)| b == "my::Tensor<f64>" && x == r)
        );
        assert_eq!(
            markdown_table(&back),
            "| op | Tensor<f64>, f64 | Tensor<f64>, f32 |\n\
             |---|---|---|\n\
             | `exp` | pass | 1 fail |\n\
             | `sin` | 1 not implemented | - |\n\
             | `tanh` | 1 timeout | - |\n"
        );
        assert!(
            read_report("{\"op\": 1}")
                .unwrap_err()
                .starts_with("report line 1")
        );
    }

    #[test]
    fn the_table_goes_between_the_markers() {
        let text = format!("# A\n\n{TABLE_START}\n| old |\n{TABLE_END}\n\nend\n");
        let new = with_table(&text, "| new |\n").unwrap();
        assert_eq!(new, text.replace("| old |", "| new |"));
        assert_eq!(with_table(&text, "| old |\n").unwrap(), text);
        assert!(
            with_table("no markers", "")
                .unwrap_err()
                .contains("markers")
        );
    }
}
