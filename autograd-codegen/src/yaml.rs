//! A located YAML tree: every node keeps its line, so every error can name one.
//!
//! Built on `saphyr-parser`'s event stream (a maintained, pure-Rust YAML 1.2 parser with
//! source spans; `serde_yaml` is archived and loses locations). Only what PyTorch's YAML
//! files use is kept: maps, sequences and scalars. Scalars stay text; [`Node::as_bool`]
//! reads booleans as PyYAML does (`True`, `true`, `False`, `false`).

use crate::diagnostics::{Ctxt, Diagnostic, Location};
use saphyr_parser::{Event, Parser, ScalarStyle};
use std::sync::Arc;

mod fast;

/// A YAML node with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// What it holds.
    pub value: Value,
    /// 1-based line of its first character.
    pub line: usize,
    /// 0-based column.
    pub column: usize,
}

/// The node's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A scalar; `plain` is false for quoted and block scalars.
    Scalar {
        /// The text.
        text: String,
        /// Unquoted.
        plain: bool,
    },
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in file order.
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// The text of a scalar.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    /// A plain scalar read as a YAML 1.1 boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match &self.value {
            Value::Scalar { text, plain: true } => match text.as_str() {
                "true" | "True" | "TRUE" => Some(true),
                "false" | "False" | "FALSE" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }

    /// The entries of a mapping.
    pub fn as_map(&self) -> Option<&[(Node, Node)]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The items of a sequence.
    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// The value of key `key` in a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    /// This node's location in `file`.
    pub fn location(&self, file: &Arc<str>) -> Location {
        Location {
            file: file.clone(),
            line: self.line,
            column: self.column,
        }
    }

    /// A short description of the node's kind, for messages.
    pub fn kind_name(&self) -> &'static str {
        match &self.value {
            Value::Scalar { .. } => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

/// The deepest nesting of collections accepted (PyTorch's files nest four deep); the tree is
/// dropped recursively, so depth must be bounded.
const MAX_DEPTH: usize = 128;

/// Parse a file that must be a list of entries; errors (bad YAML, or not a list: `what` says
/// what was expected) go to `cx`. An empty file is an empty list.
pub fn parse_list(file: &Arc<str>, text: &str, what: &str, cx: &mut Ctxt) -> Vec<Node> {
    match parse(file, text) {
        Err(d) => {
            cx.error(&d.location, None, d.message);
            Vec::new()
        }
        Ok(None) => Vec::new(),
        Ok(Some(Node {
            value: Value::Seq(items),
            ..
        })) => items,
        Ok(Some(root)) => {
            cx.error(
                &root.location(file),
                None,
                format!("{what}, found {}", root.kind_name()),
            );
            Vec::new()
        }
    }
}

/// Parse the first document of `text`; `Ok(None)` for an empty file.
pub fn parse(file: &Arc<str>, text: &str) -> Result<Option<Node>, Diagnostic> {
    parse_at(file, text, 0)
}

/// [`parse`] for a piece of a file that starts after `lines_before` lines.
pub(crate) fn parse_at(
    file: &Arc<str>,
    text: &str,
    lines_before: usize,
) -> Result<Option<Node>, Diagnostic> {
    if let Some(root) = fast::parse(text, lines_before) {
        return Ok(Some(root));
    }
    parse_saphyr(file, text, lines_before)
}

/// [`parse_at`] with `saphyr-parser`, for any YAML.
fn parse_saphyr(
    file: &Arc<str>,
    text: &str,
    lines_before: usize,
) -> Result<Option<Node>, Diagnostic> {
    let mut parser = Parser::new_from_str(text);
    let mut tree = Tree::default();
    // `line` counts from the start of `text`; messages add `lines_before`.
    let error = |line: usize, col: usize, message: &str| Diagnostic {
        location: Location {
            file: file.clone(),
            line: line + lines_before,
            column: col,
        },
        entry: None,
        message: message.to_string(),
    };
    while let Some(event) = parser.next_event() {
        let (event, span) = event.map_err(|e| {
            let msg = format!("invalid YAML: {}", e.info());
            error(e.marker().line(), e.marker().col(), &msg)
        })?;
        let (line, column) = (span.start.line(), span.start.col());
        let at = |value| Node {
            value,
            line: line + lines_before,
            column,
        };
        let node = match event {
            Event::Scalar(text, style, _, _) => at(Value::Scalar {
                text: text.into_owned(),
                plain: style == ScalarStyle::Plain,
            }),
            Event::SequenceStart(..) | Event::MappingStart(..) if tree.stack.len() >= MAX_DEPTH => {
                let msg = format!("invalid YAML: collections nested more than {MAX_DEPTH} deep");
                return Err(error(line, column, &msg));
            }
            Event::SequenceStart(..) => {
                tree.stack.push((at(Value::Seq(Vec::new())), None));
                continue;
            }
            Event::MappingStart(..) => {
                tree.stack.push((at(Value::Map(Vec::new())), None));
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match tree.stack.pop() {
                Some((n, None)) => n,
                Some((n, Some(_))) => {
                    let msg = "invalid YAML: mapping key without value";
                    return Err(error(n.line - lines_before, n.column, msg));
                }
                None => {
                    let msg = "invalid YAML: unbalanced collection";
                    return Err(error(line, column, msg));
                }
            },
            Event::Alias(_) => {
                return Err(error(line, column, "YAML aliases are not supported here"));
            }
            Event::DocumentEnd if tree.root.is_some() => break,
            _ => continue,
        };
        tree.attach(node);
    }
    Ok(tree.root)
}

/// The collections being read, each with its pending mapping key, and the finished root.
#[derive(Default)]
struct Tree {
    stack: Vec<(Node, Option<Node>)>,
    root: Option<Node>,
}

impl Tree {
    /// Attach a finished node to its parent (the first one becomes the root).
    fn attach(&mut self, node: Node) {
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
            Some((parent, pending_key)) => match &mut parent.value {
                Value::Seq(items) => items.push(node),
                Value::Map(entries) => match pending_key.take() {
                    None => *pending_key = Some(node),
                    Some(k) => entries.push((k, node)),
                },
                Value::Scalar { .. } => unreachable!("scalars are never on the stack"),
            },
        }
    }
}

/// Where `text` can be cut in two pieces that parse, each on its own, to the two halves of
/// the top-level sequence it holds: the start of a `- ` line (a top-level item) near the
/// middle. `None` for small texts and for anything but one plain block-sequence document
/// (document markers, directives).
pub(crate) fn split_top_level_sequence(text: &str) -> Option<usize> {
    if text.len() < 64 * 1024 {
        return None;
    }
    let b = text.as_bytes();
    // A marker or directive after the first line could end or start a document.
    let first_line_end = text.find('\n')?;
    let mut at = first_line_end;
    while let Some(i) = text[at..].find('\n') {
        let line = &b[at + i + 1..];
        if line.starts_with(b"---") || line.starts_with(b"...") || line.starts_with(b"%") {
            return None;
        }
        at += i + 1;
    }
    let mid = b.len() / 2;
    b[mid..]
        .windows(3)
        .position(|w| w == b"\n- ")
        .map(|i| mid + i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_difference(a: &Node, b: &Node) -> String {
        match (&a.value, &b.value) {
            (Value::Seq(x), Value::Seq(y))
                if x.len() == y.len() && (a.line, a.column) == (b.line, b.column) =>
            {
                x.iter()
                    .zip(y)
                    .find(|(p, q)| p != q)
                    .map(|(p, q)| first_difference(p, q))
                    .unwrap_or_default()
            }
            (Value::Map(x), Value::Map(y))
                if x.len() == y.len() && (a.line, a.column) == (b.line, b.column) =>
            {
                x.iter()
                    .zip(y)
                    .find(|(p, q)| p != q)
                    .map(|(p, q)| {
                        if p.0 != q.0 {
                            first_difference(&p.0, &q.0)
                        } else {
                            first_difference(&p.1, &q.1)
                        }
                    })
                    .unwrap_or_default()
            }
            _ => format!("fast {a:?}\nsaphyr {b:?}"),
        }
    }

    /// The fast reader builds saphyr's tree wherever it answers, and answers for PyTorch's
    /// `native_functions.yaml` and `derivatives.yaml`.
    #[test]
    fn fast_reader_agrees_with_saphyr() {
        let file: Arc<str> = Arc::from("x.yaml");
        let cases = [
            "- a: 1\n  b: [x, \"y z\", 3]  # c\n  c:\n    d: e\n    f, g: h\n  l:\n  - 1\n  - '2'\n",
            "# top\n\n- name: f(Tensor self) -> Tensor\n  self: \"grad *\n     2\n\n     + x\"\n  result: g(\"a\") # c\n",
            "- x\n- y: z\n-   w: 1\n    v: []\n",
            "- func: f(str a=\"\\\"'\", str b='\"') -> Tensor\n  x: a#b\n",
        ];
        for text in cases {
            let fast = fast::parse(text, 0);
            assert!(fast.is_some(), "{text:?}");
            let slow = parse_saphyr(&file, text, 0).unwrap();
            if fast != slow {
                panic!(
                    "{text:?}: {}",
                    first_difference(fast.as_ref().unwrap(), slow.as_ref().unwrap())
                );
            }
        }
        for text in [
            "- a: |\n    x\n",
            "- a: b\n  c\n",
            "- a:\n- b\n",
            "- a: \"x\\ny\"\n",
            "--- \n- a\n",
            "- a: {b: c}\n",
            "- a: b: c\n",
            "- a: &x b\n",
            "-\ta: b\n",
            "",
            "a",
        ] {
            assert!(fast::parse(text, 0).is_none(), "{text:?}");
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/pytorch");
        for name in ["native_functions.yaml", "derivatives.yaml"] {
            let Ok(text) = std::fs::read_to_string(dir.join(name)) else {
                continue;
            };
            let fast = fast::parse(&text, 3);
            assert!(fast.is_some(), "{name}: the fast reader gave up");
            if fast != parse_saphyr(&file, &text, 3).unwrap() {
                panic!(
                    "{name}: {}",
                    first_difference(
                        fast.as_ref().unwrap(),
                        &parse_saphyr(&file, &text, 3).unwrap().unwrap()
                    )
                );
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, failure_persistence: None, ..Default::default() })]

        /// Wherever the fast reader answers on mutated YAML, saphyr builds the same tree.
        #[test]
        fn fast_reader_agrees_on_mutations(
            edits in proptest::collection::vec((0usize..400, "[-:#\"' \\[\\]{},a\n]{0,2}", 0usize..3), 1..4)
        ) {
            let mut text = String::from("# c\n- name: f(Tensor self) -> Tensor\n  self: \"grad *\n    x\"\n  output_differentiability: [True, 'x']\n  dispatch:\n    Default:\n      self: g(a, b) # c\n    A, B: {}\n  l:\n  - 1\n  -  k: v\n     w: [ ]\n- x\n");
            for (at, ins, del) in edits {
                let at = at % (text.len() + 1);
                let end = (at + del).min(text.len());
                text.replace_range(at..end, &ins);
            }
            if let Some(fast) = fast::parse(&text, 0) {
                let slow = parse_saphyr(&Arc::from("x"), &text, 0);
                // saphyr refuses ` -` inside a plain scalar of a flow sequence (`[Tru -, x]`),
                // which YAML allows and PyYAML (torchgen's reader) and the fast reader accept:
                // see `flow_plain_scalar_with_a_dash_reads_as_pyyaml_does`.
                let saphyr_stricter = matches!(&slow, Err(d) if d.message.contains("plain scalar cannot start with '-'"));
                if !saphyr_stricter {
                    proptest::prop_assert_eq!(Ok(Some(fast)), slow, "{:?}", text);
                }
            }
        }
    }

    #[test]
    fn flow_plain_scalar_with_a_dash_reads_as_pyyaml_does() {
        // PyYAML: yaml.safe_load("a: [Tru -, 'x']") == {'a': ['Tru -', 'x']}
        let n = fast::parse("a: [Tru -, 'x']\n", 0).expect("the fast reader answers");
        let Value::Map(m) = &n.value else {
            panic!("{n:?}")
        };
        let Value::Seq(items) = &m[0].1.value else {
            panic!("{n:?}")
        };
        assert_eq!(items[0].as_str(), Some("Tru -"));
        assert_eq!(items[1].as_str(), Some("x"));
    }

    #[test]
    fn keeps_lines_and_structure() {
        let file: Arc<str> = "t.yaml".into();
        let text = "- name: a(Tensor self) -> Tensor\n  self: grad\n\n- name: b\n  output_differentiability: [True, false]\n";
        let root = parse(&file, text).unwrap().unwrap();
        let items = root.as_seq().unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].line, 1);
        assert_eq!(items[1].line, 4);
        assert_eq!(items[0].get("self").unwrap().as_str(), Some("grad"));
        assert_eq!(items[0].get("self").unwrap().line, 2);
        let od = items[1]
            .get("output_differentiability")
            .unwrap()
            .as_seq()
            .unwrap();
        assert_eq!(od[0].as_bool(), Some(true));
        assert_eq!(od[1].as_bool(), Some(false));
    }

    #[test]
    fn reports_bad_yaml_with_line() {
        let file: Arc<str> = "bad.yaml".into();
        let err = parse(&file, "- name: a\n  self: [grad\n- x").unwrap_err();
        assert_eq!(&*err.location.file, "bad.yaml");
        assert!(err.location.line >= 2, "{err}");
        assert!(err.message.starts_with("invalid YAML"), "{err}");
    }

    #[test]
    fn quoted_true_is_not_bool() {
        let file: Arc<str> = "q.yaml".into();
        let root = parse(&file, "a: 'True'\n").unwrap().unwrap();
        assert_eq!(root.get("a").unwrap().as_bool(), None);
    }
}
