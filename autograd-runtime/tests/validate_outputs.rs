//! PyTorch's engine adjusts the gradients a node returns (`validate_outputs` in
//! torch/csrc/autograd/engine.cpp): one of a shape its input's shape broadcasts to is summed
//! to the input's shape, one of another floating dtype is converted to the input's dtype.
//! Verified in torch 2.15.0: a custom `Function` returning a `[3, 2]` gradient for a `[2]`
//! input gives the column sums; returning float32 for a float64 input gives a float64
//! gradient. Under `create_graph` the reduction is itself differentiable.

use autograd_runtime::*;
use std::sync::Arc;

/// A dense 1-d or 2-d tensor that provides `sum_to`, `expand_to` and `to_dtype`.
#[derive(Clone, Debug)]
struct BT {
    data: Arc<Vec<f64>>,
    shape: Vec<usize>,
    dtype: &'static str,
}

fn bt(data: Vec<f64>, shape: &[usize], dtype: &'static str) -> BT {
    BT {
        data: Arc::new(data),
        shape: shape.to_vec(),
        dtype,
    }
}

impl Tensor for BT {
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn dtype(&self) -> &'static str {
        self.dtype
    }
    fn ones_like(&self) -> Self {
        bt(vec![1.0; self.data.len()], &self.shape, self.dtype)
    }
    fn zeros_like(&self) -> Self {
        bt(vec![0.0; self.data.len()], &self.shape, self.dtype)
    }
    fn add(&self, o: &Self) -> Self {
        let d = self.data.iter().zip(o.data.iter()).map(|(a, b)| a + b);
        bt(d.collect(), &self.shape, self.dtype)
    }
    fn has_nan(&self) -> bool {
        self.data.iter().any(|x| x.is_nan())
    }
    /// `[r, c]` -> `[c]` or `[1, c]` (column sums); anything else -> `None`.
    fn sum_to(&self, shape: &[usize]) -> Option<Self> {
        let [r, c] = self.shape[..] else { return None };
        if shape.iter().product::<usize>() != c {
            return None;
        }
        let sums = (0..c)
            .map(|j| (0..r).map(|i| self.data[i * c + j]).sum())
            .collect();
        Some(bt(sums, shape, self.dtype))
    }
    /// `[c]` -> `[r, c]` (rows repeated).
    fn expand_to(&self, shape: &[usize]) -> Option<Self> {
        let [r, c] = shape[..] else { return None };
        if self.data.len() != c {
            return None;
        }
        let d = (0..r).flat_map(|_| self.data.iter().copied()).collect();
        Some(bt(d, shape, self.dtype))
    }
    fn to_dtype(&self, dtype: &'static str) -> Option<Self> {
        Some(bt(self.data.to_vec(), &self.shape, dtype))
    }
}

/// Returns `g` (a fixed gradient), whatever it receives.
struct Returns(BT);
impl Node<BT> for Returns {
    fn name(&self) -> &str {
        "ReturnsBackward"
    }
    fn apply(&mut self, _grads: VariableList<BT>) -> Result<VariableList<BT>, AutogradError> {
        Ok(variable_list![Some(Variable::from_data(self.0.clone()))])
    }
}

/// `y = x * w` elementwise for `x: [2]`, `w: [3, 2]` broadcast, with the formula left
/// unreduced as PyTorch writes it (`self: grad * other`): the gradient of `x` is `[3, 2]`.
struct MulBroadcast {
    w: Variable<BT>,
}
impl Node<BT> for MulBroadcast {
    fn name(&self) -> &str {
        "MulBroadcastBackward"
    }
    fn apply(&mut self, grads: VariableList<BT>) -> Result<VariableList<BT>, AutogradError> {
        let g = grads[0].clone().expect("a gradient");
        Ok(variable_list![Some(mul(&g, &self.w))])
    }
}

/// Differentiable elementwise product of same-shaped variables.
struct MulBackward {
    a: Variable<BT>,
    b: Variable<BT>,
}
impl Node<BT> for MulBackward {
    fn name(&self) -> &str {
        "MulBackward"
    }
    fn apply(&mut self, grads: VariableList<BT>) -> Result<VariableList<BT>, AutogradError> {
        let g = grads[0].clone().expect("a gradient");
        Ok(variable_list![
            Some(mul(&g, &self.b)),
            Some(mul(&g, &self.a))
        ])
    }
}

fn mul(a: &Variable<BT>, b: &Variable<BT>) -> Variable<BT> {
    let (x, y) = (a.data(), b.data());
    let d = x
        .data
        .iter()
        .zip(y.data.iter())
        .map(|(p, q)| p * q)
        .collect();
    let raw = bt(d, &x.shape, x.dtype);
    let node = MulBackward {
        a: a.clone(),
        b: b.clone(),
    };
    if should_record(&[a, b]) {
        record(node, &[Some(a), Some(b)], [raw]).0[0].clone()
    } else {
        Variable::from_data(raw)
    }
}

fn vals(v: &Variable<BT>) -> Vec<f64> {
    v.data().data.to_vec()
}

#[test]
fn a_broadcast_gradient_is_summed_to_its_input_shape() {
    let x = Variable::new(bt(vec![1.0, 2.0], &[2], "f64"), true);
    let g = bt(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2], "f64");
    let ([y], _) = record(Returns(g), &[Some(&x)], [x.data()]);
    y.backward_with(
        Some(&Variable::from_data(bt(vec![1.0, 1.0], &[2], "f64"))),
        None,
        false,
    )
    .unwrap();
    assert_eq!(vals(&x.grad().unwrap()), [9.0, 12.0], "column sums");
    assert_eq!(x.grad().unwrap().shape(), [2]);
}

#[test]
fn a_gradient_of_another_dtype_is_converted() {
    let x = Variable::new(bt(vec![1.0, 2.0], &[2], "f64"), true);
    let ([y], _) = record(
        Returns(bt(vec![0.5, 0.25], &[2], "f32")),
        &[Some(&x)],
        [x.data()],
    );
    y.backward_with(
        Some(&Variable::from_data(bt(vec![1.0, 1.0], &[2], "f64"))),
        None,
        false,
    )
    .unwrap();
    let gx = x.grad().unwrap();
    assert_eq!(gx.data().dtype, "f64");
    assert_eq!(vals(&gx), [0.5, 0.25]);
}

#[test]
fn a_shape_that_does_not_broadcast_is_still_refused() {
    let x = Variable::new(bt(vec![1.0, 2.0], &[2], "f64"), true);
    let ([y], _) = record(
        Returns(bt(vec![1.0; 6], &[2, 3], "f64")),
        &[Some(&x)],
        [x.data()],
    );
    let seed = Variable::from_data(bt(vec![1.0, 1.0], &[2], "f64"));
    let err = y.backward_with(Some(&seed), None, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Function ReturnsBackward returned an invalid gradient at index 0 - got [2, 3] but expected shape compatible with [2]"
    );
}

#[test]
fn under_create_graph_the_reduction_is_differentiable() {
    // y = x * w with x: [2] and w: [3, 2]; dL/dx = sum over rows of w (PyTorch: the engine
    // records at::sum_to). Then d(sum(dL/dx * v))/dw = v broadcast to [3, 2].
    let x = Variable::new(bt(vec![1.0, 2.0], &[2], "f64"), true);
    let w = Variable::new(bt(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2], "f64"), true);
    let xw = Variable::from_data(bt(vec![0.0; 6], &[3, 2], "f64"));
    let ([y], _) = record(MulBroadcast { w: w.clone() }, &[Some(&x)], [xw.data()]);
    let seed = Variable::from_data(bt(vec![1.0; 6], &[3, 2], "f64"));
    let opts = GradOptions {
        retain_graph: None,
        create_graph: true,
        allow_unused: false,
        materialize_grads: false,
    };
    let gx = grad_with(&[y], std::slice::from_ref(&x), &[Some(seed)], opts).unwrap()[0]
        .clone()
        .unwrap();
    assert_eq!(vals(&gx), [9.0, 12.0]);
    assert_eq!(gx.grad_fn().unwrap().name(), "SumToBackward0");
    let v = Variable::from_data(bt(vec![10.0, 100.0], &[2], "f64"));
    let l = mul(&gx, &v);
    let gw = grad_with(
        &[l],
        &[w],
        &[Some(Variable::from_data(bt(vec![1.0, 1.0], &[2], "f64")))],
        GradOptions {
            retain_graph: None,
            create_graph: false,
            allow_unused: false,
            materialize_grads: false,
        },
    )
    .unwrap()[0]
        .clone()
        .unwrap();
    assert_eq!(vals(&gw), [10.0, 100.0, 10.0, 100.0, 10.0, 100.0]);
}

#[test]
fn the_reduction_carries_tangents_for_forward_over_reverse() {
    // Under a dual level the engine's reduction is a linear op of its own: the tangent of
    // the summed gradient is the summed tangent (what PyTorch's recorded `at::sum_to` gives).
    let _level = dual_level();
    let x = Variable::new(bt(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2], "f64"), true);
    let t = Variable::from_data(bt(vec![1.0, 0.0, 2.0, 0.0, 3.0, 1.0], &[3, 2], "f64"));
    let d = make_dual(&x, &t).unwrap();
    let s = ops::sum_to(&d, &[2]).unwrap();
    let u = unpack_dual(&s).unwrap();
    assert_eq!(vals(&u.primal), [9.0, 12.0]);
    assert_eq!(vals(&u.tangent.expect("a tangent")), [6.0, 1.0]);
}
