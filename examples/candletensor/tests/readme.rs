//! `opset/README.md`'s "A complete backend: candletensor" quotes candletensor's own files and states the op
//! set's figures: the quotes must still be what the files say, and the figures must be the
//! ones computed here from the op set (its generated `Backend` trait, its analysis, the
//! conformance kit's cases and fixtures).

use autograd_opset::conformance::{
    self, cases, fixtures, inplace_cases, kit, out_cases, view_cases,
};
use candletensor::CandleTensor as T;
use std::collections::BTreeSet;
use std::path::Path;

const README: &str = include_str!("../../../opset/README.md");

/// The files the README quotes, from the repository's root.
const QUOTED: &[&str] = &[
    "examples/candletensor/Cargo.toml",
    "examples/candletensor/src/tensor.rs",
    "examples/candletensor/src/runtime.rs",
    "examples/candletensor/src/lib.rs",
    "examples/candletensor/src/backend.rs",
    "examples/candletensor/tests/conformance.rs",
];

/// `(file, block)` of each `<!-- quote: file -->` followed by a fenced block.
fn quotes() -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut lines = README.lines();
    while let Some(l) = lines.next() {
        let Some(path) = l
            .strip_prefix("<!-- quote: ")
            .and_then(|r| r.strip_suffix(" -->"))
        else {
            continue;
        };
        let fence = lines.next().unwrap_or_default();
        assert!(
            fence.starts_with("```"),
            "no code block after the quote of {path}"
        );
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        out.push((path, body.join("\n")));
    }
    out
}

/// Whether `quote` is `file` with cuts: a quote without a cut line (`// ...`, `# ...`) is
/// the whole file; with cuts, its pieces stand in the file, in order.
fn is_quoted(quote: &str, file: &str) -> bool {
    let mut pieces = vec![String::new()];
    for l in quote.lines() {
        if matches!(l.trim(), "// ..." | "# ...") {
            pieces.push(String::new());
        } else {
            let p = pieces.last_mut().expect("a piece");
            p.push_str(l);
            p.push('\n');
        }
    }
    if pieces.len() == 1 {
        return pieces[0].trim_end() == file.trim_end();
    }
    let mut rest = file;
    for p in pieces.iter().filter(|p| !p.is_empty()) {
        match rest.find(p.as_str()) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    true
}

#[test]
fn the_readme_quotes_candletensors_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let quotes = quotes();
    let paths: BTreeSet<&str> = quotes.iter().map(|q| q.0).collect();
    assert_eq!(paths, QUOTED.iter().copied().collect());
    for (path, quote) in &quotes {
        let file = std::fs::read_to_string(root.join(path)).expect("a quoted file");
        assert!(
            is_quoted(quote, &file),
            "opset/README.md's quote of {path} is no longer the file:\n{quote}"
        );
    }
}

#[test]
fn cuts_are_checked_too() {
    let file = "a\nb\nc\nd\n";
    assert!(is_quoted("a\nb\nc\nd", file));
    assert!(is_quoted("a\n// ...\nc\nd", file));
    assert!(!is_quoted("a\nc\nd", file));
    assert!(!is_quoted("c\n// ...\na", file));
    assert!(!is_quoted("a\nb", file));
}

/// The README's table of figures, as computed now.
fn figures() -> String {
    let k = kit::backend_kernels();
    let a = conformance::analysis();
    let all = conformance::all_functions();
    let kinds = |what: &str| all.iter().filter(|f| f.1 == what).count();
    let composites = a.functions.iter().filter(|f| f.composite_kernel.is_some());
    let nodes: BTreeSet<&str> = a
        .results
        .iter()
        .filter_map(|r| r.main_info()?.op.as_deref())
        .collect();
    let forward = a.results.iter().filter(|r| !r.fw_derivatives.is_empty());
    let views = a.functions.iter().filter(|f| f.is_view_op());
    let cs = cases::cases::<T>();
    let ops: BTreeSet<&str> = cs.iter().map(|c| c.op).collect();
    let fx = fixtures::fixtures();
    let mode = |m: Option<&str>| fx.iter().filter(|f| f["mode"].as_str() == m).count();
    let errors = fx.iter().filter(|f| f["expect"].get("error").is_some());
    let rows = [
        (
            "functions in the schema file (`native_functions.yaml`)",
            all.len(),
        ),
        ("... functional", kinds("functional")),
        ("... in-place (`mul_`)", kinds("inplace")),
        ("... out= (`mul.out`)", kinds("out")),
        (
            "... views (`select`, `transpose`, `view`, ...)",
            views.count(),
        ),
        (
            "... composites (`matmul`, `cross_entropy_loss`, ...: no kernel)",
            composites.count(),
        ),
        (
            "kernels of the generated `Backend` trait",
            k.required.len() + k.defaulted.len(),
        ),
        (
            "... that a backend writes (until then each returns PyTorch's \"Could not run\" error)",
            k.required.len(),
        ),
        (
            "... with a default (in-place, out=: the functional kernel; decompositions: `stack`, `t`, `sum`, ...)",
            k.defaulted.len(),
        ),
        (
            "backward nodes (`derivatives.yaml` entries' formulas)",
            nodes.len(),
        ),
        ("functions with a forward-mode formula", forward.count()),
        (
            "gradcheck cases (gradcheck, gradgradcheck, jvp, raw form; and in f32 against f64)",
            cs.len(),
        ),
        ("... operators they cover", ops.len()),
        ("in-place cases", inplace_cases::inplace_cases::<T>().len()),
        ("out= cases", out_cases::out_cases::<T>().len()),
        ("view cases", view_cases::view_cases::<T>().len()),
        ("PyTorch fixtures replayed", fx.len()),
        ("... values, gradients, second derivatives", mode(None)),
        ("... forward mode (jvp)", mode(Some("jvp"))),
        ("... Hessian-vector products", mode(Some("hvp"))),
        ("... that expect PyTorch's error text", errors.count()),
        ("random calls of the no-panic test", all.len() * kit::ROUNDS),
    ];
    let mut t = String::from("| what | how many |\n| --- | ---: |\n");
    for (what, n) in rows {
        t.push_str(&format!("| {what} | {n} |\n"));
    }
    t
}

/// With `UPDATE_FIGURES=1` the test rewrites the table (the one after "The figures") and
/// passes; review the diff.
#[test]
fn the_readmes_figures_are_the_op_sets() {
    let t = figures();
    if std::env::var_os("UPDATE_FIGURES").is_some() && !README.contains(&t) {
        let start = README
            .find("\n| what | how many |")
            .expect("the figures table")
            + 1;
        let end = start + README[start..].find("\n\n").expect("the table's end") + 1;
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../opset/README.md");
        let updated = format!("{}{t}{}", &README[..start], &README[end..]);
        std::fs::write(path, updated).expect("writing opset/README.md");
        return;
    }
    assert!(
        README.contains(&t),
        "opset/README.md's table of figures is out of date (UPDATE_FIGURES=1 rewrites it); now:\n{t}"
    );
}
