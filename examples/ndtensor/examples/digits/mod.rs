//! Shared by the `train_digits` examples (ndtensor's, candletensor's) and the step
//! benchmark: scikit-learn's 8x8 handwritten digits (UCI's optdigits test set, 1,797 images;
//! `data/digits.bin`, see `data/LICENSE`), a fixed seeded split, the network, one epoch of
//! mini-batch training and the evaluation.

// Each user takes part of it.
#![allow(dead_code)]

use autograd::gradcheck::ElementAccess;
use autograd::runtime::{AutogradError, Variable};
use autograd::types::Generator;
use autograd_opset::nn::{Adam, BatchNorm, Conv2d, FromValues, Linear};
use autograd_opset::ops::*;

/// What the example needs of a backend (ndtensor's and candletensor's tensors both are).
pub trait Backend: FromValues + ElementAccess {}
impl<T: FromValues + ElementAccess> Backend for T {}

/// The images, one record of 65 bytes each: the label, then 64 pixels (row-major, 0..=16).
pub const DIGITS_BIN: &[u8] = include_bytes!("data/digits.bin");
/// The classes.
pub const CLASSES: usize = 10;
/// An image's side.
pub const SIDE: usize = 8;
/// Mini-batch size.
pub const BATCH: usize = 64;
/// The split's seed (a fifth of the images, 359, are the test set; 1,438 train).
pub const SPLIT_SEED: u64 = 42;

/// The data set, split and standardized.
pub struct Digits<T: Backend> {
    /// `(n, 1, 8, 8)` standardized pixels and `(n)` labels.
    pub x_train: Variable<T>,
    pub y_train: Variable<T>,
    pub x_test: Variable<T>,
    pub y_test: Variable<T>,
    /// The test images' raw pixels (0..=16) and labels, for pictures of mistakes.
    pub test_pixels: Vec<[u8; 64]>,
    pub test_labels: Vec<usize>,
}

impl<T: Backend> Digits<T> {
    /// Training images.
    pub fn n_train(&self) -> usize {
        self.y_train.shape()[0]
    }
}

/// The records of `DIGITS_BIN`: `(label, pixels)`.
pub fn records() -> Vec<(usize, [u8; 64])> {
    DIGITS_BIN
        .chunks_exact(65)
        .map(|r| {
            let mut px = [0u8; 64];
            px.copy_from_slice(&r[1..]);
            (usize::from(r[0]), px)
        })
        .collect()
}

/// Loads the digits, shuffles them with a generator seeded `SPLIT_SEED`, keeps a fifth for
/// the test and standardizes the pixels with the training images' mean and deviation.
pub fn load<T: Backend>() -> Digits<T> {
    let recs = records();
    let n = recs.len();
    let g = Generator::new(SPLIT_SEED);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, (g.next_u64() % (i as u64 + 1)) as usize);
    }
    let (test_idx, train_idx) = order.split_at(n / 5);
    let train_px: Vec<f64> = train_idx
        .iter()
        .flat_map(|i| recs[*i].1.iter().map(|p| f64::from(*p)))
        .collect();
    let mean = train_px.iter().sum::<f64>() / train_px.len() as f64;
    let var = train_px.iter().map(|p| (p - mean).powi(2)).sum::<f64>() / train_px.len() as f64;
    let std = var.sqrt();
    let images = |idx: &[usize]| {
        let v: Vec<f64> = idx
            .iter()
            .flat_map(|i| recs[*i].1.iter().map(|p| (f64::from(*p) - mean) / std))
            .collect();
        Variable::from_data(T::from_f64(&v, &[idx.len(), 1, SIDE, SIDE]))
    };
    let labels = |idx: &[usize]| {
        let v: Vec<i64> = idx.iter().map(|i| recs[*i].0 as i64).collect();
        Variable::from_data(T::from_i64(&v, &[idx.len()]))
    };
    Digits {
        x_train: images(train_idx),
        y_train: labels(train_idx),
        x_test: images(test_idx),
        y_test: labels(test_idx),
        test_pixels: test_idx.iter().map(|i| recs[*i].1).collect(),
        test_labels: test_idx.iter().map(|i| recs[*i].0).collect(),
    }
}

/// The channels of the two convolutions.
pub const C1: usize = 16;
pub const C2: usize = 32;

/// The network: `Conv2d(1, 16, 3, padding 1) -> BatchNorm2d(16) -> ReLU -> MaxPool2d(2) ->
/// Conv2d(16, 32, 3, padding 1) -> BatchNorm2d(32) -> ReLU -> MaxPool2d(2) -> Flatten ->
/// Linear(128, 10)`: 8x8 images to 4x4 then 2x2 maps.
pub struct Net<T: Backend> {
    pub conv1: Conv2d<T>,
    pub bn1: BatchNorm<T>,
    pub conv2: Conv2d<T>,
    pub bn2: BatchNorm<T>,
    pub fc: Linear<T>,
}

impl<T: Backend> Net<T> {
    /// Kaiming-uniform layers drawn from `init`.
    pub fn new(init: &Generator) -> Self {
        Net {
            conv1: Conv2d::new(1, C1, 3, 1, init),
            bn1: BatchNorm::new(C1),
            conv2: Conv2d::new(C1, C2, 3, 1, init),
            bn2: BatchNorm::new(C2),
            fc: Linear::new(C2 * 2 * 2, CLASSES, init),
        }
    }

    /// A line describing the network.
    pub fn describe() -> String {
        format!(
            "Conv2d(1, {C1}, 3, pad 1) -> BatchNorm2d -> ReLU -> MaxPool2d(2) -> Conv2d({C1}, {C2}, 3, pad 1) -> BatchNorm2d -> ReLU -> MaxPool2d(2) -> Linear({}, {CLASSES})",
            C2 * 4
        )
    }

    /// The logits of `(n, 1, 8, 8)` images; batch statistics (and their running averages
    /// updated) when `train`.
    pub fn forward(&self, x: &Variable<T>, train: bool) -> Result<Variable<T>, AutogradError> {
        let block = |x: &Variable<T>, conv: &Conv2d<T>, bn: &BatchNorm<T>| {
            let h = relu(&bn.forward(&conv.forward(x)?, train)?)?;
            max_pool2d(&h, &[2, 2], &[], &[0, 0], &[1, 1], false)
        };
        let h = block(&block(x, &self.conv1, &self.bn1)?, &self.conv2, &self.bn2)?;
        let n = h.shape()[0] as i64;
        self.fc.forward(&reshape(&h, &[n, -1])?)
    }

    /// The parameters.
    pub fn parameters(&self) -> Vec<Variable<T>> {
        [
            self.conv1.parameters(),
            self.bn1.parameters(),
            self.conv2.parameters(),
            self.bn2.parameters(),
            self.fc.parameters(),
        ]
        .concat()
    }
}

/// One training step on the rows `idx`: forward, loss, backward, update. Returns the loss.
pub fn train_step<T: Backend>(
    model: &Net<T>,
    opt: &mut Adam<T>,
    data: &Digits<T>,
    idx: &[usize],
) -> Result<f64, AutogradError> {
    let ix = Variable::from_data(T::from_i64(
        &idx.iter().map(|i| *i as i64).collect::<Vec<_>>(),
        &[idx.len()],
    ));
    let xb = index_select(&data.x_train, 0, &ix)?;
    let yb = index_select(&data.y_train, 0, &ix)?;
    let loss = cross_entropy_loss(&model.forward(&xb, true)?, &yb, None, 1, -100, 0.0)?;
    opt.zero_grad();
    loss.backward()?;
    opt.step()?;
    Ok(loss.data().to_f64_vec()[0])
}

/// One epoch: `order` (the training rows, kept from epoch to epoch) is shuffled with `g`,
/// then cut into batches (a last batch of one image is dropped: batch norm needs two);
/// `after_step` runs after each. Returns the mean training loss.
pub fn train_epoch<T: Backend>(
    model: &Net<T>,
    opt: &mut Adam<T>,
    data: &Digits<T>,
    order: &mut [usize],
    g: &Generator,
    mut after_step: impl FnMut(),
) -> Result<f64, AutogradError> {
    for i in (1..order.len()).rev() {
        order.swap(i, (g.next_u64() % (i as u64 + 1)) as usize);
    }
    let (mut total, mut steps) = (0.0, 0);
    for chunk in order.chunks(BATCH).filter(|c| c.len() > 1) {
        total += train_step(model, opt, data, chunk)?;
        steps += 1;
        after_step();
    }
    Ok(total / f64::from(steps))
}

/// Evaluation-mode loss, accuracy and predictions of the images `x` with labels `y`.
pub fn evaluate<T: Backend>(
    model: &Net<T>,
    x: &Variable<T>,
    y: &Variable<T>,
) -> Result<(f64, f64, Vec<usize>), AutogradError> {
    let _g = autograd::runtime::no_grad();
    let logits = model.forward(x, false)?;
    let loss = cross_entropy_loss(&logits, y, None, 1, -100, 0.0)?
        .data()
        .to_f64_vec()[0];
    let pred = argmax(&logits, Some(1), false)?.data().to_f64_vec();
    let labels = y.data().to_f64_vec();
    let correct = pred.iter().zip(&labels).filter(|(p, l)| p == l).count();
    let pred = pred.iter().map(|p| *p as usize).collect();
    Ok((loss, correct as f64 / labels.len() as f64, pred))
}

/// Times `n` training steps on one batch of `BATCH` images after `n` warm-up steps: the
/// median, min and max microseconds per step (forward, loss, backward, Adam step).
pub fn bench_steps<T: Backend>(
    model: &Net<T>,
    opt: &mut Adam<T>,
    data: &Digits<T>,
    n: usize,
) -> Result<(f64, f64, f64), AutogradError> {
    let g = Generator::new(3);
    let mut order: Vec<usize> = (0..data.n_train()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, (g.next_u64() % (i as u64 + 1)) as usize);
    }
    let batch = &order[..BATCH];
    for _ in 0..n {
        train_step(model, opt, data, batch)?;
    }
    let mut times: Vec<f64> = (0..n)
        .map(|_| {
            let t0 = std::time::Instant::now();
            train_step(model, opt, data, batch).map(|_| t0.elapsed().as_secs_f64() * 1e6)
        })
        .collect::<Result<_, _>>()?;
    times.sort_by(f64::total_cmp);
    Ok((times[n / 2], times[0], times[n - 1]))
}
