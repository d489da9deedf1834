//! The analysis as JSON, in the shape of PyTorch's golden analysis (`FORMAT.md`).
//!
//! Written straight to the output (no intermediate `serde_json::Value`): this is the hot end
//! of `autograd-gen analyze --json`.

use super::{
    Analysis, Derivative, DifferentiabilityInfo, ForwardDerivative, FunctionAnalysis,
    SavedAttribute,
};
use serde_json::Value;
use std::io::{self, Write};

fn s(w: &mut impl Write, text: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *w, text).map_err(io::Error::other)
}

fn list<T>(
    w: &mut impl Write,
    items: impl IntoIterator<Item = T>,
    mut each: impl FnMut(&mut dyn Write, T) -> io::Result<()>,
) -> io::Result<()> {
    w.write_all(b"[")?;
    for (i, x) in items.into_iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        each(w, x)?;
    }
    w.write_all(b"]")
}

fn strs<'a>(w: &mut impl Write, items: impl IntoIterator<Item = &'a String>) -> io::Result<()> {
    list(w, items, |w, x| {
        serde_json::to_writer(w, x).map_err(io::Error::other)
    })
}

fn key(w: &mut impl Write, k: &str, first: bool) -> io::Result<()> {
    if !first {
        w.write_all(b",")?;
    }
    write!(w, "\"{k}\":")
}

fn saved(w: &mut impl Write, l: &[SavedAttribute]) -> io::Result<()> {
    list(w, l, |w, a| {
        w.write_all(b"{\"name\":")?;
        serde_json::to_writer(&mut *w, &a.name).map_err(io::Error::other)?;
        w.write_all(b",\"expr\":")?;
        serde_json::to_writer(&mut *w, &a.expr).map_err(io::Error::other)?;
        w.write_all(b"}")
    })
}

fn derivative(w: &mut dyn Write, d: &Derivative) -> io::Result<()> {
    let mut w = w;
    w.write_all(b"{")?;
    key(&mut w, "var_names", true)?;
    strs(&mut w, &d.var_names)?;
    key(&mut w, "formula", false)?;
    s(&mut w, &d.formula)?;
    key(&mut w, "original_formula", false)?;
    s(&mut w, &d.original_formula)?;
    key(&mut w, "saved_inputs", false)?;
    saved(&mut w, &d.saved_inputs)?;
    key(&mut w, "saved_outputs", false)?;
    saved(&mut w, &d.saved_outputs)?;
    key(&mut w, "named_gradients", false)?;
    strs(&mut w, &d.named_gradients)?;
    w.write_all(b"}")
}

fn forward(w: &mut dyn Write, d: &ForwardDerivative) -> io::Result<()> {
    let mut w = w;
    w.write_all(b"{")?;
    key(&mut w, "var_names", true)?;
    strs(&mut w, &d.var_names)?;
    key(&mut w, "formula", false)?;
    s(&mut w, &d.formula)?;
    key(&mut w, "required_inputs_primal", false)?;
    strs(&mut w, &d.required_inputs_primal)?;
    key(&mut w, "required_inputs_fw_grad", false)?;
    strs(&mut w, &d.required_inputs_fw_grad)?;
    key(&mut w, "is_reusing_outplace_formula", false)?;
    write!(w, "{}", d.is_reusing_outplace_formula)?;
    w.write_all(b"}")
}

fn info(w: &mut impl Write, fa: &FunctionAnalysis, info: &DifferentiabilityInfo) -> io::Result<()> {
    let main = fa.main_key().unwrap_or("Default");
    w.write_all(b"{")?;
    key(w, "name", true)?;
    s(w, &info.name)?;
    key(w, "exact_match", false)?;
    write!(w, "{}", fa.exact_match)?;
    key(w, "op", false)?;
    match &info.op {
        Some(op) => s(w, op)?,
        None => w.write_all(b"null")?,
    }
    key(w, "args_with_derivatives", false)?;
    strs(w, &info.args_with_derivatives)?;
    key(w, "non_differentiable_arg_names", false)?;
    strs(w, &info.non_differentiable_arg_names)?;
    key(w, "output_differentiability", false)?;
    match &info.output_differentiability {
        Some(v) => list(w, v, |w, b| write!(w, "{b}"))?,
        None => w.write_all(b"null")?,
    }
    key(w, "output_differentiability_conditions", false)?;
    match &info.output_differentiability_conditions {
        Some(v) => strs(w, v)?,
        None => w.write_all(b"null")?,
    }
    key(w, "available_named_gradients", false)?;
    strs(w, &info.available_named_gradients)?;
    key(w, "used_named_gradients", false)?;
    strs(w, &info.used_named_gradients)?;
    key(w, "derivatives", false)?;
    list(w, &info.derivatives, derivative)?;
    key(w, "forward_derivatives", false)?;
    let fw = fa
        .fw_derivatives
        .iter()
        .find(|(k, _)| k == main)
        .map(|(_, v)| v.as_slice())
        .unwrap_or_default();
    list(w, fw, forward)?;
    key(w, "all_saved_inputs", false)?;
    strs(w, info.all_saved_inputs.iter().map(|a| &a.name))?;
    key(w, "all_saved_outputs", false)?;
    strs(w, info.all_saved_outputs.iter().map(|a| &a.name))?;
    key(w, "dispatch_keys", false)?;
    let mut keys: Vec<&String> = fa.infos.iter().flatten().map(|(k, _)| k).collect();
    keys.sort_unstable();
    strs(w, keys)?;
    w.write_all(b"}")
}

/// Write one function's record.
pub fn write_function(
    w: &mut impl Write,
    analysis: &Analysis,
    fa: &FunctionAnalysis,
) -> io::Result<()> {
    let f = &analysis.functions[fa.func];
    w.write_all(b"{")?;
    key(w, "schema", true)?;
    s(w, &f.schema)?;
    key(w, "kind", false)?;
    s(w, f.func.kind().as_str())?;
    key(w, "info", false)?;
    match fa.main_info() {
        Some(i) => info(w, fa, i)?,
        None => w.write_all(b"null")?,
    }
    key(w, "differentiable_outputs", false)?;
    match &fa.differentiable_outputs {
        Ok(v) => strs(w, v)?,
        Err(e) => {
            w.write_all(b"{\"error\":")?;
            s(w, e)?;
            w.write_all(b"}")?;
        }
    }
    key(w, "dispatch_strategy", false)?;
    s(w, fa.dispatch_strategy.as_str())?;
    w.write_all(b"}")
}

/// Write the whole document: `{"source": ..., "functions": [...]}`, one record per line.
///
/// For a large analysis the second half of the records is rendered on another thread while
/// the first half is written.
pub fn write_json(w: &mut impl Write, analysis: &Analysis, source: &Value) -> io::Result<()> {
    w.write_all(b"{\"source\":")?;
    serde_json::to_writer(&mut *w, source).map_err(io::Error::other)?;
    w.write_all(b",\"functions\":[\n")?;
    let results = &analysis.results;
    let records = |w: &mut dyn Write, range: std::ops::Range<usize>| -> io::Result<()> {
        let mut w = w;
        for i in range {
            if i > 0 {
                w.write_all(b",\n")?;
            }
            write_function(&mut w, analysis, &results[i])?;
        }
        Ok(())
    };
    if results.len() < 1024 {
        records(w, 0..results.len())?;
    } else {
        let mid = results.len() / 2;
        std::thread::scope(|s| {
            let second = s.spawn(|| {
                let mut buf = Vec::with_capacity(1 << 20);
                records(&mut buf, mid..results.len()).map(|_| buf)
            });
            records(w, 0..mid)?;
            let buf = second
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
            w.write_all(&buf)
        })?;
    }
    w.write_all(b"\n]}\n")
}

/// The document as a `serde_json::Value` (for tests and library users).
pub fn to_json(analysis: &Analysis, source: Value) -> Value {
    let mut buf = Vec::new();
    write_json(&mut buf, analysis, &source).expect("writing to a Vec cannot fail");
    serde_json::from_slice(&buf).expect("the writer produces valid JSON")
}
