//! Functions torchgen generates rather than reads: the out= and functional variants that
//! complete an operator's family (`native_function_generation.py`).
//!
//! torchgen groups the functions of `native_functions.yaml` by [`FunctionSchema::signature`],
//! so that `add.Tensor`, `add_.Tensor` and `add.out` land in one group, keyed by
//! [`SchemaKind`]. For each group it then adds what is missing:
//!
//! - an out= variant, when the entry it is generated from (the mutable, else in-place, else
//!   functional member) lists an out= name under `autogen:` and can have one;
//! - a functional variant, when the group has (or just got) an out= variant but no functional
//!   one. A mutable operator's functional twin gets `_functional` appended to its base name
//!   (torchgen's Note [Overload Ambiguity With Functional Variants]).
//!
//! Generated functions are plain functions (no method), carry the tag `generated`, have a
//! single `CompositeExplicitAutograd` kernel and keep the location of the entry they were
//! generated from.
//!
//! ```
//! use autograd_codegen::diagnostics::Ctxt;
//! use autograd_codegen::model::autogen::add_generated_native_functions;
//! use autograd_codegen::model::native::parse_native_functions;
//! use std::collections::BTreeSet;
//! use std::sync::Arc;
//!
//! let yaml = "
//! - func: foo_(Tensor(a!) self, Scalar other) -> Tensor(a!)
//!   dispatch:
//!     CPU: foo_
//!   autogen: foo.out
//! ";
//! let tags: BTreeSet<String> = ["out", "inplace"].map(String::from).into();
//! let mut cx = Ctxt::new();
//! let mut fns = parse_native_functions(&Arc::from("native_functions.yaml"), yaml, &tags, &mut cx);
//! add_generated_native_functions(&mut fns, &mut cx);
//! assert!(cx.check(()).is_ok());
//! let names: Vec<String> = fns.iter().map(|f| f.func.to_string()).collect();
//! assert_eq!(
//!     names,
//!     [
//!         "foo_(Tensor(a!) self, Scalar other) -> Tensor(a!)",
//!         "foo.out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
//!         "foo(Tensor self, Scalar other) -> Tensor",
//!     ]
//! );
//! ```

use crate::diagnostics::Ctxt;
use crate::model::native::{NativeFunction, Variant};
use crate::model::schema::{
    Annotation, Argument, Arguments, BaseOperatorName, FunctionSchema, OperatorName, Return,
    SchemaKind, SignatureKey,
};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeSet;

/// Out= operators whose functional variant exists but cannot be paired with them
/// (torchgen's Note [Out ops with functional variants that don't get grouped properly]).
const OUT_OPS_THAT_DONT_GET_GROUPED_PROPERLY: &[&str] = &[
    "adaptive_avg_pool3d_backward.grad_input",
    "_slow_conv2d_backward.grad_input",
];

/// Mutable operators without tensor-like returns, which therefore get no out= variant
/// (torchgen's Note [Mutable ops that cannot get an out variant]).
const MUTABLE_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT: &[&str] = &["_cummax_helper", "_cummin_helper"];

/// Functional operators without tensor-like returns, which therefore get no out= variant.
const FUNCTIONAL_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT: &[&str] = &[
    "_assert_async",
    "_assert_async.msg",
    "_assert_tensor_metadata",
    "_cslt_sparse_mm_search",
    "_assert_scalar",
    "_dimI",
    "_dimV",
    "_has_same_storage_numel",
    "_linalg_check_errors",
    "_local_scalar_dense",
    "_nested_tensor_from_mask_left_aligned",
    "_nnz",
    "_use_cudnn_ctc_loss",
    "_use_cudnn_ctc_loss.Tensor",
    "_use_miopen_ctc_loss",
    "_use_miopen_ctc_loss.Tensor",
    "_validate_compressed_sparse_indices",
    "allclose",
    "dense_dim",
    "equal",
    "is_coalesced",
    "is_pinned",
    "is_same_size",
    "is_set_to",
    "q_per_channel_axis",
    "q_scale",
    "q_zero_point",
    "qscheme",
    "record_stream",
    "sparse_dim",
    "sym_constrain_range",
    "sym_constrain_range_for_size",
    "_nested_tensor_storage_offsets",
    "_chunk_grad_outputs_efficient_attention",
    "_fused_sdp_choice",
    "_print",
    "_sink_tokens",
    "_nested_get_ragged_idx",
];

/// In-place operators whose schema keeps them from being grouped with their functional and
/// out= variants (`polygamma_` lacks the pre-`self` argument the others have).
const INPLACE_OPS_THAT_DONT_GET_GROUPED_PROPERLY: &[&str] = &["polygamma_"];

/// Tags a generated function inherits from the function it is generated from.
const INHERITED_TAGS: &[&str] = &["nondeterministic_seeded", "view_copy", "pt2_compliant_tag"];

/// The functions that share one [`FunctionSchema::signature`], at most one of each
/// [`SchemaKind`]: torchgen's `pre_group_native_functions` values. Each field is an index
/// into the slice that was grouped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchemaKindGroup {
    /// The [`SchemaKind::Functional`] member.
    pub functional: Option<usize>,
    /// The [`SchemaKind::Inplace`] member.
    pub inplace: Option<usize>,
    /// The [`SchemaKind::Mutable`] member.
    pub mutable: Option<usize>,
    /// The [`SchemaKind::Out`] member.
    pub out: Option<usize>,
    /// The [`SchemaKind::Scratch`] member.
    pub scratch: Option<usize>,
}

impl SchemaKindGroup {
    /// The member of kind `kind`.
    pub fn get(&self, kind: SchemaKind) -> Option<usize> {
        match kind {
            SchemaKind::Functional => self.functional,
            SchemaKind::Inplace => self.inplace,
            SchemaKind::Mutable => self.mutable,
            SchemaKind::Out => self.out,
            SchemaKind::Scratch => self.scratch,
        }
    }

    fn slot(&mut self, kind: SchemaKind) -> &mut Option<usize> {
        match kind {
            SchemaKind::Functional => &mut self.functional,
            SchemaKind::Inplace => &mut self.inplace,
            SchemaKind::Mutable => &mut self.mutable,
            SchemaKind::Out => &mut self.out,
            SchemaKind::Scratch => &mut self.scratch,
        }
    }

    /// The members' indices, in the order functional, in-place, mutable, out=, scratch.
    pub fn members(&self) -> impl Iterator<Item = usize> {
        [
            self.functional,
            self.inplace,
            self.mutable,
            self.out,
            self.scratch,
        ]
        .into_iter()
        .flatten()
    }
}

/// Group `fns` by [`FunctionSchema::signature`] (with defaults kept), in order of first
/// appearance: torchgen's `pre_group_native_functions`. A second function of the same kind
/// and signature is reported to `cx` and left out of the group.
pub fn pre_group_native_functions(fns: &[NativeFunction], cx: &mut Ctxt) -> Vec<SchemaKindGroup> {
    let mut groups: Vec<SchemaKindGroup> = Vec::new();
    let mut by_signature: HashMap<SignatureKey<'_>, usize> = HashMap::default();
    for (i, f) in fns.iter().enumerate() {
        let g = *by_signature
            .entry(f.func.signature_key(false, false))
            .or_insert_with(|| {
                groups.push(SchemaKindGroup::default());
                groups.len() - 1
            });
        let kind = f.kind();
        let slot = groups[g].slot(kind);
        match *slot {
            None => *slot = Some(i),
            Some(first) => cx.error(
                &f.loc,
                Some(&f.schema),
                format!(
                    "duplicate schema kind {} for this signature (first: `{}` at {})",
                    kind.as_str(),
                    fns[first].func,
                    fns[first].loc
                ),
            ),
        }
    }
    groups
}

/// Append the functions torchgen generates from `autogen:` (out= and functional variants), in torchgen's order.
/// Errors (torchgen's assertions, e.g. an out= operator with no other variants) go to `cx` with the entry's location; never panic.
pub fn add_generated_native_functions(fns: &mut Vec<NativeFunction>, cx: &mut Ctxt) {
    for group in pre_group_native_functions(fns, cx) {
        let Some(base) = base_function(fns, &group, cx) else {
            continue;
        };
        let base_fn = &fns[base];
        let has_out = group.out.is_some();
        // Note [Mutable ops that cannot get an out variant]: an out= variant needs somewhere to
        // write, a tensor-like return or (in place) `self`.
        let base_fn_valid = base_fn.kind() == SchemaKind::Inplace
            || base_fn.func.returns.iter().any(|r| r.ty.is_tensor_like());
        // Note [Loosen the assertion that all functional should have out variant]: only
        // operators that ask for one with `autogen:` get an out= variant.
        let needs_out = base_fn
            .autogen
            .iter()
            .any(|op| op.to_string().contains("out"));
        let gets_out_variant = !has_out && base_fn_valid && needs_out;
        if !has_out && !base_fn_valid {
            let name = &base_fn.func.name;
            if !MUTABLE_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT
                .iter()
                .chain(FUNCTIONAL_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT)
                .any(|n| name.is(n))
            {
                cx.error(
                    &base_fn.loc,
                    Some(&base_fn.schema),
                    "cannot generate an out= variant for an operator without tensor-like \
                     returns; if it needs none, torchgen lists it in \
                     FUNCTIONAL_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT",
                );
                continue;
            }
        }
        if gets_out_variant {
            match generate_function(base_fn, SchemaKind::Out) {
                Ok(out) => fns.push(out),
                Err(message) => {
                    report(cx, base_fn, message);
                    continue;
                }
            }
        }
        let base_fn = &fns[base];
        if group.functional.is_none() && (has_out || gets_out_variant) {
            match generate_function(base_fn, SchemaKind::Functional) {
                Ok(functional) => fns.push(functional),
                Err(message) => report(cx, base_fn, message),
            }
        }
    }
}

fn report(cx: &mut Ctxt, f: &NativeFunction, message: String) {
    cx.error(&f.loc, Some(&f.schema), message);
}

/// The member of `group` that variants get generated from (mutable, else in-place, else
/// out=, else functional), or `None` when torchgen generates nothing for the group.
fn base_function(fns: &[NativeFunction], group: &SchemaKindGroup, cx: &mut Ctxt) -> Option<usize> {
    let base = group
        .mutable
        .or(group.inplace)
        .or(group.out)
        .or(group.functional)?;
    let members = || group.members().map(|i| &fns[i]);
    let is_core = members().any(|f| f.has_tag("core"));
    // Operators that bypass the dispatcher.
    let are_manual = members().all(|f| f.manual_cpp_binding);
    // Views (`set_` is an in-place view but is treated as an ordinary in-place op).
    let has_view_ops = members().any(|f| f.is_view_op() && !f.func.name.name.is("set_"));
    // Non-core composite operators decompose, so transforms never need their variants.
    let are_composite_implicit =
        members().all(NativeFunction::has_composite_implicit_autograd_kernel);
    if are_manual || has_view_ops || (are_composite_implicit && !is_core) {
        return None;
    }
    if let Some(out) = group.out.filter(|_| members().count() == 1) {
        // Note [Out ops with functional variants that don't get grouped properly]
        let f = &fns[out];
        if !OUT_OPS_THAT_DONT_GET_GROUPED_PROPERLY
            .iter()
            .any(|n| f.func.name.is(n))
        {
            report(
                cx,
                f,
                "found an out= operator without any other variant: add its functional variant"
                    .into(),
            );
        }
        return None;
    }
    if group.inplace.is_some_and(|i| {
        INPLACE_OPS_THAT_DONT_GET_GROUPED_PROPERLY
            .iter()
            .any(|n| fns[i].func.name.is(n))
    }) {
        return None;
    }
    Some(base)
}

/// A new function like `f` but of kind `kind` (functional or out=): torchgen's
/// `generate_function`.
fn generate_function(f: &NativeFunction, kind: SchemaKind) -> Result<NativeFunction, String> {
    let func = match (kind, f.kind()) {
        (SchemaKind::Functional, SchemaKind::Functional) => {
            return Err("cannot generate a functional variant from a functional schema".into());
        }
        (SchemaKind::Functional, base_kind) => {
            // Mutated arguments become returns (named `{arg}_out`); a mutable operator's
            // functional twin is a new base operator, `{name}_functional` (Note [Overload
            // Ambiguity With Functional Variants]).
            let mut func = f.func.signature_with(false, false, true);
            func.name = OperatorName {
                name: BaseOperatorName {
                    base: f.func.name.name.base.clone(),
                    inplace: false,
                    dunder_method: f.func.name.name.dunder_method,
                    functional_overload: base_kind == SchemaKind::Mutable,
                    namespace: None,
                },
                overload_name: f.func.name.overload_name.clone(),
            };
            func
        }
        (
            SchemaKind::Out,
            base_kind @ (SchemaKind::Inplace | SchemaKind::Mutable | SchemaKind::Functional),
        ) => {
            let func = match base_kind {
                SchemaKind::Inplace => self_to_out_signature(&f.func)?,
                SchemaKind::Mutable => mutable_to_out_signature(&f.func)?,
                _ => functional_to_out_signature(&f.func)?,
            };
            check_out_returns(&func)?;
            func
        }
        (SchemaKind::Out, _) => {
            return Err(
                "out= variants are only generated from in-place, mutable or functional \
                        variants"
                    .into(),
            );
        }
        _ => return Err("only functional and out= variants are generated".into()),
    };
    let mut tags: BTreeSet<String> = INHERITED_TAGS
        .iter()
        .filter(|t| f.has_tag(t))
        .map(|t| t.to_string())
        .collect();
    tags.insert("generated".into());
    if func.is_out_fn() {
        tags.insert("out".into());
    }
    if func.name.name.inplace {
        tags.insert("inplace".into());
    }
    Ok(NativeFunction {
        schema: func.render(),
        func,
        loc: f.loc.clone(),
        // Generated functions are not meant to be user friendly: no methods.
        variants: BTreeSet::from([Variant::Function]),
        tags,
        dispatch_keys: BTreeSet::from(["CompositeExplicitAutograd".to_string()]),
        structured: false,
        structured_delegate: None,
        autogen: Vec::new(),
        manual_cpp_binding: false,
        is_abstract: f.is_abstract,
        composite_kernel: None,
        explicit_kernel: None,
    })
}

/// The invariants torchgen's `FunctionSchema` checks on out= schemas, which a generated one
/// can break (a return mixing tensors and non-tensors, a tensor list returned).
fn check_out_returns(func: &FunctionSchema) -> Result<(), String> {
    let out = &func.arguments.out;
    if out
        .iter()
        .zip(&func.returns)
        .any(|(a, r)| a.annotation != r.annotation)
    {
        return Err(format!(
            "the generated out= variant `{func}` is invalid: the ith out= argument must be the ith return"
        ));
    }
    let returned = if out.iter().all(|a| a.ty.is_tensor()) {
        out.iter()
            .filter(|a| !a.name.starts_with("_scratch_"))
            .count()
    } else {
        0
    };
    if func.returns.len() != returned {
        return Err(format!(
            "the generated out= variant `{func}` is invalid: an out= operator returns all its \
             out= arguments (none when one is a tensor list), and nothing else"
        ));
    }
    Ok(())
}

/// `foo.out` for `foo`, `foo.Scalar_out` for `foo.Scalar`.
fn expected_out_overload_name(overload_name: &str) -> String {
    if overload_name.is_empty() {
        "out".into()
    } else {
        format!("{overload_name}_out")
    }
}

/// `args` with `outs` as its out= arguments (torchgen's `with_out_args`).
fn with_out_args(mut args: Arguments, outs: Vec<Argument>) -> Result<Arguments, String> {
    if !args.out.is_empty() {
        return Err("the schema already has out= arguments".into());
    }
    args.out = outs;
    Ok(args)
}

/// The out= variant of an in-place schema: `self` loses its annotation and becomes `out`,
/// which the returns alias.
///
/// `_add_relu_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)` becomes
/// `_add_relu.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out) -> Tensor(a!)`.
fn self_to_out_signature(func: &FunctionSchema) -> Result<FunctionSchema, String> {
    let Some(self_arg) = &func.arguments.self_arg else {
        return Err("an in-place operator needs a `self` argument".into());
    };
    let out = Argument {
        name: "out".into(),
        ty: self_arg.ty.clone(),
        default: None,
        annotation: self_arg.annotation.clone(),
    };
    let mut arguments = func.arguments.clone();
    if let Some(s) = &mut arguments.self_arg {
        s.annotation = None;
    }
    Ok(FunctionSchema {
        name: func
            .name
            .remove_inplace()
            .with_overload(&expected_out_overload_name(&func.name.overload_name)),
        arguments: with_out_args(arguments, vec![out])?,
        returns: func.returns.clone(),
    })
}

/// The out= variant of a functional schema: tensor options dropped, one out= argument per
/// tensor-like return.
fn functional_to_out_signature(func: &FunctionSchema) -> Result<FunctionSchema, String> {
    let (returns, outs) = generate_out_args_from_schema(func)?;
    Ok(FunctionSchema {
        name: func
            .name
            .with_overload(&expected_out_overload_name(&func.name.overload_name)),
        arguments: with_out_args(func.arguments.signature(false), outs)?,
        returns,
    })
}

/// The out= variant of a mutable schema: the mutable positional arguments stay, each
/// tensor-like return becomes an out= argument.
fn mutable_to_out_signature(func: &FunctionSchema) -> Result<FunctionSchema, String> {
    let (returns, outs) = generate_out_args_from_schema(func)?;
    Ok(FunctionSchema {
        name: func
            .name
            .remove_inplace()
            .with_overload(&expected_out_overload_name(&func.name.overload_name)),
        arguments: with_out_args(func.arguments.clone(), outs)?,
        returns,
    })
}

/// The out= arguments for `func`'s tensor-like returns (`out`, or `out0`, `out1`, ... when
/// there are several returns, annotated with the first letters no argument uses), and the
/// returns of the out= variant: the out= arguments when every return is a plain `Tensor`,
/// else only the returns that are not tensor-like.
fn generate_out_args_from_schema(
    func: &FunctionSchema,
) -> Result<(Vec<Return>, Vec<Argument>), String> {
    if func.returns.iter().any(Return::is_write) {
        return Err("mutable schema kinds should not return mutable arguments".into());
    }
    if !func.returns.iter().any(|r| r.ty.is_tensor_like()) {
        return Err("an out= variant needs at least one tensor-like return".into());
    }
    let used: Vec<&str> = func
        .arguments
        .flat_all()
        .filter_map(|a| a.annotation.as_ref())
        .flat_map(|a| a.alias_set.iter().map(String::as_str))
        .collect();
    let valid: Vec<String> = ('a'..='z')
        .map(String::from)
        .filter(|c| !used.contains(&c.as_str()))
        .collect();
    let all_rets_are_tensors = func.returns.iter().all(|r| r.ty.is_tensor());
    let mut returns = Vec::new();
    let mut outs = Vec::new();
    for (i, r) in func.returns.iter().enumerate() {
        if !r.ty.is_tensor_like() {
            returns.push(r.clone());
            continue;
        }
        let Some(letter) = valid.get(i) else {
            return Err("ran out of alias annotation letters for out= arguments".into());
        };
        let annotation = Annotation {
            alias_set: vec![letter.clone()],
            is_write: true,
            alias_set_after: Vec::new(),
        };
        let name = if func.returns.len() == 1 {
            "out".to_string()
        } else {
            format!("out{i}")
        };
        if all_rets_are_tensors {
            returns.push(Return {
                name: None,
                ty: r.ty.clone(),
                annotation: Some(annotation.clone()),
            });
        }
        outs.push(Argument {
            name,
            ty: r.ty.clone(),
            default: None,
            annotation: Some(annotation),
        });
    }
    Ok((returns, outs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const TAGS: &[&str] = &[
        "core",
        "generated",
        "inplace",
        "inplace_view",
        "nondeterministic_seeded",
        "out",
        "pt2_compliant_tag",
        "view_copy",
    ];

    /// Parse `yaml` as `native_functions.yaml`, add the generated functions, and return all of
    /// them with the errors.
    fn run(yaml: &str) -> (Vec<NativeFunction>, Vec<String>) {
        let tags: BTreeSet<String> = TAGS.iter().map(|t| t.to_string()).collect();
        let mut cx = Ctxt::new();
        let mut fns = parse_native_functions_for_test(yaml, &tags, &mut cx);
        add_generated_native_functions(&mut fns, &mut cx);
        let errors = match cx.check(()) {
            Ok(()) => Vec::new(),
            Err(d) => d.0.into_iter().map(|d| d.to_string()).collect(),
        };
        (fns, errors)
    }

    fn parse_native_functions_for_test(
        yaml: &str,
        tags: &BTreeSet<String>,
        cx: &mut Ctxt,
    ) -> Vec<NativeFunction> {
        crate::model::native::parse_native_functions(&Arc::from("nf.yaml"), yaml, tags, cx)
    }

    fn schemas(fns: &[NativeFunction]) -> Vec<String> {
        fns.iter().map(|f| f.func.to_string()).collect()
    }

    fn tags(f: &NativeFunction) -> Vec<&str> {
        f.tags.iter().map(String::as_str).collect()
    }

    #[test]
    fn inplace_op_gets_out_and_functional_variants() {
        let (fns, errors) = run("
- func: foo_.Scalar(Tensor(a!) self, Scalar other, *, Scalar alpha=1) -> Tensor(a!)
  variants: function, method
  tags: nondeterministic_seeded
  dispatch:
    CPU, CUDA: foo_
  autogen: foo.Scalar_out
");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            schemas(&fns[1..]),
            [
                "foo.Scalar_out(Tensor self, Scalar other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
                "foo.Scalar(Tensor self, Scalar other, *, Scalar alpha=1) -> Tensor",
            ]
        );
        let (out, functional) = (&fns[1], &fns[2]);
        assert_eq!(
            tags(out),
            [
                "generated",
                "nondeterministic_seeded",
                "out",
                "pt2_compliant_tag"
            ]
        );
        assert_eq!(
            tags(functional),
            ["generated", "nondeterministic_seeded", "pt2_compliant_tag"]
        );
        for g in [out, functional] {
            assert_eq!(g.loc, fns[0].loc);
            assert_eq!(g.variants, BTreeSet::from([Variant::Function]));
            assert!(g.is_abstract);
            assert!(!g.has_composite_implicit_autograd_kernel());
            assert!(g.dispatch_keys.contains("CompositeExplicitAutograd"));
            assert!(g.autogen.is_empty() && !g.manual_cpp_binding && !g.structured);
        }
    }

    #[test]
    fn functional_op_with_several_returns_gets_numbered_out_args() {
        let (fns, errors) = run("
- func: bar(Tensor(a) self, Tensor other) -> (Tensor values, Tensor indices)
  dispatch:
    CompositeExplicitAutograd: bar
  autogen: bar.out
- func: baz(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool flag=False) -> Tensor[]
  dispatch:
    CPU: baz
  autogen: baz.out
");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            schemas(&fns[2..]),
            [
                // `a` is taken by `self`, so the out= arguments get `b` and `c` (torchgen picks
                // the letters before the functional signature drops `self`'s annotation).
                "bar.out(Tensor self, Tensor other, *, Tensor(b!) out0, Tensor(c!) out1) -> (Tensor(b!), Tensor(c!))",
                // Tensor options go; a tensor list is not returned.
                "baz.out(Tensor self, *, bool flag=False, Tensor(a!)[] out) -> ()",
            ]
        );
        assert_eq!(tags(&fns[2]), ["generated", "out", "pt2_compliant_tag"]);
        assert!(fns[2].is_abstract && fns[0].is_abstract);
    }

    #[test]
    fn mutable_op_gets_out_and_functional_overload() {
        let (fns, errors) = run("
- func: _fused(Tensor self, Tensor(a!) running_min, Tensor(b!) running_max, float c) -> (Tensor output, Tensor mask)
  dispatch:
    CPU: fused_cpu
  autogen: _fused.out
- func: rrelu_with_noise(Tensor self, Tensor(b!) noise, Scalar lower=0.125) -> Tensor
  dispatch:
    CPU: rrelu
  autogen: rrelu_with_noise.out
");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            schemas(&fns[2..]),
            [
                "_fused.out(Tensor self, Tensor(a!) running_min, Tensor(b!) running_max, float c, *, Tensor(c!) out0, Tensor(d!) out1) -> (Tensor(c!), Tensor(d!))",
                "_fused_functional(Tensor self, Tensor running_min, Tensor running_max, float c) -> (Tensor output, Tensor mask, Tensor running_min_out, Tensor running_max_out)",
                "rrelu_with_noise.out(Tensor self, Tensor(b!) noise, Scalar lower=0.125, *, Tensor(a!) out) -> Tensor(a!)",
                "rrelu_with_noise_functional(Tensor self, Tensor noise, Scalar lower=0.125) -> (Tensor, Tensor noise_out)",
            ]
        );
        assert!(fns[3].func.name.name.functional_overload);
        assert_eq!(fns[3].kind(), SchemaKind::Functional);
    }

    #[test]
    fn existing_out_only_adds_functional() {
        let (fns, errors) = run("
- func: qux_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: qux_
- func: qux.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: qux_out
- func: keep(Tensor self) -> Tensor
  dispatch:
    CPU: keep
");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(schemas(&fns[3..]), ["qux(Tensor self) -> Tensor"]);
        assert_eq!(tags(&fns[3]), ["generated", "pt2_compliant_tag"]);
    }

    #[test]
    fn skipped_groups_generate_nothing() {
        let (fns, errors) = run("
- func: comp_(Tensor(a!) self) -> Tensor(a!)
  autogen: comp.out
- func: view_op(Tensor(a) self) -> Tensor(a)
  dispatch:
    CPU: view_op
  autogen: view_op.out
- func: manual_(Tensor(a!) self) -> Tensor(a!)
  manual_cpp_binding: True
  dispatch:
    CPU: manual_
  autogen: manual.out
- func: no_autogen_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: no_autogen_
- func: polygamma_(Tensor(a!) self, int n) -> Tensor(a!)
  dispatch:
    CPU: polygamma_
  autogen: polygamma.out
");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(fns.len(), 5);
        // A core composite operator does get its variants.
        let (fns, errors) = run("
- func: comp_(Tensor(a!) self) -> Tensor(a!)
  tags: core
  autogen: comp.out
");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            schemas(&fns[1..]),
            [
                "comp.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
                "comp(Tensor self) -> Tensor"
            ]
        );
        assert!(!fns[1].is_abstract && !fns[1].has_composite_implicit_autograd_kernel());
    }

    #[test]
    fn torchgen_assertions_become_located_errors() {
        let (fns, errors) = run("
- func: lonely.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: lonely_out
- func: count(Tensor self) -> int
  dispatch:
    CPU: count
- func: dup(Tensor self) -> Tensor
  dispatch:
    CPU: dup
- func: dup.other(Tensor self) -> Tensor
  dispatch:
    CPU: dup
- func: q_scale(Tensor self) -> float
  dispatch:
    CPU: q_scale
- func: mixed(Tensor self) -> (Tensor, int)
  dispatch:
    CPU: mixed
  autogen: mixed.out
");
        assert_eq!(fns.len(), 6, "nothing generated");
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(
            errors[0].starts_with("nf.yaml:2: in `lonely.out("),
            "{errors:?}"
        );
        assert!(errors[0].contains("without any other variant"));
        assert!(errors[1].starts_with("nf.yaml:5: in `count("), "{errors:?}");
        assert!(errors[1].contains("tensor-like"));
        assert!(
            errors[2].starts_with("nf.yaml:11: in `dup.other("),
            "{errors:?}"
        );
        assert!(errors[2].contains("duplicate schema kind functional"));
        assert!(
            errors[3].starts_with("nf.yaml:17: in `mixed("),
            "{errors:?}"
        );
        assert!(errors[3].contains("is invalid"), "{errors:?}");
    }

    #[test]
    fn groups_follow_first_appearance() {
        let (fns, _) = run("
- func: b_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: b_
  autogen: b.out
- func: a_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: a_
  autogen: a.out
- func: b(Tensor self) -> Tensor
  dispatch:
    CPU: b
");
        assert_eq!(
            schemas(&fns[3..]),
            [
                "b.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
                "a.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
                "a(Tensor self) -> Tensor",
            ]
        );
        let mut cx = Ctxt::new();
        let groups = pre_group_native_functions(&fns[..3], &mut cx);
        cx.check(()).unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(
            (groups[0].inplace, groups[0].functional),
            (Some(0), Some(2))
        );
        assert_eq!(groups[0].members().collect::<Vec<_>>(), [2, 0]);
    }
}
