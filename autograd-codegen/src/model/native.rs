//! `native_functions.yaml`: the operators, as torchgen's `NativeFunction`.
//!
//! Only what the autograd analysis and the code generator need is typed (schema, variants,
//! tags, the kind of kernels, structured delegation, `autogen`); every function keeps its
//! file and line.

use crate::diagnostics::{Ctxt, Location};
use crate::model::schema::{FunctionSchema, OperatorName, SchemaKind};
use crate::yaml::{self, Node};
use std::collections::BTreeSet;
use std::sync::Arc;

/// How a function is exposed: `at::foo(t)` and/or `t.foo()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    /// A free function.
    Function,
    /// A method on the tensor.
    Method,
}

/// One operator of `native_functions.yaml` (or one torchgen generates from `autogen:`).
#[derive(Debug, Clone, PartialEq)]
pub struct NativeFunction {
    /// The parsed `func:`.
    pub func: FunctionSchema,
    /// `func` as text: the `func:` string as written (it round-trips), or the generated
    /// schema printed once. Kept so that hot paths need not print the schema again; whoever
    /// changes `func` must update it.
    pub schema: String,
    /// Where its entry is (for generated functions: the entry they were generated from).
    pub loc: Location,
    /// `variants:`, default `function`.
    pub variants: BTreeSet<Variant>,
    /// Tags known to `tags.yaml`, plus those torchgen adds (`out`, `inplace`,
    /// `pt2_compliant_tag`, `generated`).
    pub tags: BTreeSet<String>,
    /// Dispatch keys with a kernel (after torchgen's defaults).
    pub dispatch_keys: BTreeSet<String>,
    /// `structured: True`.
    pub structured: bool,
    /// `structured_delegate:`.
    pub structured_delegate: Option<OperatorName>,
    /// `autogen:` names.
    pub autogen: Vec<OperatorName>,
    /// `manual_cpp_binding: True`.
    pub manual_cpp_binding: bool,
    /// No composite kernel serves it alone: torchgen's `is_abstract`.
    pub is_abstract: bool,
}

impl NativeFunction {
    /// Has a `CompositeImplicitAutograd` kernel.
    pub fn has_composite_implicit_autograd_kernel(&self) -> bool {
        self.dispatch_keys.contains("CompositeImplicitAutograd")
    }

    /// Has a `CompositeImplicitAutogradNestedTensor` kernel.
    pub fn has_composite_implicit_autograd_nested_tensor_kernel(&self) -> bool {
        self.dispatch_keys
            .contains("CompositeImplicitAutogradNestedTensor")
    }

    /// Carries `tag`.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.contains(tag)
    }

    /// torchgen's `is_view_op`: returns alias an input without writing it, or an in-place view.
    pub fn is_view_op(&self) -> bool {
        let rets = &self.func.returns;
        let non_mutating_view = rets
            .iter()
            .any(|r| r.annotation.as_ref().is_some_and(|a| !a.is_write));
        let inplace_view = self.has_tag("inplace_view")
            && !self.func.name.is("resize_")
            && !self.func.name.is("resize_as_");
        let wildcard_view = self.func.arguments.flat_all().any(|a| {
            a.annotation
                .as_ref()
                .is_some_and(|an| an.alias_set_after.iter().any(|s| s == "*"))
        });
        non_mutating_view || inplace_view || wildcard_view
    }

    /// torchgen's `view_schema_kind`, as `None` for non-aliasing, `Some(false)` for an aliasing
    /// view, `Some(true)` for an in-place view.
    pub fn view_kind(&self) -> Option<bool> {
        if self.is_view_op() {
            Some(self.func.name.name.inplace)
        } else {
            None
        }
    }

    /// `structured` or `structured_delegate`.
    pub fn part_of_structured_group(&self) -> bool {
        self.structured || self.structured_delegate.is_some()
    }

    /// The schema kind.
    pub fn kind(&self) -> SchemaKind {
        self.func.kind()
    }
}

/// Read `tags.yaml`: the valid tag names.
pub fn parse_tags(file: &Arc<str>, text: &str, cx: &mut Ctxt) -> BTreeSet<String> {
    let mut tags = BTreeSet::new();
    for item in yaml::parse_list(
        file,
        text,
        "tags.yaml must be a list of `- tag: NAME` entries",
        cx,
    ) {
        match item.get("tag").and_then(Node::as_str) {
            Some(t) => {
                tags.insert(t.to_string());
            }
            None => cx.error(&item.location(file), None, "tag entry without `tag:`"),
        }
    }
    tags
}

const KNOWN_KEYS: &[&str] = &[
    "func",
    "variants",
    "tags",
    "dispatch",
    "structured",
    "structured_delegate",
    "structured_inherits",
    "autogen",
    "manual_cpp_binding",
    "manual_kernel_registration",
    "device_guard",
    "device_check",
    "python_module",
    "category_override",
    "precomputed",
    "cpp_no_default_args",
    "use_const_ref_for_mutable_tensors",
    "ufunc_inner_loop",
    "abstract",
    "has_composite_implicit_autograd_kernel",
];

/// Read `native_functions.yaml`. `valid_tags` filters `tags:` as torchgen does (an empty set
/// keeps every tag). Errors go to `cx`; functions that parse are returned either way.
///
/// A large file is read in two halves on two threads (cut before a top-level `- ` item);
/// when either half is not a plain list of entries, the whole file is read again in one
/// piece, so results and messages are always those of a single pass.
pub fn parse_native_functions(
    file: &Arc<str>,
    text: &str,
    valid_tags: &BTreeSet<String>,
    cx: &mut Ctxt,
) -> Vec<NativeFunction> {
    if let Some(cut) = yaml::split_top_level_sequence(text) {
        let (first, second) = text.split_at(cut);
        let lines_before = first.bytes().filter(|&c| c == b'\n').count();
        let (a, b) = std::thread::scope(|s| {
            let b = s.spawn(|| parse_piece(file, second, lines_before, valid_tags));
            let a = parse_piece(file, first, 0, valid_tags);
            (a, b.join().ok().flatten())
        });
        match (a, b) {
            (Some((mut fns, cx_a)), Some((more, cx_b))) => {
                cx.append(cx_a);
                cx.append(cx_b);
                fns.extend(more);
                return fns;
            }
            // The whole file is parsed again below: these errors are reported from there.
            (a, b) => a.into_iter().chain(b).for_each(|(_, c)| c.discard()),
        }
    }
    parse_whole(file, text, valid_tags, cx)
}

/// One piece of a file cut by [`yaml::split_top_level_sequence`]: `None` unless it is a list.
fn parse_piece(
    file: &Arc<str>,
    text: &str,
    lines_before: usize,
    valid_tags: &BTreeSet<String>,
) -> Option<(Vec<NativeFunction>, Ctxt)> {
    let root = yaml::parse_at(file, text, lines_before).ok()??;
    let items = root.as_seq()?;
    let mut cx = Ctxt::new();
    let fns = items
        .iter()
        .filter_map(|item| parse_entry(file, item, valid_tags, &mut cx))
        .collect();
    Some((fns, cx))
}

fn parse_whole(
    file: &Arc<str>,
    text: &str,
    valid_tags: &BTreeSet<String>,
    cx: &mut Ctxt,
) -> Vec<NativeFunction> {
    let items = yaml::parse_list(
        file,
        text,
        "native_functions.yaml must be a list of `- func:` entries",
        cx,
    );
    items
        .iter()
        .filter_map(|item| parse_entry(file, item, valid_tags, cx))
        .collect()
}

fn parse_entry(
    file: &Arc<str>,
    item: &Node,
    valid_tags: &BTreeSet<String>,
    cx: &mut Ctxt,
) -> Option<NativeFunction> {
    let loc = item.location(file);
    let Some(map) = item.as_map() else {
        cx.error(
            &loc,
            None,
            format!(
                "expected a mapping with `func:`, found {}",
                item.kind_name()
            ),
        );
        return None;
    };
    let Some(func_node) = item.get("func") else {
        cx.error(&loc, None, "entry without `func:`");
        return None;
    };
    let Some(func_text) = func_node.as_str() else {
        cx.error(&loc, None, "`func:` must be a schema string");
        return None;
    };
    let entry = Some(func_text);
    let func = match FunctionSchema::parse(func_text) {
        Ok(f) => f,
        Err(e) => {
            cx.error(
                &func_node.location(file),
                entry,
                format!("invalid schema: {e}"),
            );
            return None;
        }
    };
    for (k, _) in map {
        let key = k.as_str().unwrap_or("");
        if !KNOWN_KEYS.contains(&key) {
            cx.error(&k.location(file), entry, format!("unknown key `{key}`"));
        }
    }
    let str_of = |key: &str, cx: &mut Ctxt| -> Option<String> {
        let n = item.get(key)?;
        match n.as_str() {
            Some(s) => Some(s.to_string()),
            None => {
                cx.error(
                    &n.location(file),
                    entry,
                    format!("`{key}:` must be a string"),
                );
                None
            }
        }
    };
    let bool_of = |key: &str, cx: &mut Ctxt| -> bool {
        match item.get(key) {
            None => false,
            Some(n) => n.as_bool().unwrap_or_else(|| {
                cx.error(
                    &n.location(file),
                    entry,
                    format!("`{key}:` must be True or False"),
                );
                false
            }),
        }
    };

    let mut variants = BTreeSet::new();
    let variants_text = str_of("variants", cx).unwrap_or_else(|| "function".into());
    for v in variants_text.split(", ") {
        match v {
            "function" => {
                variants.insert(Variant::Function);
            }
            "method" => {
                variants.insert(Variant::Method);
            }
            other => cx.error(&loc, entry, format!("illegal variant `{other}`")),
        }
    }

    let mut tags_in: Vec<String> = Vec::new();
    if let Some(n) = item.get("tags") {
        match (&n.value, n.as_seq()) {
            (crate::yaml::Value::Scalar { text, .. }, _) => tags_in.push(text.clone()),
            (_, Some(seq)) => {
                tags_in.extend(seq.iter().filter_map(|t| t.as_str().map(str::to_string)))
            }
            _ => cx.error(
                &n.location(file),
                entry,
                "`tags:` must be a string or a list",
            ),
        }
    }
    let keep = |t: &str| valid_tags.is_empty() || valid_tags.contains(t);
    if keep("pt2_compliant_tag") && !valid_tags.is_empty() {
        tags_in.push("pt2_compliant_tag".into());
    }
    if func.is_out_fn() && keep("out") && !valid_tags.is_empty() {
        tags_in.push("out".into());
    }
    if func.name.name.inplace && keep("inplace") && !valid_tags.is_empty() {
        tags_in.push("inplace".into());
    }
    let tags: BTreeSet<String> = tags_in.into_iter().filter(|t| keep(t)).collect();

    let structured = bool_of("structured", cx);
    let structured_delegate =
        str_of("structured_delegate", cx).and_then(|s| match OperatorName::parse(&s) {
            Ok(n) => Some(n),
            Err(e) => {
                cx.error(&loc, entry, format!("invalid structured_delegate: {e}"));
                None
            }
        });
    let autogen = match str_of("autogen", cx) {
        None => Vec::new(),
        Some(s) if s.is_empty() => Vec::new(),
        Some(s) => s
            .split(", ")
            .filter_map(|x| match OperatorName::parse(x) {
                Ok(n) => Some(n),
                Err(e) => {
                    cx.error(&loc, entry, format!("invalid autogen name: {e}"));
                    None
                }
            })
            .collect(),
    };
    let manual_cpp_binding = bool_of("manual_cpp_binding", cx);

    let mut dispatch_keys = BTreeSet::new();
    match item.get("dispatch") {
        Some(d) => match d.as_map() {
            Some(m) => {
                for (k, _) in m {
                    for key in k.as_str().unwrap_or("").split(',') {
                        dispatch_keys.insert(key.trim().to_string());
                    }
                }
            }
            None => cx.error(&d.location(file), entry, "`dispatch:` must be a mapping"),
        },
        None => {
            if !structured && structured_delegate.is_none() {
                dispatch_keys.insert("CompositeImplicitAutograd".to_string());
            }
        }
    }
    let is_abstract = if structured_delegate.is_some() {
        true
    } else {
        let cia = "CompositeImplicitAutograd";
        let ciant = "CompositeImplicitAutogradNestedTensor";
        let only = |keys: &[&str]| {
            dispatch_keys.len() == keys.len() && keys.iter().all(|k| dispatch_keys.contains(*k))
        };
        !(only(&[cia]) || only(&[ciant]) || only(&[cia, ciant]))
    };

    Some(NativeFunction {
        func,
        schema: func_text.to_string(),
        loc,
        variants,
        tags,
        dispatch_keys,
        structured,
        structured_delegate,
        autogen,
        manual_cpp_binding,
        is_abstract,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(
        text: &str,
    ) -> (
        Vec<NativeFunction>,
        Vec<String>,
        Vec<NativeFunction>,
        Vec<String>,
    ) {
        let file: Arc<str> = Arc::from("nf.yaml");
        let tags = BTreeSet::new();
        let errors = |cx: Ctxt| match cx.check(()) {
            Ok(()) => Vec::new(),
            Err(d) => d.0.iter().map(ToString::to_string).collect(),
        };
        let mut cx = Ctxt::new();
        let split = parse_native_functions(&file, text, &tags, &mut cx);
        let split_errors = errors(cx);
        let mut cx = Ctxt::new();
        let whole = parse_whole(&file, text, &tags, &mut cx);
        (split, split_errors, whole, errors(cx))
    }

    /// Reading a large file in two halves gives exactly what one pass gives.
    #[test]
    fn halves_equal_one_pass() {
        let mut text = String::from("# header\n\n");
        for i in 0..3000 {
            text.push_str(&format!(
                "- func: op{i}(Tensor self, int dim=0) -> Tensor\n  variants: function, method\n  dispatch:\n    CPU: op{i}\n\n"
            ));
            if i == 2500 {
                text.push_str("- func: bad(Tensr self) -> Tensor\n- func: nope\n  wat: 1\n");
            }
        }
        assert!(yaml::split_top_level_sequence(&text).is_some());
        let (split, split_errors, whole, whole_errors) = both(&text);
        assert_eq!(split.len(), 3000);
        assert_eq!(split, whole);
        assert_eq!(split_errors, whole_errors);
        assert_eq!(whole_errors.len(), 2, "{whole_errors:?}");
        assert_eq!(split[2999].loc.line, whole[2999].loc.line);

        // A YAML error in either half: the messages of one pass.
        for at in [text.len() / 4, text.len() * 3 / 4] {
            let mut bad = text.clone();
            let p = bad[at..].find("\n  dispatch").unwrap() + at;
            bad.insert_str(p, "\n  x: [unclosed");
            let (split, split_errors, whole, whole_errors) = both(&bad);
            assert_eq!(split, whole);
            assert_eq!(split_errors, whole_errors);
            assert!(split_errors[0].contains("invalid YAML"), "{split_errors:?}");
        }
        // Document markers: no split.
        let multi = format!("{text}---\n- func: other() -> Tensor\n");
        assert!(yaml::split_top_level_sequence(&multi).is_none());
    }

    #[test]
    fn real_corpus_halves_equal_one_pass() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/pytorch/native_functions.yaml");
        let Ok(text) = std::fs::read_to_string(path) else {
            return;
        };
        let (split, split_errors, whole, whole_errors) = both(&text);
        assert_eq!(split, whole);
        assert_eq!(split_errors, whole_errors);
    }
}
