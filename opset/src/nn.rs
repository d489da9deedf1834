//! Building blocks on top of the op set, for any backend: layers, dropout, optimizers.

use crate::Backend;
use crate::ops::*;
use autograd::runtime::{AutogradError, Variable, no_grad};
use autograd::types::Generator;

/// Tensors built from host values: floating-point ones from `f64` values (rounded to the
/// backend's float dtype; what layers need to initialise parameters and optimizers their
/// state), `i64` ones (indices, class targets) and `bool` ones (masks).
pub trait FromValues: Backend {
    /// A floating-point tensor of these row-major values and shape.
    fn from_f64(values: &[f64], shape: &[usize]) -> Self;
    /// An `i64` tensor (PyTorch's `torch.long`) of these row-major values and shape.
    fn from_i64(values: &[i64], shape: &[usize]) -> Self;
    /// A `bool` tensor of these row-major values and shape.
    fn from_bool(values: &[bool], shape: &[usize]) -> Self;
}

/// Uniform values in `[lo, hi)` from `g`.
pub fn uniform<T: FromValues>(shape: &[usize], lo: f64, hi: f64, g: &Generator) -> T {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|_| lo + (hi - lo) * g.next_f64()).collect();
    T::from_f64(&v, shape)
}

fn zeros<T: FromValues>(shape: &[usize]) -> T {
    T::from_f64(&vec![0.0; shape.iter().product()], shape)
}

/// `y = x Wᵀ + b` (PyTorch's `nn.Linear`, Kaiming-uniform initialised).
pub struct Linear<T: Backend> {
    /// `(out, in)`.
    pub weight: Variable<T>,
    /// `(out)`.
    pub bias: Variable<T>,
}

impl<T: FromValues> Linear<T> {
    /// A layer with weights uniform in `±1/sqrt(fan_in)`.
    pub fn new(fan_in: usize, fan_out: usize, g: &Generator) -> Self {
        let k = 1.0 / (fan_in as f64).sqrt();
        Linear {
            weight: Variable::new(uniform(&[fan_out, fan_in], -k, k, g), true).named("weight"),
            bias: Variable::new(uniform(&[fan_out], -k, k, g), true).named("bias"),
        }
    }

    /// `x Wᵀ + b` for `x` of shape `(N, in)`.
    pub fn forward(&self, x: &Variable<T>) -> Result<Variable<T>, AutogradError> {
        add_tensor(&mm(x, &t(&self.weight)?)?, &self.bias, 1)
    }

    /// The parameters.
    pub fn parameters(&self) -> Vec<Variable<T>> {
        vec![self.weight.clone(), self.bias.clone()]
    }
}

/// Dropout as in PyTorch: `native_dropout(x, p, train).0` (the mask output carries what
/// backward needs). Seed the backend's generator first for reproducible masks.
pub fn dropout<T: Backend>(
    x: &Variable<T>,
    p: f64,
    train: bool,
) -> Result<Variable<T>, AutogradError> {
    Ok(native_dropout(x, p, Some(train))?.0)
}

/// Stochastic gradient descent with momentum; updates parameters in place with the generated
/// in-place ops under `no_grad`.
pub struct Sgd<T: Backend> {
    params: Vec<Variable<T>>,
    lr: f64,
    momentum: f64,
    velocity: Vec<Option<Variable<T>>>,
}

impl<T: FromValues> Sgd<T> {
    /// An optimizer for `params`.
    pub fn new(params: Vec<Variable<T>>, lr: f64, momentum: f64) -> Self {
        let n = params.len();
        Sgd {
            params,
            lr,
            momentum,
            velocity: vec![None; n],
        }
    }

    /// One update with the accumulated `.grad`s.
    pub fn step(&mut self) -> Result<(), AutogradError> {
        let _g = no_grad();
        for (p, v) in self.params.iter().zip(self.velocity.iter_mut()) {
            let Some(g) = p.grad() else { continue };
            let d = match v {
                Some(v) => {
                    mul_scalar_(v, self.momentum)?;
                    add_tensor_(v, &g, 1)?;
                    v.clone()
                }
                None => {
                    let d = Variable::from_data(g.data().clone());
                    *v = Some(d.clone());
                    d
                }
            };
            sub_tensor_(p, &d, self.lr)?;
        }
        Ok(())
    }

    /// Clears the gradients.
    pub fn zero_grad(&self) {
        self.params.iter().for_each(|p| p.zero_grad());
    }
}

/// Adam (Kingma & Ba), with the generated in-place ops.
pub struct Adam<T: Backend> {
    params: Vec<Variable<T>>,
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    t: i32,
    m: Vec<Variable<T>>,
    v: Vec<Variable<T>>,
}

impl<T: FromValues> Adam<T> {
    /// An optimizer for `params` with the usual defaults `betas = (0.9, 0.999)`, `eps = 1e-8`.
    pub fn new(params: Vec<Variable<T>>, lr: f64) -> Self {
        let zeros = |p: &Variable<T>| Variable::from_data(zeros(&p.shape()));
        let m = params.iter().map(zeros).collect();
        let v = params.iter().map(zeros).collect();
        Adam {
            params,
            lr,
            betas: (0.9, 0.999),
            eps: 1e-8,
            t: 0,
            m,
            v,
        }
    }

    /// One update with the accumulated `.grad`s.
    pub fn step(&mut self) -> Result<(), AutogradError> {
        let _g = no_grad();
        self.t += 1;
        let (b1, b2) = self.betas;
        let c1 = 1.0 - b1.powi(self.t);
        let c2 = 1.0 - b2.powi(self.t);
        for ((p, m), v) in self.params.iter().zip(&self.m).zip(&self.v) {
            let Some(g) = p.grad() else { continue };
            mul_scalar_(m, b1)?;
            add_tensor_(m, &g, 1.0 - b1)?;
            mul_scalar_(v, b2)?;
            add_tensor_(v, &mul_tensor(&g, &g)?, 1.0 - b2)?;
            let denom = add_scalar(&sqrt(&div_scalar(v, c2)?)?, self.eps, 1)?;
            let step = div_tensor(&div_scalar(m, c1)?, &denom)?;
            sub_tensor_(p, &step, self.lr)?;
        }
        Ok(())
    }

    /// Clears the gradients.
    pub fn zero_grad(&self) {
        self.params.iter().for_each(|p| p.zero_grad());
    }
}

/// Activation checkpointing (`torch.utils.checkpoint.checkpoint(f, *inputs,
/// use_reentrant=False)`): `f(inputs)`, whose saved tensors are dropped in forward and
/// recomputed in backward, with the op set's random state of the forward (dropout draws
/// the same mask again); see [`autograd::checkpoint`].
pub fn checkpoint<T, F>(f: F, inputs: &[Variable<T>]) -> Result<Vec<Variable<T>>, AutogradError>
where
    T: Backend,
    F: Fn(&[Variable<T>]) -> Result<Vec<Variable<T>>, AutogradError> + Send + Sync + 'static,
{
    use autograd::checkpoint::{CheckpointOptions, RngState, checkpoint_with};
    let rng = RngState {
        get: crate::random::get_rng_state,
        set: crate::random::set_rng_state,
    };
    let options = CheckpointOptions {
        rng: Some(rng),
        ..CheckpointOptions::default()
    };
    checkpoint_with(f, inputs, options)
}

/// Batch normalization over dim 1 (PyTorch's `nn.BatchNorm1d`/`nn.BatchNorm2d`: the
/// `batch_norm` composite): an affine weight (ones) and bias (zeros), and the running
/// statistics (zeros and ones) the training forward updates in place with `momentum`.
pub struct BatchNorm<T: Backend> {
    /// `(C)`.
    pub weight: Variable<T>,
    /// `(C)`.
    pub bias: Variable<T>,
    /// `(C)`, updated in training.
    pub running_mean: Variable<T>,
    /// `(C)`, updated in training (with the unbiased variance).
    pub running_var: Variable<T>,
    /// PyTorch's default 0.1.
    pub momentum: f64,
    /// PyTorch's default 1e-5.
    pub eps: f64,
}

impl<T: FromValues> BatchNorm<T> {
    /// A layer over `channels` channels with PyTorch's defaults.
    pub fn new(channels: usize) -> Self {
        let ones = || T::from_f64(&vec![1.0; channels], &[channels]);
        BatchNorm {
            weight: Variable::new(ones(), true).named("weight"),
            bias: Variable::new(zeros(&[channels]), true).named("bias"),
            running_mean: Variable::from_data(zeros(&[channels])),
            running_var: Variable::from_data(ones()),
            momentum: 0.1,
            eps: 1e-5,
        }
    }

    /// The batch's statistics in training (updating the running ones), the running ones in
    /// evaluation.
    pub fn forward(&self, x: &Variable<T>, train: bool) -> Result<Variable<T>, AutogradError> {
        batch_norm(
            x,
            Some(&self.weight),
            Some(&self.bias),
            Some(&self.running_mean),
            Some(&self.running_var),
            train,
            self.momentum,
            self.eps,
            false,
        )
    }

    /// The parameters (not the running statistics).
    pub fn parameters(&self) -> Vec<Variable<T>> {
        vec![self.weight.clone(), self.bias.clone()]
    }
}

/// A 2-d convolution (PyTorch's `nn.Conv2d` with a square kernel, stride 1, no dilation or
/// groups): `conv2d(x, weight, bias, padding)`, Kaiming-uniform initialised as PyTorch's
/// (weights and bias uniform in `±1/sqrt(in_channels * k * k)`).
pub struct Conv2d<T: Backend> {
    /// `(out, in, k, k)`.
    pub weight: Variable<T>,
    /// `(out)`.
    pub bias: Variable<T>,
    /// Zero padding on each side.
    pub padding: i64,
}

impl<T: FromValues> Conv2d<T> {
    /// A layer of `k x k` kernels from `in_channels` to `out_channels`, padded by `padding`.
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        k: usize,
        padding: i64,
        g: &Generator,
    ) -> Self {
        let b = 1.0 / ((in_channels * k * k) as f64).sqrt();
        let w = uniform(&[out_channels, in_channels, k, k], -b, b, g);
        Conv2d {
            weight: Variable::new(w, true).named("weight"),
            bias: Variable::new(uniform(&[out_channels], -b, b, g), true).named("bias"),
            padding,
        }
    }

    /// The convolution of `x`, `(N, in, H, W)`.
    pub fn forward(&self, x: &Variable<T>) -> Result<Variable<T>, AutogradError> {
        let p = self.padding;
        conv2d(
            x,
            &self.weight,
            Some(&self.bias),
            &[1, 1],
            &[p, p],
            &[1, 1],
            1,
        )
    }

    /// The parameters.
    pub fn parameters(&self) -> Vec<Variable<T>> {
        vec![self.weight.clone(), self.bias.clone()]
    }
}
