//! candletensor's convolution takes candle's own `conv1d`/`conv2d` where they fit (one
//! stride, padding and dilation for every dim) and its composition otherwise
//! (`src/backend/conv.rs`): the two agree. A 1-d convolution goes through candle's
//! `conv1d`; the same convolution as a 2-d one with a height of 1 (stride, padding and
//! dilation `[1, s]`, `[0, p]`, `[1, d]`, not one value for both dims) through the
//! composition.

use autograd_opset::Backend;
use candletensor::CandleTensor;

#[test]
fn candles_conv1d_and_the_composition_agree() {
    let mut compared = 0;
    for l in 2..7usize {
        for k in 1..4usize {
            for (s, p, d, g) in [
                (1, 0, 1, 1),
                (2, 1, 1, 1),
                (1, 1, 2, 1),
                (2, 0, 2, 2),
                (3, 1, 1, 2),
            ] {
                let x: Vec<f64> = (0..2 * 4 * l).map(|i| (i as f64 * 0.37).sin()).collect();
                let w: Vec<f64> = (0..6 * (4 / g) * k)
                    .map(|i| (i as f64 * 0.91).cos())
                    .collect();
                let cin = 4 / g;
                let one = <CandleTensor as Backend>::convolution(
                    &CandleTensor::from_vec(x.clone(), &[2, 4, l]),
                    &CandleTensor::from_vec(w.clone(), &[6, cin, k]),
                    None,
                    &[s],
                    &[p],
                    &[d],
                    false,
                    &[0],
                    g as i64,
                );
                let two = <CandleTensor as Backend>::convolution(
                    &CandleTensor::from_vec(x, &[2, 4, 1, l]),
                    &CandleTensor::from_vec(w, &[6, cin, 1, k]),
                    None,
                    &[1, s],
                    &[0, p],
                    &[1, d],
                    false,
                    &[0, 0],
                    g as i64,
                );
                match (one, two) {
                    (Ok(a), Ok(b)) => {
                        let (va, vb) = (a.to_vec(), b.to_vec());
                        assert_eq!(va.len(), vb.len(), "l {l} k {k} s {s} p {p} d {d} g {g}");
                        for (x, y) in va.iter().zip(&vb) {
                            assert!((x - y).abs() < 1e-12, "l {l} k {k} s {s} p {p} d {d} g {g}");
                        }
                        compared += 1;
                    }
                    // The op set's checks refuse both (their messages name the dims).
                    (Err(_), Err(_)) => {}
                    (a, b) => panic!(
                        "l {l} k {k} s {s} p {p} d {d} g {g}: {a:?} / {b:?}",
                        a = a.is_ok(),
                        b = b.is_ok()
                    ),
                }
            }
        }
    }
    assert!(compared > 40, "{compared} convolutions compared");
}
