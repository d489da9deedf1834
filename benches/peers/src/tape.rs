//! The floor: a minimal hand-written reverse-mode tape over `Vec<f32>` buffers.
//!
//! An arena of nodes (enum ops, parent indices), values shared with the tape through `Rc`
//! (saving an output costs no copy), gradients as plain buffers accumulated in place. Matrix
//! products use `matrixmultiply::sgemm`, the kernel ndarray (and so ndtensor and burn's
//! ndarray backend) use, with strides for the transposes.

use std::rc::Rc;

/// Id of values that are not on the tape (constants, or everything when not recording).
const NONE: u32 = u32::MAX;

#[derive(Clone)]
pub struct V {
    pub id: u32,
    pub val: Rc<Vec<f32>>,
    pub shape: [usize; 2],
}

enum Op {
    Leaf,
    /// `x * s`
    MulS(u32, f32),
    /// `x + s`
    AddS(u32),
    /// saved output
    Tanh(u32, Rc<Vec<f32>>),
    /// saved output
    Exp(u32, Rc<Vec<f32>>),
    Sum(u32, usize),
    Mean(u32, usize),
    /// `a [m,k] @ b [k,n]`, both saved
    MatMul(u32, u32, Rc<Vec<f32>>, Rc<Vec<f32>>, [usize; 3]),
    /// `a [m,n] + b [n]` (row broadcast)
    AddBias(u32, u32, usize),
    /// saved output
    Relu(u32, Rc<Vec<f32>>),
    /// `a - constant`
    SubConst(u32),
    /// `a * a`, input saved
    Square(u32, Rc<Vec<f32>>),
}

pub struct Tape {
    ops: Vec<Op>,
    /// Record the graph (false: plain forward).
    pub record: bool,
}

fn map(a: &[f32], f: impl Fn(f32) -> f32) -> Vec<f32> {
    a.iter().map(|&x| f(x)).collect()
}

/// `c[m,n] = a[m,k] @ b[k,n]` with arbitrary (row, col) strides for a and b.
#[allow(clippy::too_many_arguments)]
fn gemm(
    m: usize,
    k: usize,
    n: usize,
    a: &[f32],
    (rsa, csa): (isize, isize),
    b: &[f32],
    (rsb, csb): (isize, isize),
) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    // SAFETY: the strides describe valid [m,k] and [k,n] views of `a` and `b`; `c` is [m,n].
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            rsa,
            csa,
            b.as_ptr(),
            rsb,
            csb,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
    c
}

impl Tape {
    pub fn new(record: bool) -> Self {
        Tape {
            ops: Vec::new(),
            record,
        }
    }

    fn push(&mut self, op: Op, val: Vec<f32>, shape: [usize; 2]) -> V {
        let id = if self.record {
            self.ops.push(op);
            self.ops.len() as u32 - 1
        } else {
            NONE
        };
        V {
            id,
            val: Rc::new(val),
            shape,
        }
    }

    pub fn leaf(&mut self, val: Vec<f32>, shape: [usize; 2]) -> V {
        self.push(Op::Leaf, val, shape)
    }

    /// A constant (no gradient, not on the tape).
    pub fn constant(&mut self, val: &Rc<Vec<f32>>, shape: [usize; 2]) -> V {
        V {
            id: NONE,
            val: val.clone(),
            shape,
        }
    }

    /// A leaf sharing its buffer (parameters reused across steps).
    pub fn leaf_rc(&mut self, val: &Rc<Vec<f32>>, shape: [usize; 2]) -> V {
        self.push_rc(|_| Op::Leaf, val.clone(), shape)
    }

    pub fn mul_s(&mut self, x: &V, s: f32) -> V {
        self.push(Op::MulS(x.id, s), map(&x.val, |v| v * s), x.shape)
    }

    pub fn add_s(&mut self, x: &V, s: f32) -> V {
        self.push(Op::AddS(x.id), map(&x.val, |v| v + s), x.shape)
    }

    pub fn tanh(&mut self, x: &V) -> V {
        let y = Rc::new(map(&x.val, f32::tanh));
        self.push_rc(|y| Op::Tanh(x.id, y), y, x.shape)
    }

    pub fn exp(&mut self, x: &V) -> V {
        let y = Rc::new(map(&x.val, f32::exp));
        self.push_rc(|y| Op::Exp(x.id, y), y, x.shape)
    }

    pub fn relu(&mut self, x: &V) -> V {
        let y = Rc::new(map(&x.val, |v| v.max(0.0)));
        self.push_rc(|y| Op::Relu(x.id, y), y, x.shape)
    }

    fn push_rc(
        &mut self,
        op: impl FnOnce(Rc<Vec<f32>>) -> Op,
        y: Rc<Vec<f32>>,
        shape: [usize; 2],
    ) -> V {
        let id = if self.record {
            self.ops.push(op(y.clone()));
            self.ops.len() as u32 - 1
        } else {
            NONE
        };
        V { id, val: y, shape }
    }

    pub fn sum(&mut self, x: &V) -> V {
        self.push(Op::Sum(x.id, x.val.len()), vec![x.val.iter().sum()], [1, 1])
    }

    pub fn mean(&mut self, x: &V) -> V {
        let n = x.val.len() as f32;
        self.push(
            Op::Mean(x.id, x.val.len()),
            vec![x.val.iter().sum::<f32>() / n],
            [1, 1],
        )
    }

    pub fn matmul(&mut self, a: &V, b: &V) -> V {
        let [m, k] = a.shape;
        let n = b.shape[1];
        let c = gemm(m, k, n, &a.val, (k as isize, 1), &b.val, (n as isize, 1));
        let op = if self.record {
            Op::MatMul(a.id, b.id, a.val.clone(), b.val.clone(), [m, k, n])
        } else {
            Op::Leaf
        };
        self.push(op, c, [m, n])
    }

    pub fn add_bias(&mut self, a: &V, b: &V) -> V {
        let n = a.shape[1];
        let out = a
            .val
            .chunks(n)
            .flat_map(|row| row.iter().zip(b.val.iter()).map(|(x, y)| x + y))
            .collect();
        self.push(Op::AddBias(a.id, b.id, n), out, a.shape)
    }

    pub fn sub_const(&mut self, a: &V, c: &[f32]) -> V {
        let out = a.val.iter().zip(c).map(|(x, y)| x - y).collect();
        self.push(Op::SubConst(a.id), out, a.shape)
    }

    pub fn square(&mut self, a: &V) -> V {
        let op = if self.record {
            Op::Square(a.id, a.val.clone())
        } else {
            Op::Leaf
        };
        self.push(op, map(&a.val, |v| v * v), a.shape)
    }

    /// Reverse pass from `root` (seed 1); returns the gradient of every node.
    pub fn backward(&mut self, root: &V) -> Vec<Option<Vec<f32>>> {
        let ops = std::mem::take(&mut self.ops);
        let mut grads: Vec<Option<Vec<f32>>> = (0..ops.len()).map(|_| None).collect();
        grads[root.id as usize] = Some(vec![1.0; root.val.len()]);
        fn acc(grads: &mut [Option<Vec<f32>>], i: u32, g: Vec<f32>) {
            if i == NONE {
                return;
            }
            let slot = &mut grads[i as usize];
            match slot {
                None => *slot = Some(g),
                Some(old) => old.iter_mut().zip(&g).for_each(|(a, b)| *a += b),
            }
        }
        for (i, op) in ops.into_iter().enumerate().rev() {
            if matches!(op, Op::Leaf) {
                continue;
            }
            let Some(g) = grads[i].take() else { continue };
            match op {
                Op::Leaf => {}
                Op::MulS(p, s) => acc(&mut grads, p, map(&g, |v| v * s)),
                Op::AddS(p) | Op::SubConst(p) => acc(&mut grads, p, g),
                Op::Tanh(p, y) => {
                    let gi = g
                        .iter()
                        .zip(y.iter())
                        .map(|(g, y)| g * (1.0 - y * y))
                        .collect();
                    acc(&mut grads, p, gi)
                }
                Op::Exp(p, y) => {
                    let gi = g.iter().zip(y.iter()).map(|(g, y)| g * y).collect();
                    acc(&mut grads, p, gi)
                }
                Op::Relu(p, y) => {
                    let gi = g
                        .iter()
                        .zip(y.iter())
                        .map(|(g, y)| if *y > 0.0 { *g } else { 0.0 })
                        .collect();
                    acc(&mut grads, p, gi)
                }
                Op::Sum(p, n) => acc(&mut grads, p, vec![g[0]; n]),
                Op::Mean(p, n) => acc(&mut grads, p, vec![g[0] / n as f32; n]),
                Op::Square(p, x) => {
                    let gi = g.iter().zip(x.iter()).map(|(g, x)| 2.0 * g * x).collect();
                    acc(&mut grads, p, gi)
                }
                Op::AddBias(pa, pb, n) => {
                    let mut gb = vec![0.0f32; n];
                    for row in g.chunks(n) {
                        gb.iter_mut().zip(row).for_each(|(a, b)| *a += b);
                    }
                    acc(&mut grads, pb, gb);
                    acc(&mut grads, pa, g)
                }
                Op::MatMul(pa, pb, a, b, [m, k, n]) => {
                    // dA = g @ Bᵀ  [m,n]@[n,k];  dB = Aᵀ @ g  [k,m]@[m,n]
                    if pa != NONE {
                        let da = gemm(m, n, k, &g, (n as isize, 1), &b, (1, n as isize));
                        acc(&mut grads, pa, da);
                    }
                    if pb != NONE {
                        let db = gemm(k, m, n, &a, (1, k as isize), &g, (n as isize, 1));
                        acc(&mut grads, pb, db)
                    }
                }
            }
        }
        grads
    }
}
