//! candletensor's group norm of a half-precision input with `F32` parameters: PyTorch's
//! mixed-dtype path (computed in `F32`; the statistics and the parameters' gradients `F32`,
//! the output and the input's gradient in the input's dtype), and its refusal of a `F64`
//! input with `F32` parameters.

use autograd::runtime::Tensor as _;
use autograd_opset::Backend;
use candle_core::DType;
use candletensor::CandleTensor;

fn of(v: Vec<f64>, shape: &[usize], d: DType) -> CandleTensor {
    let t = CandleTensor::from_vec(v, shape);
    CandleTensor::new(t.t.to_dtype(d).unwrap())
}

#[test]
fn a_bf16_input_with_f32_parameters_computes_in_f32() {
    let x: Vec<f64> = (0..16).map(|i| (f64::from(i) * 0.7).sin()).collect();
    let w: Vec<f64> = vec![1.0, 0.5, 2.0, 1.5];
    let (xb, wf) = (
        of(x.clone(), &[2, 4, 2], DType::BF16),
        of(w, &[4], DType::F32),
    );
    let (y, m, s) =
        CandleTensor::native_group_norm(&xb, Some(&wf), None, 2, 4, 2, 2, 1e-5).unwrap();
    assert_eq!((y.dtype(), m.dtype(), s.dtype()), ("bf16", "f32", "f32"));
    // The statistics are those of the bf16 values, computed in f32.
    let xr =
        xb.t.to_dtype(DType::F64)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f64>()
            .unwrap();
    let mean0 = xr[..4].iter().sum::<f64>() / 4.0;
    let m0 = m.t.flatten_all().unwrap().to_vec1::<f32>().unwrap()[0];
    assert!((f64::from(m0) - mean0).abs() < 1e-6, "{m0} vs {mean0}");
    let go = of(vec![1.0; 16], &[2, 4, 2], DType::BF16);
    let (gi, gw, gb) = CandleTensor::native_group_norm_backward(
        &go,
        &xb,
        &m,
        &s,
        Some(&wf),
        2,
        4,
        2,
        2,
        [true; 3],
    )
    .unwrap();
    assert_eq!((gi.dtype(), gw.dtype(), gb.dtype()), ("bf16", "f32", "f32"));
}

#[test]
fn an_f64_input_with_f32_parameters_is_refused() {
    let x = of(vec![0.5; 8], &[2, 2, 2], DType::F64);
    let w = of(vec![1.0; 2], &[2], DType::F32);
    let e = CandleTensor::native_group_norm(&x, Some(&w), None, 2, 2, 2, 1, 1e-5).unwrap_err();
    assert_eq!(
        e.to_string(),
        "mixed dtype (CPU): all inputs must share same datatype."
    );
}
