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
    /// The kernel an explicit `dispatch: {CompositeImplicitAutograd: NAME}` names: the
    /// function is implemented by differentiable ops (no backend kernel, no node of its own).
    pub composite_kernel: Option<String>,
    /// The kernel an explicit `dispatch: {CompositeExplicitAutograd: NAME}` names: the
    /// default body of the function's backend kernel, built from other kernels (a backend
    /// may override it), as PyTorch's decompositions of that key are.
    pub explicit_kernel: Option<String>,
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
        let msg = format!(
            "expected a mapping with `func:`, found {}",
            item.kind_name()
        );
        cx.error(&loc, None, msg);
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
    let r = EntryReader {
        file,
        item,
        entry: Some(func_text),
        loc,
    };
    let func = match FunctionSchema::parse(func_text) {
        Ok(f) => f,
        Err(e) => {
            cx.error(
                &func_node.location(file),
                r.entry,
                format!("invalid schema: {e}"),
            );
            return None;
        }
    };
    for (k, _) in map {
        let key = k.as_str().unwrap_or("");
        if !KNOWN_KEYS.contains(&key) {
            cx.error(&k.location(file), r.entry, format!("unknown key `{key}`"));
        }
    }
    let variants = r.variants(cx);
    let tags = r.tags(&func, valid_tags, cx);
    let structured = r.bool_of("structured", cx);
    let structured_delegate = r.structured_delegate(cx);
    let autogen = r.autogen(cx);
    let manual_cpp_binding = r.bool_of("manual_cpp_binding", cx);
    let dispatch_keys = r.dispatch_keys(structured || structured_delegate.is_some(), cx);
    let composite_kernel = r.named_kernel("CompositeImplicitAutograd");
    let explicit_kernel = r.named_kernel("CompositeExplicitAutograd");
    let is_abstract = structured_delegate.is_some() || is_abstract(&dispatch_keys);
    Some(NativeFunction {
        func,
        schema: func_text.to_string(),
        loc: r.loc,
        variants,
        tags,
        dispatch_keys,
        structured,
        structured_delegate,
        autogen,
        manual_cpp_binding,
        is_abstract,
        composite_kernel,
        explicit_kernel,
    })
}

/// Not only `CompositeImplicitAutograd` (and its nested-tensor variant) kernels.
fn is_abstract(dispatch_keys: &BTreeSet<String>) -> bool {
    let cia = "CompositeImplicitAutograd";
    let ciant = "CompositeImplicitAutogradNestedTensor";
    let only = |keys: &[&str]| {
        dispatch_keys.len() == keys.len() && keys.iter().all(|k| dispatch_keys.contains(*k))
    };
    !(only(&[cia]) || only(&[ciant]) || only(&[cia, ciant]))
}

/// The keys of one `- func:` entry, read with errors naming the entry.
struct EntryReader<'a> {
    file: &'a Arc<str>,
    item: &'a Node,
    entry: Option<&'a str>,
    loc: Location,
}

impl EntryReader<'_> {
    fn str_of(&self, key: &str, cx: &mut Ctxt) -> Option<String> {
        let n = self.item.get(key)?;
        match n.as_str() {
            Some(s) => Some(s.to_string()),
            None => {
                let msg = format!("`{key}:` must be a string");
                cx.error(&n.location(self.file), self.entry, msg);
                None
            }
        }
    }

    fn bool_of(&self, key: &str, cx: &mut Ctxt) -> bool {
        let Some(n) = self.item.get(key) else {
            return false;
        };
        n.as_bool().unwrap_or_else(|| {
            let msg = format!("`{key}:` must be True or False");
            cx.error(&n.location(self.file), self.entry, msg);
            false
        })
    }

    fn variants(&self, cx: &mut Ctxt) -> BTreeSet<Variant> {
        let mut variants = BTreeSet::new();
        let text = self
            .str_of("variants", cx)
            .unwrap_or_else(|| "function".into());
        for v in text.split(", ") {
            match v {
                "function" => {
                    variants.insert(Variant::Function);
                }
                "method" => {
                    variants.insert(Variant::Method);
                }
                other => cx.error(&self.loc, self.entry, format!("illegal variant `{other}`")),
            }
        }
        variants
    }

    /// The tags as written plus the ones torchgen adds, keeping valid ones only (all, when
    /// no tags.yaml was given).
    fn tags(
        &self,
        func: &FunctionSchema,
        valid_tags: &BTreeSet<String>,
        cx: &mut Ctxt,
    ) -> BTreeSet<String> {
        let mut tags_in: Vec<String> = Vec::new();
        if let Some(n) = self.item.get("tags") {
            match (&n.value, n.as_seq()) {
                (crate::yaml::Value::Scalar { text, .. }, _) => tags_in.push(text.clone()),
                (_, Some(seq)) => {
                    tags_in.extend(seq.iter().filter_map(|t| t.as_str().map(str::to_string)))
                }
                _ => cx.error(
                    &n.location(self.file),
                    self.entry,
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
        tags_in.into_iter().filter(|t| keep(t)).collect()
    }

    fn structured_delegate(&self, cx: &mut Ctxt) -> Option<OperatorName> {
        let s = self.str_of("structured_delegate", cx)?;
        OperatorName::parse(&s)
            .map_err(|e| {
                let msg = format!("invalid structured_delegate: {e}");
                cx.error(&self.loc, self.entry, msg);
            })
            .ok()
    }

    fn autogen(&self, cx: &mut Ctxt) -> Vec<OperatorName> {
        let Some(s) = self.str_of("autogen", cx).filter(|s| !s.is_empty()) else {
            return Vec::new();
        };
        s.split(", ")
            .filter_map(|x| match OperatorName::parse(x) {
                Ok(n) => Some(n),
                Err(e) => {
                    let msg = format!("invalid autogen name: {e}");
                    cx.error(&self.loc, self.entry, msg);
                    None
                }
            })
            .collect()
    }

    /// The kernel named under the dispatch key `key` of `dispatch:`.
    fn named_kernel(&self, key: &str) -> Option<String> {
        let m = self.item.get("dispatch")?.as_map()?;
        m.iter().find_map(|(k, v)| {
            let explicit = k.as_str()?.split(',').any(|k| k.trim() == key);
            explicit.then(|| v.as_str().map(str::to_string)).flatten()
        })
    }

    /// The `dispatch:` keys (split at commas); without `dispatch:`, `CompositeImplicitAutograd`
    /// unless the function is structured.
    fn dispatch_keys(&self, structured: bool, cx: &mut Ctxt) -> BTreeSet<String> {
        let mut dispatch_keys = BTreeSet::new();
        match self.item.get("dispatch") {
            Some(d) => match d.as_map() {
                Some(m) => {
                    for (k, _) in m {
                        for key in k.as_str().unwrap_or("").split(',') {
                            dispatch_keys.insert(key.trim().to_string());
                        }
                    }
                }
                None => cx.error(
                    &d.location(self.file),
                    self.entry,
                    "`dispatch:` must be a mapping",
                ),
            },
            None if !structured => {
                dispatch_keys.insert("CompositeImplicitAutograd".to_string());
            }
            None => {}
        }
        dispatch_keys
    }
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
