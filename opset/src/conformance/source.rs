//! Whether a backend words PyTorch's errors itself. The op set's meta functions, shape
//! rules and dtype rules hold every error text a kernel can raise for bad arguments, so a
//! backend's kernels only compute; [`pytorch_texts_in_sources`] finds the string literals
//! of a backend's sources that are pieces of PyTorch's error texts (those the fixtures
//! record), the places where a backend retyped one.

use super::fixtures::fixtures;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// Literals shorter than this are not compared (`"f64"`, `"i64"`, `", "` occur in texts
/// without being their words).
const MIN_LEN: usize = 6;

/// One line per string literal of the `.rs` files under `dir` (recursively) that occurs in
/// an error text of a PyTorch fixture: `file:line: "literal"`. Empty: the backend leaves
/// PyTorch's words to the op set.
pub fn pytorch_texts_in_sources(dir: &Path) -> Vec<String> {
    let texts = error_texts();
    let mut out = Vec::new();
    for file in rust_files(dir) {
        let Ok(src) = std::fs::read_to_string(&file) else {
            out.push(format!("{}: unreadable", file.display()));
            continue;
        };
        for (line, lit) in string_literals(&src) {
            if lit.len() >= MIN_LEN && texts.iter().any(|t| t.contains(lit.as_str())) {
                out.push(format!("{}:{line}: {lit:?}", file.display()));
            }
        }
    }
    out
}

/// The messages of every recorded PyTorch error.
pub fn error_texts() -> BTreeSet<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                if let Some(msg) = m.get("error").and_then(|e| e.get("message")) {
                    out.extend(msg.as_str().map(str::to_string));
                }
                m.values().for_each(|v| walk(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    fixtures().iter().for_each(|f| walk(&f["expect"], &mut out));
    out
}

fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The string literals of Rust source `src` with their line numbers (comments, char
/// literals and lifetimes skipped; escapes kept as written; raw strings taken whole).
pub fn string_literals(src: &str) -> Vec<(usize, String)> {
    let b = src.as_bytes();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    while i < b.len() {
        match b[i] {
            b'\n' => line += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'\'' => i = skip_char_literal(b, i),
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#')) && !ident_byte(b, i) => {
                let hashes = b[i + 1..].iter().take_while(|c| **c == b'#').count();
                let start = i + 2 + hashes;
                let close = format!("\"{}", "#".repeat(hashes));
                let end = src[start..].find(&close).map_or(b.len(), |e| start + e);
                out.push((line, src[start..end].to_string()));
                line += src[start..end].matches('\n').count();
                i = end + close.len();
                continue;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let lit = &src[i + 1..j.min(b.len())];
                out.push((line, lit.to_string()));
                line += lit.matches('\n').count();
                i = j + 1;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Whether the byte before `i` continues an identifier (`for"` is not a raw string).
fn ident_byte(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// Past a char literal at `i` (`'x'`, `'\n'`, `'"'`); a lifetime's quote is stepped over.
fn skip_char_literal(b: &[u8], i: usize) -> usize {
    match (b.get(i + 1), b.get(i + 2)) {
        // The escaped character, then the closing quote.
        (Some(b'\\'), _) => b
            .get(i + 3..)
            .and_then(|rest| rest.iter().position(|c| *c == b'\''))
            .map_or(b.len(), |p| i + 3 + p),
        (Some(_), Some(b'\'')) => i + 2,
        _ => i,
    }
}

#[cfg(test)]
mod tests {
    use super::string_literals;

    #[test]
    fn literals_skip_comments_chars_and_lifetimes() {
        let src = "fn f<'a>(x: &'a str) -> char {\n    // \"not this\"\n    let q = '\"';\n    g(\"one\", r#\"two \"x\"\"#, '\\'', \"th\\\"ree\")\n}\n";
        let lits: Vec<(usize, String)> = string_literals(src);
        assert_eq!(
            lits,
            vec![
                (4, "one".to_string()),
                (4, "two \"x\"".to_string()),
                (4, "th\\\"ree".to_string())
            ]
        );
    }
}
