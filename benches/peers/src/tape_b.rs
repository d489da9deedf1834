//! The hand-written tape (`tape.rs`) running the workloads.

use std::rc::Rc;

use crate::tape::Tape;
use crate::{Mlp, W1Out, W2Out};

pub fn w1(steps: usize) -> W1Out {
    let mut tp = Tape::new(true);
    let x = tp.leaf(vec![0.5], [1, 1]);
    let mut y = x.clone();
    for _ in 0..steps {
        let a = tp.mul_s(&y, 0.999);
        let b = tp.add_s(&a, 0.001);
        y = tp.tanh(&b);
    }
    let value = y.val[0];
    let grads = tp.backward(&y);
    W1Out {
        value,
        grad: grads[x.id as usize].as_ref().expect("grad")[0],
    }
}

pub struct W2<'a> {
    m: &'a Mlp,
    bufs: [Rc<Vec<f32>>; 5],
}

impl<'a> W2<'a> {
    pub fn new(m: &'a Mlp) -> Self {
        let bufs = [&m.x, &m.w1, &m.b1, &m.w2, &m.b2].map(|v| Rc::new(v.clone()));
        W2 { m, bufs }
    }

    pub fn step(&mut self, grad: bool) -> W2Out {
        let m = self.m;
        let mut tp = Tape::new(grad);
        // Leaves share the parameter buffers (no copy per step).
        let [bx, bw1, bb1, bw2, bb2] = &self.bufs;
        let x = tp.constant(bx, [m.batch, m.input]);
        let w1 = tp.leaf_rc(bw1, [m.input, m.hidden]);
        let b1 = tp.leaf_rc(bb1, [1, m.hidden]);
        let w2 = tp.leaf_rc(bw2, [m.hidden, m.out]);
        let b2 = tp.leaf_rc(bb2, [1, m.out]);
        let mm1 = tp.matmul(&x, &w1);
        let a1 = tp.add_bias(&mm1, &b1);
        let h = tp.relu(&a1);
        let mm2 = tp.matmul(&h, &w2);
        let out = tp.add_bias(&mm2, &b2);
        let d = tp.sub_const(&out, &m.target);
        let sq = tp.square(&d);
        let loss = tp.mean(&sq);
        if !grad {
            return W2Out {
                loss: loss.val[0],
                grad_sum: 0.0,
            };
        }
        let grads = tp.backward(&loss);
        let grad_sum = [&w1, &b1, &w2, &b2]
            .iter()
            .map(|p| {
                grads[p.id as usize]
                    .as_ref()
                    .expect("grad")
                    .iter()
                    .map(|v| *v as f64)
                    .sum::<f64>()
            })
            .sum();
        W2Out {
            loss: loss.val[0],
            grad_sum,
        }
    }
}

pub fn w3(init: &[f32], steps: usize) -> f32 {
    let mut tp = Tape::new(true);
    let x = tp.leaf(init.to_vec(), [1, init.len()]);
    let mut y = x.clone();
    for _ in 0..steps {
        let a = tp.mul_s(&y, 0.5);
        let b = tp.add_s(&a, -1.0);
        y = tp.exp(&b);
    }
    let s = tp.sum(&y);
    drop(y);
    let grads = tp.backward(&s);
    grads[x.id as usize].as_ref().expect("grad").iter().sum()
}
