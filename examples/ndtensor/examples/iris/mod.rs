//! Shared by the `train` and `hessian` examples: the Iris data set (seeded 120/30 split,
//! features standardized with the training set's statistics) and the MLP
//! `Linear(4, 16) -> ReLU -> Dropout(0.1) -> Linear(16, 3)`, with one epoch of mini-batch
//! training and the evaluation.

// Each example uses part of it.
#![allow(dead_code)]

use autograd::runtime::AutogradError;
use autograd::types::Generator;
use ndtensor::nn::{Adam, Linear, dropout};
use ndtensor::ops::*;
use ndtensor::{Element, NdTensor, Var};

/// Hidden units.
pub const HIDDEN: usize = 16;
/// Iris's classes.
pub const CLASSES: usize = 3;
/// Mini-batch size.
pub const BATCH: usize = 16;

/// The data set, split and standardized.
pub struct Iris<E: Element> {
    /// Flowers and features.
    pub n: usize,
    pub d: usize,
    /// `(120, 4)` features and `(120)` class indices.
    pub x_train: Var<E>,
    pub y_train: Var<E>,
    /// `(30, 4)` and `(30)`.
    pub x_test: Var<E>,
    pub y_test: Var<E>,
}

/// Rows `idx` of a row-major `(n, d)` table as a tensor.
fn rows<E: Element>(data: &[f64], d: usize, idx: &[usize]) -> NdTensor<E> {
    let v: Vec<f64> = idx
        .iter()
        .flat_map(|i| data[i * d..(i + 1) * d].iter().copied())
        .collect();
    NdTensor::from_f64(&v, &[idx.len(), d])
}

fn labels<E: Element>(t: &[usize], idx: &[usize]) -> NdTensor<E> {
    let v: Vec<f64> = idx.iter().map(|i| t[*i] as f64).collect();
    NdTensor::from_f64(&v, &[idx.len()])
}

/// Loads Iris from `linfa-datasets`, shuffles it with `g` and splits it 80/20.
pub fn load<E: Element>(g: &Generator) -> Iris<E> {
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
        x_train: Var::from_data(rows(&data, d, train_idx)),
        y_train: Var::from_data(labels(&targets, train_idx)),
        x_test: Var::from_data(rows(&data, d, test_idx)),
        y_test: Var::from_data(labels(&targets, test_idx)),
    }
}

/// The classifier.
pub struct Mlp<E: Element> {
    pub l1: Linear<E>,
    pub l2: Linear<E>,
}

impl<E: Element> Mlp<E> {
    /// Kaiming-uniform layers drawn from `init`.
    pub fn new(d: usize, init: &Generator) -> Self {
        Mlp {
            l1: Linear::new(d, HIDDEN, init),
            l2: Linear::new(HIDDEN, CLASSES, init),
        }
    }

    /// The logits; dropout only when `train`.
    pub fn forward(&self, x: &Var<E>, train: bool) -> Result<Var<E>, AutogradError> {
        let h = relu(&self.l1.forward(x)?)?;
        let h = dropout(&h, 0.1, train)?;
        self.l2.forward(&h)
    }

    /// `[W1, b1, W2, b2]`.
    pub fn parameters(&self) -> Vec<Var<E>> {
        [self.l1.parameters(), self.l2.parameters()].concat()
    }
}

/// The evaluation-mode loss as a function of the parameters `[W1, b1, W2, b2]` (what
/// `autograd::functional` transforms): `cross_entropy(relu(x W1ᵀ + b1) W2ᵀ + b2, y)`.
pub fn loss_of_parameters<E: Element>(
    p: &[Var<E>],
    x: &Var<E>,
    y: &Var<E>,
) -> Result<Var<E>, AutogradError> {
    let h = relu(&add_tensor(&mm(x, &t(&p[0])?)?, &p[1], 1.0)?)?;
    let z = add_tensor(&mm(&h, &t(&p[2])?)?, &p[3], 1.0)?;
    cross_entropy_loss(&z, y, None, 1, -100, 0.0)
}

/// One epoch of mini-batch training: `order` (the training rows, kept from epoch to epoch)
/// is shuffled with `g`, then cut into batches.
pub fn train_epoch<E: Element>(
    model: &Mlp<E>,
    opt: &mut Adam<E>,
    data: &Iris<E>,
    order: &mut [usize],
    g: &Generator,
) -> Result<(), AutogradError> {
    for i in (1..order.len()).rev() {
        order.swap(i, (g.next_u64() % (i as u64 + 1)) as usize);
    }
    for chunk in order.chunks(BATCH) {
        let idx = Var::from_data(NdTensor::from_f64(
            &chunk.iter().map(|i| *i as f64).collect::<Vec<_>>(),
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
pub fn evaluate<E: Element>(
    model: &Mlp<E>,
    x: &Var<E>,
    y: &Var<E>,
) -> Result<(f64, f64), AutogradError> {
    let _g = autograd::runtime::no_grad();
    let logits = model.forward(x, false)?;
    let loss = cross_entropy_loss(&logits, y, None, 1, -100, 0.0)?
        .data()
        .item()
        .as_f64();
    let pred = argmax(&logits, Some(1), false)?;
    let correct = sum(&eq_tensor(&pred, y)?, None)?.data().item().as_f64();
    Ok((loss, correct / y.shape()[0] as f64))
}
