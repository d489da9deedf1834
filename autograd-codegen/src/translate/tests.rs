//! The front end on inline schemas, helper declarations and formulas.

use super::callees::Callees;
use super::decl::parse_header;
use super::translate_formula;
use crate::diagnostics::{Ctxt, Location};
use crate::model::derivatives::FormulaEntry;
use crate::model::native::parse_native_functions;
use crate::model::schema::FunctionSchema;
use std::sync::Arc;

const NATIVE: &str = "\
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
- func: mul.Scalar(Tensor self, Scalar other) -> Tensor
  variants: function, method
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method
- func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
  variants: function, method
- func: sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method
- func: div.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
- func: div.Scalar(Tensor self, Scalar other) -> Tensor
  variants: function, method
- func: full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
- func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
  variants: function, method
- func: neg(Tensor self) -> Tensor
  variants: function, method
- func: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
  variants: function, method
- func: ge.Scalar(Tensor self, Scalar other) -> Tensor
  variants: function, method
- func: zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
- func: expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)
  variants: method
- func: convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)
";

const HEADER: &str = "\
at::Tensor maybe_multiply(const at::Tensor& t, const at::Scalar& s);
Tensor sum_backward(const Tensor& grad, c10::SymIntArrayRef sizes, OptionalIntArrayRef opt_dims, bool keepdim);
std::tuple<Tensor, Tensor> two(const Tensor& grad, std::array<bool, 2> mask, int64_t n = 1);
";

fn tr(schema: &str, key: &str, formula: &str) -> Result<String, String> {
    tr_with(schema, key, formula, false)
}

/// `tr` with `Scalar` a plain number (`scalar_number`) or `autograd::types::Scalar`.
fn tr_with(schema: &str, key: &str, formula: &str, scalar_number: bool) -> Result<String, String> {
    let mut cx = Ctxt::new();
    let fns = parse_native_functions(&Arc::from("n.yaml"), NATIVE, &Default::default(), &mut cx);
    cx.check(()).unwrap();
    let decls = parse_header(HEADER).unwrap();
    let callees = Callees::new(&fns, &decls);
    let s = FunctionSchema::parse(schema).unwrap();
    let loc = Location {
        file: Arc::from("d.yaml"),
        line: 1,
        column: 0,
    };
    let f = FormulaEntry {
        key: key.into(),
        var_names: key.split(", ").map(String::from).collect(),
        formula: formula.into(),
        loc: loc.clone(),
        formula_loc: loc,
    };
    let cpp = super::CppFormulas {
        fallible: true,
        scalar_number,
        ..Default::default()
    };
    translate_formula(&s, &f, &callees, &cpp).map_err(|e| format!("{}: {}", e.offset, e.message))
}

const MUL: &str = "mul.Tensor(Tensor self, Tensor other) -> Tensor";

#[test]
fn operators_resolve_as_tensor_methods() {
    assert_eq!(
        tr(MUL, "self", "grad * other").unwrap(),
        "mul_tensor(&grad, &other)?"
    );
    assert_eq!(
        tr(MUL, "self", "grad * 2").unwrap(),
        "mul_scalar(&grad, __ag::types::Scalar::Int(2))?"
    );
    assert_eq!(
        tr(MUL, "self", "2 * grad").unwrap(),
        "mul_scalar(&grad, __ag::types::Scalar::Int(2))?"
    );
    assert_eq!(tr(MUL, "self", "-grad").unwrap(), "neg(&grad)?");
    assert_eq!(
        tr(MUL, "self", "grad + other").unwrap(),
        "add_tensor(&grad, &other, __ag::types::Scalar::Int(1))?",
        "the default alpha is filled in"
    );
    assert_eq!(
        tr(MUL, "self", "1 - grad").unwrap(),
        "sub_tensor(&full_like(&grad, __ag::types::Scalar::Int(1), None, None, None, None, None)?, &grad, __ag::types::Scalar::Int(1))?",
        "scalar - tensor is computed as ATen's operator does"
    );
}

#[test]
fn forward_formulas_see_primals_and_tangents() {
    assert_eq!(
        tr(MUL, "result", "other_t * self_p + self_t * other_p").unwrap(),
        "add_tensor(&mul_tensor(&other_t, &self_p)?, &mul_tensor(&self_t, &other_p)?, __ag::types::Scalar::Int(1))?"
    );
}

#[test]
fn helpers_methods_and_builtins() {
    let s = "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor";
    assert_eq!(
        tr(
            s,
            "self",
            "sum_backward(grad, self.sym_sizes(), dim, keepdim)"
        )
        .unwrap(),
        "sum_backward(&grad, &self.sym_sizes()[..], dim, keepdim)?"
    );
    assert_eq!(
        tr(s, "self", "maybe_multiply(grad.conj(), 2)").unwrap(),
        "maybe_multiply(&grad, __ag::types::Scalar::Int(2))?"
    );
    // Real dtypes: a tensor is never complex (PyTorch's acosh formula branches on it).
    let c = tr(s, "self", "self.is_complex() ? grad.conj() : grad").unwrap();
    assert!(c.starts_with("if false {"), "{c}");
    assert_eq!(
        tr(s, "self", "grad.sum(dim, true)").unwrap(),
        "sum_dim_intlist(&grad, dim, true, None)?"
    );
    assert_eq!(
        tr(s, "self", "at::zeros({}, self.options())").unwrap(),
        "zeros(&[0_i64; 0], self.options().dtype(), Some(self.options().layout()), Some(self.options().device()), None)?"
    );
}

#[test]
fn conditionals_and_undefined_tensors() {
    assert_eq!(
        tr(MUL, "self", "grad.defined() ? grad * other : Tensor()").unwrap(),
        "if true { Some(mul_tensor(&grad, &other)?) } else { None }"
    );
    let t = "two(Tensor self) -> (Tensor, Tensor)";
    assert_eq!(
        tr(
            t,
            "self",
            "std::get<0>(two(grads[0].defined() ? grads[0] : grad, grad_input_mask))"
        )
        .unwrap(),
        "two(&defined(&(if grads[0].is_some() { grads[0].clone() } else { Some(grad.clone()) }))?, grad_input_mask, 1)?.0"
    );
}

#[test]
fn errors_are_located_and_name_the_construct() {
    let e = tr(MUL, "self", "grad * nosuch(other)").unwrap_err();
    assert_eq!(
        e,
        "7: `nosuch` is neither an operator of the schemas nor a declared helper"
    );
    let e = tr(MUL, "self", "grad * undefined_name").unwrap_err();
    assert!(e.starts_with("7: unknown name `undefined_name`"), "{e}");
    let e = tr(MUL, "self", "maybe_multiply(grad, other, 3)").unwrap_err();
    assert!(
        e.starts_with("0: no overload of `maybe_multiply` takes (Tensor, Tensor, Int)"),
        "{e}"
    );
    let e = tr(MUL, "self", "grad * (other").unwrap_err();
    assert!(e.starts_with("13: expected `)`"), "{e}");
}

/// A C++ number passed as a `Scalar` stays what it is (`2` an integer, `0.5` and `2.0`
/// floats), as a `c10::Scalar`; with `types = { Scalar = f64 }` it is an `f64`.
#[test]
fn scalars_keep_their_kind() {
    let scalar = "mul.Scalar(Tensor self, Scalar other) -> Tensor";
    let cases = [
        (
            "grad * 0.5",
            "mul_scalar(&grad, __ag::types::Scalar::Float(0.5))?",
        ),
        (
            "grad * 2.0",
            "mul_scalar(&grad, __ag::types::Scalar::Float(2.0))?",
        ),
        ("grad * other.conj()", "mul_scalar(&grad, other)?"),
        (
            "grad * (other.toDouble() + 1)",
            "mul_scalar(&grad, __ag::types::Scalar::Float(__ag::types::Scalar::to_f64(other) + 1.0))?",
        ),
    ];
    for (formula, rust) in cases {
        assert_eq!(tr(scalar, "self", formula).unwrap(), rust, "{formula}");
    }
    let plain = [
        ("grad * 2", "mul_scalar(&grad, 2.0)?"),
        (
            "grad * (other.toDouble() + 1)",
            "mul_scalar(&grad, other + 1.0)?",
        ),
        ("grad + grad", "add_tensor(&grad, &grad, 1.0)?"),
    ];
    for (formula, rust) in plain {
        assert_eq!(
            tr_with(scalar, "self", formula, true).unwrap(),
            rust,
            "{formula}"
        );
    }
}

/// `at::zeros(sizes, t.options())` is `t.new_zeros(sizes)` when the schemas have no `zeros`
/// (with `zeros`, the factory itself).
#[test]
fn a_factory_with_a_tensors_options_is_new_zeros_without_the_factory() {
    let native_without_zeros: String = NATIVE
        .lines()
        .filter(|l| !l.starts_with("- func: zeros("))
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        + "- func: new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor\n  variants: method\n";
    let mut cx = Ctxt::new();
    let fns = parse_native_functions(
        &Arc::from("n.yaml"),
        &native_without_zeros,
        &Default::default(),
        &mut cx,
    );
    cx.check(()).unwrap();
    let callees = Callees::new(&fns, &parse_header(HEADER).unwrap());
    let s = FunctionSchema::parse(MUL).unwrap();
    let loc = Location {
        file: Arc::from("d.yaml"),
        line: 1,
        column: 0,
    };
    let f = FormulaEntry {
        key: "self".into(),
        var_names: vec!["self".into()],
        formula: "at::zeros({}, grad.options())".into(),
        loc: loc.clone(),
        formula_loc: loc,
    };
    let cpp = super::CppFormulas {
        fallible: true,
        ..Default::default()
    };
    let rust = translate_formula(&s, &f, &callees, &cpp).unwrap();
    assert!(rust.starts_with("new_zeros(&grad, &[0_i64; 0]"), "{rust}");
    let with_zeros = tr(MUL, "self", "at::zeros({}, grad.options())").unwrap();
    assert!(with_zeros.starts_with("zeros("), "{with_zeros}");
}

#[test]
fn optional_sizes_are_read_where_the_formula_runs() {
    // PyTorch's convolution entry passes `bias->sym_sizes()` (an `int[]?`) on.
    let s = "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor";
    let got = tr(
        s,
        "input",
        "std::get<0>(convolution_backward_symint(grad, input, weight, bias->sym_sizes(), stride, padding, dilation, transposed, output_padding, groups, {true, false, false}))",
    )
    .unwrap();
    assert!(
        got.contains("bias.as_ref().map(|t| dims(&t.shape())).as_deref()"),
        "{got}"
    );
}

#[test]
fn a_dtype_passed_to_an_operator_is_its_scalar_type_and_to_is_a_declared_helper() {
    let native = NATIVE.to_string()
        + "- func: _softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor\n";
    let mut cx = Ctxt::new();
    let fns = parse_native_functions(&Arc::from("n.yaml"), &native, &Default::default(), &mut cx);
    cx.check(()).unwrap();
    let header = HEADER.to_string() + "Tensor to(const Tensor& self, ScalarType dtype);\n";
    let callees = Callees::new(&fns, &parse_header(&header).unwrap());
    let loc = Location {
        file: Arc::from("d.yaml"),
        line: 1,
        column: 0,
    };
    let run = |schema: &str, key: &str, formula: &str| {
        let f = FormulaEntry {
            key: key.into(),
            var_names: vec![key.into()],
            formula: formula.into(),
            loc: loc.clone(),
            formula_loc: loc.clone(),
        };
        let cpp = super::CppFormulas {
            fallible: true,
            ..Default::default()
        };
        let s = FunctionSchema::parse(schema).unwrap();
        translate_formula(&s, &f, &callees, &cpp).unwrap()
    };
    // A tensor's dtype (the runtime's name) passed to the operator's `ScalarType`.
    let softmax = "_softmax(Tensor self, int dim, bool half_to_float) -> Tensor";
    let rust = run(
        softmax,
        "self",
        "_softmax_backward_data(grad, result, dim, self.scalar_type())",
    );
    assert!(
        rust.contains("__ag::ScalarTypeArg::scalar_type_arg(self_scalar_type)?")
            || rust.contains("__ag::ScalarTypeArg::scalar_type_arg(self.scalar_type())?"),
        "{rust}"
    );
    // The operator's own `ScalarType` argument passes through the same conversion (the
    // identity), and `grad.to(dtype)` is the declared helper with the tensor first.
    let bwd = "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor";
    let rust = run(
        bwd,
        "grad_output",
        "_softmax_backward_data(grad.to(output.dtype()), output, dim, input_dtype)",
    );
    assert!(
        rust.starts_with("_softmax_backward_data(&to(&grad, "),
        "{rust}"
    );
    assert!(
        rust.contains("__ag::ScalarTypeArg::scalar_type_arg(input_dtype)?"),
        "{rust}"
    );
}

#[test]
fn a_conditional_dtype_meets_as_names() {
    let mut cx = Ctxt::new();
    let fns = parse_native_functions(&Arc::from("n.yaml"), NATIVE, &Default::default(), &mut cx);
    cx.check(()).unwrap();
    let header = HEADER.to_string() + "Tensor to(const Tensor& self, ScalarType dtype);\n";
    let callees = Callees::new(&fns, &parse_header(&header).unwrap());
    let loc = Location {
        file: Arc::from("d.yaml"),
        line: 1,
        column: 0,
    };
    let f = FormulaEntry {
        key: "self".into(),
        var_names: vec!["self".into()],
        formula: "grad.to(dtype.has_value() ? *dtype : self.scalar_type())".into(),
        loc: loc.clone(),
        formula_loc: loc,
    };
    let cpp = super::CppFormulas {
        fallible: true,
        ..Default::default()
    };
    let s =
        FunctionSchema::parse("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor")
            .unwrap();
    let rust = translate_formula(&s, &f, &callees, &cpp).unwrap();
    // The schema's enum and the tensor's name both become names, so the branches agree.
    assert!(rust.contains("__ag::ScalarTypeArg::dtype_name("), "{rust}");
    assert_eq!(
        rust.matches("__ag::ScalarTypeArg::dtype_name(").count(),
        2,
        "{rust}"
    );
}
