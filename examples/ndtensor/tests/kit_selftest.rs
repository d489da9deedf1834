//! The conformance kit's own tests: backends whose `exp` kernel errs, panics, hangs, or
//! rounds wrongly in f32 only. The kit (restricted to `exp`, so that each test takes a
//! second or two) reports each one, under `exp`, with the right status, and never panics.
//!
//! The backend is a newtype over ndtensor's tensor that writes five kernels (as
//! `partial_backend.rs`'s; `exp`'s checks need no others, its fixtures need more and are
//! not implemented here), and its `exp` misbehaves as its `FAULT` parameter says.

use autograd::gradcheck::ElementAccess;
use autograd_opset::conformance::report::{Record, Status, read_report};
use autograd_opset::conformance::{ConformanceTensor, Kit, KitOptions, check_backend_with};
use autograd_opset::ops::Backend;
use ndtensor::{Element, NdTensor};
use std::time::{Duration, Instant};

type R<T> = Result<T, autograd_opset::Error>;

/// `exp` computes right.
const NONE: u8 = 0;
/// `exp` returns an error.
const ERRS: u8 = 1;
/// `exp` panics.
const PANICS: u8 = 2;
/// `exp` never returns, the first time it is called (later calls compute right).
const HANGS: u8 = 3;
/// `exp` rounds its result to 10 significant bits in f32 (half precision's), only there.
const F32_ROUNDING: u8 = 4;

/// A tensor of element type `E` whose `exp` kernel misbehaves as `FAULT` says.
#[derive(Clone, Debug)]
struct Faulty<E: Element, const FAULT: u8>(NdTensor<E>);

impl<E: Element, const F: u8> autograd::runtime::Tensor for Faulty<E, F> {
    fn shape(&self) -> &[usize] {
        autograd::runtime::Tensor::shape(&self.0)
    }
    fn dtype(&self) -> &'static str {
        autograd::runtime::Tensor::dtype(&self.0)
    }
    fn ones_like(&self) -> Self {
        Faulty(self.0.ones_like())
    }
    fn zeros_like(&self) -> Self {
        Faulty(self.0.zeros_like())
    }
    fn zero_tensor_like(&self) -> Self {
        Faulty(self.0.zero_tensor_like())
    }
    fn add(&self, other: &Self) -> Self {
        Faulty(autograd::runtime::Tensor::add(&self.0, &other.0))
    }
    fn has_nan(&self) -> bool {
        self.0.has_nan()
    }
    fn is_differentiable(&self) -> bool {
        self.0.is_differentiable()
    }
    fn sum_to(&self, shape: &[usize]) -> Option<Self> {
        autograd::runtime::Tensor::sum_to(&self.0, shape).map(Faulty)
    }
    fn expand_to(&self, shape: &[usize]) -> Option<Self> {
        autograd::runtime::Tensor::expand_to(&self.0, shape).map(Faulty)
    }
}

impl<E: Element, const F: u8> ElementAccess for Faulty<E, F> {
    fn to_f64_vec(&self) -> Vec<f64> {
        self.0.to_f64_vec()
    }
    fn with_f64_vec(&self, values: &[f64]) -> Self {
        Faulty(self.0.with_f64_vec(values))
    }
}

impl<E: Element, const F: u8> autograd_opset::nn::FromValues for Faulty<E, F> {
    fn from_f64(values: &[f64], shape: &[usize]) -> Self {
        Faulty(NdTensor::from_f64(values, shape))
    }
    fn from_i64(values: &[i64], shape: &[usize]) -> Self {
        Faulty(NdTensor::from_i64(values.to_vec(), shape))
    }
    fn from_bool(values: &[bool], shape: &[usize]) -> Self {
        Faulty(NdTensor::from_bool(values.to_vec(), shape))
    }
}

impl<E: Element, const F: u8> ConformanceTensor for Faulty<E, F> {
    /// Its f32 tensors are `Faulty<f32, F>`, as ndtensor's are `NdTensor<f32>`.
    fn f32_checks(kit: &mut Kit) {
        autograd_opset::conformance::precision::compare_dtype::<Faulty<f32, F>, Self>(kit, "f32")
    }
}

/// Whether a `HANGS` backend has hung already (once is enough: the kit must move on).
static HUNG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl<E: Element, const F: u8> Backend for Faulty<E, F> {
    type Error = autograd_opset::Error;
    fn backend_name() -> &'static str {
        "Faulty"
    }
    fn exp(self_: &Self) -> R<Self> {
        match F {
            ERRS => return Err(autograd_opset::Error::runtime("exp kernel failed")),
            PANICS => panic!("exp kernel panicked"),
            HANGS if !HUNG.swap(true, std::sync::atomic::Ordering::SeqCst) => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
            _ => {}
        }
        let r = <NdTensor<E> as Backend>::exp(&self_.0)?;
        if F == F32_ROUNDING && E::NAME == "f32" {
            // Keep 10 of f32's 23 mantissa bits.
            let v: Vec<f64> = r
                .to_f64_vec()
                .iter()
                .map(|x| f32::from_bits((*x as f32).to_bits() & !0x1fff) as f64)
                .collect();
            return Ok(Faulty(r.with_f64_vec(&v)));
        }
        Ok(Faulty(r))
    }
    fn mul_tensor(self_: &Self, other: &Self) -> R<Self> {
        <NdTensor<E> as Backend>::mul_tensor(&self_.0, &other.0).map(Faulty)
    }
    fn add_tensor(self_: &Self, other: &Self, alpha: autograd::types::Scalar) -> R<Self> {
        <NdTensor<E> as Backend>::add_tensor(&self_.0, &other.0, alpha).map(Faulty)
    }
    fn sum_dim_intlist(
        self_: &Self,
        dim: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<autograd::types::ScalarType>,
    ) -> R<Self> {
        <NdTensor<E> as Backend>::sum_dim_intlist(&self_.0, dim, keepdim, dtype).map(Faulty)
    }
    fn expand(self_: &Self, size: &[i64], implicit: bool) -> R<Self> {
        <NdTensor<E> as Backend>::expand(&self_.0, size, implicit).map(Faulty)
    }
}

/// The kit on `exp` only, without a report file, with this time limit and few random calls.
fn exp_only(timeout: Duration) -> KitOptions {
    KitOptions {
        ops: Some(vec!["exp".to_string()]),
        timeout,
        rounds: 20,
        report: None,
        ..KitOptions::default()
    }
}

/// The records of `check` in `dtype`.
fn of<'a>(records: &'a [Record], check: &str, dtype: &str) -> Vec<&'a Record> {
    records
        .iter()
        .filter(|r| r.check == check && r.dtype == dtype)
        .collect()
}

/// Every record is `exp`'s, and none of them passed a fixture that needs a kernel this
/// backend lacks: the fixtures are not implemented (or fail) here, never a pass by mistake.
fn only_exp(records: &[Record]) {
    assert!(!records.is_empty());
    assert!(records.iter().all(|r| r.op == "exp"), "{records:?}");
}

#[test]
fn a_correct_exp_passes_every_check_it_can_run() {
    let run = check_backend_with::<Faulty<f64, NONE>>(&exp_only(Duration::from_secs(10)), &[]);
    only_exp(&run.records);
    for (check, dtype) in [
        ("gradcheck", "f64"),
        ("forward", "f64"),
        ("no panic", "f64"),
        ("value", "f32"),
        ("gradient", "f32"),
        ("jvp", "f32"),
    ] {
        let rs = of(&run.records, check, dtype);
        assert!(
            !rs.is_empty() && rs.iter().all(|r| r.status == Status::Pass),
            "{check} ({dtype}): {rs:?}"
        );
    }
    // Its fixtures need kernels it does not have: not implemented, nothing else.
    let fails: Vec<&Record> = run
        .records
        .iter()
        .filter(|r| !matches!(r.status, Status::Pass | Status::NotImplemented))
        .collect();
    assert!(fails.is_empty(), "{fails:?}");
    assert!(run.failures.is_empty(), "{}", run.failures.join("\n"));
}

#[test]
fn a_kernel_that_returns_an_error_fails_its_checks() {
    let run = check_backend_with::<Faulty<f64, ERRS>>(&exp_only(Duration::from_secs(10)), &[]);
    only_exp(&run.records);
    let gradcheck = of(&run.records, "gradcheck", "f64");
    assert!(!gradcheck.is_empty());
    for r in gradcheck {
        assert_eq!(r.status, Status::Fail, "{r:?}");
        assert!(r.detail.contains("exp kernel failed"), "{}", r.detail);
    }
    // An `Err` is what a kernel should give: the no-panic test passes.
    assert_eq!(of(&run.records, "no panic", "f64")[0].status, Status::Pass);
    assert!(run.failures.iter().any(|f| f.contains("exp kernel failed")));
}

#[test]
fn a_kernel_that_panics_fails_its_checks_and_the_kit_goes_on() {
    let run = check_backend_with::<Faulty<f64, PANICS>>(&exp_only(Duration::from_secs(10)), &[]);
    only_exp(&run.records);
    for check in [
        "gradcheck",
        "gradgradcheck",
        "forward",
        "raw form",
        "no panic",
    ] {
        let rs = of(&run.records, check, "f64");
        assert!(!rs.is_empty(), "{check}");
        for r in rs {
            assert_eq!(r.status, Status::Fail, "{r:?}");
            assert!(r.detail.contains("exp kernel panicked"), "{}", r.detail);
        }
    }
    // The f32 checks ran after the panics, and fail the same way.
    let value = of(&run.records, "value", "f32");
    assert!(!value.is_empty() && value.iter().all(|r| r.status == Status::Fail));
}

#[test]
fn a_kernel_that_hangs_times_out_and_the_kit_goes_on() {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("kit-selftest-hang.jsonl");
    std::fs::remove_file(&path).ok();
    let limit = Duration::from_secs(1);
    let options = KitOptions {
        report: Some(path.clone()),
        ..exp_only(limit)
    };
    let t0 = Instant::now();
    let run = check_backend_with::<Faulty<f64, HANGS>>(&options, &[]);
    // One limit for the hang, and the rest runs as the correct backend's does.
    assert!(t0.elapsed() < limit * 10, "{:?}", t0.elapsed());
    only_exp(&run.records);
    let timeouts: Vec<&Record> = run
        .records
        .iter()
        .filter(|r| r.status == Status::Timeout)
        .collect();
    assert_eq!(timeouts.len(), 1, "{:?}", run.records);
    // exp's first call is its gradcheck case's first check.
    assert_eq!(timeouts[0].check, "gradcheck");
    assert!(
        run.failures
            .iter()
            .any(|f| f.starts_with("gradcheck: timeout: exp"))
    );
    // The kit went on: exp's f32 checks ran on a new thread, and pass.
    let jvp = of(&run.records, "jvp", "f32");
    assert!(!jvp.is_empty() && jvp.iter().all(|r| r.status == Status::Pass));
    // The report holds every record, the timeout as `"status": "timeout"`.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""status":"timeout""#), "{text}");
    let back = read_report(&text).unwrap();
    assert_eq!(back.len(), run.records.len());
    assert!(back.iter().all(|(b, _)| b == "Faulty"));
}

#[test]
fn a_kernel_wrong_only_in_f32_fails_the_f32_checks() {
    let run =
        check_backend_with::<Faulty<f64, F32_ROUNDING>>(&exp_only(Duration::from_secs(10)), &[]);
    only_exp(&run.records);
    // In f64 it is right.
    for check in ["gradcheck", "gradgradcheck", "forward"] {
        let rs = of(&run.records, check, "f64");
        assert!(!rs.is_empty() && rs.iter().all(|r| r.status == Status::Pass));
    }
    // In f32 its value, and the gradient and jvp its formula computes from it, are not.
    for check in ["value", "gradient", "jvp"] {
        let rs = of(&run.records, check, "f32");
        assert!(!rs.is_empty(), "{check}");
        for r in rs {
            assert_eq!(r.status, Status::Fail, "{r:?}");
            assert!(r.detail.contains("in f32"), "{}", r.detail);
        }
    }
    assert!(
        run.failures
            .iter()
            .any(|f| f.starts_with("value (f32): exp"))
    );
}
