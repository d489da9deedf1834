//! Gradient buckets: PyTorch's `compute_bucket_assignment_by_size`
//! (`torch/csrc/distributed/c10d/reducer.cpp`), with DDP's defaults.
//!
//! Gradients are taken in the order given (for [`crate::Ddp`]: reverse order of
//! registration, PyTorch's approximation of the order in which backward produces them) and
//! grouped by dtype; a bucket closes as soon as its size in bytes reaches its limit. The
//! limits are used in turn per dtype, the last one repeating: with DDP's defaults
//! `[1 MiB, 25 MiB]`, the first bucket of each dtype closes at 1 MiB, so that the first
//! all-reduce starts early in backward, and every later one at 25 MiB. Buckets come out in
//! the order they closed, then the open ones (by dtype name): the order in which they
//! are reduced, the same on every rank.

/// PyTorch's `bucket_cap_mb` default, 25 MiB.
pub const DEFAULT_BUCKET_BYTES: usize = 25 * 1024 * 1024;
/// PyTorch's `dist._DEFAULT_FIRST_BUCKET_BYTES`, 1 MiB.
pub const DEFAULT_FIRST_BUCKET_BYTES: usize = 1024 * 1024;

/// What the assignment needs of a gradient: its element count and dtype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GradSpec {
    /// Number of elements.
    pub numel: usize,
    /// The dtype's name (`Tensor::dtype`, e.g. `"f32"`).
    pub dtype: &'static str,
}

impl GradSpec {
    /// Bytes of one element: 4 for `f32`/`float32`/`i32`, 2 for 16-bit types, 1 for 8-bit
    /// ones and `bool`, 8 otherwise.
    pub fn element_size(&self) -> usize {
        match self.dtype {
            "f32" | "float32" | "float" | "i32" | "int32" | "u32" => 4,
            "f16" | "bf16" | "float16" | "bfloat16" | "half" | "i16" | "int16" => 2,
            "bool" | "u8" | "uint8" | "i8" | "int8" => 1,
            _ => 8,
        }
    }

    /// Bytes of the whole gradient.
    pub fn bytes(&self) -> usize {
        self.numel * self.element_size()
    }
}

/// One bucket: the indices of its gradients (into the specs given to [`assign`]) in the
/// order they were added, and the size limit it was filled against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketPlan {
    /// Indices of the gradients, in fill order.
    pub indices: Vec<usize>,
    /// The limit (bytes) this bucket was filled against.
    pub size_limit: usize,
    /// The dtype of its gradients.
    pub dtype: &'static str,
}

/// Assigns the gradients `order` (indices into `specs`, each once) to buckets with the size
/// limits `limits` (bytes; used in turn per dtype, the last repeating; must not be empty).
pub fn assign(specs: &[GradSpec], order: &[usize], limits: &[usize]) -> Vec<BucketPlan> {
    assert!(!limits.is_empty(), "bucket size limits must not be empty");
    // Per dtype: the open bucket, its size, and which limit it is filled against.
    struct Open {
        dtype: &'static str,
        indices: Vec<usize>,
        size: usize,
        limit: usize,
    }
    let mut open: Vec<Open> = Vec::new();
    let mut out = Vec::new();
    for &i in order {
        let spec = &specs[i];
        let slot = match open.iter().position(|o| o.dtype == spec.dtype) {
            Some(p) => p,
            None => {
                open.push(Open {
                    dtype: spec.dtype,
                    indices: Vec::new(),
                    size: 0,
                    limit: 0,
                });
                open.len() - 1
            }
        };
        let o = &mut open[slot];
        o.indices.push(i);
        o.size += spec.bytes();
        let limit = limits[o.limit];
        if o.size >= limit {
            out.push(BucketPlan {
                indices: std::mem::take(&mut o.indices),
                size_limit: limit,
                dtype: o.dtype,
            });
            o.size = 0;
            if o.limit + 1 < limits.len() {
                o.limit += 1;
            }
        }
    }
    open.sort_by_key(|o| o.dtype);
    for o in open {
        if !o.indices.is_empty() {
            out.push(BucketPlan {
                indices: o.indices,
                size_limit: limits[o.limit],
                dtype: o.dtype,
            });
        }
    }
    out
}

/// DDP's default assignment of parameters registered in the order of `specs`: reverse
/// order of registration, limits `[first_bucket_bytes, bucket_bytes]`.
pub fn assign_reverse(
    specs: &[GradSpec],
    first_bucket_bytes: usize,
    bucket_bytes: usize,
) -> Vec<BucketPlan> {
    let order: Vec<usize> = (0..specs.len()).rev().collect();
    assign(specs, &order, &[first_bucket_bytes, bucket_bytes])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(numels: &[usize]) -> Vec<GradSpec> {
        numels
            .iter()
            .map(|&numel| GradSpec {
                numel,
                dtype: "f32",
            })
            .collect()
    }

    fn indices(b: &[BucketPlan]) -> Vec<Vec<usize>> {
        b.iter().map(|b| b.indices.clone()).collect()
    }

    #[test]
    fn small_models_fit_in_one_bucket_in_reverse_order() {
        // The Iris MLP: W1 (16x4), b1, W2 (3x16), b2.
        let b = assign_reverse(
            &f32s(&[64, 16, 48, 3]),
            DEFAULT_FIRST_BUCKET_BYTES,
            DEFAULT_BUCKET_BYTES,
        );
        assert_eq!(indices(&b), vec![vec![3, 2, 1, 0]]);
        assert_eq!(b[0].size_limit, DEFAULT_FIRST_BUCKET_BYTES);
    }

    #[test]
    fn the_first_bucket_closes_at_one_mib_the_others_at_25() {
        // 5 parameters of 0.75 MiB (f32) each, then one of 20 MiB and one of 10 MiB.
        let mib = 1024 * 1024 / 4;
        let specs = f32s(&[10 * mib, 20 * mib, 3 * mib / 4, 3 * mib / 4, 3 * mib / 4]);
        let b = assign_reverse(&specs, DEFAULT_FIRST_BUCKET_BYTES, DEFAULT_BUCKET_BYTES);
        // Reverse order: 4, 3 (1.5 MiB >= 1 MiB: closed), 2, 1 (20.75 MiB), 0 (30.75 MiB:
        // closed at 25).
        assert_eq!(indices(&b), vec![vec![4, 3], vec![2, 1, 0]]);
        assert_eq!(b[0].size_limit, DEFAULT_FIRST_BUCKET_BYTES);
        assert_eq!(b[1].size_limit, DEFAULT_BUCKET_BYTES);
    }

    #[test]
    fn dtypes_get_buckets_of_their_own_each_with_its_first_limit() {
        let specs = vec![
            GradSpec {
                numel: 10,
                dtype: "f64",
            },
            GradSpec {
                numel: 10,
                dtype: "f32",
            },
            GradSpec {
                numel: 10,
                dtype: "f64",
            },
        ];
        // The first f64 gradient closes its dtype's first bucket (80 >= 80 bytes); the f32
        // one (40 bytes) and the second f64 one (against 1000) stay open, and come last,
        // by dtype name.
        let b = assign(&specs, &[2, 1, 0], &[80, 1000]);
        assert_eq!(indices(&b), vec![vec![2], vec![1], vec![0]]);
        assert_eq!(
            b.iter()
                .map(|b| (b.dtype, b.size_limit))
                .collect::<Vec<_>>(),
            vec![("f64", 80), ("f32", 80), ("f64", 1000)]
        );
    }

    #[test]
    fn one_byte_limits_give_one_bucket_per_gradient() {
        let b = assign_reverse(&f32s(&[3, 1, 2]), 1, 1);
        assert_eq!(indices(&b), vec![vec![2], vec![1], vec![0]]);
    }

    #[test]
    fn element_sizes() {
        let s = |dtype| GradSpec { numel: 3, dtype }.bytes();
        assert_eq!((s("f32"), s("f64"), s("bf16"), s("bool")), (12, 24, 6, 3));
    }
}
