//! Shared by the `train` and `hessian` examples: the Iris data set (seeded 120/30 split,
//! features standardized with the training set's statistics) and the MLP
//! `Linear(4, 16) -> ReLU -> Dropout(0.1) -> Linear(16, 3)`, with one epoch of mini-batch
//! training and the evaluation.

// Each example uses part of it.
#![allow(dead_code)]

use autograd::gradcheck::ElementAccess;
use autograd::runtime::AutogradError;
use autograd::runtime::Variable;
use autograd::types::Generator;
use autograd_opset::nn::{Adam, FromValues, Linear, dropout};
use autograd_opset::ops::*;

/// What the example needs of a backend (ndtensor's and candletensor's tensors both are).
pub trait Backend: FromValues + ElementAccess {}
impl<T: FromValues + ElementAccess> Backend for T {}

/// Hidden units.
pub const HIDDEN: usize = 16;
/// Iris's classes.
pub const CLASSES: usize = 3;
/// Mini-batch size.
pub const BATCH: usize = 16;

/// The data set, split and standardized.
pub struct Iris<T: Backend> {
    /// Flowers and features.
    pub n: usize,
    pub d: usize,
    /// `(120, 4)` features and `(120)` class indices.
    pub x_train: Variable<T>,
    pub y_train: Variable<T>,
    /// `(30, 4)` and `(30)`.
    pub x_test: Variable<T>,
    pub y_test: Variable<T>,
}

/// Rows `idx` of a row-major `(n, d)` table as a tensor.
fn rows<T: Backend>(data: &[f64], d: usize, idx: &[usize]) -> T {
    let v: Vec<f64> = idx
        .iter()
        .flat_map(|i| data[i * d..(i + 1) * d].iter().copied())
        .collect();
    T::from_f64(&v, &[idx.len(), d])
}

/// Class indices (`i64`) of rows `idx`.
fn labels<T: Backend>(t: &[usize], idx: &[usize]) -> T {
    let v: Vec<i64> = idx.iter().map(|i| t[*i] as i64).collect();
    T::from_i64(&v, &[idx.len()])
}

/// Loads Iris from `linfa-datasets`, shuffles it with `g` and splits it 80/20.
pub fn load<T: Backend>(g: &Generator) -> Iris<T> {
    let iris = linfa_datasets::iris();
    let (n, d) = (iris.records.nrows(), iris.records.ncols());
    let raw: Vec<f64> = iris.records.iter().copied().collect();
    let targets: Vec<usize> = iris.targets.iter().copied().collect();
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, (g.next_u64() % (i as u64 + 1)) as usize);
    }
    let (test_idx, train_idx) = order.split_at(n / 5);
    let mut data = raw.clone();
    for j in 0..d {
        let col: Vec<f64> = train_idx.iter().map(|i| raw[i * d + j]).collect();
        let mean = col.iter().sum::<f64>() / col.len() as f64;
        let std = (col.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / col.len() as f64).sqrt();
        for i in 0..n {
            data[i * d + j] = (raw[i * d + j] - mean) / std;
        }
    }
    Iris {
        n,
        d,
        x_train: Variable::from_data(rows(&data, d, train_idx)),
        y_train: Variable::from_data(labels(&targets, train_idx)),
        x_test: Variable::from_data(rows(&data, d, test_idx)),
        y_test: Variable::from_data(labels(&targets, test_idx)),
    }
}

/// The classifier.
pub struct Mlp<T: Backend> {
    pub l1: Linear<T>,
    pub l2: Linear<T>,
}

impl<T: Backend> Mlp<T> {
    /// Kaiming-uniform layers drawn from `init`.
    pub fn new(d: usize, init: &Generator) -> Self {
        Mlp {
            l1: Linear::new(d, HIDDEN, init),
            l2: Linear::new(HIDDEN, CLASSES, init),
        }
    }

    /// The logits; dropout only when `train`.
    pub fn forward(&self, x: &Variable<T>, train: bool) -> Result<Variable<T>, AutogradError> {
        let h = relu(&self.l1.forward(x)?)?;
        let h = dropout(&h, 0.1, train)?;
        self.l2.forward(&h)
    }

    /// `[W1, b1, W2, b2]`.
    pub fn parameters(&self) -> Vec<Variable<T>> {
        [self.l1.parameters(), self.l2.parameters()].concat()
    }
}

/// The evaluation-mode loss as a function of the parameters `[W1, b1, W2, b2]` (what
/// `autograd::functional` transforms): `cross_entropy(relu(x W1ᵀ + b1) W2ᵀ + b2, y)`.
pub fn loss_of_parameters<T: Backend>(
    p: &[Variable<T>],
    x: &Variable<T>,
    y: &Variable<T>,
) -> Result<Variable<T>, AutogradError> {
    let h = relu(&add_tensor(&mm(x, &t(&p[0])?)?, &p[1], 1.0)?)?;
    let z = add_tensor(&mm(&h, &t(&p[2])?)?, &p[3], 1.0)?;
    cross_entropy_loss(&z, y, None, 1, -100, 0.0)
}

/// One epoch of mini-batch training: `order` (the training rows, kept from epoch to epoch)
/// is shuffled with `g`, then cut into batches.
pub fn train_epoch<T: Backend>(
    model: &Mlp<T>,
    opt: &mut Adam<T>,
    data: &Iris<T>,
    order: &mut [usize],
    g: &Generator,
) -> Result<(), AutogradError> {
    for i in (1..order.len()).rev() {
        order.swap(i, (g.next_u64() % (i as u64 + 1)) as usize);
    }
    for chunk in order.chunks(BATCH) {
        let idx = Variable::from_data(T::from_i64(
            &chunk.iter().map(|i| *i as i64).collect::<Vec<_>>(),
            &[chunk.len()],
        ));
        let xb = index_select(&data.x_train, 0, &idx)?;
        let yb = index_select(&data.y_train, 0, &idx)?;
        let loss = cross_entropy_loss(&model.forward(&xb, true)?, &yb, None, 1, -100, 0.0)?;
        opt.zero_grad();
        loss.backward()?;
        opt.step()?;
    }
    Ok(())
}

/// (mean loss, accuracy) of the model on `x`, `y` (evaluation mode, no graph).
pub fn evaluate<T: Backend>(
    model: &Mlp<T>,
    x: &Variable<T>,
    y: &Variable<T>,
) -> Result<(f64, f64), AutogradError> {
    let _g = autograd::runtime::no_grad();
    let logits = model.forward(x, false)?;
    let loss = cross_entropy_loss(&logits, y, None, 1, -100, 0.0)?
        .data()
        .to_f64_vec()[0];
    let pred = argmax(&logits, Some(1), false)?;
    let correct = sum(&eq_tensor(&pred, y)?, None)?.data().to_f64_vec()[0];
    Ok((loss, correct / y.shape()[0] as f64))
}
