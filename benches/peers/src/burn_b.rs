//! burn (ndarray backend under autodiff): `Device::ndarray().autodiff()`, `require_grad()`,
//! `backward()`.
#![allow(deprecated)] // burn 0.22 deprecates the ndarray backend in favour of burn-flex

use crate::{Mlp, W1Out, W2Out};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor, TensorData};

fn device(autodiff: bool) -> Device {
    let d = Device::ndarray();
    if autodiff { d.autodiff() } else { d }
}

fn first<const D: usize>(t: Tensor<D>) -> f32 {
    t.into_data().to_vec::<f32>().expect("f32")[0]
}

fn total<const D: usize>(t: Tensor<D>) -> f64 {
    t.into_data()
        .to_vec::<f32>()
        .expect("f32")
        .iter()
        .map(|v| *v as f64)
        .sum()
}

pub fn w1(steps: usize) -> W1Out {
    let dev = device(true);
    let x = Tensor::<1>::from_floats([0.5f32], &dev).require_grad();
    let mut y = x.clone();
    for _ in 0..steps {
        y = y.mul_scalar(0.999).add_scalar(0.001).tanh();
    }
    let value = first(y.clone());
    let grads = y.backward();
    drop(y);
    let grad = first(x.grad(&grads).expect("grad"));
    W1Out { value, grad }
}

pub struct W2 {
    x: [Tensor<2>; 2],
    target: [Tensor<2>; 2],
    /// w1, w2 for (autodiff, plain)
    w: [[Tensor<2>; 2]; 2],
    b: [[Tensor<1>; 2]; 2],
}

impl W2 {
    pub fn new(m: &Mlp) -> Self {
        let t2 = |v: &[f32], s: [usize; 2], ad: bool| {
            Tensor::<2>::from_data(TensorData::new(v.to_vec(), s), &device(ad))
        };
        let t1 = |v: &[f32], ad: bool| {
            Tensor::<1>::from_data(TensorData::new(v.to_vec(), [v.len()]), &device(ad))
        };
        let mk = |ad: bool| {
            let w = [
                t2(&m.w1, [m.input, m.hidden], ad),
                t2(&m.w2, [m.hidden, m.out], ad),
            ];
            let b = [t1(&m.b1, ad), t1(&m.b2, ad)];
            if ad {
                (w.map(Tensor::require_grad), b.map(Tensor::require_grad))
            } else {
                (w, b)
            }
        };
        let (wa, ba) = mk(true);
        let (wp, bp) = mk(false);
        W2 {
            x: [
                t2(&m.x, [m.batch, m.input], true),
                t2(&m.x, [m.batch, m.input], false),
            ],
            target: [
                t2(&m.target, [m.batch, m.out], true),
                t2(&m.target, [m.batch, m.out], false),
            ],
            w: [wa, wp],
            b: [ba, bp],
        }
    }

    fn forward(&self, k: usize) -> Tensor<1> {
        let [w1, w2] = self.w[k].clone();
        let [b1, b2] = self.b[k].clone();
        let h = relu(self.x[k].clone().matmul(w1) + b1.unsqueeze::<2>());
        let out = h.matmul(w2) + b2.unsqueeze::<2>();
        let d = out - self.target[k].clone();
        (d.clone() * d).mean()
    }

    pub fn step(&mut self, grad: bool) -> W2Out {
        if !grad {
            return W2Out {
                loss: first(self.forward(1)),
                grad_sum: 0.0,
            };
        }
        let loss = self.forward(0);
        let grads = loss.backward();
        let [w1, w2] = &self.w[0];
        let [b1, b2] = &self.b[0];
        let grad_sum = total(w1.grad(&grads).expect("grad"))
            + total(b1.grad(&grads).expect("grad"))
            + total(w2.grad(&grads).expect("grad"))
            + total(b2.grad(&grads).expect("grad"));
        W2Out {
            loss: first(loss),
            grad_sum,
        }
    }
}

pub fn w3(init: &[f32], steps: usize) -> f32 {
    let dev = device(true);
    let x =
        Tensor::<1>::from_data(TensorData::new(init.to_vec(), [init.len()]), &dev).require_grad();
    let mut y = x.clone();
    for _ in 0..steps {
        y = y.mul_scalar(0.5).add_scalar(-1.0).exp();
    }
    let s = y.sum();
    let grads = s.backward();
    drop(s);
    total(x.grad(&grads).expect("grad")) as f32
}
