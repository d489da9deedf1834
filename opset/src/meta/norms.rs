//! The layer and group normalization kernels' checks (issue 30): PyTorch's
//! `_check_layer_norm_inputs` (`layer_norm.cpp`) and `native_group_norm`'s checks
//! (`group_norm.cpp`), and the shapes the backward kernels read.

use crate::error::{Error, check};

type R<T> = Result<T, Error>;

/// A layer norm's rows: `m` rows (the leading dims) of `n` elements (the normalized dims).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerNormRows {
    pub m: usize,
    pub n: usize,
}

/// PyTorch's `_check_layer_norm_inputs`: a non-empty `normalized_shape` that the input's
/// trailing dims match, and a weight and bias of that shape; the rows it normalizes.
pub fn layer_norm(
    input: &[usize],
    normalized_shape: &[i64],
    weight: Option<&[usize]>,
    bias: Option<&[usize]>,
) -> R<LayerNormRows> {
    crate::shape::check_layer_norm(input, normalized_shape, weight, bias)?;
    let axis = input.len() - normalized_shape.len();
    Ok(LayerNormRows {
        m: input[..axis].iter().product(),
        n: input[axis..].iter().product(),
    })
}

/// The shape of `native_layer_norm`'s `mean` and `rstd`: the input's leading dims, then a 1
/// for each normalized dim (PyTorch's CPU kernel).
pub fn layer_norm_stat_shape(input: &[usize], normalized_ndim: usize) -> Vec<usize> {
    let axis = input.len() - normalized_ndim;
    (0..input.len())
        .map(|d| if d < axis { input[d] } else { 1 })
        .collect()
}

/// `native_layer_norm_backward`'s checks: the forward's ([`layer_norm`]), then (the op
/// set's words; PyTorch's kernel reads them without a check) a `grad_out` of the input's
/// shape and one `mean` and `rstd` value per row.
pub fn layer_norm_backward(
    grad_out: &[usize],
    input: &[usize],
    normalized_shape: &[i64],
    stats: [usize; 2],
    weight: Option<&[usize]>,
    bias: Option<&[usize]>,
) -> R<LayerNormRows> {
    let rows = layer_norm(input, normalized_shape, weight, bias)?;
    check(grad_out == input, || {
        format!("grad_out of shape {grad_out:?} for an input of shape {input:?}")
    })?;
    for (name, n) in [("mean", stats[0]), ("rstd", stats[1])] {
        check(n == rows.m, || {
            format!("{name} should contain {} elements not {n}", rows.m)
        })?;
    }
    Ok(rows)
}
