//! PyTorch's padding and upsampling composites (CompositeImplicitAutograd, PadNd.cpp and
//! UpSample*.cpp): `pad` (`F.pad`) calls `constant_pad_nd` or the reflection, replication and
//! circular paddings by mode and rank; `upsample_nearest2d.vec` and `upsample_bilinear2d.vec`
//! (what `F.interpolate` calls) compute the output size from `output_size` or
//! `scale_factors` and call `upsample_nearest2d` and `upsample_bilinear2d`; so their nodes,
//! gradients and errors are those of the ops PyTorch dispatches to. Over `Variable<T>` only.

use super::*;

fn fail<T>(m: String) -> Res<T> {
    Err(AutogradError::backend(crate::Error::runtime(m)))
}

/// The scales the `.vec` overloads pass on (`get_scale_value`): the scale factors', if any.
fn scales(scale_factors: Option<&[f64]>) -> (Option<f64>, Option<f64>) {
    match scale_factors {
        Some(s) => (s.first().copied(), s.get(1).copied()),
        None => (None, None),
    }
}

/// PyTorch's `upsample_nearest2d.vec`.
pub fn upsample_nearest2d_vec<T: Backend>(
    input: &V<T>,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Res<V<T>> {
    let osize = crate::meta::upsample_output_size(&input.shape(), output_size, scale_factors)
        .map_err(AutogradError::backend)?;
    let (h, w) = scales(scale_factors);
    upsample_nearest2d(input, &osize, h, w)
}

/// PyTorch's `upsample_bilinear2d.vec`.
pub fn upsample_bilinear2d_vec<T: Backend>(
    input: &V<T>,
    output_size: Option<&[i64]>,
    align_corners: bool,
    scale_factors: Option<&[f64]>,
) -> Res<V<T>> {
    let osize = crate::meta::upsample_output_size(&input.shape(), output_size, scale_factors)
        .map_err(AutogradError::backend)?;
    let (h, w) = scales(scale_factors);
    upsample_bilinear2d(input, &osize, align_corners, h, w)
}

/// PyTorch's `pad` (`F.pad`): `constant_pad_nd` for `"constant"`, otherwise the mode's op for
/// the pads' length and the input's rank (`_pad_enum`'s checks and errors).
pub fn pad<T: Backend>(self_: &V<T>, pad: &[i64], mode: &str, value: Option<f64>) -> Res<V<T>> {
    if !matches!(mode, "reflect" | "constant" | "replicate" | "circular") {
        return fail(format!("Unrecognised padding mode {mode}"));
    }
    let nd = self_.shape().len();
    if !pad.len().is_multiple_of(2) {
        return fail("Padding length must be divisible by 2".into());
    }
    if pad.len() > 2 * nd {
        return fail(format!(
            "Padding length should be less than or equal to two times the input dimension but got padding length {} and input of dimension {nd}",
            pad.len()
        ));
    }
    if mode == "constant" {
        return constant_pad_nd(self_, pad, value.unwrap_or(0.0));
    }
    if value.is_some_and(|v| v != 0.0) {
        return fail(format!(
            "Padding mode \"{mode}\" doesn't take in value argument"
        ));
    }
    let dims = pad.len() / 2;
    if dims >= 1 && dims <= 3 && (nd == dims + 1 || nd == dims + 2) {
        return match (mode, dims) {
            ("reflect", 1) => reflection_pad1d(self_, pad),
            ("reflect", 2) => reflection_pad2d(self_, pad),
            ("reflect", _) => reflection_pad3d(self_, pad),
            ("replicate", 1) => replication_pad1d(self_, pad),
            ("replicate", 2) => replication_pad2d(self_, pad),
            ("replicate", _) => replication_pad3d(self_, pad),
            _ => pad_circular(self_, pad),
        };
    }
    fail(format!(
        "Padding size {} is not supported for {nd}D input tensor.",
        pad.len()
    ))
}

/// PyTorch's `_pad_circular`: per padded dim, the negative pads' crops, then the positive
/// pads' wraps (the cropped line's last `left` elements before it, its first `right` after
/// it), as `narrow`s and a `cat`.
fn pad_circular<T: Backend>(self_: &V<T>, pad: &[i64]) -> Res<V<T>> {
    let shape = self_.shape().to_vec();
    let nd = shape.len();
    let padded = pad.len() / 2;
    let before = nd - padded;
    if before != 1 && before != 2 {
        return fail(format!(
            "Invalid padding size, expected 1 or 2 non-padded dimensions, which would be equivalent to padding of length {} or {} respectively but got {}",
            (nd as i64 - 1) * 2,
            (nd as i64 - 2) * 2,
            pad.len()
        ));
    }
    for i in 0..padded {
        let (l, r) = (pad[2 * (padded - i - 1)], pad[2 * (padded - i - 1) + 1]);
        let size = shape[before + i] as i64;
        if l > size || r > size {
            return fail("Padding value causes wrapping around more than once.".into());
        }
        if size + l + r < 0 {
            return fail("Negative padding value is resulting in an empty dimension".into());
        }
    }
    let mut out = self_.clone();
    for i in 0..padded {
        let d = (before + i) as i64;
        let (l, r) = (pad[2 * (padded - i - 1)], pad[2 * (padded - i - 1) + 1]);
        let size = shape[before + i] as i64;
        let kept = size - (-l).max(0) - (-r).max(0);
        let mid = narrow(&out, d, (-l).max(0), kept)?;
        let mut parts = Vec::new();
        if l > 0 {
            parts.push(narrow(&mid, d, kept - l, l)?);
        }
        parts.push(mid.clone());
        if r > 0 {
            parts.push(narrow(&mid, d, 0, r)?);
        }
        out = if parts.len() == 1 {
            mid
        } else {
            cat(&parts, d)?
        };
    }
    Ok(out)
}
