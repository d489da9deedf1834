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

/// The scales the `.vec` overloads pass on (`get_scale_value`): the scale factors', if any
/// (PyTorch's `ArrayRef` error for fewer than two).
fn scales(scale_factors: Option<&[f64]>) -> Res<(Option<f64>, Option<f64>)> {
    let Some(s) = scale_factors else {
        return Ok((None, None));
    };
    let at = |i: usize| match s.get(i) {
        Some(v) => Ok(Some(*v)),
        None => fail(format!(
            "ArrayRef: invalid index Index = {i}; Length = {}",
            s.len()
        )),
    };
    Ok((at(0)?, at(1)?))
}

/// PyTorch's `upsample_nearest2d.vec`.
pub fn upsample_nearest2d_vec<T: Backend>(
    input: &V<T>,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Res<V<T>> {
    let osize = crate::meta::upsample_output_size(&input.shape(), output_size, scale_factors)
        .map_err(AutogradError::backend)?;
    let (h, w) = scales(scale_factors)?;
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
    let (h, w) = scales(scale_factors)?;
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
    if (1..=3).contains(&dims) && (nd == dims + 1 || nd == dims + 2) {
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
        "Padding size {} is not supported for {nd}D input tensor.\nSupported combinations for non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)",
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
            periodic(&mid, d, kept - l, l, kept, &mut parts)?;
        }
        parts.push(mid.clone());
        if r > 0 {
            periodic(&mid, d, 0, r, kept, &mut parts)?;
        }
        out = if parts.len() == 1 {
            mid
        } else {
            cat(&parts, d)?
        };
    }
    Ok(out)
}

/// `len` elements of `mid` (of `kept` along `d`) from `start` on, wrapping around as often as
/// needed (PyTorch's copies from the padded output itself, element by element, repeat the
/// cropped line when a wrap is longer than it: the same values; PyTorch's gradient there
/// goes through its overlapping copies, this one through each repeat).
fn periodic<T: Backend>(
    mid: &V<T>,
    d: i64,
    start: i64,
    len: i64,
    kept: i64,
    parts: &mut Vec<V<T>>,
) -> Res<()> {
    if kept <= 0 {
        return fail("Negative padding value is resulting in an empty dimension".into());
    }
    let (mut at, mut left) = (start.rem_euclid(kept), len);
    while left > 0 {
        let n = left.min(kept - at);
        parts.push(narrow(mid, d, at, n)?);
        left -= n;
        at = 0;
    }
    Ok(())
}
