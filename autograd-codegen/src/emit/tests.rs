//! Unit tests of emission on inline YAML.

use super::*;

fn config(yaml: &str) -> Config {
    let mut c = Config::new("d.yaml");
    c.derivatives_text = Some(yaml.to_string());
    c.track_files = false;
    c
}

const YAML: &str = "\
- name: mul.Scalar(Tensor self, Scalar other) -> Tensor
  self: mul_scalar(&grad, other)
";

#[test]
fn scalar_maps_to_pytorchs_scalar_by_default() {
    let code = generate_pretty(&config(YAML)).unwrap();
    assert!(
        code.contains("fn mul_scalar(self_: &Self, other: __ag::types::Scalar) -> Self;"),
        "{code}"
    );
    assert!(code.contains("pub other: __ag::types::Scalar,"), "{code}");
    // The differentiable function takes any Rust number.
    assert!(
        code.contains("other: impl __ag::Into<__ag::types::Scalar>"),
        "{code}"
    );
    assert!(
        code.contains("let other: __ag::types::Scalar = __ag::Into::into(other);"),
        "{code}"
    );
}

#[test]
fn types_override_value_types() {
    let mut c = config(YAML);
    c.type_overrides
        .push(("Scalar".into(), syn::parse_quote!(f32)));
    let code = generate_pretty(&c).unwrap();
    assert!(
        code.contains("fn mul_scalar(self_: &Self, other: f32) -> Self;"),
        "{code}"
    );
    assert!(code.contains("pub other: f32,"), "{code}");
}

#[test]
fn types_refuse_what_cannot_be_mapped() {
    let mut c = config(YAML);
    c.type_overrides
        .push(("Tensor".into(), syn::parse_quote!(f32)));
    c.type_overrides
        .push(("Scalr".into(), syn::parse_quote!(f32)));
    let errs = generate(&c).unwrap_err().0;
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(
        errs[0].message.contains("`Tensor` cannot be mapped"),
        "{}",
        errs[0]
    );
    assert!(
        errs[1].message.contains("`Scalr` cannot be mapped"),
        "{}",
        errs[1]
    );
}

#[test]
fn macro_arguments_parse() {
    let args: MacroArgs = syn::parse_quote!("d.yaml", native = "n.yaml", helpers = crate::h, types = { Scalar = f32, int = i32 });
    assert_eq!(args.derivatives.unwrap().value(), "d.yaml");
    assert_eq!(args.native.unwrap().value(), "n.yaml");
    assert_eq!(args.types.len(), 2);
    assert_eq!(args.types[1].0, "int");
    assert!(syn::parse_str::<MacroArgs>("\"d.yaml\", yaml = \"[]\"").is_err());
}

#[test]
fn names_follow_the_documented_rules() {
    let n = |s: &str| op_fn_name(&crate::model::schema::OperatorName::parse(s).unwrap());
    assert_eq!(n("mul.Tensor"), "mul_tensor");
    assert_eq!(n("mul_.Tensor"), "mul_tensor_");
    assert_eq!(n("mul.out"), "mul_out");
    assert_eq!(n("sum.dim_IntList"), "sum_dim_intlist");
    assert_eq!(n("exp"), "exp");
    assert_eq!(n("where.self"), "where_self");
    assert_eq!(rust_name("where"), "where_");
    assert_eq!(rust_name("self"), "self_");
}

#[test]
fn a_node_that_would_record_no_output_is_an_error() {
    let yaml = "\
- name: exp(Tensor self) -> Tensor
  output_differentiability: [False]
  self: grad.clone()
";
    // Reported once, by the analysis' check, and no node is emitted.
    let errs = generate(&config(yaml)).unwrap_err().0;
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0]
            .message
            .contains("marks no output of `exp` differentiable"),
        "{errs:?}"
    );
}

#[test]
fn each_saved_field_problem_is_reported_once() {
    // A generator cannot be saved: one error, although both the node and the wrapper use
    // the field.
    let yaml = "\
- name: bernoulli(Tensor self, Generator? generator=None) -> Tensor
  self: scale(&grad, generator)
";
    let errs = generate(&config(yaml)).unwrap_err().0;
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].message.contains("cannot be saved for backward"),
        "{errs:?}"
    );
}

#[test]
fn fallible_kernels_return_results_and_wrappers_propagate() {
    let mut c = config(YAML);
    c.fallible = true;
    let code = generate_pretty(&c).unwrap();
    assert!(code.contains("type Error:"), "{code}");
    // A kernel without another default returns PyTorch's "Could not run" error.
    assert!(
        code.contains(
            "fn mul_scalar(\n        self_: &Self,\n        other: __ag::types::Scalar,\n    ) -> __ag::Result<Self, Self::Error> {"
        ),
        "{code}"
    );
    assert!(code.contains("\"aten::mul.Scalar\","), "{code}");
    assert!(
        code.contains(".map_err(__ag::AutogradError::backend)?"),
        "{code}"
    );
    assert!(
        code.contains("__ag::Result<__ag::Variable<T>, __ag::AutogradError>"),
        "{code}"
    );
}

#[test]
fn formulas_stand_on_one_line_with_their_place() {
    let code = generate_pretty(&config(YAML)).unwrap();
    assert!(
        code.contains(
            "let __r = { mul_scalar(&grad, other) }; // d.yaml:2: `mul.Scalar(Tensor self, Scalar other) -> Tensor`: formula for `self`"
        ),
        "{code}"
    );
}

#[test]
fn size_of_a_dimension_is_captured_from_tokens() {
    let yaml = "\
- name: exp(Tensor self) -> Tensor
  self: scale(&grad, self.size(-1), self.sizes())
";
    let code = generate_pretty(&config(yaml)).unwrap();
    assert!(code.contains("pub self_size_minus_1: i64,"), "{code}");
    assert!(code.contains("pub self_sizes: __ag::Vec<i64>,"), "{code}");
    assert!(
        code.contains("__ag::size_at(&self_.shape(), (-1) as i64)"),
        "{code}"
    );
}

#[test]
fn views_follow_their_base_and_in_place_ops_write_through() {
    let yaml = "\
- name: narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)
  view_inverse: narrow_scatter(&base, &mutated_view, dim, start)
  self: grad.clone()
- name: unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]
  self: stack(grads, dim)
- name: expand(Tensor(a) self, SymInt[] size) -> Tensor(a)
  view_inverse: overlapping
  self: grad.clone()
- name: mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
  self: grad.clone()
  other: grad.clone()
";
    let code = generate_pretty(&config(yaml)).unwrap();
    // The view replays itself and writes back through the entry's inverse.
    assert!(
        code.contains("__ag::make_view(&__o0, self_, __view_fn, __inverse)"),
        "{code}"
    );
    assert!(
        code.contains("narrow_scatter(&base, &mutated_view, dim, start)"),
        "{code}"
    );
    assert!(code.contains("__ag::ViewInverse::Overlapping"), "{code}");
    assert!(code.contains("__ag::ViewInverse::MultiOutput"), "{code}");
    // In-place ops go through the view path first.
    assert!(code.contains("if self_.is_view()"), "{code}");
    assert!(code.contains("__ag::inplace_on_view("), "{code}");
}

/// A config over inline derivatives and inline native functions (named
/// `native_functions.yaml` in messages).
fn config_with_native(yaml: &str, native: &str, _tag: &str) -> Config {
    let mut c = config(yaml);
    c.native = Some("native_functions.yaml".into());
    c.native_text = Some(native.to_string());
    c
}

const COMPOSITE_NATIVE: &str = "\
- func: mul.Scalar(Tensor self, Scalar other) -> Tensor
- func: twice(Tensor self) -> Tensor
  dispatch:
    CompositeImplicitAutograd: twice
";

#[test]
fn composite_functions_call_their_helper_and_have_no_kernel() {
    let mut c = config_with_native(YAML, COMPOSITE_NATIVE, "composite");
    c.helpers = Some(syn::parse_quote!(crate::h));
    let code = generate_pretty(&c).unwrap();
    assert!(!code.contains("fn twice(self_: &Self"), "{code}");
    let wrapper = code
        .split("pub fn twice<T: Backend>")
        .nth(1)
        .expect("a wrapper for twice");
    let body = wrapper.split("\n}").next().unwrap();
    assert!(body.contains("crate::h::twice(self_)"), "{body}");
    assert!(!body.contains("record"), "no node of its own: {body}");
    assert!(
        !code.contains("NotImplementedNode::new(\"twice\")"),
        "{code}"
    );
}

#[test]
fn composite_functions_need_helpers_and_no_entry() {
    let c = config_with_native(YAML, COMPOSITE_NATIVE, "no-helpers");
    let errs = generate(&c).unwrap_err().0;
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].message.contains("set `helpers = "), "{}", errs[0]);

    let with_entry = format!("{YAML}\n- name: twice(Tensor self) -> Tensor\n  self: grad\n");
    let mut c = config_with_native(&with_entry, COMPOSITE_NATIVE, "with-entry");
    c.helpers = Some(syn::parse_quote!(crate::h));
    let errs = generate(&c).unwrap_err().0;
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0]
            .message
            .contains("also has a derivatives.yaml entry; keep one"),
        "{}",
        errs[0]
    );
    assert!(
        errs[0].to_string().contains("native_functions.yaml:2"),
        "{}",
        errs[0]
    );
}

#[test]
fn inputs_without_a_formula_are_refused_when_they_require_grad() {
    let yaml = "\
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad
";
    let code = generate_pretty(&config(yaml)).unwrap();
    let wrapper = code.split("pub fn mul_tensor<T: Backend>").nth(1).unwrap();
    assert!(
        wrapper.contains("__ag::check_no_requires_grad([other], \"other\", \"mul\")"),
        "{wrapper}"
    );
    // An infallible functional wrapper cannot return the error.
    assert!(wrapper.contains("panic!"), "{wrapper}");
    let mut c = config(yaml);
    c.fallible = true;
    let code = generate_pretty(&c).unwrap();
    let wrapper = code.split("pub fn mul_tensor<T: Backend>").nth(1).unwrap();
    let body = wrapper.split("\n}").next().unwrap();
    assert!(body.contains("\"mul\")?;"), "{body}");
    assert!(!body.contains("panic!"), "{body}");
    // `non_differentiable` inputs are not checked.
    let marked = format!("{yaml}  other: non_differentiable\n");
    let code = generate_pretty(&config(&marked)).unwrap();
    assert!(!code.contains("check_no_requires_grad"), "{code}");
}

const DECOMPOSED_NATIVE: &str = "\
- func: mul.Scalar(Tensor self, Scalar other) -> Tensor
- func: twice(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: twice_by_mul
";

#[test]
fn decompositions_are_kernel_defaults_and_keep_their_node() {
    let yaml = format!("{YAML}\n- name: twice(Tensor self) -> Tensor\n  self: grad\n");
    let mut c = config_with_native(&yaml, DECOMPOSED_NATIVE, "decomposed");
    c.helpers = Some(syn::parse_quote!(crate::h));
    let code = generate_pretty(&c).unwrap();
    let kernel = code
        .split("fn twice(self_: &Self) -> Self {")
        .nth(1)
        .expect("a kernel with a default body");
    let body = kernel.split('}').next().unwrap();
    assert!(
        body.contains("crate::h::twice_by_mul::<Self>(self_)"),
        "{body}"
    );
    // The function keeps its node: gradients come from its own entry.
    assert!(code.contains("pub struct TwiceBackward0"), "{code}");
}

#[test]
fn decomposition_mistakes_are_errors() {
    let yaml = format!("{YAML}\n- name: twice(Tensor self) -> Tensor\n  self: grad\n");
    let c = config_with_native(&yaml, DECOMPOSED_NATIVE, "decomposed-no-helpers");
    let errs = generate(&c).unwrap_err().0;
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].message.contains("set `helpers = "), "{}", errs[0]);
    let both = format!("{DECOMPOSED_NATIVE}    CompositeImplicitAutograd: twice\n");
    let mut c = config_with_native(YAML, &both, "decomposed-both");
    c.helpers = Some(syn::parse_quote!(crate::h));
    let errs = generate(&c).unwrap_err().0;
    assert!(
        errs.iter().any(|e| e.message.contains("names both")),
        "{errs:?}"
    );
}

#[test]
fn error_from_bounds_the_kernels_error_type() {
    let mut c = config(YAML);
    c.fallible = true;
    c.error_from = Some(syn::parse_quote!(crate::MyError));
    let code = generate_pretty(&c).unwrap();
    let bound: String = code
        .split("type Error:")
        .nth(1)
        .and_then(|b| b.split(';').next())
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert!(
        bound.ends_with(
            "+'static+::std::convert::From<__ag::KernelNotImplemented>+::std::convert::From<crate::MyError>"
        ),
        "{bound}"
    );
}

#[test]
fn a_view_without_view_inverse_is_reported_at_its_entry() {
    // The entry is where `view_inverse:` goes: the error names derivatives.yaml's line, not
    // the schema's in native_functions.yaml.
    let native = "\
- func: exp(Tensor self) -> Tensor
- func: narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)
";
    let yaml = "\
- name: exp(Tensor self) -> Tensor
  self: grad

- name: narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)
  self: grad
";
    let errs = generate(&config_with_native(yaml, native, "view-inverse"))
        .unwrap_err()
        .0;
    let e = errs
        .iter()
        .find(|e| e.message.contains("returns a view of `self`"))
        .expect("the view's error");
    assert_eq!(&*e.location.file, "d.yaml", "{e:?}");
    assert_eq!(e.location.line, 4, "{e:?}");
}

#[test]
fn mutable_functions_write_their_arguments_back_and_get_forward_formulas() {
    // torchgen's SchemaKind.mutable: `stats` is `Tensor(a!)` but neither self nor out=.
    let yaml = "\
- name: norm_update(Tensor input, Tensor(a!) stats, float m) -> (Tensor, Tensor)
  input: grad
  result0: input_t
";
    let code = generate_pretty(&config(yaml)).unwrap();
    let kernel = code.split("fn norm_update(").nth(1).unwrap();
    assert!(
        kernel.starts_with("input: &Self, stats: &mut Self, m: f64"),
        "{kernel}"
    );
    let wrapper = code.split("pub fn norm_update<T: Backend>").nth(1).unwrap();
    let body = wrapper.split("\n}").next().unwrap();
    // The kernel's new value of `stats` reaches its variable, without a version bump.
    assert!(body.contains("stats.set_data(__d_stats);"), "{body}");
    assert!(!body.contains("stats.bump_version()"), "{body}");
    // The inputs without a formula are checked, and the outputs reach the forward formula.
    assert!(
        body.contains("check_no_requires_grad([stats], \"stats\""),
        "{body}"
    );
    assert!(
        body.contains("__fw::<T>(input, stats, m, &__o0, &__o1)"),
        "{body}"
    );
}

#[test]
fn a_method_whose_parameter_shadows_its_function_calls_it_by_path() {
    let yaml = "\
- name: pad(Tensor self, SymInt[] pad) -> Tensor
  self: grad
";
    let code = generate_pretty(&config(yaml)).unwrap();
    assert!(
        code.contains("self::pad::<T>(__ag::Borrow::borrow(self), pad)"),
        "{code}"
    );
}

#[test]
fn a_tensor_geometry_is_saved_instead_of_the_tensor() {
    let yaml = "\
- name: as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)
  self: as_strided_backward(&grad, TensorGeometry(self), size, stride, storage_offset)
  view_inverse: overlapping
";
    let code = generate_pretty(&config(yaml)).unwrap();
    // The node keeps the geometry (what the library reports), not the tensor, and the
    // formula reads it by reference.
    assert!(
        code.contains("pub self_geometry: __ag::types::TensorGeometry,"),
        "{code}"
    );
    assert!(!code.contains("pub self_: __ag::SavedVariable"), "{code}");
    assert!(code.contains("__ag::types::TensorGeometry::of"), "{code}");
    assert!(
        code.contains("let self_geometry = &self.self_geometry;"),
        "{code}"
    );
}
