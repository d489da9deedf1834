//! Shared by the `ddp_train` and `ddp_bench` examples and the MPI tests: the Iris data
//! (shuffled with seed 42, features standardized), an MLP of `Linear` layers with ReLU
//! between them (`examples/ndtensor`'s Iris model without its dropout, whose random masks
//! would differ between a split batch and the whole one), the batches of a step and their
//! split across ranks, and the single-process reference run.

// Each user takes part of it.
#![allow(dead_code)]

use autograd::gradcheck::ElementAccess;
use autograd::runtime::{AutogradError, Variable};
use autograd::types::Generator;
use autograd_opset::nn::{Adam, FromValues, Linear};
use autograd_opset::ops::{cross_entropy_loss, index_select, relu};

/// What the model needs of a backend.
pub trait Backend: FromValues + ElementAccess {}
impl<T: FromValues + ElementAccess> Backend for T {}

/// A classification data set: row-major features and class indices.
pub struct Data {
    /// Rows.
    pub n: usize,
    /// Features per row.
    pub d: usize,
    /// `n * d` features.
    pub x: Vec<f64>,
    /// `n` classes.
    pub y: Vec<i64>,
    /// Number of classes.
    pub classes: usize,
}

/// Iris (150 flowers, 4 features, 3 classes) from `linfa-datasets`, shuffled with seed 42,
/// features standardized.
pub fn iris() -> Data {
    let iris = linfa_datasets::iris();
    let (n, d) = (iris.records.nrows(), iris.records.ncols());
    let raw: Vec<f64> = iris.records.iter().copied().collect();
    let targets: Vec<i64> = iris.targets.iter().map(|t| *t as i64).collect();
    let g = Generator::new(42);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, (g.next_u64() % (i as u64 + 1)) as usize);
    }
    let mut x = vec![0.0; n * d];
    for j in 0..d {
        let mean = (0..n).map(|i| raw[i * d + j]).sum::<f64>() / n as f64;
        let var = (0..n).map(|i| (raw[i * d + j] - mean).powi(2)).sum::<f64>() / n as f64;
        for (r, &i) in order.iter().enumerate() {
            x[r * d + j] = (raw[i * d + j] - mean) / var.sqrt();
        }
    }
    let y = order.iter().map(|&i| targets[i]).collect();
    Data {
        n,
        d,
        x,
        y,
        classes: 3,
    }
}

/// `n` rows of `d` features uniform in `[-1, 1)` and `classes` random classes, from `seed`.
pub fn synthetic(n: usize, d: usize, classes: usize, seed: u64) -> Data {
    let g = Generator::new(seed);
    let x = (0..n * d).map(|_| 2.0 * g.next_f64() - 1.0).collect();
    let y = (0..n)
        .map(|_| (g.next_u64() % classes as u64) as i64)
        .collect();
    Data {
        n,
        d,
        x,
        y,
        classes,
    }
}

/// The rows of step `step` with a global batch of `batch`: the next `batch` rows, cyclically.
pub fn step_rows(data: &Data, step: usize, batch: usize) -> Vec<usize> {
    (0..batch).map(|k| (step * batch + k) % data.n).collect()
}

/// Rank `rank`'s contiguous share of `rows` among `world` ranks (`world` divides the batch).
pub fn shard(rows: &[usize], rank: usize, world: usize) -> Vec<usize> {
    let per = rows.len() / world;
    rows[rank * per..(rank + 1) * per].to_vec()
}

/// `Linear -> ReLU -> ... -> Linear` with the given widths, drawn from `init`.
pub struct Mlp<T: Backend> {
    /// The layers.
    pub layers: Vec<Linear<T>>,
}

impl<T: Backend> Mlp<T> {
    /// Layers `widths[0] -> widths[1] -> ...`.
    pub fn new(widths: &[usize], init: &Generator) -> Self {
        let layers = widths
            .windows(2)
            .map(|w| Linear::new(w[0], w[1], init))
            .collect();
        Mlp { layers }
    }

    /// The logits.
    pub fn forward(&self, x: &Variable<T>) -> Result<Variable<T>, AutogradError> {
        let mut h = x.clone();
        for (i, l) in self.layers.iter().enumerate() {
            h = l.forward(&h)?;
            if i + 1 < self.layers.len() {
                h = relu(&h)?;
            }
        }
        Ok(h)
    }

    /// Weights and biases, layer by layer (registration order).
    pub fn parameters(&self) -> Vec<Variable<T>> {
        self.layers.iter().flat_map(Linear::parameters).collect()
    }
}

/// The mean cross-entropy of the model on rows `rows`.
pub fn loss<T: Backend>(
    model: &Mlp<T>,
    data: &Data,
    rows: &[usize],
) -> Result<Variable<T>, AutogradError> {
    let x = Variable::from_data(T::from_f64(&data.x, &[data.n, data.d]));
    let y = Variable::from_data(T::from_i64(&data.y, &[data.n]));
    let idx: Vec<i64> = rows.iter().map(|r| *r as i64).collect();
    let idx = Variable::from_data(T::from_i64(&idx, &[rows.len()]));
    let xb = index_select(&x, 0, &idx)?;
    let yb = index_select(&y, 0, &idx)?;
    cross_entropy_loss(&model.forward(&xb)?, &yb, None, 1, -100, 0.0)
}

/// The value of a one-element tensor.
pub fn scalar<T: Backend>(v: &Variable<T>) -> f64 {
    v.data().to_f64_vec()[0]
}

/// The single-process run: `steps` Adam steps on whole batches of `batch` rows from a model
/// drawn from `Generator::new(seed)`; the loss of each step (before its update).
pub fn reference_curve<T: Backend>(
    data: &Data,
    widths: &[usize],
    seed: u64,
    batch: usize,
    lr: f64,
    steps: usize,
) -> Result<Vec<f64>, AutogradError> {
    let model: Mlp<T> = Mlp::new(widths, &Generator::new(seed));
    let mut opt = Adam::new(model.parameters(), lr);
    let mut curve = Vec::with_capacity(steps);
    for step in 0..steps {
        let l = loss(&model, data, &step_rows(data, step, batch))?;
        opt.zero_grad();
        l.backward()?;
        opt.step()?;
        curve.push(scalar(&l));
    }
    Ok(curve)
}

/// The largest `|a - b| / |b|` of two curves.
pub fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / y.abs().max(f64::MIN_POSITIVE))
        .fold(0.0, f64::max)
}
