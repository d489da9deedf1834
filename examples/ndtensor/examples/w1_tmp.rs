use ndtensor::ops::*;
use ndtensor::{NdTensor, Var};
fn main() {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    for _ in 0..runs {
        let x: Var<f32> = Var::new(NdTensor::from_vec(vec![0.5], &[1]), true);
        let mut y = x.clone();
        for _ in 0..20000 {
            y = tanh(&add_scalar(&mul_scalar(&y, 0.999), 0.001, 1.0));
        }
        y.backward().unwrap();
        drop(y);
        std::hint::black_box(x.grad().unwrap().data().item());
    }
}
