//! Operator schemas: `FunctionSchema::parse` and `Display`, lossless, as torchgen's `model.py`.
//!
//! A schema such as `add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor` parses
//! into typed values; printing it gives back the exact input (parsing checks this round trip, as
//! torchgen does). [`FunctionSchema::kind`] and [`FunctionSchema::signature`] follow torchgen's
//! definitions, so in-place and out= variants can be matched to their functional entry.
//!
//! ```
//! use autograd_codegen::model::schema::{FunctionSchema, SchemaKind};
//! let text = "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)";
//! let s = FunctionSchema::parse(text).unwrap();
//! assert_eq!(s.to_string(), text);
//! assert_eq!(s.kind(), SchemaKind::Inplace);
//! assert_eq!(
//!     s.signature(true).to_string(),
//!     "add(Tensor self, Tensor other, *, Scalar alpha) -> Tensor"
//! );
//! ```

use std::fmt;

/// A schema that could not be parsed: what is wrong, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError(pub String);

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SchemaError {}

type Result<T> = std::result::Result<T, SchemaError>;

fn err<T>(msg: impl Into<String>) -> Result<T> {
    Err(SchemaError(msg.into()))
}

/// The five kinds of schema torchgen distinguishes (`SchemaKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaKind {
    /// Returns fresh outputs and mutates nothing.
    Functional,
    /// Mutates `self` (name ends in `_`, or an `__iop__` dunder).
    Inplace,
    /// Writes into keyword-only `out` arguments.
    Out,
    /// Mutates a positional argument other than `self`.
    Mutable,
    /// An out= variant with `_scratch_` arguments.
    Scratch,
}

impl SchemaKind {
    /// The name torchgen prints (`functional`, `inplace`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaKind::Functional => "functional",
            SchemaKind::Inplace => "inplace",
            SchemaKind::Out => "out",
            SchemaKind::Mutable => "mutable",
            SchemaKind::Scratch => "scratch",
        }
    }
}

/// Operator name without overload: `add`, `add_` (in-place), `__iadd__` (dunder, in-place),
/// `_native_batch_norm_legit_functional` (functional overload).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BaseOperatorName {
    /// The name with the in-place `_`, the dunder underscores and `_functional` removed.
    pub base: String,
    /// `add_` or `__iadd__`.
    pub inplace: bool,
    /// `__add__`.
    pub dunder_method: bool,
    /// `foo_functional`: the functional twin of a mutable op (torchgen's Note [Overload
    /// Ambiguity With Functional Variants]).
    pub functional_overload: bool,
    /// `aten::` prefix, rarely present.
    pub namespace: Option<String>,
}

/// Names of the Python augmented-assignment dunders (`__iadd__`, ...).
const AUGMENTED_ASSIGNMENT_NAMES: &[&str] = &[
    "add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or",
];

impl BaseOperatorName {
    /// Parse `add_`, `__iadd__`, `native_batch_norm_functional`, ...
    pub fn parse(op: &str) -> Result<Self> {
        if op.is_empty() {
            return err("operator name cannot be empty");
        }
        if op.ends_with("_out") {
            return err(format!(
                "_out suffix is reserved and not permitted for operator names (`{op}`); did you mean to specify an out overload name instead?"
            ));
        }
        let (namespace, rest) = match op.rfind("::") {
            Some(i) => (Some(op[..i].to_string()), &op[i + 2..]),
            None => (None, op),
        };
        if rest.is_empty() || !rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return err(format!("invalid operator name `{op}`"));
        }
        let (mut base, inplace, dunder_method);
        if let Some(inner) = rest
            .strip_prefix("__")
            .and_then(|r| r.strip_suffix("__"))
            .filter(|i| !i.is_empty() && !i.contains('_'))
        {
            dunder_method = true;
            if let Some(stripped) = inner
                .strip_prefix('i')
                .filter(|s| AUGMENTED_ASSIGNMENT_NAMES.contains(s))
            {
                inplace = true;
                base = stripped.to_string();
            } else {
                inplace = false;
                if inner.starts_with('i') {
                    return err(format!("unexpected dunder method starting with 'i': {op}"));
                }
                base = inner.to_string();
            }
        } else {
            dunder_method = false;
            if let Some(stripped) = rest.strip_suffix('_') {
                inplace = true;
                base = stripped.to_string();
            } else {
                inplace = false;
                base = rest.to_string();
            }
        }
        let mut functional_overload = false;
        if let Some(stripped) = base.strip_suffix("_functional") {
            if dunder_method || inplace {
                return err(format!(
                    "functional overload cannot be a dunder method or inplace: {op}"
                ));
            }
            functional_overload = true;
            base = stripped.to_string();
        }
        let r = BaseOperatorName {
            base,
            inplace,
            dunder_method,
            functional_overload,
            namespace,
        };
        if !r.is(op) {
            return err(format!(
                "operator name `{op}` does not round-trip (got `{r}`)"
            ));
        }
        Ok(r)
    }
}

impl BaseOperatorName {
    /// Append the name as written to `out` (what `Display` prints, without `fmt`'s overhead).
    pub fn render_to(&self, out: &mut String) {
        if let Some(ns) = &self.namespace {
            out.push_str(ns);
            out.push_str("::");
        }
        if self.dunder_method {
            out.push_str(if self.inplace { "__i" } else { "__" });
            out.push_str(&self.base);
            out.push_str("__");
        } else {
            out.push_str(&self.base);
            out.push_str(if self.inplace {
                "_"
            } else if self.functional_overload {
                "_functional"
            } else {
                ""
            });
        }
    }

    /// Does this name print as `text`? (No allocation.)
    pub fn is(&self, text: &str) -> bool {
        let mut rest = text;
        let mut eat = |part: &str| match rest.strip_prefix(part) {
            Some(r) => {
                rest = r;
                true
            }
            None => false,
        };
        if let Some(ns) = &self.namespace
            && !(eat(ns) && eat("::"))
        {
            return false;
        }
        let ok = if self.dunder_method {
            eat(if self.inplace { "__i" } else { "__" }) && eat(&self.base) && eat("__")
        } else {
            eat(&self.base)
                && eat(if self.inplace {
                    "_"
                } else if self.functional_overload {
                    "_functional"
                } else {
                    ""
                })
        };
        ok && rest.is_empty()
    }
}

impl fmt::Display for BaseOperatorName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.render_to(&mut s);
        f.write_str(&s)
    }
}

/// Operator name with overload: `add.Tensor`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OperatorName {
    /// `add_` in `add_.Tensor`.
    pub name: BaseOperatorName,
    /// `Tensor` in `add_.Tensor`; empty when there is none.
    pub overload_name: String,
}

impl OperatorName {
    /// Parse `name[.overload]`.
    pub fn parse(op: &str) -> Result<Self> {
        let (name, overload) = match op.split_once('.') {
            Some((n, o)) => (n, o),
            None => (op, ""),
        };
        if op.contains('.')
            && (overload.is_empty()
                || !overload
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            return err(format!("invalid overload name in `{op}`"));
        }
        Ok(OperatorName {
            name: BaseOperatorName::parse(name)?,
            overload_name: overload.to_string(),
        })
    }

    /// `add_Tensor` for `add.Tensor`: torchgen's `unambiguous_name`.
    pub fn unambiguous_name(&self) -> String {
        if self.overload_name.is_empty() {
            self.name.to_string()
        } else {
            format!("{}_{}", self.name, self.overload_name)
        }
    }

    /// This name with a different overload, not in-place (torchgen's `with_overload`).
    pub fn with_overload(&self, overload: &str) -> OperatorName {
        OperatorName {
            name: BaseOperatorName {
                base: self.name.base.clone(),
                inplace: false,
                dunder_method: self.name.dunder_method,
                functional_overload: false,
                namespace: None,
            },
            overload_name: overload.to_string(),
        }
    }

    /// This name without the in-place marker (torchgen's `remove_inplace`).
    pub fn remove_inplace(&self) -> OperatorName {
        let mut r = self.with_overload(&self.overload_name);
        r.name.inplace = false;
        r
    }
}

impl OperatorName {
    /// Append the name as written to `out`.
    pub fn render_to(&self, out: &mut String) {
        self.name.render_to(out);
        if !self.overload_name.is_empty() {
            out.push('.');
            out.push_str(&self.overload_name);
        }
    }

    /// Does this name print as `text`? (No allocation.)
    pub fn is(&self, text: &str) -> bool {
        if self.overload_name.is_empty() {
            self.name.is(text)
        } else {
            text.strip_suffix(self.overload_name.as_str())
                .and_then(|t| t.strip_suffix('.'))
                .is_some_and(|t| self.name.is(t))
        }
    }
}

impl fmt::Display for OperatorName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.render_to(&mut s);
        f.write_str(&s)
    }
}

/// The atomic types of the schema language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BaseTy {
    Generator,
    ScalarType,
    Tensor,
    Int,
    DimVector,
    Float,
    Str,
    Bool,
    Layout,
    Device,
    DeviceIndex,
    Scalar,
    MemoryFormat,
    QScheme,
    Storage,
    Stream,
    SymInt,
    SymBool,
    GraphModule,
}

impl BaseTy {
    const ALL: [(BaseTy, &'static str); 19] = [
        (BaseTy::Generator, "Generator"),
        (BaseTy::ScalarType, "ScalarType"),
        (BaseTy::Tensor, "Tensor"),
        (BaseTy::Int, "int"),
        (BaseTy::DimVector, "DimVector"),
        (BaseTy::Float, "float"),
        (BaseTy::Str, "str"),
        (BaseTy::Bool, "bool"),
        (BaseTy::Layout, "Layout"),
        (BaseTy::Device, "Device"),
        (BaseTy::DeviceIndex, "DeviceIndex"),
        (BaseTy::Scalar, "Scalar"),
        (BaseTy::MemoryFormat, "MemoryFormat"),
        (BaseTy::QScheme, "QScheme"),
        (BaseTy::Storage, "Storage"),
        (BaseTy::Stream, "Stream"),
        (BaseTy::SymInt, "SymInt"),
        (BaseTy::SymBool, "SymBool"),
        (BaseTy::GraphModule, "GraphModule"),
    ];

    /// The schema spelling: `int`, `Tensor`, `SymInt`, ...
    pub fn as_str(self) -> &'static str {
        Self::ALL.iter().find(|(t, _)| *t == self).unwrap().1
    }

    /// The base type spelled `s` in a schema (`int`, `Scalar`, ...).
    pub fn from_name(s: &str) -> Option<BaseTy> {
        Self::ALL.iter().find(|(_, n)| *n == s).map(|(t, _)| *t)
    }
}

/// A schema type: `Tensor`, `int[2]`, `Tensor?[]`, `SymInt[]`, `__torch__.torch.classes.x.Y`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Type {
    /// An atomic type.
    Base(BaseTy),
    /// `T?`
    Optional(Box<Type>),
    /// `T[]` or `T[N]`
    List {
        /// Element type.
        elem: Box<Type>,
        /// Fixed length, as in `int[2]`.
        size: Option<usize>,
    },
    /// `__torch__.torch.classes.NAME`
    CustomClass(String),
}

impl Type {
    /// Parse a type without alias annotation.
    pub fn parse(t: &str) -> Result<Type> {
        let r = Self::parse_inner(t)?;
        if r.to_string() != t {
            return err(format!("type `{t}` does not round-trip (got `{r}`)"));
        }
        Ok(r)
    }

    fn parse_inner(t: &str) -> Result<Type> {
        Self::parse_nested(t, 0)
    }

    fn parse_nested(t: &str, depth: usize) -> Result<Type> {
        // Real types nest two levels (`Tensor?[]`); a deep one would only exhaust the stack.
        if depth > 8 {
            return err(format!("type `{t}` is nested too deeply"));
        }
        if let Some(inner) = t.strip_suffix('?') {
            return Ok(Type::Optional(Box::new(Type::parse_nested(
                inner,
                depth + 1,
            )?)));
        }
        if let Some(open) = t.strip_suffix(']').and_then(|s| s.rfind('[')) {
            let size_text = &t[open + 1..t.len() - 1];
            let size = if size_text.is_empty() {
                None
            } else if size_text.chars().all(|c| c.is_ascii_digit()) {
                Some(
                    size_text
                        .parse()
                        .map_err(|_| SchemaError(format!("bad list size in `{t}`")))?,
                )
            } else {
                return err(format!("bad list size in type `{t}`"));
            };
            return Ok(Type::List {
                elem: Box::new(Type::parse_nested(&t[..open], depth + 1)?),
                size,
            });
        }
        if let Some(name) = t.strip_prefix("__torch__.torch.classes.")
            && !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            return Ok(Type::CustomClass(name.to_string()));
        }
        match BaseTy::from_name(t) {
            Some(b) => Ok(Type::Base(b)),
            None => err(format!("unrecognized type `{t}`")),
        }
    }

    /// The innermost base type, through optionals and lists.
    pub fn base_ty(&self) -> Option<BaseTy> {
        match self {
            Type::Base(b) => Some(*b),
            Type::Optional(e) | Type::List { elem: e, .. } => e.base_ty(),
            Type::CustomClass(_) => None,
        }
    }

    /// `Tensor`, `Tensor?`, `Tensor[]`, `Tensor?[]`: torchgen's `is_tensor_like`.
    pub fn is_tensor_like(&self) -> bool {
        self.base_ty() == Some(BaseTy::Tensor)
    }

    /// `SymInt`-based types.
    pub fn is_symint_like(&self) -> bool {
        self.base_ty() == Some(BaseTy::SymInt)
    }

    /// `Generator`-based types.
    pub fn is_generator_like(&self) -> bool {
        self.base_ty() == Some(BaseTy::Generator)
    }

    /// `T?` at the top, or a list of nullable elements (torchgen's `is_nullable`).
    pub fn is_nullable(&self) -> bool {
        match self {
            Type::Optional(_) => true,
            Type::List { elem, .. } => elem.is_nullable(),
            _ => false,
        }
    }

    /// The list type, through an optional (torchgen's `is_list_like`).
    pub fn is_list_like(&self) -> Option<&Type> {
        match self {
            Type::List { .. } => Some(self),
            Type::Optional(e) => e.is_list_like(),
            _ => None,
        }
    }

    /// Exactly `Tensor`.
    pub fn is_tensor(&self) -> bool {
        *self == Type::Base(BaseTy::Tensor)
    }
}

impl Type {
    /// Append the type as written to `out`.
    pub fn render_to(&self, out: &mut String) {
        match self {
            Type::Base(b) => out.push_str(b.as_str()),
            Type::Optional(e) => {
                e.render_to(out);
                out.push('?');
            }
            Type::List { elem, size } => {
                elem.render_to(out);
                match size {
                    Some(n) if *n != 0 => {
                        use std::fmt::Write;
                        let _ = write!(out, "[{n}]");
                    }
                    _ => out.push_str("[]"),
                }
            }
            Type::CustomClass(c) => {
                out.push_str("__torch__.torch.classes.");
                out.push_str(c);
            }
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.render_to(&mut s);
        f.write_str(&s)
    }
}

/// An alias annotation: `a`, `a!`, `a|b`, `a -> *`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Annotation {
    /// The alias set before `->`.
    pub alias_set: Vec<String>,
    /// `!`: the argument is written to.
    pub is_write: bool,
    /// The alias set after `->` (`*` for a wildcard).
    pub alias_set_after: Vec<String>,
}

impl Annotation {
    /// Parse the text between the parentheses of `Tensor(...)`.
    pub fn parse(ann: &str) -> Result<Annotation> {
        let bad = || SchemaError(format!("unrecognized alias annotation `{ann}`"));
        let (before, after) = match ann.split_once(" -> ") {
            Some((b, a)) => (b, Some(a)),
            None => (ann, None),
        };
        let (before, is_write) = match before.strip_suffix('!') {
            Some(b) => (b, true),
            None => (before, false),
        };
        let is_alias = |s: &str| s.len() == 1 && s.as_bytes()[0].is_ascii_lowercase();
        let alias_set: Vec<String> = before.split('|').map(str::to_string).collect();
        if !alias_set.iter().all(|s| is_alias(s)) {
            return Err(bad());
        }
        let alias_set_after: Vec<String> = match after {
            None => Vec::new(),
            Some("*") => vec!["*".to_string()],
            Some(a) => {
                let v: Vec<String> = a.split('|').map(str::to_string).collect();
                if !v.iter().all(|s| is_alias(s)) {
                    return Err(bad());
                }
                v
            }
        };
        if is_write && alias_set.len() > 1 {
            return err(format!(
                "alias set larger than 1 is not mutable, got {ann} instead."
            ));
        }
        if before.len() > 1 && alias_set_after.len() > 1 {
            return err(format!(
                "before alias set and after alias set cannot be larger than 1 at the same time, got {ann} instead."
            ));
        }
        let r = Annotation {
            alias_set,
            is_write,
            alias_set_after,
        };
        let mut printed = String::with_capacity(ann.len());
        r.render_to(&mut printed);
        if printed != ann {
            return Err(bad());
        }
        Ok(r)
    }
}

impl Annotation {
    /// Append the annotation as written (without parentheses) to `out`.
    pub fn render_to(&self, out: &mut String) {
        for (i, a) in self.alias_set.iter().enumerate() {
            if i > 0 {
                out.push('|');
            }
            out.push_str(a);
        }
        if self.is_write {
            out.push('!');
        }
        if !self.alias_set_after.is_empty() {
            out.push_str(" -> ");
            for (i, a) in self.alias_set_after.iter().enumerate() {
                if i > 0 {
                    out.push('|');
                }
                out.push_str(a);
            }
        }
    }
}

impl fmt::Display for Annotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.render_to(&mut s);
        f.write_str(&s)
    }
}

/// Split `Tensor(a!)?` into the type text `Tensor?` and the annotation.
fn split_annotation(type_and_annot: &str) -> Result<(String, Option<Annotation>)> {
    if let Some(rest) = type_and_annot.strip_prefix("Tensor(") {
        let close = rest.find(')').ok_or_else(|| {
            SchemaError(format!("unclosed alias annotation in `{type_and_annot}`"))
        })?;
        let suffix = &rest[close + 1..];
        if !["", "?", "[]"].contains(&suffix) {
            return err(format!(
                "unrecognized alias analysis form with Tensor: `{type_and_annot}`"
            ));
        }
        let ann = Annotation::parse(&rest[..close])?;
        Ok((format!("Tensor{suffix}"), Some(ann)))
    } else {
        Ok((type_and_annot.to_string(), None))
    }
}

/// The type with the annotation after its first `Tensor`: `Tensor(a!)[]`.
fn render_annotated_type(out: &mut String, ty: &Type, ann: &Option<Annotation>) {
    let start = out.len();
    ty.render_to(out);
    if let Some(a) = ann
        && let Some(i) = out[start..].find("Tensor")
    {
        let at = start + i + "Tensor".len();
        let mut inner = String::with_capacity(8);
        inner.push('(');
        a.render_to(&mut inner);
        inner.push(')');
        out.insert_str(at, &inner);
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A function argument: `Tensor(a!) self`, `int[2] stride=1`, `Scalar alpha=1`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Argument {
    /// The argument name.
    pub name: String,
    /// Its type.
    pub ty: Type,
    /// The default, verbatim (`1`, `None`, `[0,1]`, `"mean"`).
    pub default: Option<String>,
    /// The alias annotation of a tensor argument.
    pub annotation: Option<Annotation>,
}

impl Argument {
    /// Parse one argument; the result prints back to exactly `arg`.
    pub fn parse(arg: &str) -> Result<Argument> {
        let r = Self::parse_unchecked(arg)?;
        if r.to_string() != arg {
            return err(format!("argument `{arg}` does not round-trip (got `{r}`)"));
        }
        Ok(r)
    }

    // The whole schema's round trip is checked once at the top.
    fn parse_unchecked(arg: &str) -> Result<Argument> {
        let (decl, default) = match arg.split_once('=') {
            Some((d, def)) => {
                if def.contains('=') && !def.starts_with('"') {
                    return err(format!("illegal argument with default value: `{arg}`"));
                }
                (d, Some(def.to_string()))
            }
            None => (arg, None),
        };
        let Some((type_and_annot, name)) = decl.rsplit_once(' ') else {
            return err(format!("illegal argument `{arg}`: expected `TYPE NAME`"));
        };
        if !is_identifier(name) {
            return err(format!("illegal argument name `{name}` in `{arg}`"));
        }
        if default.as_deref() == Some("") {
            return err(format!("empty default value in `{arg}`"));
        }
        let (type_s, annotation) = split_annotation(type_and_annot)?;
        let ty = Type::parse_inner(&type_s)?;
        Ok(Argument {
            name: name.to_string(),
            ty,
            default,
            annotation,
        })
    }

    /// Annotated as written (`!`).
    pub fn is_write(&self) -> bool {
        self.annotation.as_ref().is_some_and(|a| a.is_write)
    }
}

impl Argument {
    /// Append the argument as written to `out`.
    pub fn render_to(&self, out: &mut String) {
        render_annotated_type(out, &self.ty, &self.annotation);
        out.push(' ');
        out.push_str(&self.name);
        if let Some(d) = &self.default {
            out.push('=');
            out.push_str(d);
        }
    }
}

impl fmt::Display for Argument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.render_to(&mut s);
        f.write_str(&s)
    }
}

/// A return: `Tensor`, `Tensor(a!)`, `Tensor values`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Return {
    /// The declared name, if any.
    pub name: Option<String>,
    /// Its type.
    pub ty: Type,
    /// The alias annotation.
    pub annotation: Option<Annotation>,
}

impl Return {
    /// Parse one return; the result prints back to exactly `ret`.
    pub fn parse(ret: &str) -> Result<Return> {
        let r = Self::parse_unchecked(ret)?;
        if r.to_string() != ret {
            return err(format!("return `{ret}` does not round-trip (got `{r}`)"));
        }
        Ok(r)
    }

    fn parse_unchecked(ret: &str) -> Result<Return> {
        let (type_and_annot, name) = match ret.rsplit_once(' ') {
            // `Tensor(a -> *)` has spaces inside the annotation: only a trailing identifier is a name.
            Some((t, n)) if is_identifier(n) && !t.ends_with("->") => (t, Some(n.to_string())),
            _ => (ret, None),
        };
        let (type_s, annotation) = split_annotation(type_and_annot)?;
        let ty = Type::parse_inner(&type_s)?;
        Ok(Return {
            name,
            ty,
            annotation,
        })
    }

    /// Annotated as written (`!`).
    pub fn is_write(&self) -> bool {
        self.annotation.as_ref().is_some_and(|a| a.is_write)
    }
}

impl Return {
    /// Append the return as written to `out`.
    pub fn render_to(&self, out: &mut String) {
        render_annotated_type(out, &self.ty, &self.annotation);
        if let Some(n) = &self.name {
            out.push(' ');
            out.push_str(n);
        }
    }
}

impl fmt::Display for Return {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.render_to(&mut s);
        f.write_str(&s)
    }
}

/// `dtype`, `layout`, `device`, `pin_memory`, grouped as torchgen groups them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub struct TensorOptionsArguments {
    pub dtype: Argument,
    pub layout: Argument,
    pub device: Argument,
    pub pin_memory: Argument,
}

impl TensorOptionsArguments {
    /// The four arguments in order.
    pub fn all(&self) -> [&Argument; 4] {
        [&self.dtype, &self.layout, &self.device, &self.pin_memory]
    }
}

/// The argument list, in torchgen's canonical grouping.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Arguments {
    /// Positional arguments before `self` (`where.self(Tensor condition, Tensor self, ...)`).
    pub pre_self_positional: Vec<Argument>,
    /// The argument named `self`, if positional.
    pub self_arg: Option<Argument>,
    /// Positional arguments after `self` (all positional ones when there is no `self`).
    pub post_self_positional: Vec<Argument>,
    /// Keyword-only arguments before the tensor options.
    pub pre_tensor_options_kwarg_only: Vec<Argument>,
    /// `dtype, layout, device, pin_memory` when all four follow each other.
    pub tensor_options: Option<TensorOptionsArguments>,
    /// Keyword-only arguments after the tensor options (usually `memory_format`).
    pub post_tensor_options_kwarg_only: Vec<Argument>,
    /// Keyword-only mutable arguments: the out= arguments.
    pub out: Vec<Argument>,
}

/// Split at top-level `", "`, ignoring separators inside brackets, parentheses and strings.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut in_str, mut start) = (0i32, false, 0usize);
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => in_str = !in_str,
            b'(' | b'[' if !in_str => depth += 1,
            b')' | b']' if !in_str => depth -= 1,
            b',' if !in_str && depth == 0 && bytes.get(i + 1) == Some(&b' ') => {
                parts.push(&s[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&s[start..]);
    parts
}

/// The arguments of a schema by where they stand: before `*`, after it, and out= ones.
#[derive(Default)]
struct ArgumentGroups {
    positional: Vec<Argument>,
    kwarg_only: Vec<Argument>,
    out: Vec<Argument>,
}

impl ArgumentGroups {
    fn parse(args: &str) -> Result<ArgumentGroups> {
        #[derive(PartialEq)]
        enum Acc {
            Positional,
            Kwarg,
            Out,
        }
        let mut g = ArgumentGroups::default();
        let mut acc = Acc::Positional;
        if args.is_empty() {
            return Ok(g);
        }
        for arg in split_top_level(args) {
            if arg.is_empty() {
                return err("empty argument (stray `, `)");
            }
            if arg == "*" {
                if acc != Acc::Positional {
                    return err("invalid syntax: kwarg-only specifier * can only occur once");
                }
                acc = Acc::Kwarg;
                continue;
            }
            let parg = Argument::parse_unchecked(arg)?;
            if parg.is_write() {
                if acc == Acc::Kwarg {
                    acc = Acc::Out;
                }
            } else if acc == Acc::Out {
                return err(format!(
                    "non-mutable argument '{}' cannot follow mutable out arguments",
                    parg.name
                ));
            }
            match acc {
                Acc::Positional => g.positional.push(parg),
                Acc::Kwarg => g.kwarg_only.push(parg),
                Acc::Out => g.out.push(parg),
            }
        }
        Ok(g)
    }
}

impl Arguments {
    /// Parse the text between the parentheses of a schema.
    pub fn parse(args: &str) -> Result<Arguments> {
        let ArgumentGroups {
            mut positional,
            kwarg_only,
            out,
        } = ArgumentGroups::parse(args)?;
        let mut r = Arguments::default();
        match positional.iter().position(|a| a.name == "self") {
            Some(i) => {
                r.post_self_positional = positional.split_off(i + 1);
                r.self_arg = positional.pop();
                r.pre_self_positional = positional;
            }
            None => r.post_self_positional = positional,
        }
        r.add_kwarg_only(&kwarg_only)?;
        r.out = out;
        if r.pre_self_positional.iter().any(Argument::is_write) {
            return err(
                "mutable pre_self_positional arguments are not currently supported in the schema",
            );
        }
        Ok(r)
    }

    /// The keyword-only arguments, with `dtype, layout, device, pin_memory` as tensor options.
    fn add_kwarg_only(&mut self, kwarg_only: &[Argument]) -> Result<()> {
        let is_opt = |a: &Argument, name: &str, ty: BaseTy| {
            a.name == name
                && (a.ty == Type::Base(ty) || a.ty == Type::Optional(Box::new(Type::Base(ty))))
        };
        let mut i = 0;
        while i < kwarg_only.len() {
            let w = &kwarg_only[i..];
            if w.len() >= 4
                && is_opt(&w[0], "dtype", BaseTy::ScalarType)
                && is_opt(&w[1], "layout", BaseTy::Layout)
                && is_opt(&w[2], "device", BaseTy::Device)
                && is_opt(&w[3], "pin_memory", BaseTy::Bool)
            {
                if self.tensor_options.is_some() {
                    return err("tensor options arguments can only appear once");
                }
                self.tensor_options = Some(TensorOptionsArguments {
                    dtype: w[0].clone(),
                    layout: w[1].clone(),
                    device: w[2].clone(),
                    pin_memory: w[3].clone(),
                });
                i += 4;
                continue;
            }
            if self.tensor_options.is_some() {
                self.post_tensor_options_kwarg_only.push(w[0].clone());
            } else {
                self.pre_tensor_options_kwarg_only.push(w[0].clone());
            }
            i += 1;
        }
        Ok(())
    }

    /// Positional arguments in order.
    pub fn flat_positional(&self) -> impl Iterator<Item = &Argument> {
        self.pre_self_positional
            .iter()
            .chain(self.self_arg.iter())
            .chain(self.post_self_positional.iter())
    }

    /// Keyword-only arguments except the out= ones.
    pub fn flat_kwarg_only(&self) -> impl Iterator<Item = &Argument> {
        self.pre_tensor_options_kwarg_only
            .iter()
            .chain(self.tensor_options.iter().flat_map(|t| t.all()))
            .chain(self.post_tensor_options_kwarg_only.iter())
    }

    /// All arguments but out=.
    pub fn flat_non_out(&self) -> impl Iterator<Item = &Argument> {
        self.flat_positional().chain(self.flat_kwarg_only())
    }

    /// All arguments in schema order.
    pub fn flat_all(&self) -> impl Iterator<Item = &Argument> {
        self.flat_non_out().chain(self.out.iter())
    }

    /// torchgen's `Arguments.signature`: annotations (and, optionally, defaults) stripped,
    /// tensor options and out= arguments dropped.
    pub fn signature(&self, strip_default: bool) -> Arguments {
        let strip = |a: &Argument| Argument {
            name: a.name.clone(),
            ty: a.ty.clone(),
            default: if strip_default {
                None
            } else {
                a.default.clone()
            },
            annotation: None,
        };
        Arguments {
            pre_self_positional: self.pre_self_positional.iter().map(strip).collect(),
            self_arg: self.self_arg.as_ref().map(strip),
            post_self_positional: self.post_self_positional.iter().map(strip).collect(),
            pre_tensor_options_kwarg_only: self
                .pre_tensor_options_kwarg_only
                .iter()
                .chain(self.post_tensor_options_kwarg_only.iter())
                .map(strip)
                .collect(),
            tensor_options: None,
            post_tensor_options_kwarg_only: Vec::new(),
            out: Vec::new(),
        }
    }
}

impl Arguments {
    /// Append the argument list as written (without parentheses) to `out`.
    pub fn render_to(&self, out: &mut String) {
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !std::mem::take(&mut first) {
                out.push_str(", ");
            }
        };
        for a in self.flat_positional() {
            sep(out);
            a.render_to(out);
        }
        if self.flat_kwarg_only().next().is_some() || !self.out.is_empty() {
            sep(out);
            out.push('*');
        }
        for a in self.flat_kwarg_only().chain(self.out.iter()) {
            sep(out);
            a.render_to(out);
        }
    }
}

impl fmt::Display for Arguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.render_to(&mut s);
        f.write_str(&s)
    }
}

/// A whole operator schema.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FunctionSchema {
    /// `add.Tensor`
    pub name: OperatorName,
    /// The arguments.
    pub arguments: Arguments,
    /// The returns (empty for `()`).
    pub returns: Vec<Return>,
}

impl FunctionSchema {
    /// Parse `name(args) -> returns`; the result prints back to exactly `func`.
    pub fn parse(func: &str) -> Result<FunctionSchema> {
        let Some(open) = func.find('(') else {
            return err(format!(
                "invalid function schema `{func}`: expected `name(args) -> returns`"
            ));
        };
        let Some(arrow) = func.rfind(") -> ") else {
            return err(format!(
                "invalid function schema `{func}`: expected `) -> ` before the returns"
            ));
        };
        if arrow < open {
            return err(format!("invalid function schema `{func}`"));
        }
        let name = OperatorName::parse(&func[..open])?;
        let arguments = Arguments::parse(&func[open + 1..arrow])?;
        let returns = parse_returns(&func[arrow + 5..])?;
        let r = FunctionSchema {
            name,
            arguments,
            returns,
        };
        let mut printed = String::with_capacity(func.len());
        r.render_to(&mut printed);
        if printed != func {
            return err(format!(
                "schema `{func}` does not round-trip (got `{printed}`)"
            ));
        }
        Ok(r)
    }

    /// torchgen's `SchemaKind`.
    pub fn kind(&self) -> SchemaKind {
        let is_out = !self.arguments.out.is_empty();
        let is_scratch = self
            .arguments
            .out
            .iter()
            .any(|a| a.name.starts_with("_scratch_"));
        let is_mutable = self
            .arguments
            .post_self_positional
            .iter()
            .any(Argument::is_write);
        if self.name.name.inplace {
            SchemaKind::Inplace
        } else if is_scratch {
            SchemaKind::Scratch
        } else if is_out {
            SchemaKind::Out
        } else if is_mutable {
            SchemaKind::Mutable
        } else {
            SchemaKind::Functional
        }
    }

    /// Has out= arguments.
    pub fn is_out_fn(&self) -> bool {
        !self.arguments.out.is_empty()
    }

    /// The overload name contains `functional`.
    pub fn is_functional_fn(&self) -> bool {
        self.name.overload_name.contains("functional")
    }

    /// Some argument takes a `SymInt`.
    pub fn has_symint(&self) -> bool {
        self.arguments.flat_non_out().any(|a| a.ty.is_symint_like())
    }

    /// Schema order: positional, keyword-only, out.
    pub fn schema_order_arguments(&self) -> impl Iterator<Item = &Argument> {
        self.arguments.flat_all()
    }

    /// torchgen's `signature()`: the variant-independent form used to match in-place and out=
    /// variants with their functional entry (overload and in-place stripped, out= arguments and
    /// tensor options dropped, mutated inputs turned into returns, return names stripped).
    pub fn signature(&self, strip_default: bool) -> FunctionSchema {
        self.signature_with(strip_default, false, false)
    }

    /// `signature()` with the base name's `_copy` (or `_scatter`) suffix normalised, to pair
    /// views with their `{view}_copy` twin.
    pub fn view_signature(&self) -> FunctionSchema {
        self.signature_with(false, true, false)
    }

    /// The general form of [`FunctionSchema::signature`].
    pub fn signature_with(
        &self,
        strip_default: bool,
        strip_view_copy_name: bool,
        keep_return_names: bool,
    ) -> FunctionSchema {
        let mut base = self.name.name.base.clone();
        if strip_view_copy_name {
            if base.ends_with("_copy") {
                base = base.replace("_copy", "");
            } else if base.ends_with("_scatter") {
                base = base.replace("scatter", "inverse");
            }
        }
        let mut returns: Vec<Return> = self
            .returns
            .iter()
            .map(|r| Return {
                name: if keep_return_names {
                    r.name.clone()
                } else {
                    None
                },
                ty: r.ty.clone(),
                annotation: None,
            })
            .collect();
        let mutated = self
            .arguments
            .self_arg
            .iter()
            .chain(self.arguments.out.iter())
            .chain(self.arguments.post_self_positional.iter());
        for a in mutated {
            let Some(ann) = a.annotation.as_ref().filter(|a| a.is_write) else {
                continue;
            };
            if self
                .returns
                .iter()
                .any(|r| r.annotation.as_ref() == Some(ann))
            {
                continue;
            }
            returns.push(Return {
                name: keep_return_names.then(|| format!("{}_out", a.name)),
                ty: a.ty.clone(),
                annotation: None,
            });
        }
        let mut arguments = self.arguments.signature(strip_default);
        // torchgen's Note [bernoulli.p schema].
        if self.name.is("bernoulli.p") {
            for a in arguments.post_self_positional.iter_mut() {
                if a.name == "p" && a.default.is_none() {
                    a.default = Some("0.5".into());
                }
            }
        }
        FunctionSchema {
            name: OperatorName {
                name: BaseOperatorName {
                    base,
                    inplace: false,
                    dunder_method: self.name.name.dunder_method,
                    functional_overload: false,
                    namespace: None,
                },
                overload_name: String::new(),
            },
            arguments,
            returns,
        }
    }

    /// A borrowed key that compares and hashes like `signature_with(strip_default,
    /// strip_view_copy_name, false)` without building it: for grouping many functions by
    /// signature. (A key of a schema that already is a signature, with `strip_default`
    /// false, equals the key of the schema it came from.)
    pub fn signature_key(
        &self,
        strip_default: bool,
        strip_view_copy_name: bool,
    ) -> SignatureKey<'_> {
        let b = &self.name.name.base;
        let base = if strip_view_copy_name && b.ends_with("_copy") {
            std::borrow::Cow::Owned(b.replace("_copy", ""))
        } else if strip_view_copy_name && b.ends_with("_scatter") {
            std::borrow::Cow::Owned(b.replace("scatter", "inverse"))
        } else {
            std::borrow::Cow::Borrowed(b.as_str())
        };
        SignatureKey {
            schema: self,
            base,
            strip_default,
            bernoulli_p: self.name.is("bernoulli.p"),
        }
    }

    /// For each return, the name of the input it aliases (same annotation), if any.
    pub fn aliased_return_names(&self) -> Vec<Option<String>> {
        self.returns
            .iter()
            .map(|r| {
                self.arguments
                    .flat_all()
                    .find(|a| a.annotation.is_some() && a.annotation == r.annotation)
                    .map(|a| a.name.clone())
            })
            .collect()
    }
}

/// See [`FunctionSchema::signature_key`].
#[derive(Debug, Clone)]
pub struct SignatureKey<'a> {
    schema: &'a FunctionSchema,
    base: std::borrow::Cow<'a, str>,
    strip_default: bool,
    bernoulli_p: bool,
}

/// One element of a signature, as [`SignatureKey`] compares them.
#[derive(PartialEq, Eq)]
enum SigItem<'a> {
    Name(&'a str, bool),
    /// Group (0 before `self`, 1 `self`, 2 after), name, type, default.
    Positional(u8, &'a str, &'a Type, Option<&'a str>),
    KwargOnly(&'a str, &'a Type, Option<&'a str>),
    Return(&'a Type),
}

impl<'a> SignatureKey<'a> {
    fn items(&self) -> impl Iterator<Item = SigItem<'_>> {
        let s = self.schema;
        let a = &s.arguments;
        let default = move |arg: &'a Argument| {
            if self.strip_default {
                None
            } else {
                arg.default.as_deref()
            }
        };
        let positional = a
            .pre_self_positional
            .iter()
            .map(move |x| SigItem::Positional(0, &x.name, &x.ty, default(x)))
            .chain(
                a.self_arg
                    .iter()
                    .map(move |x| SigItem::Positional(1, &x.name, &x.ty, default(x))),
            )
            .chain(a.post_self_positional.iter().map(move |x| {
                let mut d = default(x);
                // torchgen's Note [bernoulli.p schema].
                if self.bernoulli_p && x.name == "p" && d.is_none() {
                    d = Some("0.5");
                }
                SigItem::Positional(2, &x.name, &x.ty, d)
            }));
        let kwargs = a
            .pre_tensor_options_kwarg_only
            .iter()
            .chain(a.post_tensor_options_kwarg_only.iter())
            .map(move |x| SigItem::KwargOnly(&x.name, &x.ty, default(x)));
        let mutated = a
            .self_arg
            .iter()
            .chain(a.out.iter())
            .chain(a.post_self_positional.iter())
            .filter(move |x| {
                x.annotation.as_ref().is_some_and(|ann| {
                    ann.is_write && !s.returns.iter().any(|r| r.annotation.as_ref() == Some(ann))
                })
            })
            .map(|x| SigItem::Return(&x.ty));
        std::iter::once(SigItem::Name(&self.base, s.name.name.dunder_method))
            .chain(positional)
            .chain(kwargs)
            .chain(s.returns.iter().map(|r| SigItem::Return(&r.ty)))
            .chain(mutated)
    }
}

impl SignatureKey<'_> {
    /// What `eq` compares first and `hash` hashes: the name and the numbers of positional
    /// and keyword arguments (equal keys have equal shapes; not the number of returns, which
    /// an out= function's written arguments add to).
    fn shape(&self) -> (&str, bool, usize, usize) {
        let s = self.schema;
        let a = &s.arguments;
        (
            &self.base,
            s.name.name.dunder_method,
            a.pre_self_positional.len()
                + usize::from(a.self_arg.is_some())
                + a.post_self_positional.len(),
            a.pre_tensor_options_kwarg_only.len() + a.post_tensor_options_kwarg_only.len(),
        )
    }
}

impl PartialEq for SignatureKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.shape() == other.shape() && self.items().eq(other.items())
    }
}

impl Eq for SignatureKey<'_> {}

impl std::hash::Hash for SignatureKey<'_> {
    /// The shape and the arguments' names and types, walked directly: consistent with `eq`
    /// (which also compares defaults and returns).
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.shape().hash(state);
        let a = &self.schema.arguments;
        let args = a
            .pre_self_positional
            .iter()
            .chain(&a.self_arg)
            .chain(&a.post_self_positional)
            .chain(&a.pre_tensor_options_kwarg_only)
            .chain(&a.post_tensor_options_kwarg_only);
        for x in args {
            x.name.hash(state);
            x.ty.hash(state);
        }
    }
}

/// Parse the returns: `()`, `Tensor`, `(Tensor a, Tensor b)`.
pub fn parse_returns(decl: &str) -> Result<Vec<Return>> {
    if decl == "()" {
        return Ok(Vec::new());
    }
    if decl.is_empty() {
        return err("missing returns after `->`");
    }
    let inner = if decl.starts_with('(') && decl.ends_with(')') {
        &decl[1..decl.len() - 1]
    } else {
        decl
    };
    split_top_level(inner)
        .into_iter()
        .map(Return::parse)
        .collect()
}

impl FunctionSchema {
    /// Append the schema as written to `out` (what `Display` prints, built without `fmt`).
    pub fn render_to(&self, out: &mut String) {
        self.name.render_to(out);
        out.push('(');
        self.arguments.render_to(out);
        out.push_str(") -> ");
        if self.returns.len() == 1 {
            self.returns[0].render_to(out);
        } else {
            out.push('(');
            for (i, r) in self.returns.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                r.render_to(out);
            }
            out.push(')');
        }
    }

    /// The schema text (same as `to_string()`, faster).
    pub fn render(&self) -> String {
        let mut s = String::with_capacity(128);
        self.render_to(&mut s);
        s
    }
}

impl fmt::Display for FunctionSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(s: &str) -> FunctionSchema {
        let p = FunctionSchema::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(p.to_string(), s);
        p
    }

    #[test]
    fn round_trips_and_kinds() {
        let s = rt("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
        assert_eq!(s.kind(), SchemaKind::Functional);
        assert_eq!(s.name.overload_name, "Tensor");
        let s = rt(
            "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
        );
        assert_eq!(s.kind(), SchemaKind::Out);
        assert_eq!(s.arguments.out.len(), 1);
        let s = rt("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
        assert!(s.name.name.inplace && s.name.name.dunder_method);
        assert_eq!(s.name.name.base, "and");
        let s = rt(
            "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
        );
        assert_eq!(s.returns[1].name.as_deref(), Some("indices"));
        let s = rt(
            "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
        );
        assert!(s.arguments.tensor_options.is_some());
        assert_eq!(s.arguments.post_tensor_options_kwarg_only.len(), 1);
        let s = rt(
            "_amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, Tensor(b!) found_inf, Tensor inv_scale) -> ()",
        );
        assert_eq!(s.kind(), SchemaKind::Inplace);
        let s =
            rt("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]");
        assert_eq!(
            s.arguments
                .self_arg
                .as_ref()
                .unwrap()
                .annotation
                .as_ref()
                .unwrap()
                .alias_set_after,
            vec!["*"]
        );
        let s = rt(
            "_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
        );
        assert!(s.name.name.functional_overload);
        rt("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor");
        rt(
            "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0) -> Tensor",
        );
        rt(
            "foo(Tensor?[] indices, bool[3] mask, str reduce=\"mean\", Generator? generator=None) -> Tensor",
        );
    }

    #[test]
    fn signature_matches_variants() {
        let f = rt("mul.Tensor(Tensor self, Tensor other) -> Tensor");
        let i = rt("mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
        let o = rt("mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
        assert_eq!(f.signature(true), i.signature(true));
        assert_eq!(f.signature(true), o.signature(true));
        let m = rt("_fused(Tensor self, Tensor(a!) running_min, float c) -> Tensor output");
        assert_eq!(m.kind(), SchemaKind::Mutable);
        assert_eq!(
            m.signature(false).to_string(),
            "_fused(Tensor self, Tensor running_min, float c) -> (Tensor, Tensor)"
        );
    }

    #[test]
    fn signature_key_agrees_with_signature() {
        use std::collections::HashSet;
        let schemas = [
            "mul.Tensor(Tensor self, Tensor other) -> Tensor",
            "mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
            "mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
            "mul.Scalar(Tensor self, Scalar other=1) -> Tensor",
            "mul.Scalar2(Tensor self, Scalar other=2) -> Tensor",
            "_fused(Tensor self, Tensor(a!) running_min, float c) -> Tensor output",
            "_fused.out(Tensor self, Tensor(a!) running_min, float c, *, Tensor(b!) out) -> Tensor(b!)",
            "bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor",
            "bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)",
            "bernoulli.float(Tensor self, float p, *, Generator? generator=None) -> Tensor",
            "expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor",
            "expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
            "slice_scatter(Tensor self, Tensor src, int dim=0) -> Tensor",
            "slice_inverse(Tensor(a) self, Tensor src, int dim=0) -> Tensor(a)",
            "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
            "empty.out(SymInt[] size, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
            "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
            "where.other(Tensor self, Tensor condition, Tensor other) -> Tensor",
            "__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
            "__and__.Tensor(Tensor self, Tensor other) -> Tensor",
            "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
        ];
        let parsed: Vec<FunctionSchema> = schemas.iter().map(|s| rt(s)).collect();
        for (strip, view) in [(false, false), (true, false), (false, true)] {
            let sigs: Vec<FunctionSchema> = parsed
                .iter()
                .map(|p| p.signature_with(strip, view, false))
                .collect();
            for i in 0..parsed.len() {
                for j in 0..parsed.len() {
                    let (ki, kj) = (
                        parsed[i].signature_key(strip, view),
                        parsed[j].signature_key(strip, view),
                    );
                    assert_eq!(
                        ki == kj,
                        sigs[i] == sigs[j],
                        "{} vs {}",
                        schemas[i],
                        schemas[j]
                    );
                    if !view {
                        // The key of a signature equals the key of its schema.
                        assert_eq!(
                            sigs[i].signature_key(false, false) == kj,
                            sigs[i] == sigs[j]
                        );
                    }
                }
            }
            let distinct: HashSet<_> = parsed
                .iter()
                .map(|p| p.signature_key(strip, view))
                .collect();
            let distinct_sigs: HashSet<_> = sigs.iter().collect();
            assert_eq!(distinct.len(), distinct_sigs.len());
        }
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "add(Tensor self",
            "add(Tensor) -> Tensor",
            "add(Tensr self) -> Tensor",
            "add(Tensor(A!) self) -> Tensor",
            "add(Tensor self,  Tensor other) -> Tensor",
            "add_out(Tensor self) -> Tensor",
            "add(Tensor self, *, *, int x) -> Tensor",
            "add(Tensor self, *, Tensor(a!) out, int x) -> Tensor(a!)",
            "add(Tensor self) -> ",
            "(Tensor self) -> Tensor",
            "add(int[x] self) -> Tensor",
        ] {
            assert!(FunctionSchema::parse(bad).is_err(), "accepted {bad}");
        }
    }
}
