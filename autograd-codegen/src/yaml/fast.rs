//! A fast reader for the block-style YAML that PyTorch's files are written in: block
//! sequences and mappings by indentation, plain scalars, quoted scalars without escapes
//! (double-quoted ones may span lines), one-line flow sequences, comments. It builds exactly
//! the tree `saphyr-parser` builds (a test checks this on PyTorch's files) and gives up
//! (`None`) on anything else, which then goes through `saphyr-parser`: non-ASCII text, tabs,
//! `\r`, escapes, block scalars, flow mappings, anchors, tags, document markers, multi-line
//! plain scalars, empty values, errors.

use super::{MAX_DEPTH, Node, Value};

/// The tree of `text` (whose first line is line `lines_before + 1`), or `None`.
pub(super) fn parse(text: &str, lines_before: usize) -> Option<Node> {
    // Columns here count bytes, saphyr's count characters: ASCII only.
    if !text.is_ascii() || text.contains(['\t', '\r']) {
        return None;
    }
    let mut r = Reader {
        lines: text.split('\n').collect(),
        pos: 0,
        lines_before,
        depth: 0,
    };
    let (indent, _) = r.peek()?;
    let root = r.block(indent)?;
    // Nothing may follow the root collection.
    r.peek().is_none().then_some(root)
}

struct Reader<'a> {
    lines: Vec<&'a str>,
    /// The next line to read.
    pos: usize,
    lines_before: usize,
    depth: usize,
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// `- ` (or a lone `-`) starts a sequence item.
fn is_item(rest: &str) -> bool {
    rest == "-" || rest.starts_with("- ")
}

/// The key of a `key: value` line: a plain word-like scalar followed by `:` and a space or the
/// end of the line. Returns the key and the rest after `:`.
fn split_key(rest: &str) -> Option<(&str, &str)> {
    let first = rest.bytes().next()?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    let end =
        rest.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ',' | ' ')))?;
    let after = &rest[end..];
    let value = after.strip_prefix(':')?;
    if !(value.is_empty() || value.starts_with(' ')) {
        return None;
    }
    let key = rest[..end].trim_end_matches(' ');
    Some((key, value))
}

impl<'a> Reader<'a> {
    /// The next line with content: its indentation and text after it. Blank and comment
    /// lines are skipped.
    fn peek(&mut self) -> Option<(usize, &'a str)> {
        while let Some(&line) = self.lines.get(self.pos) {
            let rest = line.trim_start_matches(' ');
            if rest.is_empty() || rest.starts_with('#') {
                self.pos += 1;
                continue;
            }
            return Some((line.len() - rest.len(), rest));
        }
        None
    }

    fn line_no(&self) -> usize {
        self.pos + 1 + self.lines_before
    }

    fn node(&self, value: Value, column: usize) -> Node {
        Node {
            value,
            line: self.line_no(),
            column,
        }
    }

    /// A block collection whose first line (the current one) is indented `indent`.
    fn block(&mut self, indent: usize) -> Option<Node> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let (i, rest) = self.peek()?;
        let node = if i != indent {
            None
        } else if is_item(rest) {
            self.sequence(indent, false)
        } else {
            self.mapping(indent, rest)
        };
        self.depth -= 1;
        node
    }

    /// A block sequence of items `- ` at `indent`. saphyr places an indentless one (at its
    /// key's indentation) at its first item's content.
    fn sequence(&mut self, indent: usize, indentless: bool) -> Option<Node> {
        let mut seq = self.node(Value::Seq(Vec::new()), indent);
        if indentless {
            let (_, rest) = self.peek()?;
            seq.column += rest.len() - rest[1..].trim_start_matches(' ').len();
        }
        let mut items = Vec::new();
        while let Some((i, rest)) = self.peek() {
            if i < indent || (i == indent && !is_item(rest)) {
                break;
            }
            if i > indent {
                return None;
            }
            let content = rest[1..].trim_start_matches(' ');
            if content.is_empty() || content.starts_with('#') {
                return None;
            }
            let col = indent + (rest.len() - content.len());
            let item = if split_key(content).is_some() {
                self.depth += 1;
                let m = self.mapping(col, content);
                self.depth -= 1;
                m?
            } else {
                let v = self.scalar_or_flow(indent, col, content)?;
                if self.peek().is_some_and(|(i, _)| i > indent) {
                    return None;
                }
                v
            };
            items.push(item);
        }
        seq.value = Value::Seq(items);
        Some(seq)
    }

    /// A block mapping whose keys are at column `indent`; `first` is the current line's text
    /// from that column (after `- ` for a mapping inside a sequence item).
    fn mapping(&mut self, indent: usize, first: &'a str) -> Option<Node> {
        if self.depth > MAX_DEPTH {
            return None;
        }
        let map = self.node(Value::Map(Vec::new()), indent);
        let mut entries = Vec::new();
        let mut rest = first;
        loop {
            let (key, after) = split_key(rest)?;
            let key_node = self.node(
                Value::Scalar {
                    text: key.to_string(),
                    plain: true,
                },
                indent,
            );
            let value = after.trim_start_matches(' ');
            let value_node = if value.is_empty() || value.starts_with('#') {
                self.pos += 1;
                self.nested(indent)?
            } else {
                let col = indent + (rest.len() - value.len());
                let v = self.scalar_or_flow(indent, col, value)?;
                if self.peek().is_some_and(|(i, _)| i > indent) {
                    return None;
                }
                v
            };
            entries.push((key_node, value_node));
            match self.peek() {
                Some((i, r)) if i == indent && !is_item(r) => rest = r,
                Some((i, _)) if i > indent => return None,
                _ => break,
            }
        }
        Some(Node {
            value: Value::Map(entries),
            ..map
        })
    }

    /// The block value of a `key:` with nothing after it: a deeper collection, or a sequence
    /// at the key's own indentation.
    fn nested(&mut self, key_indent: usize) -> Option<Node> {
        let (i, rest) = self.peek()?;
        if i > key_indent {
            self.block(i)
        } else if i == key_indent && is_item(rest) {
            self.depth += 1;
            let seq = self.sequence(i, true);
            self.depth -= 1;
            seq
        } else {
            None
        }
    }

    /// A scalar or one-line flow sequence starting at `col` of the current line; the
    /// position moves past it.
    fn scalar_or_flow(&mut self, parent: usize, col: usize, text: &'a str) -> Option<Node> {
        let node = match text.as_bytes()[0] {
            b'"' => return self.double_quoted(parent, col, text),
            b'\'' => {
                let end = text[1..].find('\'')? + 1;
                if text[end + 1..].starts_with('\'') {
                    return None;
                }
                trailing_ok(&text[end + 1..])?;
                self.node(scalar(&text[1..end], false), col)
            }
            b'[' => self.flow_sequence(col, text)?,
            b'{' if text[1..].starts_with('}') => {
                trailing_ok(&text[2..])?;
                self.node(Value::Map(Vec::new()), col)
            }
            b'{' | b'&' | b'*' | b'!' | b'|' | b'>' | b'%' | b'@' | b'`' | b'#' | b']' | b'}'
            | b',' => return None,
            b'-' | b'?' | b':' if text.len() == 1 || text.as_bytes()[1] == b' ' => return None,
            _ => self.node(scalar(plain_text(text)?, true), col),
        };
        self.pos += 1;
        Some(node)
    }

    /// `[a, b, "c"]` on one line.
    fn flow_sequence(&self, col: usize, text: &str) -> Option<Node> {
        let mut items = Vec::new();
        let b = text.as_bytes();
        let mut i = 1;
        loop {
            while b.get(i) == Some(&b' ') {
                i += 1;
            }
            match *b.get(i)? {
                b']' if items.is_empty() => break,
                // A trailing comma: leave it to saphyr.
                b']' => return None,
                q @ (b'"' | b'\'') => {
                    let end = i + 1 + text[i + 1..].find(q as char)?;
                    let inner = &text[i + 1..end];
                    if inner.contains('\\') || b.get(end + 1) == Some(&q) {
                        return None;
                    }
                    items.push(self.node(scalar(inner, false), col + i));
                    i = end + 1;
                }
                b'[' | b'{' | b'#' | b',' | b'&' | b'*' | b'!' | b'|' | b'>' | b'%' | b'@'
                | b'`' | b'-' | b'?' | b':' => return None,
                _ => {
                    let end = i + text[i..].find([',', ']'])?;
                    let item = text[i..end].trim_end_matches(' ');
                    if item.is_empty() || item.contains([':', '#', '[', '{', '}', '"', '\'']) {
                        return None;
                    }
                    items.push(self.node(scalar(item, true), col + i));
                    i += item.len();
                }
            }
            while b.get(i) == Some(&b' ') {
                i += 1;
            }
            match *b.get(i)? {
                b',' => i += 1,
                b']' => break,
                _ => return None,
            }
        }
        trailing_ok(&text[i + 1..])?;
        Some(self.node(Value::Seq(items), col))
    }

    /// A double-quoted scalar without escapes in a collection indented `parent`, maybe over several lines (folded as YAML
    /// folds them: a line break is a space, `n` empty lines are `n` newlines; white space
    /// around breaks is dropped).
    fn double_quoted(&mut self, parent: usize, col: usize, text: &'a str) -> Option<Node> {
        let (line, start) = (self.line_no(), self.pos);
        let mut out = String::new();
        let mut piece = &text[1..];
        let mut empty_lines = 0;
        loop {
            if piece.contains('\\') {
                return None;
            }
            if let Some(end) = piece.find('"') {
                let head = &piece[..end];
                let head = if self.pos == start {
                    head
                } else {
                    head.trim_start_matches(' ')
                };
                fold(&mut out, head, empty_lines, self.pos == start);
                trailing_ok(&piece[end + 1..])?;
                break;
            }
            let part = piece.trim_end_matches(' ');
            let part = if self.pos == start {
                part
            } else {
                part.trim_start_matches(' ')
            };
            if part.is_empty() && self.pos != start {
                empty_lines += 1;
            } else {
                fold(&mut out, part, empty_lines, self.pos == start);
                empty_lines = 0;
            }
            self.pos += 1;
            piece = self.lines.get(self.pos)?;
            // Continuation lines are indented deeper than the collection holding the scalar.
            if !piece.trim_start_matches(' ').is_empty() && indent_of(piece) <= parent {
                return None;
            }
        }
        self.pos += 1;
        Some(Node {
            value: scalar(&out, false),
            line,
            column: col,
        })
    }
}

/// Append a line's `part` of a folded scalar after `empty_lines` empty lines.
fn fold(out: &mut String, part: &str, empty_lines: usize, first: bool) {
    if !first {
        if empty_lines == 0 {
            out.push(' ');
        } else {
            out.extend(std::iter::repeat_n('\n', empty_lines));
        }
    }
    out.push_str(part);
}

fn scalar(text: &str, plain: bool) -> Value {
    Value::Scalar {
        text: text.to_string(),
        plain,
    }
}

/// After a quoted scalar or flow sequence: only spaces and a comment.
fn trailing_ok(rest: &str) -> Option<()> {
    let trimmed = rest.trim_start_matches(' ');
    (trimmed.is_empty() || (trimmed.starts_with('#') && trimmed.len() < rest.len())).then_some(())
}

/// A one-line plain scalar: up to a ` #` comment, without trailing spaces. `None` where
/// YAML would read more into it (`: `).
fn plain_text(text: &str) -> Option<&str> {
    let body = match text.find(" #") {
        Some(i) => &text[..i],
        None => text,
    };
    let body = body.trim_end_matches(' ');
    if body.contains(": ") || body.ends_with(':') {
        return None;
    }
    Some(body)
}
