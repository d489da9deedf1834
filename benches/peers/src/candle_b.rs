//! candle-core (CPU): `Var` leaves, `Tensor::backward()`.

use crate::{Mlp, W1Out, W2Out};
use candle_core::{Device, Tensor, Var};

pub fn w1(steps: usize) -> W1Out {
    let dev = Device::Cpu;
    let x = Var::from_slice(&[0.5f32], 1, &dev).expect("var");
    let mut y: Tensor = x.as_tensor().clone();
    for _ in 0..steps {
        let a = (&y * 0.999).expect("mul");
        let b = (&a + 0.001).expect("add");
        y = b.tanh().expect("tanh");
    }
    let value = y.to_vec1::<f32>().expect("value")[0];
    let grads = y.backward().expect("backward");
    drop(y);
    let grad = grads.get(&x).expect("grad").to_vec1::<f32>().expect("grad")[0];
    W1Out { value, grad }
}

/// W1's forward chain on plain tensors (not `Var`s): candle records nothing, kernels only.
pub fn w1_plain(steps: usize) -> W1Out {
    let mut y = Tensor::from_slice(&[0.5f32], 1, &Device::Cpu).expect("tensor");
    for _ in 0..steps {
        let a = (&y * 0.999).expect("mul");
        let b = (&a + 0.001).expect("add");
        y = b.tanh().expect("tanh");
    }
    W1Out {
        value: y.to_vec1::<f32>().expect("value")[0],
        grad: f32::NAN,
    }
}

pub struct W2 {
    x: Tensor,
    target: Tensor,
    params: [Var; 4],
    plain: [Tensor; 4],
}

impl W2 {
    pub fn new(m: &Mlp) -> Self {
        let dev = Device::Cpu;
        let t = |v: &[f32], s: &[usize]| Tensor::from_slice(v, s, &dev).expect("tensor");
        let params = [
            Var::from_tensor(&t(&m.w1, &[m.input, m.hidden])).expect("var"),
            Var::from_tensor(&t(&m.b1, &[m.hidden])).expect("var"),
            Var::from_tensor(&t(&m.w2, &[m.hidden, m.out])).expect("var"),
            Var::from_tensor(&t(&m.b2, &[m.out])).expect("var"),
        ];
        let plain = [
            t(&m.w1, &[m.input, m.hidden]),
            t(&m.b1, &[m.hidden]),
            t(&m.w2, &[m.hidden, m.out]),
            t(&m.b2, &[m.out]),
        ];
        W2 {
            x: t(&m.x, &[m.batch, m.input]),
            target: t(&m.target, &[m.batch, m.out]),
            params,
            plain,
        }
    }

    fn forward(&self, p: [&Tensor; 4]) -> candle_core::Result<Tensor> {
        let [w1, b1, w2, b2] = p;
        let h = self.x.matmul(w1)?.broadcast_add(b1)?.relu()?;
        let out = h.matmul(w2)?.broadcast_add(b2)?;
        let d = (out - &self.target)?;
        (&d * &d)?.mean_all()
    }

    pub fn step(&mut self, grad: bool) -> W2Out {
        if !grad {
            let [a, b, c, d] = &self.plain;
            let loss = self.forward([a, b, c, d]).expect("forward");
            return W2Out {
                loss: loss.to_scalar::<f32>().expect("loss"),
                grad_sum: 0.0,
            };
        }
        let [a, b, c, d] = &self.params;
        let loss = self
            .forward([a.as_tensor(), b.as_tensor(), c.as_tensor(), d.as_tensor()])
            .expect("forward");
        let grads = loss.backward().expect("backward");
        let mut grad_sum = 0.0f64;
        for p in &self.params {
            let g = grads.get(p).expect("grad");
            grad_sum += g
                .flatten_all()
                .and_then(|g| g.to_vec1::<f32>())
                .expect("grad")
                .iter()
                .map(|v| *v as f64)
                .sum::<f64>();
        }
        W2Out {
            loss: loss.to_scalar::<f32>().expect("loss"),
            grad_sum,
        }
    }
}

pub fn w3(init: &[f32], steps: usize) -> f32 {
    let dev = Device::Cpu;
    let x = Var::from_slice(init, init.len(), &dev).expect("var");
    let mut y: Tensor = x.as_tensor().clone();
    for _ in 0..steps {
        let a = (&y * 0.5).expect("mul");
        let b = (&a + -1.0).expect("add");
        y = b.exp().expect("exp");
    }
    let s = y.sum_all().expect("sum");
    drop(y);
    let grads = s.backward().expect("backward");
    grads
        .get(&x)
        .expect("grad")
        .to_vec1::<f32>()
        .expect("grad")
        .iter()
        .sum()
}
