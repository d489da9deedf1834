//! The shared dtype rules against PyTorch's results and messages.

use super::*;

fn msg<T: std::fmt::Debug>(r: R<T>) -> String {
    r.unwrap_err().message().to_string()
}

#[test]
fn kinds_and_promotion() {
    assert_eq!(Kind::of("bool"), Kind::Bool);
    assert_eq!(Kind::of("i64"), Kind::Int);
    assert_eq!(Kind::of("u32"), Kind::Int);
    assert_eq!(Kind::of("f32"), Kind::Float);
    assert_eq!(promoted_kind(&["bool", "bool"]), Kind::Bool);
    assert_eq!(promoted_kind(&["i64", "f32"]), Kind::Float);
    assert_eq!(promoted_kind(&[]), Kind::Float);
    assert_eq!(Kind::requested(ScalarType::BF16), Kind::Float);
    assert_eq!(Kind::requested(ScalarType::I32), Kind::Int);
    assert_eq!(Kind::requested(ScalarType::Bool), Kind::Bool);
}

#[test]
fn scalars() {
    use Scalar::{Bool, Float, Int};
    assert_eq!(scalar_kind(Kind::Bool, Int(2)), Kind::Int);
    assert_eq!(scalar_kind(Kind::Bool, Bool(true)), Kind::Bool);
    assert_eq!(scalar_kind(Kind::Int, Bool(true)), Kind::Int);
    // PyTorch: `torch.tensor([1]) + 2.0` is a float tensor, `+ 2` stays an integer one.
    assert_eq!(scalar_kind(Kind::Int, Float(2.0)), Kind::Float);
    assert_eq!(scalar_kind(Kind::Int, Int(2)), Kind::Int);
    assert_eq!(scalar_kind(Kind::Int, Float(0.5)), Kind::Float);
    assert_eq!(scalar_kind(Kind::Float, Int(2)), Kind::Float);
    assert_eq!(converted_scalar(Kind::Int, Float(-2.7)), -2.0);
    assert_eq!(converted_scalar(Kind::Bool, Float(0.1)), 1.0);
    assert_eq!(converted_scalar(Kind::Float, Float(0.1)), 0.1);
    assert_eq!(clamp_kind(Kind::Int, Some(Int(1)), None), Kind::Int);
    assert_eq!(clamp_kind(Kind::Int, Some(Float(1.0)), None), Kind::Float);
    assert_eq!(clamp_kind(Kind::Bool, None, Some(Float(0.5))), Kind::Float);
    assert_eq!(clamp_kind(Kind::Bool, Some(Bool(false)), None), Kind::Bool);
    assert_eq!(clamp_kind(Kind::Bool, Some(Int(0)), None), Kind::Int);
    assert_eq!(
        msg(check_clamp(Kind::Bool)),
        "\"clamp_scalar_cpu\" not implemented for 'Bool'"
    );
}

#[test]
fn arithmetic_messages() {
    assert_eq!(
        msg(check_alpha(Kind::Int, Scalar::Float(1.0))),
        "For integral input tensors, argument alpha must not be a floating point number."
    );
    assert!(check_alpha(Kind::Float, Scalar::Float(0.5)).is_ok());
    assert!(check_alpha(Kind::Int, Scalar::Int(2)).is_ok());
    assert_eq!(
        msg(check_alpha(Kind::Int, Scalar::Bool(true))),
        "Boolean alpha only supported for Boolean results."
    );
    assert!(msg(check_sub(Kind::Bool, Kind::Bool)).contains("with two bool tensors"));
    assert!(msg(check_sub(Kind::Int, Kind::Bool)).contains("with a bool tensor"));
    assert!(msg(check_sub_scalar(Kind::Bool, Scalar::Int(1))).contains("with a bool tensor"));
    assert!(msg(check_sub_scalar(Kind::Int, Scalar::Bool(true))).contains("with a bool tensor"));
    assert!(msg(check_sub_scalar(Kind::Bool, Scalar::Bool(true))).contains("two bool tensors"));
    assert!(check_sub_scalar(Kind::Int, Scalar::Float(0.5)).is_ok());
    assert!(check_sub(Kind::Int, Kind::Float).is_ok());
    assert!(msg(check_neg(Kind::Bool)).starts_with("Negation"));
    assert_eq!(
        msg(check_int_pow(Kind::Int, Scalar::Int(-1))),
        "Integers to negative integer powers are not allowed."
    );
    assert!(check_int_pow(Kind::Float, Scalar::Int(-1)).is_ok());
    assert_eq!(
        msg(check_not_bool(Kind::Bool, "pow")),
        "\"pow\" not implemented for 'Bool'"
    );
}

#[test]
fn float_only_kernels() {
    assert_eq!(
        msg(check_floats("i64", "GeluKernelImpl")),
        "\"GeluKernelImpl\" not implemented for 'Long'"
    );
    assert_eq!(
        msg(check_promoted_floats("mse_cpu", "bool", "i64")),
        "\"mse_cpu\" not implemented for 'Long'"
    );
    assert!(check_promoted_floats("mse_cpu", "i64", "f32").is_ok());
    assert_eq!(
        msg(check_softmax("softmax", "i64", 2, 0)),
        "\"softmax_kernel_impl\" not implemented for 'Long'"
    );
    assert_eq!(
        msg(check_softmax("log_softmax", "bool", 2, -1)),
        "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Bool'"
    );
    assert_eq!(
        msg(check_mean("i64", true)),
        "mean(): could not infer output dtype. Optional dtype must be either a floating point or complex dtype. Got: Long"
    );
    // PyTorch 2.15's order (probed): the mixed-dtype rule on the first parameter, the
    // kernel's dtypes, then the parameters' dtype.
    assert_eq!(
        msg(check_layer_norm("f64", Some("f64"), Some("i64"))),
        "expected scalar type Double but found Long"
    );
    assert_eq!(
        msg(check_layer_norm("f32", Some("f32"), Some("f64"))),
        "expected scalar type Float but found Double"
    );
    assert_eq!(
        msg(check_layer_norm("f64", Some("f32"), None)),
        "mixed dtype (CPU): all inputs must share same datatype."
    );
    assert_eq!(
        msg(check_layer_norm("f32", None, Some("f64"))),
        "mixed dtype (CPU): expect parameter to have scalar type of Float"
    );
    assert_eq!(
        msg(check_layer_norm("i64", None, None)),
        "\"LayerNormKernelImpl\" not implemented for 'Long'"
    );
    assert!(check_layer_norm("f16", Some("f32"), Some("f32")).is_ok());
    assert_eq!(
        msg(check_layer_norm("f16", Some("f16"), Some("f32"))),
        "expected scalar type Half but found Float"
    );
}

#[test]
fn casts_and_pairs() {
    assert!(check_cast("i64", "f32").is_ok());
    assert!(check_cast("bool", "i64").is_ok());
    assert_eq!(
        msg(check_dropout("i64", "f32")),
        "result type Float can't be cast to the desired output type Long"
    );
    assert_eq!(
        msg(check_same("f64", "i64")),
        "expected scalar type Double but found Long"
    );
    assert_eq!(
        msg(check_matmul("f32", "i64", "addmm_impl_cpu_")),
        "expected m1 and m2 to have the same dtype, but got: float != long int"
    );
    assert_eq!(
        msg(check_matmul("bool", "bool", "bmm")),
        "\"bmm\" not implemented for 'Bool'"
    );
    assert_eq!(check_matmul("i64", "i64", "bmm"), Ok(Kind::Int));
    assert!(msg(check_where_condition("f32")).ends_with("with dtype Float"));
}

#[test]
fn index_arguments() {
    assert!(check_index(IndexUse::Gather, "i64").is_ok());
    assert_eq!(
        msg(check_index(IndexUse::IndexAdd, "f64")),
        "index_add_(): Expected dtype int32/int64 for index but got: Double"
    );
    assert!(msg(check_index(IndexUse::Embedding, "bool")).contains("but got CPUBoolType instead"));
    assert!(msg(check_index(IndexUse::Embedding, "f32")).contains("but got torch.FloatTensor"));
    assert_eq!(
        msg(check_index(IndexUse::NllTarget, "f32")),
        "expected target dtype to be Long or Byte, but got Float"
    );
    assert_eq!(
        msg(check_index_add_source("f64", "i64")),
        "index_add_(): self (Double) and source (Long) must have the same scalar type"
    );
    assert!(check_scatter_src("i64", "i64").is_ok());
}
