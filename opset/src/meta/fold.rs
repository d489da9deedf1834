//! The checks of `col2im` and `im2col` (Core ATen; issue 30), with PyTorch's wording and in
//! its order (`Col2Im.cpp`, `Im2Col.cpp`, `im2col_shape_check.h`), and the geometry both
//! kernels share.

use super::R;
use crate::error::{Error, check};

/// The geometry of a `col2im`/`im2col`: the columns `(N, C·kh·kw, L)` against the image
/// `(N, C, H, W)` (an unbatched input has no `N`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fold {
    /// The batch size (1 for an unbatched input).
    pub batch: usize,
    /// Whether the input has a batch dimension.
    pub batched: bool,
    /// The image's channels.
    pub channels: usize,
    /// The image's height and width.
    pub image: [usize; 2],
    /// `kernel_size`, `dilation`, `padding`, `stride` (height, width).
    pub kernel: [usize; 2],
    #[allow(missing_docs)]
    pub dilation: [usize; 2],
    #[allow(missing_docs)]
    pub padding: [usize; 2],
    #[allow(missing_docs)]
    pub stride: [usize; 2],
    /// The sliding blocks along the height and the width (`L` is their product).
    pub blocks: [usize; 2],
}

impl Fold {
    /// The columns' shape: `(N, C·kh·kw, L)`, without `N` when unbatched.
    pub fn columns_shape(&self) -> Vec<usize> {
        let rows = self.channels * self.kernel[0] * self.kernel[1];
        self.with_batch(vec![rows, self.blocks[0] * self.blocks[1]])
    }

    /// The image's shape: `(N, C, H, W)`, without `N` when unbatched.
    pub fn image_shape(&self) -> Vec<usize> {
        self.with_batch(vec![self.channels, self.image[0], self.image[1]])
    }

    fn with_batch(&self, mut s: Vec<usize>) -> Vec<usize> {
        if self.batched {
            s.insert(0, self.batch);
        }
        s
    }
}

/// A two-element argument: PyTorch's "It is expected {name} equals to 2" otherwise.
fn two(name: &str, v: &[i64]) -> R<[i64; 2]> {
    <[i64; 2]>::try_from(v).map_err(|_| {
        Error::runtime(format!(
            "It is expected {name} equals to 2, but got size {}",
            v.len()
        ))
    })
}

/// `div_rtn(a, b) + 1`: the sliding blocks along one side (division rounding down).
fn blocks(side: i64, k: i64, d: i64, p: i64, s: i64) -> i64 {
    (side + 2 * p - d * (k - 1) - 1).div_euclid(s) + 1
}

/// The four positivity checks, in the order `order` names them (`k`, `s`, `d`, `p`).
fn check_positive(order: &str, k: [i64; 2], d: [i64; 2], p: [i64; 2], s: [i64; 2]) -> R<()> {
    for c in order.chars() {
        let (ok, what, a, b) = match c {
            'k' => (
                k[0] > 0 && k[1] > 0,
                "kernel size should be greater than zero, but got kernel_height: {} kernel_width: {}",
                k[0],
                k[1],
            ),
            's' => (
                s[0] > 0 && s[1] > 0,
                "stride should be greater than zero, but got stride_height: {} stride_width: {}",
                s[0],
                s[1],
            ),
            'd' => (
                d[0] > 0 && d[1] > 0,
                "dilation should be greater than zero, but got dilation_height: {} dilation_width: {}",
                d[0],
                d[1],
            ),
            _ => (
                p[0] >= 0 && p[1] >= 0,
                "padding should be non-negative, but got pad_height: {} pad_width: {}",
                p[0],
                p[1],
            ),
        };
        check(ok, || {
            what.replacen("{}", &a.to_string(), 1)
                .replacen("{}", &b.to_string(), 1)
        })?;
    }
    Ok(())
}

/// `col2im`'s checks: the argument lengths, then `col2im_shape_check`.
///
/// ```
/// use autograd_opset::meta;
/// let f = meta::col2im(&[2, 12, 12], &[4, 5], &[2, 2], &[1, 1], &[0, 0], &[1, 1]).unwrap();
/// assert_eq!(f.image_shape(), [2, 3, 4, 5]);
/// let e = meta::col2im(&[2, 12, 9], &[4, 5], &[2, 2], &[1, 1], &[0, 0], &[1, 1]).unwrap_err();
/// assert!(e.to_string().ends_with("sliding blocks 3 * 4 = 12, but got input.size(2)=9."));
/// ```
pub fn col2im(
    input: &[usize],
    output_size: &[i64],
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> R<Fold> {
    let o = two("output_size", output_size)?;
    let k = two("kernel_size", kernel_size)?;
    let d = two("dilation", dilation)?;
    let p = two("padding", padding)?;
    let s = two("stride", stride)?;
    check_positive("ksdp", k, d, p, s)?;
    let nd = input.len();
    check(
        (nd == 2 && input[0] != 0 && input[1] != 0) || (nd == 3 && input[1] != 0 && input[2] != 0),
        || {
            format!(
                "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: {input:?}"
            )
        },
    )?;
    let (planes, length) = (input[nd - 2] as i64, input[nd - 1] as i64);
    check(planes % (k[0] * k[1]) == 0, || {
        format!(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)={planes} and kernel_size=({}, {}).",
            k[0], k[1]
        )
    })?;
    let bh = blocks(o[0], k[0], d[0], p[0], s[0]);
    let bw = blocks(o[1], k[1], d[1], p[1], s[1]);
    let given = format!(
        "Given output_size=({}, {}), kernel_size=({}, {}), dilation=({}, {}), padding=({}, {}), stride=({}, {}),",
        o[0], o[1], k[0], k[1], d[0], d[1], p[0], p[1], s[0], s[1]
    );
    check(length == bh * bw, || {
        format!(
            "{given} expected size of input's dimension 2 to match the calculated number of sliding blocks {bh} * {bw} = {}, but got input.size(2)={length}.",
            bh * bw
        )
    })?;
    check(bh >= 1 && bw >= 1, || {
        format!(
            "{given} calculated shape of the array of sliding blocks as ({bh}, {bw}), which is too small (non-positive)"
        )
    })?;
    check(o[0] >= 1 && o[1] >= 1, || {
        format!(
            "Expected output spatial size to be positive, but got: output_size=({}, {}).",
            o[0], o[1]
        )
    })?;
    let batch = (nd == 3).then_some(input[0]);
    Ok(fold(
        batch,
        planes / (k[0] * k[1]),
        o,
        [k, d, p, s],
        [bh, bw],
    ))
}

/// `im2col`'s checks: the argument lengths, then `im2col_shape_check` (which reads
/// `input.size(1)` and `input.size(2)` before it checks the rank: PyTorch's `IndexError`
/// for fewer dimensions).
///
/// ```
/// use autograd_opset::meta;
/// let f = meta::im2col(&[1, 1, 4, 5], &[2, 3], &[1, 2], &[1, 0], &[2, 1]).unwrap();
/// assert_eq!(f.columns_shape(), [1, 6, 3]);
/// ```
pub fn im2col(
    input: &[usize],
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> R<Fold> {
    let k = two("kernel_size", kernel_size)?;
    let d = two("dilation", dilation)?;
    let p = two("padding", padding)?;
    let s = two("stride", stride)?;
    check_positive("kdps", k, d, p, s)?;
    let nd = input.len();
    // `input.size(1) != 0 && input.size(2) != 0`, each read only when reached.
    let valid = input[super::conv::size_dim(input, 1)?] != 0
        && input[super::conv::size_dim(input, 2)?] != 0;
    check(
        (nd == 3 && input[0] != 0 && valid) || (nd == 4 && valid && input[3] != 0),
        || {
            format!(
                "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: {input:?}"
            )
        },
    )?;
    let (h, w) = (input[nd - 2] as i64, input[nd - 1] as i64);
    let (bh, bw) = (
        blocks(h, k[0], d[0], p[0], s[0]),
        blocks(w, k[1], d[1], p[1], s[1]),
    );
    check(bh >= 1 && bw >= 1, || {
        format!(
            "Given input with spatial size ({h}, {w}), kernel_size=({}, {}), dilation=({}, {}), padding=({}, {}), calculated shape of the array of sliding blocks as ({bh}, {bw}), but its components must be at least one.",
            k[0], k[1], d[0], d[1], p[0], p[1]
        )
    })?;
    let batch = (nd == 4).then_some(input[0]);
    Ok(fold(
        batch,
        input[nd - 3] as i64,
        [h, w],
        [k, d, p, s],
        [bh, bw],
    ))
}

/// The geometry of a checked call (`batch`: `None` for an unbatched input).
fn fold(
    batch: Option<usize>,
    channels: i64,
    image: [i64; 2],
    kdps: [[i64; 2]; 4],
    b: [i64; 2],
) -> Fold {
    let u = |v: [i64; 2]| [v[0] as usize, v[1] as usize];
    Fold {
        batch: batch.unwrap_or(1),
        batched: batch.is_some(),
        channels: channels as usize,
        image: u(image),
        kernel: u(kdps[0]),
        dilation: u(kdps[1]),
        padding: u(kdps[2]),
        stride: u(kdps[3]),
        blocks: u(b),
    }
}
