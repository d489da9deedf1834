//! `col2im` and `im2col` as default kernels over a backend's `index_select`, `index_add`,
//! `constant_pad_nd` and `as_strided` (Core ATen; issue 30): PyTorch's checks first
//! ([`meta::col2im`], [`meta::im2col`]), then the columns' positions in the padded image,
//! an `as_strided` read of an `arange` (a fresh tensor: its storage is its elements).

use super::Backend;
// A shape as `i64` sizes: the helpers' `dims`.
use super::dims as sizes;
use crate::dtype::not_implemented;
use crate::meta::{self, Fold};
use autograd::types::{Scalar, ScalarType};

/// The positions in one padded image `(C, H + 2ph, W + 2pw)` (flattened) that the columns'
/// rows `(c, ki, kj)` and blocks `(bi, bj)` read, in the columns' row-major order.
fn positions<T: Backend>(f: &Fold) -> Result<T, T::Error> {
    let (hp, wp) = padded(f);
    let [dh, dw] = f.dilation.map(|x| x as i64);
    let [sh, sw] = f.stride.map(|x| x as i64);
    let n = f.channels as i64 * hp * wp;
    let all = super::decompositions::arange_i64::<T>(n)?;
    let sizes = [
        f.channels,
        f.kernel[0],
        f.kernel[1],
        f.blocks[0],
        f.blocks[1],
    ]
    .map(|x| x as i64);
    let read = T::as_strided(&all, &sizes, &[hp * wp, dh * wp, dw, sh * wp, sw], Some(0))?;
    T::reshape(&read, &[-1])
}

/// The padded image's height and width.
fn padded(f: &Fold) -> (i64, i64) {
    let side = |i: usize| (f.image[i] + 2 * f.padding[i]) as i64;
    (side(0), side(1))
}

/// PyTorch's kernels take floating-point and boolean tensors.
fn check_dtype<T: Backend>(t: &T, kernel: &str) -> Result<(), T::Error> {
    match t.dtype() {
        "i64" => Err(not_implemented(kernel, "i64").into()),
        _ => Ok(()),
    }
}

/// `im2col`: the blocks of the padded image, one column per block.
pub fn decomposed_im2col<T: Backend>(
    self_: &T,
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> Result<T, T::Error> {
    let f = meta::im2col(self_.shape(), kernel_size, dilation, padding, stride)?;
    check_dtype(self_, "im2col_out_cpu")?;
    let [ph, pw] = f.padding.map(|x| x as i64);
    let image = T::constant_pad_nd(self_, &[pw, pw, ph, ph], Scalar::Int(0))?;
    let (hp, wp) = padded(&f);
    let flat = T::reshape(&image, &[f.batch as i64, f.channels as i64 * hp * wp])?;
    let columns = T::index_select(&flat, 1, &positions::<T>(&f)?)?;
    T::reshape(&columns, &sizes(&f.columns_shape()))
}

/// `col2im`: the columns summed into the padded image at their blocks' positions, the
/// padding cut off.
pub fn decomposed_col2im<T: Backend>(
    self_: &T,
    output_size: &[i64],
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> Result<T, T::Error> {
    let f = meta::col2im(
        self_.shape(),
        output_size,
        kernel_size,
        dilation,
        padding,
        stride,
    )?;
    check_dtype(self_, "col2im_out_cpu")?;
    let boolean = self_.dtype() == "bool";
    // Booleans are summed as integers (PyTorch's `+=` on `bool` is an or).
    let cols = match boolean {
        true => T::_to_copy(self_, Some(ScalarType::I64), None, None, None, false, None)?,
        false => self_.clone(),
    };
    let (hp, wp) = padded(&f);
    let n = f.batch as i64;
    let zeros = T::new_zeros(
        &cols,
        &[n, f.channels as i64 * hp * wp],
        None,
        None,
        None,
        None,
    )?;
    let per_image: usize = f.columns_shape().iter().rev().take(2).product();
    let src = T::reshape(&cols, &[n, per_image as i64])?;
    let sums = T::index_add(&zeros, 1, &positions::<T>(&f)?, &src, Scalar::Int(1))?;
    let image = T::reshape(&sums, &[n, f.channels as i64, hp, wp])?;
    let [ph, pw] = f.padding.map(|x| x as i64);
    let [h, w] = f.image.map(|x| x as i64);
    let rows = T::slice_tensor(&image, 2, Some(ph), Some(ph + h), 1)?;
    let cut = T::slice_tensor(&rows, 3, Some(pw), Some(pw + w), 1)?;
    let out = T::reshape(&cut, &sizes(&f.image_shape()))?;
    match boolean {
        true => T::ne_scalar(&out, Scalar::Int(0)),
        false => Ok(out),
    }
}
