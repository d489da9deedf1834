//! The op set's conformance kit on candletensor: every kind of case (gradcheck,
//! gradgradcheck, forward mode, in-place, out=, views) in f64 and f32, the PyTorch fixtures
//! replayed, random calls that must never panic (`autograd_opset::conformance`); the
//! README's table of operators is this run's.

use autograd_opset::conformance::report::{check_readme_table, markdown_table};
use autograd_opset::conformance::{KitOptions, check_backend_with};
use candletensor::CandleTensor;

#[test]
fn the_op_sets_conformance_kit_passes() {
    // The fixtures where candle differs from PyTorch, with the reason: layouts only (the
    // values are PyTorch's; README, "Layout").
    let run = check_backend_with::<CandleTensor>(&KitOptions::default(), LAYOUT_DIFFERENCES);
    assert!(run.failures.is_empty(), "{}", run.failures.join("\n"));
    // Every `Err` was a kernel's PyTorch-worded check, none candle's own error.
    assert_eq!(candletensor::backend::candle_errors(), 0);
    let rows: Vec<_> = run
        .records
        .iter()
        .map(|r| (run.backend.clone(), r.clone()))
        .collect();
    let readme = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    check_readme_table(readme.as_ref(), &markdown_table(&rows)).unwrap_or_else(|e| panic!("{e}"));
}

/// Where candle's views have other strides than PyTorch's (`sym_stride.int`,
/// `sym_storage_offset`, `sym_is_contiguous` report the backend's layout).
#[rustfmt::skip]
const LAYOUT_DIFFERENCES: &[(&str, &str)] = &[
    ("layout/slice_step", "candle has no strided slices: a slice with a step is a copy (contiguous)"),
    ("layout/contiguous/slice_step/contiguous_format", "as layout/slice_step"),
    ("layout/contiguous/slice_step/preserve_format", "as layout/slice_step"),
    ("layout/slice_to_empty", "candle's empty narrow starts at offset 0"),
    ("layout/unsqueeze_front", "candle's unsqueeze gives the new size-1 dimension another stride than PyTorch's"),
    ("layout/unsqueeze_middle", "as layout/unsqueeze_front"),
    ("layout/diagonal", "candle has no diagonal view: a diagonal is a copy (index_select)"),
    ("layout/contiguous/diagonal/contiguous_format", "as layout/diagonal"),
    ("layout/contiguous/diagonal/preserve_format", "as layout/diagonal"),
];

/// The kit's non-contiguous cases do reach candle with a strided layout, and perturbed
/// copies (gradcheck's) keep it.
#[test]
fn noncontiguous_inputs_are_strided_candle_tensors() {
    use autograd::gradcheck::ElementAccess;
    use autograd_opset::conformance::ConformanceTensor;
    let x = CandleTensor::from_vec((0..6).map(f64::from).collect(), &[2, 3]);
    let nc = x.noncontiguous();
    assert!(!nc.t.is_contiguous());
    assert_eq!(nc.to_vec(), x.to_vec());
    let p = nc.with_f64_vec(&[1.0; 6]);
    assert!(!p.t.is_contiguous());
    assert_eq!(p.to_vec(), vec![1.0; 6]);
}

/// The kernels keep candle's dtype: an `F32` tensor differentiates to `F32` gradients.
#[test]
fn f32_tensors_differentiate_too() {
    use candletensor::ops::{mul_tensor, sum, tanh};
    let t = candle_core::Tensor::new(&[1.0f32, -2.0, 3.0], &candle_core::Device::Cpu).unwrap();
    let x = candletensor::Var::new(CandleTensor::new(t), true);
    let y = sum(&mul_tensor(&tanh(&x).unwrap(), &x).unwrap(), None).unwrap();
    y.backward().unwrap();
    let g = x.grad().unwrap().data();
    assert_eq!(autograd::runtime::Tensor::dtype(&g), "f32");
    for (gi, xi) in g.to_vec().iter().zip([1.0f64, -2.0, 3.0]) {
        let want = xi.tanh() + xi * (1.0 - xi.tanh() * xi.tanh());
        assert!((gi - want).abs() < 1e-5, "{gi} vs {want}");
    }
}

/// The kit reports a known difference that names no fixture, or whose fixture now matches
/// (the kit restricted to that fixture's operator, in f64).
#[test]
fn wrong_known_differences_are_failures() {
    use autograd_opset::conformance::fixtures::{fixtures, tested_op};
    let fixed = "errors/inplace_view_of_leaf";
    let known = [("no/such/fixture", "?"), (fixed, "?")];
    let fx = fixtures().into_iter().find(|f| f["name"] == fixed).unwrap();
    let options = KitOptions {
        ops: Some(vec![tested_op(&fx)]),
        dtypes: vec!["f64"],
        report: None,
        ..KitOptions::default()
    };
    let run = check_backend_with::<CandleTensor>(&options, &known);
    assert_eq!(
        run.failures,
        vec![
            "known difference no/such/fixture names no fixture".to_string(),
            "known difference now passes (remove it from the list): errors/inplace_view_of_leaf (?)"
                .to_string(),
        ]
    );
}

#[test]
fn integers_beyond_f64_stay_exact_through_moves() {
    use autograd_opset::ops::*;
    type T = CandleTensor;
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
    let d = add_tensor(&c, &ints(vec![1, 1, -1, 0], &[4]), 2).unwrap();
    assert_eq!(got(&d), vec![-BIG + 2, BIG + 2, BIG - 2, 1]);
    let p = mul_scalar(&ints(vec![BIG / 4], &[1]), 2).unwrap();
    assert_eq!(got(&p), vec![BIG / 4 * 2]);
    assert_eq!(
        got(&sum(&ints(vec![BIG, 1], &[2]), None).unwrap()),
        vec![BIG + 1]
    );
    // An in-place write through a view reaches the base exactly.
    let base = ints(vec![1, 2, 3, BIG], &[2, 2]);
    let v = select_int(&base, 0, 1).unwrap();
    add_tensor_(&v, &ints(vec![10, 10], &[2]), 1).unwrap();
    assert_eq!(got(&base), vec![1, 2, 13, BIG + 10]);
    let m = gt_scalar(&c, 0.0).unwrap();
    assert_eq!(autograd::runtime::Tensor::dtype(&m.data()), "bool");
    assert_eq!(m.data().to_vec(), vec![0.0, 1.0, 1.0, 1.0]);
}
