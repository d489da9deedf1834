//! The in-place and out= kernels of the `Backend` trait written as their functional kernel
//! followed by the backend's write-back ([`written_back_kernels!`](crate::written_back_kernels)).
//! Its macros expand inside a backend's `impl Backend`; they call the dtype, shape and meta
//! checks, so this module sits above those.

/// The in-place and out= kernels of the `Backend` trait that have a functional kernel,
/// written as that kernel followed by `$write_back(dest: &mut Self, result: Self) ->
/// Result<(), Self::Error>`, which stores the result in the destination's dtype after
/// [`check_cast`](crate::dtype::check_cast). The out= kernels check `out`'s dtype as PyTorch
/// does: a cast into it (`add.out`, `exp.out`, `cat.out`), the result's dtype exactly
/// (`neg.out`, `clamp.out`, `mm.out`), or the dtype the sum is computed in
/// (`sum.IntList_out`: `out`'s without `dtype=`). Invoke inside `impl Backend for MyTensor`:
/// `autograd_opset::written_back_kernels!(write_back);`.
///
/// The contract of `write_back`, as PyTorch's:
///
/// * **in-place** (`add_`, `clamp_`, ...): the result keeps the destination's shape. The
///   generated op runs the kernel on a copy of `self`'s data and refuses a result of
///   another shape with PyTorch's "output with shape \[3\] doesn't match the broadcast shape
///   \[2, 3\]" before `self` changes (`autograd::support::check_inplace_shape`), so
///   `write_back` may take the shape as given;
/// * **out=** (`add_out`, `cat_out`, ...): the destination takes the result's shape,
///   whatever it had (PyTorch's `resize_output`), and the result's values converted to the
///   destination's dtype; a dtype the result cannot be cast to is `check_cast`'s error.
///
/// So one `write_back` serves both: convert the dtype, then replace the destination's
/// shape and values.
#[macro_export]
macro_rules! written_back_kernels {
    ($write_back:path) => {
        $crate::__in_place! { $write_back;
            add_tensor_ => add_tensor(other: &Self, alpha: $crate::dtype::Scalar);
            add_scalar_ => add_scalar(other: $crate::dtype::Scalar, alpha: $crate::dtype::Scalar);
            sub_tensor_ => sub_tensor(other: &Self, alpha: $crate::dtype::Scalar);
            sub_scalar_ => sub_scalar(other: $crate::dtype::Scalar, alpha: $crate::dtype::Scalar);
            mul_tensor_ => mul_tensor(other: &Self);
            mul_scalar_ => mul_scalar(other: $crate::dtype::Scalar);
            div_tensor_ => div_tensor(other: &Self);
            div_scalar_ => div_scalar(other: $crate::dtype::Scalar);
            neg_ => neg();
            exp_ => exp();
            log_ => log();
            sqrt_ => sqrt();
            pow_scalar_ => pow_tensor_scalar(exponent: $crate::dtype::Scalar);
            abs_ => abs();
            sin_ => sin();
            tanh_ => tanh();
            sigmoid_ => sigmoid();
            relu_ => relu();
            leaky_relu_ => leaky_relu(negative_slope: $crate::dtype::Scalar);
            gelu_ => gelu(approximate: &str);
            clamp_ => clamp(min: Option<$crate::dtype::Scalar>, max: Option<$crate::dtype::Scalar>);
        }
        // In-place forms of the op set's functional operators.
        $crate::__in_place! { $write_back;
            reciprocal_ => reciprocal();
            rsqrt_ => rsqrt();
            log1p_ => log1p();
            expm1_ => expm1();
            log2_ => log2();
            log10_ => log10();
            cos_ => cos();
            tan_ => tan();
            sinh_ => sinh();
            cosh_ => cosh();
            asin_ => asin();
            acos_ => acos();
            atan_ => atan();
            erf_ => erf();
            floor_ => floor();
            ceil_ => ceil();
            round_ => round();
            trunc_ => trunc();
            sign_ => sign();
            copy_ => copy(src: &Self, non_blocking: bool);
        }
        $crate::__out_kernels! { $write_back;
            add_out => add_tensor(self_: &Self, other: &Self, alpha: $crate::dtype::Scalar);
            sub_out => sub_tensor(self_: &Self, other: &Self, alpha: $crate::dtype::Scalar);
            mul_out => mul_tensor(self_: &Self, other: &Self);
            div_out => div_tensor(self_: &Self, other: &Self);
            exp_out => exp(self_: &Self);
            tanh_out => tanh(self_: &Self);
            atan2_out => atan2(self_: &Self, other: &Self);
        }
        $crate::__same_dtype_out_kernels! { $write_back;
            neg_out => neg(self_: &Self);
            clamp_out => clamp(self_: &Self, min: Option<$crate::dtype::Scalar>, max: Option<$crate::dtype::Scalar>);
        }
        fn mm_out(self_: &Self, mat2: &Self, out: &mut Self) -> Result<(), Self::Error> {
            use $crate::dtype::{dtype_of, shape_of};
            // PyTorch's meta function: ranks and sizes, then `out`'s dtype (`self`'s); its
            // kernel checks the operands' dtypes.
            $crate::shape::check_mm(shape_of(self_), shape_of(mat2))?;
            $crate::dtype::check_out_dtype(dtype_of(self_), dtype_of(&*out))?;
            let r = <Self as $crate::Backend>::mm(self_, mat2)?;
            $write_back(out, r)
        }
        fn cat_out(tensors: &[Self], dim: i64, out: &mut Self) -> Result<(), Self::Error> {
            use $crate::dtype::{dtype_of, shape_of};
            let shapes: Vec<&[usize]> = tensors.iter().map(shape_of).collect();
            $crate::shape::cat_axis(&shapes, dim)?;
            let dtypes: Vec<&str> = tensors.iter().map(dtype_of).collect();
            $crate::dtype::check_cat_out(&dtypes, dtype_of(&*out))?;
            let r = <Self as $crate::Backend>::cat(tensors, dim)?;
            $write_back(out, r)
        }
        fn sum_intlist_out(
            self_: &Self,
            dim: Option<&[i64]>,
            keepdim: bool,
            dtype: Option<$crate::dtype::ScalarType>,
            out: &mut Self,
        ) -> Result<(), Self::Error> {
            // Without `dtype=` the sum is computed in `out`'s dtype.
            let out_dtype = $crate::dtype::dtype_of(&*out);
            let as_dtype = dtype.or_else(|| $crate::dtype::ScalarType::from_name(out_dtype));
            let r = <Self as $crate::Backend>::sum_dim_intlist(self_, dim, keepdim, as_dtype)?;
            $crate::dtype::check_out_dtype($crate::dtype::dtype_of(&r), out_dtype)?;
            $write_back(out, r)
        }
        // ---- masked (issue 30): `clamp_min_`/`clamp_max_`, then `masked_fill_`.
        $crate::__in_place! { $write_back;
            clamp_min_tensor_ => clamp_min_tensor(min: &Self);
            clamp_max_tensor_ => clamp_max_tensor(max: &Self);
        }
        $crate::__in_place! { $write_back;
            addcmul_ => addcmul(tensor1: &Self, tensor2: &Self, value: $crate::dtype::Scalar);
            addcdiv_ => addcdiv(tensor1: &Self, tensor2: &Self, value: $crate::dtype::Scalar);
            lerp_scalar_ => lerp_scalar(end: &Self, weight: $crate::dtype::Scalar);
            lerp_tensor_ => lerp_tensor(end: &Self, weight: &Self);
        }
        // A number bound: PyTorch's cast error names `self`'s dtype as C++ does ("long int").
        fn clamp_min_(self_: &mut Self, min: $crate::dtype::Scalar) -> Result<(), Self::Error> {
            let r = <Self as $crate::Backend>::clamp_min(&*self_, min)?;
            $crate::dtype::check_cast_c10($crate::dtype::dtype_of(&r), $crate::dtype::dtype_of(&*self_))?;
            $write_back(self_, r)
        }
        fn clamp_max_(self_: &mut Self, max: $crate::dtype::Scalar) -> Result<(), Self::Error> {
            let r = <Self as $crate::Backend>::clamp_max(&*self_, max)?;
            $crate::dtype::check_cast_c10($crate::dtype::dtype_of(&r), $crate::dtype::dtype_of(&*self_))?;
            $write_back(self_, r)
        }
        // `masked_fill_` checks the value's rank, the mask's dtype
        // and the broadcast of `self` with `mask` before its kernel, as PyTorch does.
        fn masked_fill_scalar_(
            self_: &mut Self,
            mask: &Self,
            value: $crate::dtype::Scalar,
        ) -> Result<(), Self::Error> {
            use $crate::dtype::{dtype_of, shape_of};
            $crate::meta::masked_fill_inplace(shape_of(&*self_), shape_of(mask), dtype_of(mask), None)?;
            let r = <Self as $crate::Backend>::masked_fill_scalar(&*self_, mask, value)?;
            $crate::shape::check_inplace_shape(shape_of(&*self_), shape_of(&r))?;
            $write_back(self_, r)
        }
        fn masked_fill_tensor_(
            self_: &mut Self,
            mask: &Self,
            value: &Self,
        ) -> Result<(), Self::Error> {
            use $crate::dtype::{dtype_of, shape_of};
            let d = Some(shape_of(value).len());
            $crate::meta::masked_fill_inplace(shape_of(&*self_), shape_of(mask), dtype_of(mask), d)?;
            let r = <Self as $crate::Backend>::masked_fill_tensor(&*self_, mask, value)?;
            $crate::shape::check_inplace_shape(shape_of(&*self_), shape_of(&r))?;
            $write_back(self_, r)
        }
    };
}

/// In-place kernels for [`written_back_kernels!`](crate::written_back_kernels).
#[doc(hidden)]
#[macro_export]
macro_rules! __in_place {
    ($wb:path; $($name:ident => $f:ident($($a:ident: $t:ty),*);)*) => {$(
        fn $name(self_: &mut Self, $($a: $t),*) -> Result<(), Self::Error> {
            let r = <Self as $crate::Backend>::$f(&*self_, $($a),*)?;
            // PyTorch checks the broadcast shape before the cast (`TensorIterator`'s order).
            $crate::shape::check_inplace_shape(
                $crate::dtype::shape_of(&*self_),
                $crate::dtype::shape_of(&r),
            )?;
            $wb(self_, r)
        }
    )*};
}

/// out= kernels for [`written_back_kernels!`](crate::written_back_kernels) whose `out` must
/// have the result's dtype ([`check_out_same`](crate::dtype::check_out_same)).
#[doc(hidden)]
#[macro_export]
macro_rules! __same_dtype_out_kernels {
    ($wb:path; $($name:ident => $f:ident($($a:ident: $t:ty),*);)*) => {$(
        fn $name($($a: $t,)* out: &mut Self) -> Result<(), Self::Error> {
            let r = <Self as $crate::Backend>::$f($($a),*)?;
            $crate::dtype::check_out_same(
                $crate::dtype::dtype_of(&r),
                $crate::dtype::dtype_of(&*out),
            )?;
            $wb(out, r)
        }
    )*};
}

/// out= kernels for [`written_back_kernels!`](crate::written_back_kernels).
#[doc(hidden)]
#[macro_export]
macro_rules! __out_kernels {
    ($wb:path; $($name:ident => $f:ident($($a:ident: $t:ty),*);)*) => {$(
        fn $name($($a: $t,)* out: &mut Self) -> Result<(), Self::Error> {
            let r = <Self as $crate::Backend>::$f($($a),*)?;
            $wb(out, r)
        }
    )*};
}
