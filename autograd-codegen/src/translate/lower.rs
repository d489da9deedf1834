//! Typing and lowering: a C++ formula's syntax tree becomes Rust text in the project's
//! formula dialect.
//!
//! Each node gets a [`Ty`] and Rust code. Calls are resolved as C++ resolves overloads: every
//! candidate of the name (operators by their C++ API names, declared helpers), the arguments'
//! conversions to the parameters' types ranked (exact, promotion, conversion), the cheapest
//! candidate taken; the parameters left out take their defaults. Operators C++ writes as
//! operators (`grad * other`, `self < 3.0`, `-x`) resolve as the tensor methods ATen's
//! `TensorOperators.h` calls. Conjugation and real-to-complex handling are the identity.

use super::callees::{CParam, Callee, Callees, Origin};
use super::syntax::{Expr, ExprKind, TemplateArg, TypeName};
use super::types::{Ty, from_cpp, list_of, opt, unqualified};
use std::collections::HashMap;

/// A lowered value.
#[derive(Debug, Clone)]
pub struct Val {
    /// Rust code.
    pub code: String,
    /// Its type.
    pub ty: Ty,
    /// A variable (borrowable; cloned where an owned value is needed).
    pub place: bool,
    /// An optional tensor bound by reference (`Option<&Variable<T>>`: a forward formula's
    /// optional argument), not owned (`Option<Variable<T>>`).
    pub by_ref: bool,
    /// The elements of a brace list.
    pub elems: Vec<Val>,
}

impl Val {
    /// A temporary value of type `ty`.
    pub(super) fn new(code: impl Into<String>, ty: Ty) -> Self {
        Val {
            code: code.into(),
            ty,
            place: false,
            by_ref: false,
            elems: Vec::new(),
        }
    }

    /// The value as an owned Rust value (a variable of a non-`Copy` type is cloned).
    pub fn owned(&self) -> String {
        let copy = matches!(
            self.ty,
            Ty::Int | Ty::Float | Ty::Bool | Ty::Scalar | Ty::ScalarType | Ty::Layout
        );
        if self.place && !copy {
            format!("{}.clone()", self.code)
        } else {
            self.code.clone()
        }
    }
}

/// A formula that cannot be lowered: where (byte offset in the formula) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LowerError {
    /// Byte offset in the formula.
    pub offset: usize,
    /// The reason.
    pub message: String,
}

pub(super) fn fail<T>(offset: usize, message: impl Into<String>) -> Result<T, LowerError> {
    Err(LowerError {
        offset,
        message: message.into(),
    })
}

/// Lowers the formulas of one entry.
pub struct Lowerer<'a> {
    /// What formulas can call.
    pub callees: &'a Callees,
    /// The formula's variables and their types.
    pub vars: HashMap<String, Ty>,
    /// `?` after every call (the backend's kernels and the helpers return `Result`).
    pub fallible: bool,
    /// Optional tensors bound by reference (`Option<&Variable<T>>`).
    pub by_ref: Vec<String>,
    /// `Scalar` is a plain number (`f64`), not `autograd::types::Scalar`.
    pub scalar_number: bool,
}

/// An argument code wrapped for a `&[T]` parameter: `&x[..]`.
pub(super) fn slice_of(code: &str) -> String {
    let simple = code
        .chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    if simple || code.ends_with(')') || code.ends_with(']') && !code.starts_with('&') {
        format!("&{code}[..]")
    } else {
        format!("&({code})[..]")
    }
}

impl Lowerer<'_> {
    /// `?` when fallible.
    pub(super) fn q(&self) -> &'static str {
        if self.fallible { "?" } else { "" }
    }

    /// Lower an expression.
    pub fn lower(&self, e: &Expr) -> Result<Val, LowerError> {
        match &e.kind {
            ExprKind::Name(n) => self.name(n, e.offset),
            ExprKind::Int(s) => Ok(Val::new(s.clone(), Ty::Int)),
            ExprKind::Float(s) => Ok(Val::new(float_lit(s), Ty::Float)),
            ExprKind::Str(s) => Ok(Val::new(s.clone(), Ty::Str)),
            ExprKind::Template(t) => fail(e.offset, format!("`{t}` is not a value")),
            ExprKind::Call(callee, args) => self.call(callee, args, e.offset),
            ExprKind::Member(_, name, _) => {
                fail(e.offset, format!("member `{name}` read without a call"))
            }
            ExprKind::Index(obj, idx) => self.index(obj, idx, e.offset),
            ExprKind::Brace(items) => {
                let elems = items
                    .iter()
                    .map(|x| self.lower(x))
                    .collect::<Result<Vec<_>, _>>()?;
                let tys = elems.iter().map(|v| v.ty.clone()).collect();
                let mut v = Val::new("", Ty::Brace(tys));
                v.elems = elems;
                Ok(v)
            }
            ExprKind::Unary(op, x) => self.unary(op, x, e.offset),
            ExprKind::Binary(op, l, r) => self.binary(op, l, r, e.offset),
            ExprKind::Cond(c, a, b) => self.cond(c, a, b, e.offset),
            ExprKind::Lambda(..) => fail(e.offset, "a lambda is only allowed as `fmap`'s argument"),
        }
    }

    fn name(&self, n: &str, offset: usize) -> Result<Val, LowerError> {
        if let Some(t) = self.vars.get(n) {
            let mut v = Val::new(n, t.clone());
            v.place = true;
            v.by_ref = self.by_ref.iter().any(|b| b == n);
            return Ok(v);
        }
        if let Some(v) = constant(n) {
            return Ok(v);
        }
        if let Some(t) = self.callees.constants.get(n) {
            return Ok(Val::new(n, t.clone()));
        }
        fail(offset, format!("unknown name `{n}`"))
    }

    fn index(&self, obj: &Expr, idx: &Expr, offset: usize) -> Result<Val, LowerError> {
        let o = self.lower(obj)?;
        let i = self.lower(idx)?;
        if i.ty != Ty::Int {
            return fail(idx.offset, format!("index of type {}", i.ty.show()));
        }
        let elem = match &o.ty {
            Ty::OptTensorList => Ty::OptTensor,
            Ty::TensorList => Ty::Tensor,
            Ty::IntList => Ty::Int,
            Ty::FloatList => Ty::Float,
            Ty::BoolArray(_) => Ty::Bool,
            other => return fail(offset, format!("`[]` on a value of type {}", other.show())),
        };
        let idx = if i.code.chars().all(|c| c.is_ascii_digit()) {
            i.code
        } else {
            format!("({}) as usize", i.code)
        };
        let mut v = Val::new(format!("{}[{idx}]", o.code), elem);
        v.place = o.place;
        Ok(v)
    }

    fn unary(&self, op: &str, x: &Expr, offset: usize) -> Result<Val, LowerError> {
        let v = self.lower(x)?;
        match (op, &v.ty) {
            ("+", _) => Ok(v),
            ("*", Ty::Opt(inner)) => Ok(Val::new(
                format!("required({}){}", v.owned(), self.q()),
                (**inner).clone(),
            )),
            ("-", t) if t.is_tensor() => self.method_call(v, "neg", Vec::new(), offset),
            ("-", t) if t.is_number() => {
                let simple = v
                    .code
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_');
                let code = if simple {
                    format!("-{}", v.code)
                } else {
                    format!("(-{})", v.code)
                };
                Ok(Val::new(code, v.ty.clone()))
            }
            ("!", Ty::Bool) => Ok(Val::new(format!("(!{})", v.code), Ty::Bool)),
            ("!", t) if t.is_tensor() => self.method_call(v, "logical_not", Vec::new(), offset),
            _ => fail(offset, format!("`{op}` on a value of type {}", v.ty.show())),
        }
    }

    fn cond(&self, c: &Expr, a: &Expr, b: &Expr, offset: usize) -> Result<Val, LowerError> {
        let c = self.lower(c)?;
        if c.ty != Ty::Bool {
            return fail(offset, format!("condition of type {}", c.ty.show()));
        }
        let (a, b) = (self.lower(a)?, self.lower(b)?);
        let Some(ty) = unify(&a.ty, &b.ty) else {
            return fail(
                offset,
                format!("branches of types {} and {}", a.ty.show(), b.ty.show()),
            );
        };
        let (mut ca, mut cb) = (self.convert_owned(&a, &ty), self.convert_owned(&b, &ty));
        if ty == Ty::ScalarType {
            // A dtype is the schema's enum (`*dtype`) or a tensor's name
            // (`self.scalar_type()`): the branches meet as names.
            (ca, cb) = (self.dtype_name(&ca), self.dtype_name(&cb));
        }
        Ok(Val::new(
            format!(
                "(if {} {{ {} }} else {{ {} }})",
                bare(&c.code),
                bare(&ca),
                bare(&cb)
            ),
            ty,
        ))
    }

    /// `v` as an owned value of the unified type `ty` (`Some(x)` for a tensor meeting an
    /// undefined one, `None` for `nullopt`, a brace list as a list).
    fn convert_owned(&self, v: &Val, ty: &Ty) -> String {
        match (&v.ty, ty) {
            (Ty::Tensor, Ty::OptTensor) => format!("Some({})", v.owned()),
            (Ty::Nullopt, _) => "None".into(),
            (Ty::Opt(_), _) | (Ty::OptTensor, _) => v.owned(),
            (t, Ty::Opt(_)) if t != ty => format!("Some({})", v.owned()),
            (Ty::Int, Ty::Float) => as_f64(&v.code),
            (Ty::Tuple(ts), Ty::Tuple(us)) if ts != us => {
                let parts: Vec<String> = ts
                    .iter()
                    .zip(us)
                    .enumerate()
                    .map(|(i, (t, u))| {
                        let e = Val::new(format!("__t.{i}"), t.clone());
                        self.convert_owned(&e, u)
                    })
                    .collect();
                format!("{{ let __t = {}; ({},) }}", v.owned(), parts.join(", "))
            }
            (Ty::Brace(_), _) => self.brace_owned(v, ty),
            _ => v.owned(),
        }
    }

    fn brace_owned(&self, v: &Val, ty: &Ty) -> String {
        let parts: Vec<String> = v
            .elems
            .iter()
            .map(|e| match ty {
                Ty::TensorList => e.owned(),
                Ty::OptTensorList => self.convert_owned(e, &Ty::OptTensor),
                _ => e.code.clone(),
            })
            .collect();
        match ty {
            Ty::TensorList | Ty::OptTensorList => format!("vec![{}]", parts.join(", ")),
            _ if parts.is_empty() => "[0_i64; 0]".into(),
            _ => format!("[{}]", parts.join(", ")),
        }
    }

    fn binary(
        &self,
        op: &'static str,
        l: &Expr,
        r: &Expr,
        offset: usize,
    ) -> Result<Val, LowerError> {
        let (a, b) = (self.lower(l)?, self.lower(r)?);
        if a.ty.is_tensor() {
            let m = tensor_op_method(op).ok_or_else(|| LowerError {
                offset,
                message: format!("`{op}` on tensors"),
            })?;
            return self.method_call(a, m, vec![b], offset);
        }
        if b.ty.is_tensor() {
            return self.scalar_tensor_op(op, a, b, offset);
        }
        self.number_op(op, a, b, offset)
    }

    /// `scalar OP tensor`, as ATen's operators compute it.
    fn scalar_tensor_op(&self, op: &str, a: Val, b: Val, offset: usize) -> Result<Val, LowerError> {
        let flipped = match op {
            "+" => "add",
            "*" => "mul",
            "&" => "bitwise_and",
            "|" => "bitwise_or",
            "^" => "bitwise_xor",
            "<" => "gt",
            "<=" => "ge",
            ">" => "lt",
            ">=" => "le",
            "==" => "eq",
            "!=" => "ne",
            _ => "",
        };
        if !flipped.is_empty() {
            return self.method_call(b, flipped, vec![a], offset);
        }
        let m = match op {
            "-" => "sub",
            "/" => "div",
            "%" => "remainder",
            _ => return fail(offset, format!("`{op}` with a tensor on the right")),
        };
        // empty_like(b).fill_(a).OP_(b): a tensor of `a` in `b`'s shape, then OP.
        let full = self.function_call("full_like", vec![b.clone(), a], offset)?;
        self.method_call(full, m, vec![b], offset)
    }

    fn number_op(&self, op: &str, a: Val, b: Val, offset: usize) -> Result<Val, LowerError> {
        let numeric = |t: &Ty| t.is_number();
        let same_enum = a.ty == b.ty && matches!(a.ty, Ty::ScalarType | Ty::Layout | Ty::Device);
        let logical = matches!(op, "&&" | "||");
        if logical {
            if a.ty != Ty::Bool || b.ty != Ty::Bool {
                return fail(
                    offset,
                    format!("`{op}` on {} and {}", a.ty.show(), b.ty.show()),
                );
            }
            return Ok(Val::new(format!("({} {op} {})", a.code, b.code), Ty::Bool));
        }
        if same_enum && matches!(op, "==" | "!=") {
            return Ok(Val::new(format!("({} {op} {})", a.code, b.code), Ty::Bool));
        }
        if !(numeric(&a.ty) && numeric(&b.ty)) {
            return fail(
                offset,
                format!("`{op}` on {} and {}", a.ty.show(), b.ty.show()),
            );
        }
        let float = |t: &Ty| matches!(t, Ty::Float | Ty::Scalar);
        let ty = if float(&a.ty) || float(&b.ty) {
            Ty::Float
        } else if a.ty == Ty::Bool && b.ty == Ty::Bool {
            Ty::Bool
        } else {
            Ty::Int
        };
        let conv = |v: &Val| match (&v.ty, &ty) {
            (Ty::Scalar, _) => self.scalar_value(&v.code),
            (Ty::Int | Ty::Bool, Ty::Float) => as_f64(&v.code),
            (Ty::Bool, Ty::Int) => format!("i64::from({})", v.code),
            _ => v.code.clone(),
        };
        let rty = if matches!(op, "<" | ">" | "<=" | ">=" | "==" | "!=") {
            Ty::Bool
        } else {
            ty.clone()
        };
        Ok(Val::new(format!("({} {op} {})", conv(&a), conv(&b)), rty))
    }

    /// A call: builtins first, then the callees of the name.
    fn call(&self, callee: &Expr, args: &[Expr], offset: usize) -> Result<Val, LowerError> {
        match &callee.kind {
            ExprKind::Member(recv, name, arrow) => {
                self.member_call(recv, name, *arrow, args, offset)
            }
            ExprKind::Template(t) => self.template_call(t, args, offset),
            ExprKind::Name(n) => {
                if let Some(v) = self.builtin(n, args, offset)? {
                    return Ok(v);
                }
                let vals = self.lower_args(args)?;
                self.named_call(n, vals, offset)
            }
            _ => fail(offset, "only names and members can be called"),
        }
    }

    pub(super) fn lower_args(&self, args: &[Expr]) -> Result<Vec<Val>, LowerError> {
        args.iter().map(|a| self.lower(a)).collect()
    }

    /// `at::name(..)` (operators) or `name(..)` (helpers and operators).
    fn named_call(&self, n: &str, vals: Vec<Val>, offset: usize) -> Result<Val, LowerError> {
        let (qualified, base) = match n.strip_prefix("::").unwrap_or(n).rsplit_once("::") {
            Some((q, b)) => (Some(q), b),
            None => (None, n),
        };
        if matches!(qualified, Some(q) if !matches!(q, "at" | "torch" | "at::native" | "c10" | "std"))
        {
            return fail(offset, format!("unknown namespace in `{n}`"));
        }
        let mut cands: Vec<&Callee> = Vec::new();
        if qualified.is_none() {
            cands.extend(self.callees.helpers.get(base).into_iter().flatten());
        }
        cands.extend(self.callees.functions.get(base).into_iter().flatten());
        if cands.is_empty() {
            return fail(
                offset,
                format!("`{n}` is neither an operator of the schemas nor a declared helper"),
            );
        }
        self.resolve(n, &cands, vals, offset)
    }

    /// A free operator by name (the operators' own lowering uses it).
    pub(super) fn function_call(
        &self,
        n: &str,
        vals: Vec<Val>,
        offset: usize,
    ) -> Result<Val, LowerError> {
        let cands: Vec<&Callee> = self
            .callees
            .functions
            .get(n)
            .into_iter()
            .flatten()
            .collect();
        if cands.is_empty() {
            return fail(offset, format!("the operator `{n}` is not in the schemas"));
        }
        self.resolve(n, &cands, vals, offset)
    }

    /// `recv.name(args)` as a tensor method.
    pub(super) fn method_call(
        &self,
        recv: Val,
        name: &str,
        args: Vec<Val>,
        offset: usize,
    ) -> Result<Val, LowerError> {
        let c = self.callees;
        let mut cands: Vec<&Callee> = c.methods.get(name).into_iter().flatten().collect();
        if cands.is_empty() {
            // A method the schemas lack may be a declared helper taking the tensor first.
            cands.extend(c.helpers.get(name).into_iter().flatten());
        }
        if cands.is_empty() {
            let m = format!("`Tensor::{name}` is neither a method of the schemas nor a helper");
            return fail(offset, m);
        }
        let mut vals = vec![recv];
        vals.extend(args);
        self.resolve(&format!("Tensor::{name}"), &cands, vals, offset)
    }

    /// The cheapest candidate for `vals`, called.
    fn resolve(
        &self,
        what: &str,
        cands: &[&Callee],
        vals: Vec<Val>,
        offset: usize,
    ) -> Result<Val, LowerError> {
        let mut best: Option<(u32, &Callee, Vec<String>)> = None;
        let mut ties = 0;
        for c in cands {
            let Some((cost, codes)) = self.bind(c, &vals) else {
                continue;
            };
            match &best {
                Some((b, _, _)) if *b < cost => {}
                Some((b, _, _)) if *b == cost => ties += 1,
                _ => {
                    ties = 0;
                    best = Some((cost, c, codes));
                }
            }
        }
        let _ = ties;
        let Some((_, c, codes)) = best else {
            let tys: Vec<String> = vals.iter().map(|v| v.ty.show()).collect();
            return fail(
                offset,
                format!("no overload of `{what}` takes ({})", tys.join(", ")),
            );
        };
        let codes: Vec<&str> = codes.iter().map(|c| bare(c)).collect();
        let code = format!("{}({}){}", c.rust, codes.join(", "), self.q());
        Ok(Val::new(code, c.ret.clone()))
    }

    /// Bind `vals` to `c`'s parameters: the total conversion cost and the Rust arguments.
    fn bind(&self, c: &Callee, vals: &[Val]) -> Option<(u32, Vec<String>)> {
        if vals.len() > c.params.len() {
            return None;
        }
        let mut cost = 0;
        let mut codes = Vec::new();
        for (i, p) in c.params.iter().enumerate() {
            match vals.get(i) {
                Some(v) => {
                    let (k, code) = self.coerce(v, &p.ty, &c.generics)?;
                    cost += k;
                    codes.push(match (&p.ty, &c.origin) {
                        (Ty::Options, Origin::Op(_)) => spread_options(v),
                        (Ty::ScalarType, Origin::Op(_)) => self.scalar_type_arg(&code),
                        _ => code,
                    });
                }
                None => codes.push(self.default_arg(p)?),
            }
        }
        Some((cost, codes))
    }

    /// A `ScalarType` passed to an operator: formulas hold a tensor's dtype
    /// (`self.scalar_type()`) as the runtime's name, the operator takes the enum; the
    /// support trait takes either (`ScalarTypeArg`).
    fn scalar_type_arg(&self, code: &str) -> String {
        let arg = format!("__ag::ScalarTypeArg::scalar_type_arg({})", bare(code));
        match self.fallible {
            true => format!("{arg}?"),
            false => format!("{arg}.expect(\"a dtype ScalarType names\")"),
        }
    }

    /// A dtype (the enum or a name) as its name.
    fn dtype_name(&self, code: &str) -> String {
        let arg = format!("__ag::ScalarTypeArg::dtype_name({})", bare(code));
        match self.fallible {
            true => format!("{arg}?"),
            false => format!("{arg}.expect(\"a dtype ScalarType names\")"),
        }
    }

    fn default_arg(&self, p: &CParam) -> Option<String> {
        if let Some(d) = &p.default {
            return Some(match d.as_str() {
                "OPTIONS_DEFAULT" => "None, None, None, None".into(),
                d => d.to_string(),
            });
        }
        let text = p.cpp_default.as_ref()?;
        let e = super::syntax::parse(text).ok()?;
        let v = self.lower(&e).ok()?;
        self.coerce(&v, &p.ty, &[]).map(|(_, c)| c)
    }

    fn template_call(&self, t: &TypeName, args: &[Expr], offset: usize) -> Result<Val, LowerError> {
        let vals = self.lower_args(args)?;
        let targ = |i: usize| t.args.get(i);
        match unqualified(&t.name) {
            "get" => {
                let (Some(TemplateArg::Int(n)), [v]) = (targ(0), vals.as_slice()) else {
                    return fail(offset, "`std::get<N>` takes one tuple");
                };
                let Ty::Tuple(ts) = &v.ty else {
                    return fail(offset, format!("`std::get` on {}", v.ty.show()));
                };
                let Some(e) = ts.get(*n as usize) else {
                    return fail(offset, format!("`std::get<{n}>` past the tuple's end"));
                };
                let mut r = Val::new(format!("{}.{n}", v.code), e.clone());
                r.place = v.place;
                Ok(r)
            }
            "tuple" | "make_tuple" if vals.is_empty() => {
                let Ty::Tuple(ts) = from_cpp(t) else {
                    return fail(offset, "`std::tuple` without element types");
                };
                let ts: Vec<Ty> = ts.into_iter().map(opt).collect();
                let nones = vec!["None"; ts.len()].join(", ");
                Ok(Val::new(format!("({nones},)"), Ty::Tuple(ts)))
            }
            "tuple" | "make_tuple" => {
                let codes: Vec<String> = vals.iter().map(Val::owned).collect();
                let tys = vals.iter().map(|v| v.ty.clone()).collect();
                Ok(Val::new(format!("({},)", codes.join(", ")), Ty::Tuple(tys)))
            }
            _ => self.construct(&from_cpp(t), vals, offset),
        }
    }

    /// `T(args)` for a type `T`: `std::optional<T>(x)`, `std::vector<T>(n)`, `IntArrayRef({})`.
    pub(super) fn construct(
        &self,
        ty: &Ty,
        vals: Vec<Val>,
        offset: usize,
    ) -> Result<Val, LowerError> {
        match (ty, vals.as_slice()) {
            (Ty::OptTensor | Ty::Opt(_), []) => Ok(Val::new("None", ty.clone())),
            (Ty::OptTensor, [v]) if v.ty.is_tensor() => Ok(Val::new(
                self.convert_owned(v, &Ty::OptTensor),
                Ty::OptTensor,
            )),
            (Ty::Opt(inner), [v]) => {
                let (_, code) = self.coerce(v, inner, &[]).ok_or_else(|| LowerError {
                    offset,
                    message: format!("cannot make {} from {}", ty.show(), v.ty.show()),
                })?;
                Ok(Val::new(format!("Some({code})"), ty.clone()))
            }
            (Ty::TensorList | Ty::OptTensorList, [n]) if n.ty == Ty::Int => Ok(Val::new(
                format!("vec![None; ({}) as usize]", n.code),
                Ty::OptTensorList,
            )),
            (Ty::IntList, [n, x]) if n.ty == Ty::Int && x.ty == Ty::Int => Ok(Val::new(
                format!("vec![{}; ({}) as usize]", x.code, n.code),
                Ty::IntList,
            )),
            (_, [v]) => {
                let (_, code) = self.coerce(v, ty, &[]).ok_or_else(|| LowerError {
                    offset,
                    message: format!("cannot make {} from {}", ty.show(), v.ty.show()),
                })?;
                let code = match ty {
                    Ty::IntList | Ty::FloatList => code.trim_start_matches('&').to_string(),
                    _ => code,
                };
                Ok(Val::new(code, ty.clone()))
            }
            _ => fail(
                offset,
                format!("cannot construct {} from these arguments", ty.show()),
            ),
        }
    }
}

/// A `TensorOptions` argument of an operator: the schema's `dtype, layout, device,
/// pin_memory`.
fn spread_options(v: &Val) -> String {
    let c = &v.code;
    match v.ty {
        Ty::ScalarType => format!("Some({c}), None, None, None"),
        _ => format!("{c}.dtype(), Some({c}.layout()), Some({c}.device()), None"),
    }
}

/// The method `TensorOperators.h` calls for `tensor OP other`.
fn tensor_op_method(op: &str) -> Option<&'static str> {
    Some(match op {
        "+" => "add",
        "-" => "sub",
        "*" => "mul",
        "/" => "div",
        "%" => "remainder",
        "&" => "bitwise_and",
        "|" => "bitwise_or",
        "^" => "bitwise_xor",
        "<" => "lt",
        "<=" => "le",
        ">" => "gt",
        ">=" => "ge",
        "==" => "eq",
        "!=" => "ne",
        _ => return None,
    })
}

/// The common type of two branches.
fn unify(a: &Ty, b: &Ty) -> Option<Ty> {
    Some(match (a, b) {
        _ if a == b => a.clone(),
        (Ty::Tensor | Ty::OptTensor, Ty::Tensor | Ty::OptTensor) => Ty::OptTensor,
        (Ty::Nullopt, t) | (t, Ty::Nullopt) => opt(t.clone()),
        (Ty::Opt(x), t) | (t, Ty::Opt(x)) => opt(unify(x, t)?),
        (Ty::Int, Ty::Float) | (Ty::Float, Ty::Int) => Ty::Float,
        (Ty::Tuple(x), Ty::Tuple(y)) if x.len() == y.len() => Ty::Tuple(
            x.iter()
                .zip(y)
                .map(|(p, q)| unify(p, q))
                .collect::<Option<Vec<_>>>()?,
        ),
        (Ty::TensorList | Ty::OptTensorList, Ty::TensorList | Ty::OptTensorList) => {
            Ty::OptTensorList
        }
        (Ty::Brace(ts), t) | (t, Ty::Brace(ts)) => {
            let elem = ts.first().cloned().unwrap_or(Ty::Int);
            let l = list_of(elem);
            unify(&l, t)?
        }
        _ => return None,
    })
}

/// `code` without the parentheses around all of it (a function argument or an `if`
/// condition needs none: rustc warns of them).
pub(super) fn bare(code: &str) -> &str {
    match code.strip_prefix('(').and_then(|c| c.strip_suffix(')')) {
        Some(inner) if balanced(inner) && !top_level_comma(inner) => bare(inner),
        _ => code,
    }
}

/// Whether `s` has a `,` outside brackets (a tuple's parentheses must stay).
fn top_level_comma(s: &str) -> bool {
    let mut depth = 0i32;
    s.chars().any(|c| {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
        c == ',' && depth == 0
    })
}

/// `code` in parentheses unless it already is.
fn parenthesized(code: &str) -> String {
    if bare(code).len() != code.len() {
        code.to_string()
    } else {
        format!("({code})")
    }
}

/// Whether every `(` of `s` closes within it, in order.
pub(super) fn balanced(s: &str) -> bool {
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

/// A C++ floating literal as Rust (`2.` -> `2.0`).
fn float_lit(s: &str) -> String {
    if s.ends_with('.') {
        format!("{s}0")
    } else if s.starts_with('.') {
        format!("0{s}")
    } else {
        s.to_string()
    }
}

/// An integer expression as `f64` (a literal gets `.0`).
pub(super) fn as_f64(code: &str) -> String {
    if code.chars().all(|c| c.is_ascii_digit()) {
        format!("{code}.0")
    } else if let Some(rest) = code.strip_prefix("(-").and_then(|r| r.strip_suffix(')'))
        && rest.chars().all(|c| c.is_ascii_digit())
    {
        format!("(-{rest}.0)")
    } else {
        let simple = code.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if simple {
            format!("({code} as f64)")
        } else {
            format!("({} as f64)", parenthesized(code))
        }
    }
}

/// Named constants: `true`, `std::nullopt`, `at::kFloat`, `c10::kJagged`, `M_PI`, ...
fn constant(n: &str) -> Option<Val> {
    let n = n.strip_prefix("::").unwrap_or(n);
    let base = unqualified(n);
    let v = |code: &str, ty: Ty| Some(Val::new(code, ty));
    match base {
        "true" | "false" => return v(base, Ty::Bool),
        "nullopt" => return v("None", Ty::Nullopt),
        "M_PI" => return v("std::f64::consts::PI", Ty::Float),
        "M_SQRT2" => return v("std::f64::consts::SQRT_2", Ty::Float),
        "M_2_SQRTPI" => return v("std::f64::consts::FRAC_2_SQRT_PI", Ty::Float),
        "M_PI_2" => return v("std::f64::consts::FRAC_PI_2", Ty::Float),
        "M_PI_4" => return v("std::f64::consts::FRAC_PI_4", Ty::Float),
        "M_LN2" => return v("std::f64::consts::LN_2", Ty::Float),
        "M_LN10" => return v("std::f64::consts::LN_10", Ty::Float),
        "M_E" => return v("std::f64::consts::E", Ty::Float),
        "LEGACY_CONTIGUOUS_MEMORY_FORMAT" => {
            return v("MemoryFormat::Contiguous", Ty::MemoryFormat);
        }
        _ => {}
    }
    if n.contains("Reduction::") {
        let code = match base {
            "None" => "0",
            "Mean" => "1",
            "Sum" => "2",
            _ => return None,
        };
        return v(code, Ty::Int);
    }
    if n.contains("MemoryFormat::") {
        return v(&format!("MemoryFormat::{base}"), Ty::MemoryFormat);
    }
    if n.contains("ScalarType::") {
        return v(&format!("ScalarType::{}", dtype(base)?), Ty::ScalarType);
    }
    if n.contains("Layout::") {
        return v(&format!("Layout::{base}"), Ty::Layout);
    }
    let k = base.strip_prefix('k')?;
    const LAYOUTS: &[&str] = &[
        "Strided",
        "Sparse",
        "SparseCsr",
        "SparseCsc",
        "SparseBsr",
        "SparseBsc",
        "Mkldnn",
        "Jagged",
    ];
    if LAYOUTS.contains(&k) {
        return v(&format!("Layout::{k}"), Ty::Layout);
    }
    dtype(k).map(|r| Val::new(format!("ScalarType::{r}"), Ty::ScalarType))
}

/// A PyTorch dtype constant (`Float` of `kFloat` / `ScalarType::Float`) as the variant of
/// `autograd::types::ScalarType` (`F32`).
fn dtype(k: &str) -> Option<&'static str> {
    const DTYPES: &[(&str, &str)] = &[
        ("Float", "F32"),
        ("Double", "F64"),
        ("Half", "F16"),
        ("BFloat16", "BF16"),
        ("Long", "I64"),
        ("Int", "I32"),
        ("Short", "I16"),
        ("Char", "I8"),
        ("Byte", "U8"),
        ("Bool", "Bool"),
    ];
    DTYPES.iter().find(|(c, _)| *c == k).map(|(_, r)| *r)
}
