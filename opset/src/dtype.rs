//! PyTorch's dtype rules, once for every backend: pure functions over the dtype names a
//! backend's `Tensor::dtype` returns (`"f32"`, `"f64"`, `"i64"`, `"bool"`; candle also
//! `"u32"`, `"f16"`, `"bf16"`) that decide a result's [`Kind`] and return PyTorch's errors
//! for the wrong dtypes; [`written_back_kernels!`](crate::written_back_kernels), the
//! in-place and out= kernels with PyTorch's cast check, and
//! [`float_unary_kernels!`](crate::float_unary_kernels), the unary kernels that promote
//! integers and booleans to float.
//!
//! A backend keeps what only it can do: convert its arrays between kinds and call its
//! floating-point and integer kernels.
//!
//! ```
//! use autograd_opset::dtype::{Kind, check_cast, promoted_kind, torch_name};
//! assert_eq!(promoted_kind(&["bool", "i64"]), Kind::Int);
//! assert_eq!(torch_name("f64"), "Double");
//! let e = check_cast("f64", "i64").unwrap_err();
//! assert_eq!(e.message(), "result type Double can't be cast to the desired output type Long");
//! ```

use crate::error::{Error, check};
pub use autograd::types::{Scalar, ScalarType};

type R<T> = Result<T, Error>;

/// A dtype's rank in PyTorch's promotion: `Bool` < `Int` < `Float`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash)]
pub enum Kind {
    /// `torch.bool`.
    Bool,
    /// An integer dtype (`torch.long`, ...).
    Int,
    /// A floating-point dtype.
    Float,
}

impl Kind {
    /// The kind of a dtype name (`"bool"`, `"i64"`/`"u32"`, or a float).
    pub fn of(dtype: &str) -> Kind {
        match dtype {
            "bool" => Kind::Bool,
            "i64" | "i32" | "i16" | "i8" | "u8" | "u32" => Kind::Int,
            _ => Kind::Float,
        }
    }

    /// The kind a reduction's or factory's `dtype=` argument asks for.
    pub fn requested(dtype: ScalarType) -> Kind {
        match dtype {
            ScalarType::Bool => Kind::Bool,
            ScalarType::F16 | ScalarType::BF16 | ScalarType::F32 | ScalarType::F64 => Kind::Float,
            _ => Kind::Int,
        }
    }
}

/// The common kind of several dtypes (PyTorch's promotion; `Float` for none).
pub fn promoted_kind(dtypes: &[&str]) -> Kind {
    dtypes
        .iter()
        .map(|d| Kind::of(d))
        .max()
        .unwrap_or(Kind::Float)
}

/// PyTorch's name of a dtype in messages (`Double`, `Long`, `Bool`, ...).
pub fn torch_name(dtype: &str) -> &'static str {
    match dtype {
        "f32" => "Float",
        "f64" => "Double",
        "f16" => "Half",
        "bf16" => "BFloat16",
        "i64" => "Long",
        "i32" => "Int",
        "u32" => "UInt32",
        "bool" => "Bool",
        _ => "Undefined",
    }
}

/// The kind of `tensor op scalar` (PyTorch's promotion with a wrapped number): a float
/// Scalar makes integers and booleans float; an integer one makes booleans integers; a
/// boolean one changes nothing.
///
/// ```
/// use autograd::types::Scalar;
/// use autograd_opset::dtype::{Kind, scalar_kind};
/// assert_eq!(scalar_kind(Kind::Int, Scalar::Float(2.0)), Kind::Float);
/// assert_eq!(scalar_kind(Kind::Int, Scalar::Int(2)), Kind::Int);
/// ```
pub fn scalar_kind(tensor: Kind, scalar: Scalar) -> Kind {
    match (tensor, scalar) {
        (Kind::Float, _) | (_, Scalar::Float(_)) => Kind::Float,
        (Kind::Bool, Scalar::Bool(_)) => Kind::Bool,
        _ => Kind::Int,
    }
}

/// A Scalar converted to a tensor's kind, as PyTorch does for `alpha` and `fill_`'s value:
/// truncated for integers, `!= 0` (as 0/1) for booleans.
pub fn converted_scalar(kind: Kind, x: Scalar) -> f64 {
    match kind {
        Kind::Float => x.to_f64(),
        Kind::Int => x.to_f64().trunc(),
        Kind::Bool => f64::from(u8::from(x.to_bool())),
    }
}

/// The kind of `clamp`'s result (PyTorch's `result_type(self, min, max)`): integers stay
/// integers unless a bound is a float; booleans with boolean bounds stay booleans (which
/// PyTorch's kernel refuses: [`check_clamp`]).
pub fn clamp_kind(tensor: Kind, min: Option<Scalar>, max: Option<Scalar>) -> Kind {
    let kind_of = |s: Option<Scalar>| match s {
        None | Some(Scalar::Bool(_)) => Kind::Bool,
        Some(Scalar::Int(_)) => Kind::Int,
        Some(Scalar::Float(_)) => Kind::Float,
    };
    tensor.max(kind_of(min)).max(kind_of(max))
}

/// `clamp`'s kernel has no boolean form.
pub fn check_clamp(result: Kind) -> R<()> {
    check_not_bool(result, kernel::CLAMP)
}

/// The names of PyTorch's CPU kernels that its dtype errors name (`"abs_cpu" not implemented
/// for 'Bool'`), by op: what a backend passes to [`check_floats`], [`check_not_bool`],
/// [`check_promoted_floats`], [`check_matmul`] and [`check_softmax`], so that the words stay
/// the op set's.
pub mod kernel {
    /// `pow` of booleans.
    pub const POW: &str = "pow";
    /// `clamp` with Scalar bounds.
    pub const CLAMP: &str = "clamp_scalar_cpu";
    /// `clamp.Tensor` with both bounds (one bound is `maximum`'s or `minimum`'s kernel,
    /// which take booleans).
    pub const CLAMP_TENSOR: &str = "clamp_cpu";
    /// `clamp_min` with a Scalar bound (the masked family, issue 30).
    pub const CLAMP_MIN: &str = "clamp_min_scalar_cpu";
    /// `clamp_max` with a Scalar bound (the masked family, issue 30).
    pub const CLAMP_MAX: &str = "clamp_max_scalar_cpu";
    /// `addcmul` (no boolean form; the masked family, issue 30).
    pub const ADDCMUL: &str = "addcmul_cpu_out";
    /// `ceil`, `floor`, `round`, `trunc` (no boolean form).
    pub const CEIL: &str = "ceil_vml_cpu";
    /// See [`CEIL`].
    pub const FLOOR: &str = "floor_vml_cpu";
    /// See [`CEIL`].
    pub const ROUND: &str = "round_vml_cpu";
    /// See [`CEIL`].
    pub const TRUNC: &str = "trunc_vml_cpu";
    /// `remainder` (no boolean form).
    pub const REMAINDER: &str = "remainder_cpu";
    /// `fmod` (no boolean form).
    pub const FMOD: &str = "fmod_cpu";
    /// `div` with `rounding_mode="floor"` (no boolean form).
    pub const DIV_FLOOR: &str = "div_floor_cpu";
    /// `div` with `rounding_mode="trunc"` (no boolean form).
    pub const DIV_TRUNC: &str = "div_trunc_cpu";
    /// `elu` (floats only).
    pub const ELU: &str = "elu_cpu";
    /// `elu_backward` (floats only).
    pub const ELU_BACKWARD: &str = "elu_backward_cpu";
    /// `hardtanh_backward` (floats only).
    pub const HARDTANH_BACKWARD: &str = "hardtanh_backward_cpu";
    /// `bitwise_not` (integers and booleans only).
    pub const BITWISE_NOT: &str = "bitwise_not_cpu";
    /// `bitwise_and` (integers and booleans only).
    pub const BITWISE_AND: &str = "bitwise_and_cpu";
    /// `bitwise_or` (integers and booleans only).
    pub const BITWISE_OR: &str = "bitwise_or_cpu";
    /// `bitwise_xor` (integers and booleans only).
    pub const BITWISE_XOR: &str = "bitwise_xor_cpu";
    /// `abs` of booleans.
    pub const ABS: &str = "abs_cpu";
    /// `tanh_backward` of integers.
    pub const TANH_BACKWARD: &str = "tanh_backward_cpu";
    /// `leaky_relu` of integers.
    pub const LEAKY_RELU: &str = "leaky_relu_cpu";
    /// `threshold_backward` of booleans.
    pub const THRESHOLD: &str = "threshold_cpu";
    /// `gelu` of integers.
    pub const GELU: &str = "GeluKernelImpl";
    /// `mm` of booleans.
    pub const MM: &str = "addmm_impl_cpu_";
    /// `bmm` of booleans.
    pub const BMM: &str = "bmm";
    /// `_softmax`: the op, whose kernel [`check_softmax`](super::check_softmax) names by dim.
    pub const SOFTMAX: &str = "softmax";
    /// `_log_softmax`: as [`SOFTMAX`].
    pub const LOG_SOFTMAX: &str = "log_softmax";
    /// `mse_loss` of integers.
    pub const MSE_LOSS: &str = "mse_cpu";
    /// `nll_loss_forward` of integers.
    pub const NLL_LOSS: &str = "nll_loss_out_frame";
    /// `nll_loss_backward` of integers.
    pub const NLL_LOSS_BACKWARD: &str = "nll_loss_backward_out_frame";
    /// `_adaptive_avg_pool2d` of integers.
    pub const ADAPTIVE_AVG_POOL2D: &str = "adaptive_avg_pool2d";
    /// `_adaptive_avg_pool2d_backward` of integers.
    pub const ADAPTIVE_AVG_POOL2D_BACKWARD: &str = "adaptive_avg_pool2d_backward_cpu";
    /// `_adaptive_avg_pool3d` of integers and booleans.
    pub const ADAPTIVE_AVG_POOL3D: &str = "adaptive_avg_pool3d_cpu";
    /// `_adaptive_avg_pool3d_backward` of integers and booleans.
    pub const ADAPTIVE_AVG_POOL3D_BACKWARD: &str = "adaptive_avg_pool3d_backward_cpu";
    /// `upsample_nearest2d` of integers and booleans.
    pub const UPSAMPLE_NEAREST2D: &str = "upsample_nearest2d_channels_last";
    /// `upsample_nearest2d_backward` of integers and booleans.
    pub const UPSAMPLE_NEAREST2D_BACKWARD: &str = "upsample_nearest2d_backward";
    /// `upsample_bilinear2d` of integers and booleans.
    pub const UPSAMPLE_BILINEAR2D: &str = "upsample_bilinear2d_channels_last";
    /// `upsample_bilinear2d_backward` of integers and booleans.
    pub const UPSAMPLE_BILINEAR2D_BACKWARD: &str = "upsample_bilinear2d_backward";
    /// `upsample_nearest2d_backward` of integers and booleans whose gradient is also
    /// channels-last contiguous (one channel, or a 1x1 plane).
    pub const UPSAMPLE_NEAREST2D_BACKWARD_CL: &str = "upsample_nearest2d_backward_cl";
    /// `upsample_bilinear2d_backward` of integers and booleans whose gradient is also
    /// channels-last contiguous.
    pub const UPSAMPLE_BILINEAR2D_BACKWARD_CL: &str = "upsample_bilinear2d_backward_channels_last";
    /// `cumsum` asked for a `bool` result.
    pub const CUMSUM: &str = "cumsum_out_cpu";
    /// `cumprod` asked for a `bool` result.
    pub const CUMPROD: &str = "cumprod_out_cpu";
    /// `max_pool3d_with_indices` of booleans.
    pub const MAX_POOL3D: &str = "max_pool3d";
    /// `max_pool3d_with_indices_backward` of integers and booleans.
    pub const MAX_POOL3D_BACKWARD: &str = "max_pool3d_backward";
    /// `avg_pool3d` of booleans.
    pub const AVG_POOL3D: &str = "avg_pool3d_out_frame";
    /// `avg_pool3d_backward` of booleans.
    pub const AVG_POOL3D_BACKWARD: &str = "avg_pool3d_backward_out_frame";
    // group normalization
    /// `native_group_norm` of integers and booleans.
    pub const GROUP_NORM: &str = "GroupNormKernelImpl";
    /// `native_group_norm_backward` of integers and booleans.
    pub const GROUP_NORM_BACKWARD: &str = "GroupNormBackwardKernelImpl";
    // ---- distances (issue 30)
    /// `_pdist_forward` of integers and booleans.
    pub const PDIST: &str = "pdist";
    /// `_pdist_backward` of integers and booleans.
    pub const PDIST_BACKWARD: &str = "pdist_backward";
    /// `_cdist_backward` of integers and booleans.
    pub const CDIST_BACKWARD: &str = "cdist_backward";
    // ---- scatter_reduce (issue 30)
    /// `scatter_reduce.two` with `reduce="mean"` of booleans.
    pub const SCATTER_REDUCE_MEAN: &str = "scatter_gather_tensor_cpu_reduce_mean";
}

/// PyTorch's error for a kernel it implements for floating-point types only.
pub fn not_implemented(kernel: &str, dtype: &str) -> Error {
    Error::runtime(format!(
        "\"{kernel}\" not implemented for '{}'",
        torch_name(dtype)
    ))
}

/// A kernel PyTorch implements for floating-point types only.
pub fn check_floats(dtype: &str, kernel: &str) -> R<()> {
    match Kind::of(dtype) {
        Kind::Float => Ok(()),
        _ => Err(not_implemented(kernel, dtype)),
    }
}

/// A float-only kernel of two operands PyTorch promotes first (`tanh_backward`,
/// `mse_loss`): the message names the operand of the promoted kind.
pub fn check_promoted_floats(kernel: &str, a: &str, b: &str) -> R<()> {
    let k = promoted_kind(&[a, b]);
    check_floats(if Kind::of(a) == k { a } else { b }, kernel)
}

/// A kernel PyTorch does not implement for booleans (`pow`, `abs`, `threshold_backward`).
pub fn check_not_bool(kind: Kind, kernel: &str) -> R<()> {
    match kind {
        Kind::Bool => Err(not_implemented(kernel, "bool")),
        _ => Ok(()),
    }
}

/// `neg`'s refusal of booleans.
pub fn check_neg(kind: Kind) -> R<()> {
    check(kind != Kind::Bool, || {
        "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.".into()
    })
}

/// `relu`'s refusal of booleans.
pub fn check_relu(kind: Kind) -> R<()> {
    check(kind != Kind::Bool, || {
        "Boolean inputs not supported for relu".into()
    })
}

/// `argmax`'s refusal of booleans.
pub fn check_argmax(kind: Kind) -> R<()> {
    check(kind != Kind::Bool, || {
        "argmax(): does not support bool input".into()
    })
}

/// `argmin`'s refusal of booleans.
pub fn check_argmin(kind: Kind) -> R<()> {
    check(kind != Kind::Bool, || {
        "argmin(): does not support bool input".into()
    })
}

/// `remainder` and `fmod` with a Scalar: the result's kind ([`scalar_kind`]), which must
/// not be boolean (PyTorch: `"remainder_cpu" not implemented for 'Bool'`).
pub fn check_modulo(result: Kind, kernel: &str) -> R<()> {
    check_not_bool(result, kernel)
}

/// `hardtanh`'s refusal of booleans.
pub fn check_hardtanh(kind: Kind) -> R<()> {
    check(kind != Kind::Bool, || {
        "Bool inputs not supported for hardtanh".into()
    })
}

/// An integer `remainder` or `fmod` by zero.
pub fn check_int_divisor(result: Kind, divisor: Scalar) -> R<()> {
    check_int_divisors(result, divisor.to_f64() == 0.0)
}

/// An integer division, `remainder` or `fmod` where some divisor is zero.
pub fn check_int_divisors(result: Kind, any_zero: bool) -> R<()> {
    check(result != Kind::Int || !any_zero, || {
        "ZeroDivisionError".into()
    })
}

/// PyTorch's check of `alpha` for results of kind `result` (`alpha_check`).
pub fn check_alpha(result: Kind, alpha: Scalar) -> R<()> {
    check(!alpha.is_boolean() || result == Kind::Bool, || {
        "Boolean alpha only supported for Boolean results.".into()
    })?;
    check(result == Kind::Float || alpha.is_integral(true), || {
        "For integral input tensors, argument alpha must not be a floating point number.".into()
    })
}

const SUB_BOOL: &str = "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.";

/// `sub`'s refusal of boolean operands.
pub fn check_sub(a: Kind, b: Kind) -> R<()> {
    if a == Kind::Bool && b == Kind::Bool {
        return Err(Error::runtime(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.",
        ));
    }
    check(a != Kind::Bool && b != Kind::Bool, || SUB_BOOL.into())
}

/// `sub`'s refusal of a boolean tensor minus a Scalar, or of anything minus a boolean
/// Scalar (PyTorch wraps the Scalar in a tensor of its kind).
pub fn check_sub_scalar(kind: Kind, scalar: Scalar) -> R<()> {
    let scalar_kind = match scalar {
        Scalar::Bool(_) => Kind::Bool,
        _ => Kind::Int,
    };
    check_sub(kind, scalar_kind)
}

/// `pow`'s refusal of negative integral exponents for integral results.
pub fn check_int_pow(result: Kind, exponent: Scalar) -> R<()> {
    check(result == Kind::Float || exponent.to_f64() >= 0.0, || {
        "Integers to negative integer powers are not allowed.".into()
    })
}

/// `where`'s condition must be `bool`.
pub fn check_where_condition(dtype: &str) -> R<()> {
    check(Kind::of(dtype) == Kind::Bool, || {
        format!(
            "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
            torch_name(dtype)
        )
    })
}

/// Two operands of one dtype (`bmm`, `nll_loss`'s weight): PyTorch's "expected scalar type
/// Double but found Long".
pub fn check_same(expected: &str, found: &str) -> R<()> {
    check(expected == found, || {
        format!(
            "expected scalar type {} but found {}",
            torch_name(expected),
            torch_name(found)
        )
    })
}

/// `max_pool3d_with_indices_backward`'s dtypes: the gradient's is the input's, the indices
/// are `int64`, the kernel is for floating-point types.
pub fn check_pool3d_backward(input: &str, grad_output: &str, indices: &str) -> R<()> {
    check(input == grad_output, || {
        format!(
            "expected dtype {} for `gradOutput` but got dtype {}",
            c10_name(input),
            c10_name(grad_output)
        )
    })?;
    check_same("i64", indices)?;
    check_floats(input, kernel::MAX_POOL3D_BACKWARD)
}

// ---- grid sampling (issue 30)

/// `grid_sampler_2d`'s CPU kernel.
pub const GRID_SAMPLER_2D: &str = "grid_sampler_2d_cpu_kernel_impl";
/// `grid_sampler_2d_backward`'s CPU kernel.
pub const GRID_SAMPLER_2D_BACKWARD: &str = "grid_sampler_2d_backward_cpu_kernel_impl";

/// `grid_sampler_2d` and its backward (`kernel` names which): PyTorch's kernels dispatch on
/// the input's dtype (floating point only), then read the other operands (the grid, the
/// gradient) as of the input's dtype.
pub fn check_grid_sampler(input: &str, others: &[&str], kernel: &str) -> R<()> {
    check_floats(input, kernel)?;
    others.iter().try_for_each(|o| check_same(input, o))
}

/// PyTorch's C++ name of a dtype (`caffe2::TypeMeta`'s: `double`, `long int`, `bool`, ...),
/// in the messages of its structured kernels.
pub fn c10_name(dtype: &str) -> &'static str {
    match dtype {
        "f32" => "float",
        "f64" => "double",
        "f16" => "c10::Half",
        "bf16" => "c10::BFloat16",
        "i64" => "long int",
        "i32" => "int",
        "u32" => "unsigned int",
        "bool" => "bool",
        _ => "Undefined",
    }
}

/// `mm`/`bmm`'s operands: one dtype, not `bool` (`kernel` names PyTorch's kernel). Returns
/// their kind.
pub fn check_matmul(a: &str, b: &str, kernel: &str) -> R<Kind> {
    check(a == b, || {
        format!(
            "expected m1 and m2 to have the same dtype, but got: {} != {}",
            c10_name(a),
            c10_name(b)
        )
    })?;
    check_not_bool(Kind::of(a), kernel)?;
    Ok(Kind::of(a))
}

/// PyTorch's integer power (`powi`): exact, wrapping on overflow; a negative exponent gives
/// 0 but for a base of 1 (1) or -1 (its sign by the exponent's parity).
pub fn int_pow(base: i64, exponent: i64) -> i64 {
    if exponent < 0 {
        return match base {
            1 => 1,
            -1 if exponent % 2 != 0 => -1,
            -1 => 1,
            _ => 0,
        };
    }
    let (mut r, mut a, mut e) = (1i64, base, exponent);
    while e != 0 {
        if e & 1 == 1 {
            r = r.wrapping_mul(a);
        }
        e /= 2;
        a = a.wrapping_mul(a);
    }
    r
}

/// `mean`'s dtype check (on the input, or on the `dtype=` it was cast to: `requested`).
pub fn check_mean(dtype: &str, requested: bool) -> R<()> {
    let what = if requested { "Optional" } else { "Input" };
    check(Kind::of(dtype) == Kind::Float, || {
        format!(
            "mean(): could not infer output dtype. {what} dtype must be either a floating point or complex dtype. Got: {}",
            torch_name(dtype)
        )
    })
}

/// `softmax`/`log_softmax` (`op`) on floats only, with the name of PyTorch's CPU kernel for
/// `dim` of an `ndim`-dimensional input.
pub fn check_softmax(op: &str, dtype: &str, ndim: usize, dim: i64) -> R<()> {
    let nd = ndim as i64;
    let last = dim == -1 || dim == nd - 1 || nd == 0;
    let kernel = match (op == kernel::SOFTMAX, last) {
        (true, true) => "softmax_lastdim_kernel_impl",
        (true, false) => "softmax_kernel_impl",
        (_, true) => "log_softmax_lastdim_kernel_impl",
        _ => "log_softmax_kernel_impl",
    };
    check_floats(dtype, kernel)
}

/// An in-place or out= result of dtype `result` written into a tensor of dtype `out`:
/// PyTorch refuses a cast down the promotion order (a float into an `i64`).
pub fn check_cast(result: &str, out: &str) -> R<()> {
    check(Kind::of(result) <= Kind::of(out), || {
        format!(
            "result type {} can't be cast to the desired output type {}",
            torch_name(result),
            torch_name(out)
        )
    })
}

/// [`check_cast`] with the destination named as C++ names it (`long int`): PyTorch's text
/// for the in-place forms with a number argument (`clamp_min_`, `clamp_max_`).
pub fn check_cast_c10(result: &str, out: &str) -> R<()> {
    check(Kind::of(result) <= Kind::of(out), || {
        format!(
            "result type {} can't be cast to the desired output type {}",
            torch_name(result),
            c10_name(out)
        )
    })
}

/// An out= tensor of an op whose `TensorIterator` takes a single dtype (`neg.out`,
/// `clamp.out`): `out` must have the result's dtype exactly.
pub fn check_out_same(result: &str, out: &str) -> R<()> {
    check(result == out, || {
        format!(
            "Found dtype {} but expected {}",
            torch_name(out),
            torch_name(result)
        )
    })
}

/// The out= tensor of a structured kernel that sets its output's dtype (`mm.out`: `self`'s;
/// `sum.IntList_out`: its `dtype=`) must have that dtype exactly.
pub fn check_out_dtype(expected: &str, out: &str) -> R<()> {
    check(expected == out, || {
        format!(
            "Expected out tensor to have dtype {}, but got {} instead",
            c10_name(expected),
            c10_name(out)
        )
    })
}

/// `cat.out`: the inputs' common dtype must cast to `out`'s (checked after
/// [`cat_axis`](crate::shape::cat_axis), before the sizes).
pub fn check_cat_out(inputs: &[&str], out: &str) -> R<()> {
    check(promoted_kind(inputs) <= Kind::of(out), || {
        format!(
            "torch.cat(): input types can't be cast to the desired output type {}",
            torch_name(out)
        )
    })
}

/// A backend tensor's dtype name (for the kernels of
/// [`written_back_kernels!`](crate::written_back_kernels)).
#[doc(hidden)]
pub fn dtype_of<T: autograd::runtime::Tensor>(t: &T) -> &'static str {
    t.dtype()
}

/// A backend tensor's shape (for the kernels of
/// [`written_back_kernels!`](crate::written_back_kernels)).
#[doc(hidden)]
pub fn shape_of<T: autograd::runtime::Tensor>(t: &T) -> &[usize] {
    t.shape()
}

/// `native_dropout`'s input must be floating point (PyTorch's result type is the default
/// float dtype, `default_float`).
pub fn check_dropout(dtype: &str, default_float: &str) -> R<()> {
    check_cast(default_float, dtype)
}

/// `layer_norm`'s dtypes in PyTorch's order: the mixed-dtype rule ([`check_mixed_norm`]:
/// parameters of another dtype than the input's must be `Float` and the input half
/// precision), then a floating-point input, then parameters of the input's dtype.
pub fn check_layer_norm(input: &str, weight: Option<&str>, bias: Option<&str>) -> R<()> {
    let params = [weight, bias];
    if !check_mixed_norm(input, &params)? {
        check_floats(input, "LayerNormKernelImpl")?;
        check_same_dtype(input, &params)?;
    }
    Ok(())
}

/// An op's index argument, for [`check_index`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IndexUse {
    /// `index_select`'s `index`.
    IndexSelect,
    /// `index_add`'s `index`.
    IndexAdd,
    /// `gather`'s `index`.
    Gather,
    /// `scatter_add`'s `index`.
    Scatter,
    /// `nll_loss_forward`'s `target`.
    NllTarget,
    /// `nll_loss_backward`'s `target`.
    NllBackwardTarget,
    /// `embedding`'s `indices`.
    Embedding,
    /// `embedding_dense_backward`'s `indices` (argument #2).
    EmbeddingBackward,
}

/// An index argument must be `i64`: PyTorch's message for each op otherwise.
pub fn check_index(arg: IndexUse, dtype: &str) -> R<()> {
    if dtype == "i64" {
        return Ok(());
    }
    let d = torch_name(dtype);
    Err(Error::runtime(match arg {
        IndexUse::IndexSelect => "index_select(): Expected dtype int32 or int64 for index".into(),
        IndexUse::IndexAdd => {
            format!("index_add_(): Expected dtype int32/int64 for index but got: {d}")
        }
        IndexUse::Gather => "gather(): Expected dtype int32/int64 for index".into(),
        IndexUse::Scatter => "scatter(): Expected dtype int32/int64 for index".into(),
        IndexUse::NllTarget => format!("expected target dtype to be Long or Byte, but got {d}"),
        IndexUse::NllBackwardTarget => format!("expected scalar type Long but found {d}"),
        IndexUse::Embedding => index_types_text(1, "embedding", dtype),
        IndexUse::EmbeddingBackward => index_types_text(2, "embedding_backward", dtype),
    }))
}

/// PyTorch's `checkScalarTypes` text for an `indices` argument (number `arg` of `op`) that
/// is neither Long nor Int.
fn index_types_text(arg: usize, op: &str, dtype: &str) -> String {
    let got = match dtype {
        "bool" => "CPUBoolType".to_string(),
        _ => format!("torch.{}Tensor", torch_name(dtype)),
    };
    format!(
        "Expected tensor for argument #{arg} 'indices' to have one of the following scalar types: Long, Int; but got {got} instead (while checking arguments for {op})"
    )
}

/// `index_add`'s `self` and `source` of one dtype.
pub fn check_index_add_source(self_: &str, source: &str) -> R<()> {
    check(self_ == source, || {
        format!(
            "index_add_(): self ({}) and source ({}) must have the same scalar type",
            torch_name(self_),
            torch_name(source)
        )
    })
}

/// `scatter_add`'s `self` and `src` of one dtype.
pub fn check_scatter_src(self_: &str, src: &str) -> R<()> {
    check(self_ == src, || {
        "scatter(): Expected self.dtype to be equal to src.dtype".into()
    })
}

/// The kernels PyTorch computes in floating point for every input dtype (`exp`, `log`,
/// `sqrt`, `rsqrt`, `sin`, `cos`, `erf`, `tanh`, `sigmoid`, the inverse and hyperbolic
/// trigonometric functions, `tan`, `expm1`, `log1p`, `log2`, `log10`, `reciprocal`: integers and booleans are
/// promoted to the default float dtype), each written as `$promote(self_, <$kernels>::op)`:
/// the backend's `$promote(t: &Self, kernel: fn(&K) -> Result<K, E>) -> Result<Self, E>`
/// converts `t` to its float type `K` and calls the kernel. Invoke inside `impl Backend`:
/// `autograd_opset::float_unary_kernels!(float_unary, MyFloatTensor);`.
#[macro_export]
macro_rules! float_unary_kernels {
    ($promote:path, $kernels:ty) => {
        $crate::__float_unary! {
            $promote, $kernels;
            exp log sqrt rsqrt sin cos erf tanh sigmoid
            acos asin atan acosh asinh atanh sinh cosh tan expm1 log1p log2 log10 reciprocal
        }
    };
}

/// The kernels of [`float_unary_kernels!`](crate::float_unary_kernels).
#[doc(hidden)]
#[macro_export]
macro_rules! __float_unary {
    ($promote:path, $kernels:ty; $($name:ident)*) => {$(
        fn $name(self_: &Self) -> Result<Self, Self::Error> {
            $promote(self_, <$kernels>::$name)
        }
    )*};
}

#[cfg(test)]
mod tests;

// ---- group normalization

/// PyTorch's `is_mixed_type` and `check_mixed_data_type` (`mixed_data_type.h`) of a
/// normalization kernel: when the first defined parameter's dtype is not the input's, every
/// parameter must be `Float` and the input `BFloat16` or `Half`. Whether the dtypes are mixed.
pub fn check_mixed_norm(input: &str, params: &[Option<&str>]) -> R<bool> {
    let mixed = params.iter().flatten().next().is_some_and(|p| *p != input);
    if mixed {
        for p in params.iter().flatten() {
            check(*p == "f32", || {
                "mixed dtype (CPU): expect parameter to have scalar type of Float".into()
            })?;
        }
        check(matches!(input, "bf16" | "f16"), || {
            "mixed dtype (CPU): all inputs must share same datatype.".into()
        })?;
    }
    Ok(mixed)
}

/// A kernel reading its parameters as the input's dtype (PyTorch's `data_ptr<T>()`): each
/// defined one must have it.
pub fn check_same_dtype(input: &str, params: &[Option<&str>]) -> R<()> {
    for p in params.iter().flatten() {
        check(*p == input, || {
            format!(
                "expected scalar type {} but found {}",
                torch_name(input),
                torch_name(p)
            )
        })?;
    }
    Ok(())
}

// ---- embedding bags (Core ATen; issue 30)

/// `_embedding_bag`'s index dtype: PyTorch's `promoteIndicesAndOffsets`, the promoted type
/// of `indices` and `offsets` (both are cast to it; a boolean promotes to the other's).
pub fn bag_index_dtype(indices: &str, offsets: &str) -> &'static str {
    let rank = |d: &str| match d {
        "bool" => 0,
        "u8" => 1,
        "i8" => 2,
        "i16" => 3,
        "i32" => 4,
        "u32" => 5,
        "i64" => 6,
        "f16" | "bf16" => 7,
        "f32" => 8,
        _ => 9,
    };
    let d = if rank(indices) >= rank(offsets) {
        indices
    } else {
        offsets
    };
    match d {
        "bf16" if indices == "f16" || offsets == "f16" => "f32",
        _ => static_name(d),
    }
}

/// A dtype name as a `'static` one.
fn static_name(d: &str) -> &'static str {
    [
        "bool", "u8", "i8", "i16", "i32", "u32", "i64", "f16", "bf16", "f32", "f64",
    ]
    .into_iter()
    .find(|s| *s == d)
    .unwrap_or("f64")
}

/// `checkScalarTypes(\"embedding_bag\", arg, {kLong, kInt})` for an index argument of the
/// embedding-bag kernels (`indices`, `offset2bag`).
pub fn check_bag_index(arg: &str, dtype: &str) -> R<()> {
    check(matches!(dtype, "i64" | "i32"), || {
        format!(
            "Expected tensor for argument #1 '{arg}' to have one of the following scalar types: Long, Int; but got {} instead (while checking arguments for embedding_bag)",
            tensor_type_name(dtype)
        )
    })
}

/// `checkScalarTypes(\"embedding_bag\", arg, {kHalf, kBFloat16, kFloat, kDouble})` for the
/// embedding-bag kernels' `weight` and `grad_`.
pub fn check_bag_float(arg: &str, dtype: &str) -> R<()> {
    check(matches!(dtype, "f16" | "bf16" | "f32" | "f64"), || {
        format!(
            "Expected tensor for argument #1 '{arg}' to have one of the following scalar types: Half, BFloat16, Float, Double; but got {} instead (while checking arguments for embedding_bag)",
            tensor_type_name(dtype)
        )
    })
}

/// `checkSameType(\"embedding_bag\", weight, per_sample_weights)`.
pub fn check_bag_same_type(weight: &str, per_sample_weights: &str) -> R<()> {
    check(weight == per_sample_weights, || {
        format!(
            "Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 'per_sample_weights'; but type {} does not equal {} (while checking arguments for embedding_bag)",
            tensor_type_name(weight),
            tensor_type_name(per_sample_weights)
        )
    })
}

/// PyTorch's name of a CPU tensor type in `TensorArg` checks (`torch.LongTensor`; a boolean
/// one is `CPUBoolType`).
pub fn tensor_type_name(dtype: &str) -> String {
    match dtype {
        "bool" => "CPUBoolType".to_string(),
        _ => format!("torch.{}Tensor", torch_name(dtype)),
    }
}
