//! Never panic: the parsers and the analysis return `Ok` or `Err` on any input, whether
//! random text or small mutations (characters inserted, deleted, replaced) of valid schemas
//! and YAML files. Case counts are kept modest so this runs in seconds in a debug build.

use autograd_codegen::analysis::AnalysisOptions;
use autograd_codegen::api::{Sources, analyze_sources};
use autograd_codegen::diagnostics::Ctxt;
use autograd_codegen::formula::Formula;
use autograd_codegen::model::derivatives::parse_derivatives;
use autograd_codegen::model::native::parse_native_functions;
use autograd_codegen::model::schema::FunctionSchema;
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::sync::Arc;

const SCHEMAS: &[&str] = &[
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
    "foo(Tensor?[] indices, bool[3] mask, str reduce=\"mean\", Generator? generator=None) -> ()",
    "__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
];

const NATIVE: &str = "\
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
  dispatch:
    CPU: mul
- func: mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
  variants: method
  dispatch:
    CPU: mul_
- func: mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: mul_out
- func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  dispatch:
    CPU: max
- func: _foreach_mul.List(Tensor[] self, Tensor[] other) -> Tensor[]
  dispatch:
    CPU: foreach_mul
  autogen: _foreach_mul.List_out
- func: expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)
  variants: method
  dispatch:
    CompositeExplicitAutograd: expand
- func: expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor
  tags: view_copy
  dispatch:
    CompositeExplicitAutograd: expand_copy
  autogen: expand_copy.out
";

const DERIVATIVES: &str = "\
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor_backward(grad, other, self.scalar_type())
  other: mul_tensor_backward(grad, self, other.scalar_type())
  result: other_t * self_p + self_t * other_p

- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: value_selecting_reduction_backward_symint(grad, dim, indices, self.sym_sizes(), keepdim)
  values: gather_with_keepdimed_indices(self_t, dim, indices, keepdim)
  output_differentiability: [True, False]

- name: expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)
  dispatch:
    Default:
      self: at::sum_to(grad, self.sym_sizes())
      result: auto_linear
    AutogradNestedTensor:
      self: not_implemented(\"expand\")
";

const TAGS: &str = "- tag: view_copy\n- tag: inplace_view\n- tag: pt2_compliant_tag\n";

/// An edit: 0 insert, 1 delete, 2 replace; a position (taken modulo the length); a character.
type Edit = (u8, usize, char);

fn edits(max: usize) -> impl Strategy<Value = Vec<Edit>> {
    let chars = prop_oneof![
        8 => proptest::sample::select(
            "()[]{}<>,.:;*!?=-|'\"# \n\t_aAzZ09é€\\".chars().collect::<Vec<_>>()
        ),
        1 => any::<char>(),
    ];
    proptest::collection::vec((0u8..3, any::<usize>(), chars), 1..max)
}

fn mutate(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for &(op, pos, c) in edits {
        match op {
            0 => {
                let at = pos % (chars.len() + 1);
                chars.insert(at, c);
            }
            _ if chars.is_empty() => {}
            1 => {
                chars.remove(pos % chars.len());
            }
            _ => {
                let at = pos % chars.len();
                chars[at] = c;
            }
        }
    }
    chars.into_iter().collect()
}

fn sources(native: &str, derivatives: &str) -> Sources {
    Sources {
        native: Some(("native_functions.yaml".into(), native.into())),
        derivatives: ("derivatives.yaml".into(), derivatives.into()),
        tags: Some(("tags.yaml".into(), TAGS.into())),
        cpp: None,
    }
}

fn run_all(native: &str, derivatives: &str) {
    let mut cx = Ctxt::new();
    let _ = parse_native_functions(&Arc::from("n.yaml"), native, &BTreeSet::new(), &mut cx);
    let _ = parse_derivatives(&Arc::from("d.yaml"), derivatives, &mut cx);
    let _ = cx.check(());
    for options in [AnalysisOptions::torchgen(), AnalysisOptions::rust()] {
        let _ = analyze_sources(&sources(native, derivatives), &options);
    }
}

#[test]
fn the_unmutated_inputs_are_valid() {
    for s in SCHEMAS {
        FunctionSchema::parse(s).unwrap();
    }
    let a = analyze_sources(&sources(NATIVE, DERIVATIVES), &AnalysisOptions::torchgen())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(a.results.len() >= 7);
    assert!(a.results.iter().filter(|r| r.infos.is_some()).count() >= 4);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn schema_parse_random_text(s in "\\PC{0,80}") {
        let _ = FunctionSchema::parse(&s);
    }

    #[test]
    fn schema_parse_schema_alphabet(s in "[a-z_.]{0,6}\\(([A-Za-z?!()\\[\\]|>* -]{0,12}[a-z ,=0-9\"]{0,6}){0,4}\\) -> [A-Za-z?!()\\[\\]|>*, -]{0,20}") {
        if let Ok(p) = FunctionSchema::parse(&s) {
            // What parses prints back exactly.
            prop_assert_eq!(p.to_string(), s);
        }
    }

    #[test]
    fn schema_parse_mutated(i in 0..SCHEMAS.len(), e in edits(6)) {
        let s = mutate(SCHEMAS[i], &e);
        if let Ok(p) = FunctionSchema::parse(&s) {
            prop_assert_eq!(p.to_string(), s.clone());
            let _ = (p.kind(), p.signature(true), p.view_signature(), p.aliased_return_names());
        }
    }

    #[test]
    fn formula_parse_random(s in "\\PC{0,60}") {
        if let Ok(mut f) = Formula::parse(&s) {
            let _ = (f.render(), f.grads_indices(), f.string_mentions("self"));
            f.replace_ident("self", "other_p.conj()");
            let _ = f.render();
        }
    }

    #[test]
    fn yaml_random_text(native in "\\PC{0,200}", derivatives in "\\PC{0,200}") {
        run_all(&native, &derivatives);
    }
}

proptest! {
    // The analysis runs several passes per case: fewer cases.
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn derivatives_yaml_mutated(e in edits(8)) {
        run_all(NATIVE, &mutate(DERIVATIVES, &e));
    }

    #[test]
    fn native_yaml_mutated(e in edits(8)) {
        run_all(&mutate(NATIVE, &e), DERIVATIVES);
    }

    #[test]
    fn both_mutated(e1 in edits(4), e2 in edits(4)) {
        run_all(&mutate(NATIVE, &e1), &mutate(DERIVATIVES, &e2));
    }
}

/// Deep nesting is refused with an error, on a thread with a small stack.
#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = 100_000;
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let ty = format!("foo(Tensor{} self) -> Tensor", "?".repeat(deep));
            assert!(FunctionSchema::parse(&ty).is_err());
            let ty = format!("foo(int{} self) -> Tensor", "[]".repeat(deep));
            assert!(FunctionSchema::parse(&ty).is_err());
            let f = format!("{}x{}", "(".repeat(deep), ")".repeat(deep));
            assert!(Formula::parse(&f).is_err());
            let f = format!("'a' {}x{}", "(".repeat(deep), ")".repeat(deep));
            assert!(Formula::parse(&f).is_err());
            let yaml = format!("{}{}", "[".repeat(deep), "]".repeat(deep));
            let mut cx = Ctxt::new();
            parse_derivatives(&Arc::from("d.yaml"), &yaml, &mut cx);
            assert!(cx.check(()).is_err());
            let yaml = format!("- name: x\n  self: {}", "[".repeat(deep));
            let mut cx = Ctxt::new();
            parse_derivatives(&Arc::from("d.yaml"), &yaml, &mut cx);
            assert!(cx.check(()).is_err());
        })
        .unwrap()
        .join()
        .unwrap();
}
