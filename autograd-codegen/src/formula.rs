//! Formulas as token sequences.
//!
//! A formula (C++ in PyTorch's file, Rust in ours) is tokenized with `proc_macro2`, which
//! accepts both, and flattened into a list of tokens that each remember the white space before
//! them. Analyses match identifiers and `x.prop()` patterns on tokens, never on raw text, so a
//! name inside another identifier or a string literal is never mistaken for a use; rendering
//! gives back the original text with only the rewritten tokens changed.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::str::FromStr;

/// The kind of a flat token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokKind {
    /// An identifier or keyword.
    Ident,
    /// One punctuation character.
    Punct,
    /// A literal: number, string, char.
    Literal,
    /// `(`, `[` or `{`.
    Open,
    /// `)`, `]` or `}`.
    Close,
}

/// One token and the white space before it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tok {
    /// Its kind.
    pub kind: TokKind,
    /// Its text.
    pub text: String,
    /// The white space that preceded it in the source.
    pub space_before: String,
}

impl Tok {
    /// An identifier token `text`.
    pub fn is_ident(&self, text: &str) -> bool {
        self.kind == TokKind::Ident && self.text == text
    }

    /// A punctuation or delimiter token `text`.
    pub fn is_punct(&self, text: &str) -> bool {
        matches!(self.kind, TokKind::Punct | TokKind::Open | TokKind::Close) && self.text == text
    }
}

/// A tokenized formula.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Formula {
    /// The flat tokens.
    pub toks: Vec<Tok>,
}

/// Why a formula is not valid tokens, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormulaError {
    /// Byte offset in the formula of the offending character (an unclosed bracket's or
    /// string's opening, a stray closing bracket).
    pub offset: usize,
    /// The lexer's reason: "unclosed `(`", "unterminated string literal", ...
    pub reason: String,
}

impl std::fmt::Display for FormulaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for FormulaError {}

/// The deepest bracket nesting a formula may have.
const MAX_DEPTH: usize = 128;

fn open_close(d: Delimiter) -> (&'static str, &'static str) {
    match d {
        Delimiter::Parenthesis => ("(", ")"),
        Delimiter::Bracket => ("[", "]"),
        Delimiter::Brace => ("{", "}"),
        Delimiter::None => ("", ""),
    }
}

impl Formula {
    /// Tokenize `text`. Fails on what neither Rust nor C++ tokenizers accept (unbalanced
    /// brackets, unterminated strings).
    pub fn parse(text: &str) -> Result<Formula, FormulaError> {
        // Bound the nesting first: the tokenizers and the token trees recurse on it.
        let mut depth = 0usize;
        for (offset, c) in text.bytes().enumerate() {
            match c {
                b'(' | b'[' | b'{' => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Err(FormulaError {
                            offset,
                            reason: format!("brackets nested more than {MAX_DEPTH} deep"),
                        });
                    }
                }
                b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        match lex_simple(text) {
            Some(f) => Ok(f),
            None => parse_proc_macro2(text),
        }
    }

    /// The formula text: original spacing, rewritten tokens in place.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for (i, t) in self.toks.iter().enumerate() {
            if i > 0 {
                s.push_str(&t.space_before);
            }
            s.push_str(&t.text);
        }
        s
    }

    /// Is `name` used as an identifier?
    pub fn has_ident(&self, name: &str) -> bool {
        self.toks.iter().any(|t| t.is_ident(name))
    }

    /// Is `name` written as a word inside a string literal?
    pub fn string_mentions(&self, name: &str) -> bool {
        self.toks
            .iter()
            .filter(|t| t.kind == TokKind::Literal && t.text.starts_with('"'))
            .any(|t| {
                t.text
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|w| w == name)
            })
    }

    /// How often `name` is used as an identifier.
    pub fn count_ident(&self, name: &str) -> usize {
        self.toks.iter().filter(|t| t.is_ident(name)).count()
    }

    /// The `i` of every `grads[i]` with a literal index.
    pub fn grads_indices(&self) -> Vec<usize> {
        self.toks
            .windows(4)
            .filter(|w| {
                w[0].is_ident("grads")
                    && w[1].is_punct("[")
                    && w[2].kind == TokKind::Literal
                    && w[3].is_punct("]")
            })
            .filter_map(|w| w[2].text.parse().ok())
            .collect()
    }

    /// Whether every use of the identifier `name` borrows it (`&name`, not `&&name`) or calls
    /// a method or reads a field on it (`name.f()`), and there is one: a binding of `name`
    /// as a reference then serves the formula once [`unborrowed`](Self::unborrowed) drops
    /// those `&`. `x.name` and `path::name` are not uses.
    pub fn only_borrowed(&self, name: &str) -> bool {
        let mut used = false;
        for (i, t) in self.toks.iter().enumerate() {
            if !t.is_ident(name) || self.is_member(i) {
                continue;
            }
            used = true;
            let borrowed = self.borrowed_at(i);
            let receiver = self.toks.get(i + 1).is_some_and(|n| n.is_punct("."))
                && !self.toks.get(i + 2).is_some_and(|n| n.is_punct("."));
            if !borrowed && !receiver {
                return false;
            }
        }
        used
    }

    /// The formula with the `&` before each use of the identifiers `names` removed (see
    /// [`only_borrowed`](Self::only_borrowed)); the identifier takes the `&`'s spacing.
    pub fn unborrowed(&self, names: &[&str]) -> Formula {
        let mut toks: Vec<Tok> = Vec::with_capacity(self.toks.len());
        let mut space = None;
        for (i, t) in self.toks.iter().enumerate() {
            let drop_amp = self
                .toks
                .get(i + 1)
                .is_some_and(|n| n.kind == TokKind::Ident && names.contains(&n.text.as_str()))
                && !self.is_member(i + 1)
                && self.borrowed_at(i + 1);
            if drop_amp {
                space = Some(t.space_before.clone());
                continue;
            }
            let mut t = t.clone();
            if let Some(s) = space.take() {
                t.space_before = s;
            }
            toks.push(t);
        }
        Formula { toks }
    }

    /// Token `i` is a field or path segment (`x.i`, `p::i`), not a variable.
    fn is_member(&self, i: usize) -> bool {
        i > 0 && (self.toks[i - 1].is_punct(".") || self.toks[i - 1].is_punct(":"))
    }

    /// Token `i` is preceded by a single `&` (not `&&`, which may be a logical and).
    fn borrowed_at(&self, i: usize) -> bool {
        i > 0 && self.toks[i - 1].is_punct("&") && !(i > 1 && self.toks[i - 2].is_punct("&"))
    }

    /// Replace every identifier `name` with the tokens of `with`.
    pub fn replace_ident(&mut self, name: &str, with: &str) {
        let repl = Formula::parse(with).unwrap_or_default();
        let mut i = 0;
        while i < self.toks.len() {
            if self.toks[i].is_ident(name) {
                i += self.splice(i, 1, &repl);
            } else {
                i += 1;
            }
        }
    }

    /// Replace `len` tokens at `at` with `repl`'s tokens; returns how many were inserted.
    pub fn splice(&mut self, at: usize, len: usize, repl: &Formula) -> usize {
        let space = self.toks[at].space_before.clone();
        let mut new = repl.toks.clone();
        if let Some(first) = new.first_mut() {
            first.space_before = space;
        }
        let n = new.len();
        self.toks.splice(at..at + len, new);
        n
    }

    /// The text of tokens `range`, with their original spacing.
    pub fn text_of(&self, range: std::ops::Range<usize>) -> String {
        Formula {
            toks: self.toks[range].to_vec(),
        }
        .render()
    }
}

/// The general tokenizer: `proc_macro2`'s lexer, flattened.
fn parse_proc_macro2(text: &str) -> Result<Formula, FormulaError> {
    let stream = TokenStream::from_str(text).map_err(|e| {
        lex_error_reason(text).unwrap_or_else(|| {
            let r = e.span().byte_range();
            FormulaError {
                offset: if r.start <= text.len() { r.start } else { 0 },
                reason: e.to_string(),
            }
        })
    })?;
    let mut toks = Vec::new();
    let mut last_end = 0usize;
    flatten(stream, text, &mut last_end, &mut toks);
    Ok(Formula { toks })
}

/// A fast lexer for the common case: ASCII identifiers, numbers, plain string literals,
/// punctuation and balanced brackets, separated by spaces, tabs or newlines. It yields
/// exactly the tokens (and spacing) `proc_macro2` would and gives up (`None`) on anything
/// else (comments, escapes, char literals, raw or prefixed literals, `#`, `$`, non-ASCII,
/// unbalanced brackets), which then goes through `proc_macro2`.
fn lex_simple(src: &str) -> Option<Formula> {
    let b = src.as_bytes();
    let mut toks = Vec::with_capacity(b.len() / 3 + 1);
    let mut stack: Vec<u8> = Vec::new();
    let mut i = 0;
    let mut space_start = 0;
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        let c = b[i];
        let start = i;
        let kind = match c {
            b' ' | b'\t' | b'\n' => {
                i += 1;
                continue;
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                while i < b.len() && is_word(b[i]) {
                    i += 1;
                }
                // Prefixed literals (`r"..."`, `b'x'`), raw identifiers (`r#x`), lifetimes.
                if matches!(b.get(i), Some(b'"' | b'\'' | b'#')) {
                    return None;
                }
                TokKind::Ident
            }
            b'0'..=b'9' => {
                i = number_end(b, i)?;
                TokKind::Literal
            }
            b'"' => {
                i = string_end(b, i)?;
                TokKind::Literal
            }
            b'(' | b'[' | b'{' => {
                stack.push(c);
                i += 1;
                TokKind::Open
            }
            b')' | b']' | b'}' => {
                let open = match c {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                if stack.pop() != Some(open) {
                    return None;
                }
                i += 1;
                TokKind::Close
            }
            b'/' if matches!(b.get(i + 1), Some(b'/' | b'*')) => return None,
            b'+' | b'-' | b'*' | b'/' | b'%' | b'^' | b'!' | b'&' | b'|' | b'=' | b'<' | b'>'
            | b'.' | b',' | b';' | b':' | b'?' | b'~' | b'@' => {
                i += 1;
                TokKind::Punct
            }
            _ => return None,
        };
        toks.push(Tok {
            kind,
            text: src[start..i].to_string(),
            space_before: src[space_start..start].to_string(),
        });
        space_start = i;
    }
    stack.is_empty().then_some(Formula { toks })
}

/// Where the number starting at `start` ends, or `None` for what only `proc_macro2` reads
/// right (`0x1F`, `1.`, `1..2`, `1e`, a suffix followed by `.`).
fn number_end(b: &[u8], start: usize) -> Option<usize> {
    let digits = |mut i: usize| {
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
        i
    };
    if b[start] == b'0' && matches!(b.get(start + 1), Some(b'x' | b'o' | b'b')) {
        return None;
    }
    let mut i = digits(start);
    if b.get(i) == Some(&b'.') {
        if !b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            // `1.` / `1..2` / `1.foo()`: leave Rust's rules to proc_macro2.
            return None;
        }
        i = digits(i + 1);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut k = i + 1;
        if matches!(b.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        if !b.get(k).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        i = digits(k);
    }
    // A suffix (`0.5f`, `1u8`) belongs to the literal.
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    if matches!(b.get(i), Some(b'.' | b'"' | b'\'' | b'#')) {
        return None;
    }
    Some(i)
}

/// Where the plain string literal starting at `start` ends, or `None` for escapes, `\r`,
/// unterminated strings and suffixed ones.
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        match b.get(i) {
            None | Some(b'\\' | b'\r') => return None,
            Some(b'"') => break,
            Some(_) => i += 1,
        }
    }
    i += 1;
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    if b.get(i)
        .is_some_and(|&c| is_word(c) || c == b'"' || c == b'\'' || c == b'#')
    {
        return None;
    }
    Some(i)
}

/// Why `text` does not lex, for the common mistakes: unbalanced brackets, unterminated
/// strings, character literals and block comments. `None` when none of them is the cause.
/// Only called once a tokenizer has failed.
fn lex_error_reason(text: &str) -> Option<FormulaError> {
    let b = text.as_bytes();
    let err = |offset: usize, reason: String| Some(FormulaError { offset, reason });
    let mut stack: Vec<(u8, usize)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' => {
                let Some(end) = literal_end(b, i, b'"') else {
                    return err(i, "unterminated string literal".into());
                };
                i = end;
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\') => {
                let Some(end) = literal_end(b, i, b'\'') else {
                    return err(i, "unterminated character literal".into());
                };
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => match text[i + 2..].find("*/") {
                Some(p) => i += p + 4,
                None => return err(i, "unterminated block comment".into()),
            },
            b'(' | b'[' | b'{' => {
                stack.push((c, i));
                i += 1;
            }
            b')' | b']' | b'}' => {
                let open = match c {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                match stack.pop() {
                    Some((o, _)) if o == open => {}
                    Some((o, _)) => {
                        return err(
                            i,
                            format!(
                                "mismatched `{}`: the innermost open bracket is `{}`",
                                c as char, o as char
                            ),
                        );
                    }
                    None => return err(i, format!("unexpected `{}`", c as char)),
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    let (o, at) = stack.pop()?;
    err(at, format!("unclosed `{}`", o as char))
}

/// The offset after the literal that opens with `quote` at `start`, or `None` when it is
/// unterminated.
fn literal_end(b: &[u8], start: usize, quote: u8) -> Option<usize> {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if c == quote => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

fn flatten(stream: TokenStream, src: &str, last_end: &mut usize, out: &mut Vec<Tok>) {
    for tt in stream {
        match tt {
            TokenTree::Group(g) => {
                let (open, close) = open_close(g.delimiter());
                let open_range = g.span_open().byte_range();
                push(
                    out,
                    TokKind::Open,
                    open.to_string(),
                    open_range,
                    src,
                    last_end,
                );
                flatten(g.stream(), src, last_end, out);
                let close_range = g.span_close().byte_range();
                push(
                    out,
                    TokKind::Close,
                    close.to_string(),
                    close_range,
                    src,
                    last_end,
                );
            }
            TokenTree::Ident(i) => {
                let r = i.span().byte_range();
                push(out, TokKind::Ident, i.to_string(), r, src, last_end);
            }
            TokenTree::Punct(p) => {
                let r = p.span().byte_range();
                push(
                    out,
                    TokKind::Punct,
                    p.as_char().to_string(),
                    r,
                    src,
                    last_end,
                );
            }
            TokenTree::Literal(l) => {
                let r = l.span().byte_range();
                push(out, TokKind::Literal, l.to_string(), r, src, last_end);
            }
        }
    }
}

fn push(
    out: &mut Vec<Tok>,
    kind: TokKind,
    text: String,
    range: std::ops::Range<usize>,
    src: &str,
    last_end: &mut usize,
) {
    // Spans are byte offsets into `src` with proc-macro2's fallback lexer; inside a compiler
    // proc-macro they may be empty, and then tokens are joined by a single space where needed.
    let space_before =
        if range.start >= *last_end && range.end <= src.len() && range.start < range.end {
            let s = src[*last_end..range.start].to_string();
            *last_end = range.end;
            s
        } else {
            let prev_word = out
                .last()
                .is_some_and(|t| matches!(t.kind, TokKind::Ident | TokKind::Literal));
            let word = matches!(kind, TokKind::Ident | TokKind::Literal);
            if prev_word && word {
                " ".into()
            } else {
                String::new()
            }
        };
    out.push(Tok {
        kind,
        text,
        space_before,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrowed_uses_are_found_and_unborrowed() {
        let f = Formula::parse("mul_tensor(&grad, &mul_scalar(&result, 2.0)?)?").unwrap();
        assert!(f.only_borrowed("result") && f.only_borrowed("grad"));
        assert_eq!(
            f.unborrowed(&["result"]).render(),
            "mul_tensor(&grad, &mul_scalar(result, 2.0)?)?"
        );
        // A method call or field read works on a reference too.
        assert!(
            Formula::parse("sum_to(&grad, result.shape())")
                .unwrap()
                .only_borrowed("result")
        );
        // By value, `&&`, `&mut`, a range and no use at all are not borrows.
        for (src, name) in [
            ("foo(result)", "result"),
            ("a && result", "result"),
            ("foo(&mut result)", "result"),
            ("foo(result..x)", "result"),
            ("foo(&grad)", "result"),
        ] {
            assert!(!Formula::parse(src).unwrap().only_borrowed(name), "{src}");
        }
        // `x.result` and `p::result` are not the binding.
        let g = Formula::parse("foo(&result, x.result, p::result)").unwrap();
        assert!(g.only_borrowed("result"));
        assert_eq!(
            g.unborrowed(&["result"]).render(),
            "foo(result, x.result, p::result)"
        );
    }

    /// C++ (PyTorch's) and Rust formulas.
    const FORMULAS: &[&str] = &[
        "grad.expand_symint(self.sym_sizes()) / self.sym_numel()",
        "self_t_raw.defined() ? self_t_raw.copy_(self_t * other) : self_t * other",
        "at::native::get_nested_tensor_impl(self)->get_nested_sizes()",
        "not_implemented(\"chunk\")",
        "grads[0].defined() ? grads[0] * 0.5f : Tensor()",
        "helpers::sum_to(&grad, &self_sizes)?",
    ];

    #[test]
    fn round_trips_cpp_and_rust() {
        for &src in FORMULAS {
            let f = Formula::parse(src).unwrap();
            assert_eq!(f.render(), src);
        }
    }

    #[test]
    fn identifiers_not_substrings_or_strings() {
        let f = Formula::parse("grad_output * self_t + f(\"self\")").unwrap();
        assert!(!f.has_ident("self"));
        assert!(!f.has_ident("grad"));
        assert!(f.has_ident("grad_output"));
    }

    /// The fast lexer agrees with proc_macro2 wherever it answers.
    #[test]
    fn fast_lexer_agrees_with_proc_macro2() {
        let edge_cases = [
            "  x\n\t+ 1e-3 - 2E+5 * 1_000u8 % 3.25e2f >>= _ ",
            "f(\"a b\", \"\") {x; y} [1, 2]",
            "a'b",
            "1.",
            "1.foo()",
            "1..2",
            "0x1F",
            "r#x",
            "r\"x\"",
            "b'a'",
            "\"a\\n\"",
            "// c",
            "/* c */ x",
            "x /= y",
            "#[a]",
            "$x",
            "é",
            "(",
            ")",
            "(]",
            "\"open",
            "1e",
            "1e+",
            "x.0.1",
            "\"s\"suffix",
            "x\r\ny",
            "",
        ];
        for &src in FORMULAS.iter().chain(&edge_cases) {
            let slow = parse_proc_macro2(src);
            match lex_simple(src) {
                Some(fast) => assert_eq!(Ok(fast), slow, "{src:?}"),
                None => {
                    // Falls back: parse() is proc_macro2's answer.
                    assert_eq!(Formula::parse(src), slow, "{src:?}");
                }
            }
        }
        // The whole of PyTorch's derivatives.yaml, when present.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/pytorch/derivatives.yaml");
        if let Ok(text) = std::fs::read_to_string(path) {
            let mut fast_count = 0;
            for line in text.lines() {
                let Some((_, formula)) = line.split_once(": ") else {
                    continue;
                };
                if let Some(fast) = lex_simple(formula) {
                    fast_count += 1;
                    assert_eq!(Ok(fast), parse_proc_macro2(formula), "{formula:?}");
                }
            }
            assert!(fast_count > 1000, "{fast_count}");
        }
    }

    #[test]
    fn lex_errors_say_what_and_where() {
        for (src, offset, reason) in [
            ("f(a, g(b)", 1, "unclosed `(`"),
            ("grad * \"open", 7, "unterminated string literal"),
            ("f(a))", 4, "unexpected `)`"),
            (
                "f(a]",
                3,
                "mismatched `]`: the innermost open bracket is `(`",
            ),
            ("x /* y", 2, "unterminated block comment"),
            ("f(\")\", x", 1, "unclosed `(`"),
        ] {
            let e = Formula::parse(src).unwrap_err();
            assert_eq!((e.offset, e.reason.as_str()), (offset, reason), "{src:?}");
        }
    }

    #[test]
    fn grads_indices_and_replace() {
        let mut f = Formula::parse("foo(grads[0], grads[1], grads)").unwrap();
        assert_eq!(f.grads_indices(), vec![0, 1]);
        assert_eq!(f.count_ident("grads"), 3);
        f.replace_ident("grads", "gs");
        assert_eq!(f.render(), "foo(gs[0], gs[1], gs)");
    }
}
