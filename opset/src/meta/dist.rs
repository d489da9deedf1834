//! `_pdist_forward`, `_pdist_backward`, `_cdist_forward`, `_cdist_backward` and the composite
//! `pdist`: PyTorch's argument checks (`Distance.cpp` and its CPU kernels' dispatch and
//! reads) in PyTorch's words and order, and what the kernels compute.

use super::R;
use crate::dtype::{Kind, check_floats, check_same, kernel, torch_name};
use crate::error::check;
use crate::factory::check_has_dims;
use crate::shape::{broadcast_shape, norm_dim};

/// The size of `shape`'s dim `d` as PyTorch's `size(d)` reads it (an `IndexError` for a 0-d
/// tensor or a dim out of range).
fn size(shape: &[usize], d: i64) -> R<usize> {
    check_has_dims(shape.len(), d)?;
    Ok(shape[norm_dim(d, shape.len())?])
}

/// `_pdist_forward`'s checks: a contiguous input, then its sizes as the kernel reads them.
/// `None`: fewer than two rows (an empty result; a 1-d input is not refused then);
/// `Some((n, m))`: the kernel's `n` rows of `m` values (the first `n * m` elements, whatever
/// the input's rank, as PyTorch's kernel reads them), the dtype checked when `m > 0`.
///
/// ```
/// use autograd_opset::meta;
/// assert_eq!(meta::pdist_forward(&[4, 3], "f64", true), Ok(Some((4, 3))));
/// assert_eq!(meta::pdist_forward(&[1], "f64", true), Ok(None));
/// assert_eq!(meta::pdist_forward(&[3, 2], "i64", true).unwrap_err().to_string(),
///            "\"pdist\" not implemented for 'Long'");
/// ```
pub fn pdist_forward(shape: &[usize], dtype: &str, contiguous: bool) -> R<Option<(usize, usize)>> {
    check(contiguous, || {
        "_pdist_forward requires contiguous input".into()
    })?;
    let n = size(shape, 0)?;
    if n <= 1 {
        return Ok(None);
    }
    let m = size(shape, 1)?;
    if m > 0 {
        check_floats(dtype, kernel::PDIST)?;
    }
    Ok(Some((n, m)))
}

/// A tensor argument of the distance kernels: its shape, dtype and contiguity.
#[derive(Debug, Clone, Copy)]
pub struct DistArg<'a> {
    pub shape: &'a [usize],
    pub dtype: &'a str,
    pub contiguous: bool,
}

/// `_pdist_backward`'s checks, in PyTorch's order: `self` and `pdist` contiguous, the kernel's
/// dtype (floats, whatever `p`), then (unless `p` is 0, whose gradient is zeros without a
/// read) `self`'s sizes, `grad_output`'s first stride and the dtypes of `grad_output` and
/// `pdist` (`self`'s). `Some((n, m))`: the rows, as [`pdist_forward`]'s. The op set also
/// refuses a `grad_output` or `pdist` without `n * (n - 1) / 2` elements when the kernel
/// reads them (two rows or more, of values), where PyTorch's kernel reads past them.
pub fn pdist_backward(
    grad: DistArg,
    self_: DistArg,
    p: f64,
    pdist: DistArg,
) -> R<Option<(usize, usize)>> {
    check(self_.contiguous, || {
        "_pdist_backward requires self to be contiguous".into()
    })?;
    check(pdist.contiguous, || {
        "_pdist_backward requires pdist to be contiguous".into()
    })?;
    check_floats(self_.dtype, kernel::PDIST_BACKWARD)?;
    if p == 0.0 {
        return Ok(None);
    }
    let (n, m) = (size(self_.shape, 0)?, size(self_.shape, 1)?);
    check_has_dims(grad.shape.len(), 0)?;
    check_same(self_.dtype, grad.dtype)?;
    check_same(self_.dtype, pdist.dtype)?;
    let pairs = n * n.saturating_sub(1) / 2;
    let numel = |s: &[usize]| s.iter().product::<usize>();
    let read = n > 1 && m > 0;
    check(
        !read || (numel(grad.shape) == pairs && numel(pdist.shape) == pairs),
        || {
            format!(
                "_pdist_backward: grad_output and pdist must have n * (n - 1) / 2 = {pairs} elements for n = {n} rows, got {} and {}",
                numel(grad.shape),
                numel(pdist.shape)
            )
        },
    )?;
    Ok(Some((n, m)))
}

/// What `_cdist_forward` computes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CdistPath {
    /// No element (no row, or an empty batch).
    Empty,
    /// Rows of no values: zeros.
    Zeros,
    /// `p = 2` by matrix products (`compute_mode` 1, or 0 with more than 25 rows): PyTorch's
    /// `_euclidean_dist`.
    Euclidean,
    /// The kernel's sum over the differences.
    Direct,
}

/// `_cdist_forward`'s plan: the broadcast batch, the rows, the columns and the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cdist {
    pub batch: Vec<usize>,
    pub r1: usize,
    pub r2: usize,
    pub m: usize,
    pub path: CdistPath,
}

impl Cdist {
    /// The result's shape: the batch, then `r1` by `r2`.
    pub fn out_shape(&self) -> Vec<usize> {
        let mut s = self.batch.clone();
        s.extend([self.r1, self.r2]);
        s
    }
}

/// `_cdist_forward`'s checks in PyTorch's order (ranks, columns, dtypes, `p`, the mode, the
/// batch's broadcast) and its plan; the operands' dtypes must agree where the kernel reads
/// them (PyTorch's errors of its direct kernel and of the matrix products).
///
/// ```
/// use autograd_opset::meta;
/// let e = |s: &[usize], t: &[usize]| {
///     meta::cdist_forward((s, "f64"), (t, "f64"), 2.0, None).unwrap_err().to_string()
/// };
/// assert_eq!(e(&[3], &[2, 3]), "cdist only supports at least 2D tensors, X1 got: 1D");
/// assert_eq!(e(&[2, 3], &[2, 4]), "X1 and X2 must have the same number of columns. X1: 3 X2: 4");
/// let c = meta::cdist_forward((&[2, 1, 3, 4], "f64"), (&[3, 5, 4], "f64"), 2.0, None).unwrap();
/// assert_eq!(c.out_shape(), vec![2, 3, 3, 5]);
/// ```
pub fn cdist_forward(
    x1: (&[usize], &str),
    x2: (&[usize], &str),
    p: f64,
    compute_mode: Option<i64>,
) -> R<Cdist> {
    let (s1, s2) = (x1.0, x2.0);
    for (s, name) in [(s1, "X1"), (s2, "X2")] {
        check(s.len() >= 2, || {
            format!(
                "cdist only supports at least 2D tensors, {name} got: {}D",
                s.len()
            )
        })?;
    }
    let (m, c2) = (s1[s1.len() - 1], s2[s2.len() - 1]);
    check(m == c2, || {
        format!("X1 and X2 must have the same number of columns. X1: {m} X2: {c2}")
    })?;
    for ((_, d), name) in [(x1, "X1"), (x2, "X2")] {
        check(Kind::of(d) == Kind::Float, || {
            format!(
                "cdist only supports floating-point dtypes, {name} got: {}",
                torch_name(d)
            )
        })?;
    }
    check(p >= 0.0, || {
        "cdist only supports non-negative p values".into()
    })?;
    let mode = compute_mode.unwrap_or(0);
    check((0..=2).contains(&mode), || {
        format!("possible modes: 0, 1, 2, but was: {mode}")
    })?;
    let batch = broadcast_shape(&s1[..s1.len() - 2], &s2[..s2.len() - 2])?;
    let (r1, r2) = (s1[s1.len() - 2], s2[s2.len() - 2]);
    let product: usize = batch.iter().product();
    let path = if r1 == 0 || r2 == 0 || product == 0 {
        CdistPath::Empty
    } else if m == 0 {
        CdistPath::Zeros
    } else if p == 2.0 && (mode == 1 || (mode == 0 && (r1 > 25 || r2 > 25))) {
        check_matmul_dtypes(x1.1, x2.1, product)?;
        CdistPath::Euclidean
    } else {
        check_same(x1.1, x2.1)?;
        CdistPath::Direct
    };
    Ok(Cdist {
        batch,
        r1,
        r2,
        m,
        path,
    })
}

/// The dtypes of `_euclidean_dist`'s matrix product: `mm`'s error for one batch, `bmm`'s
/// otherwise (PyTorch's words).
fn check_matmul_dtypes(x1: &str, x2: &str, batch: usize) -> R<()> {
    if batch == 1 {
        check(x1 == x2, || {
            format!(
                "expected m1 and m2 to have the same dtype, but got: {} != {}",
                cpp_name(x1),
                cpp_name(x2)
            )
        })
    } else {
        check_same(x2, x1)
    }
}

/// A float dtype's C++ name (`float`, `double`), as `mm`'s dtype error writes it.
fn cpp_name(dtype: &str) -> &'static str {
    match dtype {
        "f32" => "float",
        "f16" => "c10::Half",
        "bf16" => "c10::BFloat16",
        _ => "double",
    }
}

/// `_cdist_backward`'s checks in PyTorch's order (the sizes it reads, the batch's broadcast,
/// then, unless the result is empty, the kernel's dtype and the operands' dtypes) and its plan
/// (`None`: zeros like `x1`). The op set also refuses `x2` with other columns and a
/// `grad_output` or `cdist` without the result's elements, where PyTorch's kernel reads past
/// them.
pub fn cdist_backward(
    grad: (&[usize], &str),
    x1: (&[usize], &str),
    x2: (&[usize], &str),
    cdist: (&[usize], &str),
) -> R<Option<Cdist>> {
    let (s1, s2) = (x1.0, x2.0);
    let (m, c2) = (size(s1, -1)?, size(s2, -1)?);
    let (r1, r2) = (size(s1, -2)?, size(s2, -2)?);
    let batch = broadcast_shape(&s1[..s1.len() - 2], &s2[..s2.len() - 2])?;
    let product: usize = batch.iter().product();
    if r1 == 0 || r2 == 0 || m == 0 || product == 0 {
        return Ok(None);
    }
    check_floats(x1.1, kernel::CDIST_BACKWARD)?;
    for other in [grad.1, cdist.1, x2.1] {
        check_same(x1.1, other)?;
    }
    check(m == c2, || {
        format!("X1 and X2 must have the same number of columns. X1: {m} X2: {c2}")
    })?;
    let want = product * r1 * r2;
    let numel = |s: &[usize]| s.iter().product::<usize>();
    check(numel(grad.0) == want && numel(cdist.0) == want, || {
        format!(
            "_cdist_backward: grad_output and cdist must have {want} elements, got {} and {}",
            numel(grad.0),
            numel(cdist.0)
        )
    })?;
    Ok(Some(Cdist {
        batch,
        r1,
        r2,
        m,
        path: CdistPath::Direct,
    }))
}

/// `_euclidean_dist`'s checks that come before its matrix product (PyTorch's composite): `x1`
/// concatenates along its last dim (not 0-d), `x2` is transposed as a matrix (at least 2-d).
/// The product's own checks are the backend's `mm`/`bmm`'s.
///
/// ```
/// use autograd_opset::meta;
/// let e = meta::euclidean_dist(&[2, 3], &[3]).unwrap_err();
/// assert_eq!(e.to_string(), "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.");
/// ```
pub fn euclidean_dist(x1: &[usize], x2: &[usize]) -> R<()> {
    check(!x1.is_empty(), || {
        "zero-dimensional tensor (at position 0) cannot be concatenated".into()
    })?;
    check(x2.len() >= 2, || {
        format!(
            "tensor.mT is only supported on matrices or batches of matrices. Got {}-D tensor.",
            x2.len()
        )
    })
}

/// `pdist`'s checks (PyTorch's composite): a 2-d input of floats, a non-negative `p`.
pub fn pdist(shape: &[usize], dtype: &str, p: f64) -> R<()> {
    check(shape.len() == 2, || {
        format!("pdist only supports 2D tensors, got: {}D", shape.len())
    })?;
    check(Kind::of(dtype) == Kind::Float, || {
        "pdist only supports floating-point dtypes".into()
    })?;
    check(p >= 0.0, || {
        "pdist only supports non-negative p values".into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a<'a>(shape: &'a [usize], dtype: &'a str) -> DistArg<'a> {
        DistArg {
            shape,
            dtype,
            contiguous: true,
        }
    }

    #[test]
    fn pdist_backward_checks_in_pytorchs_order() {
        let e = |g: DistArg, s: DistArg, p: f64, d: DistArg| {
            pdist_backward(g, s, p, d).unwrap_err().to_string()
        };
        let (g, x, d) = (a(&[3], "f64"), a(&[3, 2], "f64"), a(&[3], "f64"));
        let nc = DistArg {
            contiguous: false,
            ..x
        };
        assert_eq!(
            e(g, nc, 2.0, d),
            "_pdist_backward requires self to be contiguous"
        );
        assert_eq!(
            e(g, a(&[3, 2], "i64"), 0.0, d),
            "\"pdist_backward\" not implemented for 'Long'"
        );
        assert_eq!(pdist_backward(a(&[], "f32"), x, 0.0, d), Ok(None));
        assert_eq!(
            e(a(&[], "f64"), x, 2.0, d),
            "Dimension specified as 0 but tensor has no dimensions"
        );
        assert_eq!(
            e(g, a(&[1], "f64"), 2.0, d),
            "Dimension out of range (expected to be in range of [-1, 0], but got 1)"
        );
        assert_eq!(
            e(a(&[3], "f32"), x, 2.0, d),
            "expected scalar type Double but found Float"
        );
        assert_eq!(pdist_backward(g, x, 1.5, d), Ok(Some((3, 2))));
    }

    #[test]
    fn cdist_checks_and_paths() {
        let f = |s: &[usize], t: &[usize], p: f64, mode: Option<i64>| {
            cdist_forward((s, "f64"), (t, "f64"), p, mode)
        };
        assert_eq!(
            f(&[30, 3], &[2, 3], 2.0, None).unwrap().path,
            CdistPath::Euclidean
        );
        assert_eq!(
            f(&[30, 3], &[2, 3], 2.0, Some(2)).unwrap().path,
            CdistPath::Direct
        );
        assert_eq!(
            f(&[0, 3], &[2, 3], 2.0, None).unwrap().path,
            CdistPath::Empty
        );
        assert_eq!(
            f(&[2, 0], &[2, 0], 1.0, None).unwrap().path,
            CdistPath::Zeros
        );
        assert_eq!(
            f(&[2, 3], &[2, 3], 2.0, Some(3)).unwrap_err().to_string(),
            "possible modes: 0, 1, 2, but was: 3"
        );
        let mixed = cdist_forward((&[2, 3], "f32"), (&[2, 3], "f64"), 2.0, Some(1));
        assert_eq!(
            mixed.unwrap_err().to_string(),
            "expected m1 and m2 to have the same dtype, but got: float != double"
        );
        assert_eq!(
            cdist_backward(
                (&[3, 5], "f64"),
                (&[4], "f64"),
                (&[5, 4], "f64"),
                (&[3, 5], "f64")
            )
            .unwrap_err()
            .to_string(),
            "Dimension out of range (expected to be in range of [-1, 0], but got -2)"
        );
        assert_eq!(
            pdist(&[3], "f64", 2.0).unwrap_err().to_string(),
            "pdist only supports 2D tensors, got: 1D"
        );
    }

    #[test]
    fn an_error_is_a_runtime_error_or_an_index_error() {
        let e = size(&[], 0).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Index);
    }
}
