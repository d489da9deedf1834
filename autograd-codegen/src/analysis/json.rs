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

/// A record being rendered: plain bytes, no I/O errors, no dynamic dispatch.
struct Out(Vec<u8>);

impl Out {
    fn raw(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }

    /// A JSON string, escaped exactly as `serde_json` escapes it.
    fn s(&mut self, text: &str) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let out = &mut self.0;
        out.push(b'"');
        let bytes = text.as_bytes();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let esc: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0x08 => b"\\b",
                0x0c => b"\\f",
                0..=0x1f => &[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[(b >> 4) as usize],
                    HEX[(b & 0xf) as usize],
                ],
                _ => continue,
            };
            out.extend_from_slice(&bytes[start..i]);
            out.extend_from_slice(esc);
            start = i + 1;
        }
        out.extend_from_slice(&bytes[start..]);
        out.push(b'"');
    }

    fn key(&mut self, k: &str, first: bool) {
        if !first {
            self.0.push(b',');
        }
        self.0.push(b'"');
        self.raw(k.as_bytes());
        self.raw(b"\":");
    }

    fn bool(&mut self, b: bool) {
        self.raw(if b { b"true" } else { b"false" });
    }

    fn list<T>(&mut self, items: impl IntoIterator<Item = T>, mut each: impl FnMut(&mut Out, T)) {
        self.0.push(b'[');
        for (i, x) in items.into_iter().enumerate() {
            if i > 0 {
                self.0.push(b',');
            }
            each(self, x);
        }
        self.0.push(b']');
    }

    fn strs<'a>(&mut self, items: impl IntoIterator<Item = &'a String>) {
        self.list(items, |o, x| o.s(x));
    }

    fn saved(&mut self, l: &[SavedAttribute]) {
        self.list(l, |o, a| {
            o.raw(b"{\"name\":");
            o.s(&a.name);
            o.raw(b",\"expr\":");
            o.s(&a.expr);
            o.raw(b"}");
        });
    }

    fn derivative(&mut self, d: &Derivative) {
        self.raw(b"{");
        self.key("var_names", true);
        self.strs(&d.var_names);
        self.key("formula", false);
        self.s(&d.formula);
        self.key("original_formula", false);
        self.s(&d.original_formula);
        self.key("saved_inputs", false);
        self.saved(&d.saved_inputs);
        self.key("saved_outputs", false);
        self.saved(&d.saved_outputs);
        self.key("named_gradients", false);
        self.strs(&d.named_gradients);
        self.raw(b"}");
    }

    fn forward(&mut self, d: &ForwardDerivative) {
        self.raw(b"{");
        self.key("var_names", true);
        self.strs(&d.var_names);
        self.key("formula", false);
        self.s(&d.formula);
        self.key("required_inputs_primal", false);
        self.strs(&d.required_inputs_primal);
        self.key("required_inputs_fw_grad", false);
        self.strs(&d.required_inputs_fw_grad);
        self.key("is_reusing_outplace_formula", false);
        self.bool(d.is_reusing_outplace_formula);
        self.raw(b"}");
    }

    fn opt_strs(&mut self, v: Option<&Vec<String>>) {
        match v {
            Some(v) => self.strs(v),
            None => self.raw(b"null"),
        }
    }

    fn info(&mut self, fa: &FunctionAnalysis, info: &DifferentiabilityInfo) {
        self.raw(b"{");
        self.key("name", true);
        self.s(&info.name);
        self.key("exact_match", false);
        self.bool(fa.exact_match);
        self.key("op", false);
        match &info.op {
            Some(op) => self.s(op),
            None => self.raw(b"null"),
        }
        self.key("args_with_derivatives", false);
        self.strs(&info.args_with_derivatives);
        self.key("non_differentiable_arg_names", false);
        self.strs(&info.non_differentiable_arg_names);
        self.key("output_differentiability", false);
        match &info.output_differentiability {
            Some(v) => self.list(v, |o, &b| o.bool(b)),
            None => self.raw(b"null"),
        }
        self.key("output_differentiability_conditions", false);
        self.opt_strs(info.output_differentiability_conditions.as_ref());
        self.key("available_named_gradients", false);
        self.strs(&info.available_named_gradients);
        self.key("used_named_gradients", false);
        self.strs(&info.used_named_gradients);
        self.key("derivatives", false);
        self.list(&info.derivatives, Out::derivative);
        self.info_tail(fa, info);
        self.raw(b"}");
    }

    fn info_tail(&mut self, fa: &FunctionAnalysis, info: &DifferentiabilityInfo) {
        let main = fa.main_key().unwrap_or("Default");
        self.key("forward_derivatives", false);
        let fw = fa
            .fw_derivatives
            .iter()
            .find(|(k, _)| k == main)
            .map(|(_, v)| v.as_slice())
            .unwrap_or_default();
        self.list(fw, Out::forward);
        self.key("all_saved_inputs", false);
        self.strs(info.all_saved_inputs.iter().map(|a| &a.name));
        self.key("all_saved_outputs", false);
        self.strs(info.all_saved_outputs.iter().map(|a| &a.name));
        self.key("dispatch_keys", false);
        let mut keys: Vec<&String> = fa.infos.iter().flatten().map(|(k, _)| k).collect();
        keys.sort_unstable();
        self.strs(keys);
    }

    fn function(&mut self, analysis: &Analysis, fa: &FunctionAnalysis) {
        let f = &analysis.functions[fa.func];
        self.raw(b"{");
        self.key("schema", true);
        self.s(&f.schema);
        self.key("kind", false);
        self.s(f.func.kind().as_str());
        self.key("info", false);
        match fa.main_info() {
            Some(i) => self.info(fa, i),
            None => self.raw(b"null"),
        }
        self.key("differentiable_outputs", false);
        match &fa.differentiable_outputs {
            Ok(v) => self.strs(v),
            Err(e) => {
                self.raw(b"{\"error\":");
                self.s(e);
                self.raw(b"}");
            }
        }
        self.key("dispatch_strategy", false);
        self.s(fa.dispatch_strategy.as_str());
        self.raw(b"}");
    }
}

/// Write one function's record.
pub fn write_function(
    w: &mut impl Write,
    analysis: &Analysis,
    fa: &FunctionAnalysis,
) -> io::Result<()> {
    let mut out = Out(Vec::with_capacity(1024));
    out.function(analysis, fa);
    w.write_all(&out.0)
}

/// The records of `range`, each but the first after `,\n`.
fn records(analysis: &Analysis, range: std::ops::Range<usize>) -> Vec<u8> {
    let mut out = Out(Vec::with_capacity(range.len() * 700));
    for i in range {
        if i > 0 {
            out.raw(b",\n");
        }
        out.function(analysis, &analysis.results[i]);
    }
    out.0
}

/// Write the whole document: `{"source": ..., "functions": [...]}`, one record per line.
///
/// For a large analysis the second half of the records is rendered on another thread while
/// the first half is written.
pub fn write_json(w: &mut impl Write, analysis: &Analysis, source: &Value) -> io::Result<()> {
    w.write_all(b"{\"source\":")?;
    serde_json::to_writer(&mut *w, source).map_err(io::Error::other)?;
    w.write_all(b",\"functions\":[\n")?;
    let n = analysis.results.len();
    if n < 1024 {
        w.write_all(&records(analysis, 0..n))?;
    } else {
        let mid = n / 2;
        let (first, second) = std::thread::scope(|s| {
            let second = s.spawn(|| records(analysis, mid..n));
            let first = records(analysis, 0..mid);
            let second = second
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (first, second)
        });
        w.write_all(&first)?;
        w.write_all(&second)?;
    }
    w.write_all(b"\n]}\n")
}

/// The document as a `serde_json::Value` (for tests and library users).
pub fn to_json(analysis: &Analysis, source: Value) -> Value {
    let mut buf = Vec::new();
    write_json(&mut buf, analysis, &source).expect("writing to a Vec cannot fail");
    serde_json::from_slice(&buf).expect("the writer produces valid JSON")
}
