//! What is not an operator or a helper: C++ and c10 utilities (`Tensor()`, `fmap`,
//! `GradMode::is_enabled()`, `IntArrayRef(..)`), the identity for real dtypes (`conj`,
//! `handle_r_to_c`, `at::real`; `is_complex()` and `is_conj()` are `false`), the forms the analysis knows (`not_implemented`,
//! `wrap_opt_if`), and tensor properties and optional accessors as method calls.

use super::lower::{LowerError, Lowerer, Val, fail};
use super::syntax::TypeName;
use super::syntax::{Expr, ExprKind};
use super::types::{Ty, from_cpp, unqualified};

/// Tensor methods that read a property: name, result type, Rust method.
const PROPERTIES: &[(&str, Ty, &str)] = &[
    ("sym_sizes", Ty::IntList, "sym_sizes"),
    ("sizes", Ty::IntList, "sym_sizes"),
    ("sym_strides", Ty::IntList, "sym_strides"),
    ("strides", Ty::IntList, "sym_strides"),
    ("dim", Ty::Int, "dim"),
    ("numel", Ty::Int, "numel"),
    ("sym_numel", Ty::Int, "numel"),
    ("scalar_type", Ty::ScalarType, "scalar_type"),
    ("dtype", Ty::ScalarType, "scalar_type"),
    ("options", Ty::Options, "options"),
    ("layout", Ty::Layout, "layout"),
    ("device", Ty::Device, "device"),
    ("is_complex", Ty::Bool, "is_complex"),
    ("is_contiguous", Ty::Bool, "is_contiguous"),
    ("requires_grad", Ty::Bool, "requires_grad"),
    (
        "suggest_memory_format",
        Ty::MemoryFormat,
        "suggest_memory_format",
    ),
    ("is_conj", Ty::Bool, "is_conj"),
];

/// Methods that are the identity on real tensors and on real scalars.
const IDENTITY: &[&str] = &[
    "conj",
    "conj_physical",
    "resolve_conj",
    "toDouble",
    "toFloat",
    "toComplexDouble",
];

impl Lowerer<'_> {
    /// A builtin call by name, or `None` for an ordinary callee.
    pub(super) fn builtin(
        &self,
        n: &str,
        args: &[Expr],
        offset: usize,
    ) -> Result<Option<Val>, LowerError> {
        let base = unqualified(n);
        let v = match base {
            "Tensor" if args.is_empty() => Val::new("None", Ty::OptTensor),
            "handle_r_to_c" | "real" if args.len() == 2 || base == "real" => {
                let v = self.lower(args.last().expect("one argument"))?;
                if !v.ty.is_tensor() {
                    return fail(offset, format!("`{n}` of {}", v.ty.show()));
                }
                v
            }
            "is_enabled" if n.ends_with("GradMode::is_enabled") => {
                Val::new("grad_mode_enabled()", Ty::Bool)
            }
            "fmap" => return self.fmap(args, offset).map(Some),
            "sum_to" if n.starts_with("at::") => self.sum_to(args, offset)?,
            // Without the factory in the schemas, a tensor like another is made from it.
            "zeros" | "ones" if is_like(args) && !self.callees.functions.contains_key(base) => {
                self.factory_like(base, args, offset)?
            }
            "TensorGeometry"
            | "to_args_sizes"
            | "to_args_sizes_symint"
            | "to_args_scalartypes"
            | "get_nested_tensor_impl" => self.tensor_info(base, args, offset)?,
            "not_implemented" | "not_implemented_list" => {
                let texts: Vec<String> = args
                    .iter()
                    .map(|a| match &a.kind {
                        ExprKind::Str(s) => Ok(s.clone()),
                        ExprKind::Name(_) if self.lower(a).is_ok_and(|v| v.ty == Ty::Str) => {
                            Ok(self.lower(a)?.code)
                        }
                        _ => fail(a.offset, "`not_implemented` takes strings"),
                    })
                    .collect::<Result<_, _>>()?;
                let ty = if base == "not_implemented" {
                    Ty::Tensor
                } else {
                    Ty::TensorList
                };
                // PyTorch's `not_implemented(name, reason = "")` names the function itself.
                let [name, reason @ ..] = texts.as_slice() else {
                    return fail(offset, "`not_implemented` takes a name");
                };
                let reason = reason.first().map_or("\"\"", String::as_str);
                Val::new(format!("not_implemented_named({name}, {reason})"), ty)
            }
            "wrap_opt_if" => {
                let [t, c] = args else {
                    return fail(offset, "`wrap_opt_if` takes a tensor and a condition");
                };
                let (t, c) = (self.lower(t)?, self.lower(c)?);
                if !t.ty.is_tensor() || c.ty != Ty::Bool {
                    return fail(offset, "`wrap_opt_if` takes a tensor and a condition");
                }
                Val::new(
                    format!("wrap_opt_if({}, {})", t.code, c.code),
                    Ty::OptTensor,
                )
            }
            "IntArrayRef" | "SymIntArrayRef" | "SymInt" | "Scalar" | "OptionalIntArrayRef" => {
                let ty = from_cpp(&TypeName {
                    name: base.into(),
                    args: Vec::new(),
                });
                let vals = self.lower_args(args)?;
                self.construct(&ty, vals, offset)?
            }
            _ => return Ok(None),
        };
        Ok(Some(v))
    }

    /// `at::zeros(sizes, t.options())` (or `ones`) where the schemas have no `zeros`: a
    /// tensor made with `t`'s options is `t.new_zeros(sizes)` (`new_ones`).
    fn factory_like(&self, base: &str, args: &[Expr], offset: usize) -> Result<Val, LowerError> {
        let [size, options] = args else {
            return fail(offset, format!("`{base}` takes sizes and options"));
        };
        let ExprKind::Call(callee, _) = &options.kind else {
            return fail(offset, format!("`{base}` takes a tensor's options"));
        };
        let ExprKind::Member(like, _, _) = &callee.kind else {
            return fail(offset, format!("`{base}` takes a tensor's options"));
        };
        let (like, size) = (self.lower(like)?, self.lower(size)?);
        self.method_call(like, &format!("new_{base}"), vec![size], offset)
    }

    /// `at::sum_to(t, sizes)`: the runtime's reduction of a gradient to a shape.
    fn sum_to(&self, args: &[Expr], offset: usize) -> Result<Val, LowerError> {
        let [t, s] = args else {
            return fail(offset, "`at::sum_to` takes a tensor and sizes");
        };
        let (t, s) = (self.lower(t)?, self.lower(s)?);
        let sizes = self.coerce(&s, &Ty::IntList, &[]);
        let (true, Some((_, sizes))) = (t.ty.is_tensor(), sizes) else {
            return fail(offset, "`at::sum_to` takes a tensor and sizes");
        };
        let code = format!("sum_to_sizes(&{}, {sizes}){}", t.code, self.q());
        Ok(Val::new(code, Ty::Tensor))
    }

    /// What torchgen saves about tensors instead of the tensors (`TensorGeometry(self)`,
    /// `to_args_sizes(tensors)`), and the nested-tensor accessor: one tensor argument.
    fn tensor_info(&self, base: &str, args: &[Expr], offset: usize) -> Result<Val, LowerError> {
        let [t] = args else {
            return fail(offset, format!("`{base}` takes one tensor argument"));
        };
        let t = self.lower(t)?;
        let ty = match base {
            "TensorGeometry" => Ty::Opaque("TensorGeometry".into()),
            "to_args_scalartypes" => super::types::list_of(Ty::ScalarType),
            "get_nested_tensor_impl" => Ty::Opaque("NestedTensorImpl".into()),
            _ => super::types::list_of(Ty::IntList),
        };
        let rust = match base {
            "to_args_sizes_symint" => "to_args_sizes",
            b => b,
        };
        // A variable as written, so that the saved-value analysis sees `to_args_sizes(xs)`
        // and saves the sizes, not the tensors (as PyTorch).
        let arg = if t.place {
            t.code.clone()
        } else {
            super::lower::slice_of(&t.code)
        };
        let code = format!("{rust}({arg})");
        Ok(Val::new(code, ty))
    }

    /// `fmap(list, [](T x){ return e; })`: the list mapped.
    fn fmap(&self, args: &[Expr], offset: usize) -> Result<Val, LowerError> {
        let [list, f] = args else {
            return fail(offset, "`fmap` takes a list and a lambda");
        };
        let l = self.lower(list)?;
        let ExprKind::Lambda(params, body) = &f.kind else {
            return fail(f.offset, "`fmap`'s second argument must be a lambda");
        };
        let [(pty, pname)] = params.as_slice() else {
            return fail(f.offset, "`fmap`'s lambda takes one parameter");
        };
        let mut inner = Lowerer {
            callees: self.callees,
            vars: self.vars.clone(),
            fallible: self.fallible,
            by_ref: self.by_ref.clone(),
            scalar_number: self.scalar_number,
        };
        inner.vars.insert(pname.clone(), from_cpp(pty));
        let b = inner.lower(body)?;
        let ty = super::types::list_of(b.ty.clone());
        let code = format!(
            "{}.iter().map(|&{pname}| {}).collect::<Vec<_>>()",
            super::lower::slice_of(&l.code).trim_start_matches('&'),
            b.code
        );
        Ok(Val::new(code, ty))
    }

    /// `recv.name(args)` / `recv->name(args)`.
    pub(super) fn member_call(
        &self,
        recv: &Expr,
        name: &str,
        arrow: bool,
        args: &[Expr],
        offset: usize,
    ) -> Result<Val, LowerError> {
        let r = self.lower(recv)?;
        if arrow {
            return self.arrow_call(r, name, args, offset);
        }
        if r.ty == Ty::Scalar && name == "isComplex" && args.is_empty() {
            return Ok(Val::new("false", Ty::Bool));
        }
        if IDENTITY.contains(&name) && args.is_empty() {
            return Ok(match r.ty {
                Ty::Scalar if name.starts_with("to") => {
                    Val::new(self.scalar_value(&r.code), Ty::Float)
                }
                _ => r,
            });
        }
        // Real dtypes only: no tensor is complex or a lazy conjugate (`conj` is the identity).
        if matches!(name, "is_complex" | "is_conj") && args.is_empty() && r.ty.is_tensor() {
            return Ok(Val::new("false", Ty::Bool));
        }
        if let Some(v) = self.optional_method(&r, name, args, offset)? {
            return Ok(v);
        }
        if let Some(v) = self.list_method(&r, name, args)? {
            return Ok(v);
        }
        if !r.ty.is_tensor() {
            return fail(
                offset,
                format!("`.{name}()` on a value of type {}", r.ty.show()),
            );
        }
        if name == "sym_blocksize" && args.is_empty() {
            let code = format!("{}.sym_blocksize()", self.defined_tensor(&r));
            return Ok(Val::new(code, Ty::Opt(Box::new(Ty::IntList))));
        }
        if let Some((_, ty, m)) = PROPERTIES.iter().find(|(p, _, _)| *p == name)
            && args.is_empty()
        {
            return Ok(Val::new(
                format!("{}.{m}()", self.defined_tensor(&r)),
                ty.clone(),
            ));
        }
        if name == "defined" && args.is_empty() {
            return Ok(match r.ty {
                Ty::OptTensor => Val::new(format!("{}.is_some()", r.code), Ty::Bool),
                _ => Val::new("true", Ty::Bool),
            });
        }
        if matches!(name, "sym_size" | "size") && args.len() == 1 {
            let d = self.lower(&args[0])?;
            return Ok(Val::new(
                format!("{}.sym_size({})", self.defined_tensor(&r), d.code),
                Ty::Int,
            ));
        }
        let vals = self.lower_args(args)?;
        self.method_call(r, name, vals, offset)
    }

    /// A possibly undefined tensor where a defined one is read.
    fn defined_tensor(&self, r: &Val) -> String {
        match r.ty {
            Ty::OptTensor => format!("defined(&{}){}", r.code, self.q()),
            _ => r.code.clone(),
        }
    }

    /// `opt->method()`: the method on the optional's value, the result optional.
    fn arrow_call(
        &self,
        r: Val,
        name: &str,
        args: &[Expr],
        offset: usize,
    ) -> Result<Val, LowerError> {
        if r.ty == Ty::Opaque("NestedTensorImpl".into()) && args.is_empty() {
            return Ok(Val::new(format!("{}.{name}()", r.code), Ty::Tensor));
        }
        if r.ty != Ty::OptTensor || !args.is_empty() {
            return fail(
                offset,
                format!("`->{name}` on a value of type {}", r.ty.show()),
            );
        }
        let Some((_, ty, m)) = PROPERTIES.iter().find(|(p, _, _)| *p == name) else {
            return fail(offset, format!("`->{name}()` is not a tensor property"));
        };
        // The sizes of the optional's tensor, read where the formula runs (a tensor's own
        // `x.sizes()` is a saved property by then; the optional's are not): the helpers'
        // `dims` of its shape, which both value types (`Variable<T>`, a raw `T`) have, as
        // the `Option<&[i64]>` an `int[]?` is.
        if *m == "sym_sizes" {
            return Ok(Val::new(
                format!("{}.as_ref().map(|t| dims(&t.shape())).as_deref()", r.code),
                Ty::Opt(Box::new(ty.clone())),
            ));
        }
        let inner = match ty {
            Ty::IntList => format!("t.{m}().to_vec()"),
            _ => format!("t.{m}()"),
        };
        Ok(Val::new(
            format!("{}.as_ref().map(|t| {inner})", r.code),
            Ty::Opt(Box::new(ty.clone())),
        ))
    }

    /// `has_value`, `value`, `value_or` on optionals.
    fn optional_method(
        &self,
        r: &Val,
        name: &str,
        args: &[Expr],
        offset: usize,
    ) -> Result<Option<Val>, LowerError> {
        let inner = match &r.ty {
            Ty::Opt(t) => (**t).clone(),
            Ty::OptTensor if name != "defined" => Ty::Tensor,
            _ => return Ok(None),
        };
        Ok(Some(match (name, args) {
            ("has_value", []) => Val::new(format!("{}.is_some()", r.code), Ty::Bool),
            ("value", []) => Val::new(format!("required({}){}", r.owned(), self.q()), inner),
            ("value_or", [d]) => {
                let d = self.lower(d)?;
                let (_, dc) = self.coerce(&d, &inner, &[]).ok_or_else(|| LowerError {
                    offset,
                    message: format!("`value_or` default of type {}", d.ty.show()),
                })?;
                let dc = match inner {
                    Ty::IntList => dc,
                    _ => dc,
                };
                Val::new(format!("{}.unwrap_or({dc})", r.code), inner)
            }
            _ if r.ty == Ty::OptTensor => return Ok(None),
            _ => return fail(offset, format!("`.{name}()` on {}", r.ty.show())),
        }))
    }

    /// `size()` and `back()` on lists.
    fn list_method(&self, r: &Val, name: &str, args: &[Expr]) -> Result<Option<Val>, LowerError> {
        let elem = match r.ty {
            Ty::IntList => Ty::Int,
            Ty::TensorList => Ty::Tensor,
            Ty::OptTensorList => Ty::OptTensor,
            _ => return Ok(None),
        };
        Ok(match (name, args) {
            ("size", []) => Some(Val::new(format!("({}.len() as i64)", r.code), Ty::Int)),
            ("back", []) => Some(Val::new(format!("{}[{}.len() - 1]", r.code, r.code), elem)),
            _ => None,
        })
    }
}

/// `(sizes, t.options())`: the arguments of a factory made like the tensor `t`.
fn is_like(args: &[Expr]) -> bool {
    matches!(args, [_, o] if matches!(&o.kind, ExprKind::Call(c, a)
        if a.is_empty() && matches!(&c.kind, ExprKind::Member(_, m, false) if m == "options")))
}
