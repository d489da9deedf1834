//! The op set's conformance kit on candletensor: every differentiable function has a case
//! and passes gradcheck, gradgradcheck and the forward-mode check; the PyTorch fixtures
//! replay (with the differences candle does not match yet listed); no random call panics.

use autograd_opset::conformance::{check_every_case, missing_cases};
use candletensor::CandleTensor as T;

/// The kit's non-contiguous cases do reach candle with a strided layout, and perturbed
/// copies (gradcheck's) keep it.
#[test]
fn noncontiguous_inputs_are_strided_candle_tensors() {
    use autograd::gradcheck::ElementAccess;
    use autograd_opset::conformance::ConformanceTensor;
    let x = T::from_vec((0..6).map(f64::from).collect(), &[2, 3]);
    let nc = x.noncontiguous();
    assert!(!nc.t.is_contiguous());
    assert_eq!(nc.to_vec(), x.to_vec());
    let p = nc.with_f64_vec(&[1.0; 6]);
    assert!(!p.t.is_contiguous());
    assert_eq!(p.to_vec(), vec![1.0; 6]);
}

#[test]
fn the_op_sets_conformance_kit_passes() {
    let missing = missing_cases::<T>();
    assert!(missing.is_empty(), "{missing:?}");
    let failures = check_every_case::<T>();
    assert!(
        failures.is_empty(),
        "{} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(
        candletensor::backend::candle_errors(),
        0,
        "an error came from candle instead of a kernel's PyTorch-worded check"
    );
}

/// Fixtures candletensor does not match yet: `(fixture name, reason)`. Each must FAIL; the
/// list must only shrink.
#[rustfmt::skip]
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    // ---- the same as ndtensor's (the op set's formulas, not the backend)
    ("shape_errors/mse_loss_mismatch_broadcast", "documented PyTorch difference: with a target that broadcasts, PyTorch's mse_loss_backward normalizes the target's gradient by the target's numel; the op set gives the true derivative"),
    ("jvp/native_dropout_backward/0", "PyTorch 2.15 has no forward formula for native_dropout_backward and raises; the op set's (auto_linear) gives the tangent"),
    ("jvp/native_dropout_backward/1", "as jvp/native_dropout_backward/0"),
];

#[test]
fn pytorch_fixtures_replay() {
    use autograd_opset::conformance::fixtures::{fixtures, replay_all};
    use std::collections::{BTreeMap, BTreeSet};
    let all = fixtures();
    assert!(all.len() >= 400, "{} fixtures", all.len());
    let known: BTreeMap<&str, &str> = KNOWN_DIFFERENCES.iter().copied().collect();
    assert_eq!(
        known.len(),
        KNOWN_DIFFERENCES.len(),
        "duplicate known difference"
    );
    let names: BTreeSet<&str> = all.iter().filter_map(|f| f["name"].as_str()).collect();
    for k in known.keys() {
        assert!(names.contains(k), "known difference {k} names no fixture");
    }
    let r = replay_all::<T>(KNOWN_DIFFERENCES);
    println!(
        "pytorch fixtures: {} passed, {} known differences, {} failed, {} known differences now pass",
        r.passed,
        r.known_failing,
        r.failures.len(),
        r.fixed.len()
    );
    assert!(
        r.failures.is_empty() && r.fixed.is_empty(),
        "{} fixtures differ from PyTorch:\n{}\n\n{} known differences now pass (remove them from KNOWN_DIFFERENCES):\n{}",
        r.failures.len(),
        r.failures.join("\n"),
        r.fixed.len(),
        r.fixed.join("\n")
    );
    assert_eq!(
        candletensor::backend::candle_errors(),
        0,
        "an error came from candle instead of a kernel's PyTorch-worded check"
    );
}

/// Random calls per function.
const ROUNDS: usize = 250;

#[test]
fn no_public_op_panics_on_random_arguments() {
    use autograd_opset::conformance::no_panic::random_calls;
    let r = random_calls::<T>(ROUNDS);
    println!("no-panic property test: {} calls Ok, {} Err", r.ok, r.err);
    assert!(
        r.panics.is_empty(),
        "{} of {} random calls panicked:\n{}",
        r.panics.len(),
        r.ok + r.err + r.panics.len(),
        r.panics.join("\n")
    );
    assert!(r.ok > 0 && r.err > 0);
    assert_eq!(
        candletensor::backend::candle_errors(),
        0,
        "an error came from candle instead of a kernel's PyTorch-worded check"
    );
}

/// The kernels keep candle's dtype: an `F32` tensor differentiates to `F32` gradients.
#[test]
fn f32_tensors_differentiate_too() {
    use candletensor::ops::{mul_tensor, sum, tanh};
    let t = candle_core::Tensor::new(&[1.0f32, -2.0, 3.0], &candle_core::Device::Cpu).unwrap();
    let x = candletensor::Var::new(T::new(t), true);
    let y = sum(&mul_tensor(&tanh(&x).unwrap(), &x).unwrap(), None).unwrap();
    y.backward().unwrap();
    let g = x.grad().unwrap().data();
    assert_eq!(autograd::runtime::Tensor::dtype(&g), "f32");
    for (gi, xi) in g.to_vec().iter().zip([1.0f64, -2.0, 3.0]) {
        let want = xi.tanh() + xi * (1.0 - xi.tanh() * xi.tanh());
        assert!((gi - want).abs() < 1e-5, "{gi} vs {want}");
    }
}

#[test]
fn integers_beyond_f64_stay_exact_through_moves() {
    use autograd_opset::ops::*;
    type V = autograd::runtime::Variable<T>;
    const BIG: i64 = (1 << 60) + 1; // not an f64
    let ints = |v: Vec<i64>, s: &[usize]| V::from_data(T::from_i64(v, s));
    let a = ints(vec![BIG, -BIG, 3, BIG - 2, 7, 8], &[2, 3]);
    let r = reshape(&transpose_int(&a, 0, 1).unwrap(), &[6]).unwrap();
    let got = |v: &V| v.data().to_i64_vec().unwrap();
    assert_eq!(got(&r), vec![BIG, BIG - 2, -BIG, 7, 3, 8]);
    let s = index_select(&r, 0, &ints(vec![2, 0, 0], &[3])).unwrap();
    assert_eq!(got(&s), vec![-BIG, BIG, BIG]);
    let g = gather(&a, 1, &ints(vec![0, 0, 2, 1], &[2, 2]), false).unwrap();
    assert_eq!(got(&g), vec![BIG, BIG, 8, 7]);
    let c = cat(&[s, ints(vec![1], &[1])], 0).unwrap();
    assert_eq!(got(&c), vec![-BIG, BIG, BIG, 1]);
    let d = add_tensor(&c, &ints(vec![1, 1, -1, 0], &[4]), 2.0).unwrap();
    assert_eq!(got(&d), vec![-BIG + 2, BIG + 2, BIG - 2, 1]);
    let p = mul_scalar(&ints(vec![BIG / 4], &[1]), 2.0).unwrap();
    assert_eq!(got(&p), vec![BIG / 4 * 2]);
    assert_eq!(
        got(&sum(&ints(vec![BIG, 1], &[2]), None).unwrap()),
        vec![BIG + 1]
    );
    // An in-place write through a view reaches the base exactly.
    let base = ints(vec![1, 2, 3, BIG], &[2, 2]);
    let v = select_int(&base, 0, 1).unwrap();
    add_tensor_(&v, &ints(vec![10, 10], &[2]), 1.0).unwrap();
    assert_eq!(got(&base), vec![1, 2, 13, BIG + 10]);
    let m = gt_scalar(&c, 0.0).unwrap();
    assert_eq!(autograd::runtime::Tensor::dtype(&m.data()), "bool");
    assert_eq!(m.data().to_vec(), vec![0.0, 1.0, 1.0, 1.0]);
}
