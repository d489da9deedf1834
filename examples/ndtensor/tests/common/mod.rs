//! Shared test support: deterministic random tensors, the op table, analysis enumeration.
#![allow(dead_code)]

pub mod cases;
pub mod dispatch;
pub mod inplace_cases;

use autograd::types::Generator;
use autograd_codegen::emit::{Config, analyze_config};
use ndtensor::NdTensor;

pub type T = NdTensor<f64>;

/// Deterministic random tensors and shapes.
pub struct Rng(pub Generator);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(Generator::new(seed))
    }
    /// A size in `2..=4`.
    pub fn size(&self) -> usize {
        2 + (self.0.next_u64() % 3) as usize
    }
    /// A random shape of rank `n`.
    pub fn shape(&self, n: usize) -> Vec<usize> {
        (0..n).map(|_| self.size()).collect()
    }
    /// Uniform in `[-1, 1)`.
    pub fn t(&self, shape: &[usize]) -> T {
        NdTensor::uniform(shape, -1.0, 1.0, &self.0)
    }
    /// Uniform in `[lo, hi)`.
    pub fn u(&self, shape: &[usize], lo: f64, hi: f64) -> T {
        NdTensor::uniform(shape, lo, hi, &self.0)
    }
    /// Positive values in `[0.5, 1.5)`.
    pub fn pos(&self, shape: &[usize]) -> T {
        self.u(shape, 0.5, 1.5)
    }
    /// Values at least 0.2 away from 0 (for ops with a kink at 0).
    pub fn away(&self, shape: &[usize]) -> T {
        let t = self.u(shape, 0.2, 1.0);
        let v: Vec<f64> = t
            .to_vec()
            .into_iter()
            .map(|x| if self.0.next_f64() < 0.5 { -x } else { x })
            .collect();
        NdTensor::from_vec(v, shape)
    }
    /// A non-contiguous (column-major) tensor of uniform values.
    pub fn nc(&self, shape: &[usize]) -> T {
        noncontiguous(&self.t(shape))
    }
    /// Integer values in `0..n` (index tensors).
    pub fn index(&self, shape: &[usize], n: usize) -> T {
        let len: usize = shape.iter().product();
        let v = (0..len)
            .map(|_| (self.0.next_u64() % n as u64) as f64)
            .collect();
        NdTensor::from_vec(v, shape)
    }
}

/// The same values in column-major layout (a strided, non-contiguous array).
pub fn noncontiguous(t: &T) -> T {
    // Lay the transposed values out contiguously, then view them transposed.
    let tr = t.data.t().as_standard_layout().into_owned();
    let out = NdTensor::new(tr.into_shared().reversed_axes());
    assert_eq!(out.shape(), t.shape());
    assert_eq!(out.to_vec(), t.to_vec());
    let big = t.shape().iter().filter(|d| **d > 1).count();
    assert!(big < 2 || !out.is_contiguous());
    out
}

pub fn v(x: &[f64], shape: &[usize]) -> T {
    NdTensor::from_vec(x.to_vec(), shape)
}

/// The analysis of the op set's YAML files (what `autograd_ops!` generates ndtensor's layer
/// from).
pub fn analysis() -> autograd_codegen::analysis::Analysis {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../opset");
    let mut c = Config::new("derivatives.yaml");
    c.native = Some("native_functions.yaml".into());
    c.base_dir = dir.into();
    analyze_config(&c).expect("the YAML files analyse")
}

/// `"inplace"`, `"out"` or `"functional"` (mutable and scratch variants count
/// as functional and out, as the tests treat them).
fn kind(f: &autograd_codegen::model::schema::FunctionSchema) -> &'static str {
    if f.name.name.inplace {
        "inplace"
    } else if f.is_out_fn() {
        "out"
    } else {
        "functional"
    }
}

/// `(schema name, kind)` of every differentiable function (a backward node, or composite);
/// kind is "functional", "inplace" or "out".
pub fn differentiable_functions() -> Vec<(String, &'static str)> {
    let a = analysis();
    let mut out = Vec::new();
    for r in &a.results {
        let f = &a.functions[r.func].func;
        let has_node = r.main_info().is_some_and(|i| i.op.is_some());
        // Composite functions are differentiable through the ops their kernel calls.
        let composite = a.functions[r.func].composite_kernel.is_some();
        if !has_node && !composite {
            continue;
        }
        out.push((f.name.to_string(), kind(f)));
    }
    out
}

/// `(schema name, kind)` of every function of the native file (kinds as above).
pub fn all_functions() -> Vec<(String, &'static str)> {
    let a = analysis();
    a.functions
        .iter()
        .map(|f| (f.func.name.to_string(), kind(&f.func)))
        .collect()
}
