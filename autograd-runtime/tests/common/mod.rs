//! Shared test helper: a small Vec<f64> tensor type and differentiable ops
//! written the way the code generator emits them.
#![allow(dead_code)]

use std::sync::Arc;

pub use autograd_runtime::*;

/// A dense f64 tensor with a shape (Arc-backed: cheap to clone).
#[derive(Clone, Debug)]
pub struct TT {
    pub data: Arc<Vec<f64>>,
    pub shape: Vec<usize>,
    pub dtype: &'static str,
}

impl TT {
    pub fn new(data: Vec<f64>, shape: &[usize]) -> TT {
        assert_eq!(data.len(), shape.iter().product::<usize>());
        TT {
            data: Arc::new(data),
            shape: shape.to_vec(),
            dtype: "f64",
        }
    }
    pub fn map(&self, f: impl Fn(f64) -> f64) -> TT {
        TT {
            data: Arc::new(self.data.iter().map(|&x| f(x)).collect()),
            shape: self.shape.clone(),
            dtype: self.dtype,
        }
    }
    pub fn zip(&self, o: &TT, f: impl Fn(f64, f64) -> f64) -> TT {
        assert_eq!(self.shape, o.shape, "shape mismatch in test op");
        TT {
            data: Arc::new(
                self.data
                    .iter()
                    .zip(o.data.iter())
                    .map(|(&a, &b)| f(a, b))
                    .collect(),
            ),
            shape: self.shape.clone(),
            dtype: self.dtype,
        }
    }
}

impl Tensor for TT {
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn dtype(&self) -> &'static str {
        self.dtype
    }
    fn ones_like(&self) -> Self {
        self.map(|_| 1.0)
    }
    fn zeros_like(&self) -> Self {
        self.map(|_| 0.0)
    }
    fn add(&self, other: &Self) -> Self {
        self.zip(other, |a, b| a + b)
    }
    fn has_nan(&self) -> bool {
        self.data.iter().any(|x| x.is_nan())
    }
}

pub type V = Variable<TT>;

pub fn tensor(data: &[f64], shape: &[usize]) -> TT {
    TT::new(data.to_vec(), shape)
}
/// A leaf requiring grad.
pub fn leaf(data: &[f64], shape: &[usize]) -> V {
    Variable::new(tensor(data, shape), true)
}
/// A 0-d leaf requiring grad.
pub fn scalar(x: f64) -> V {
    leaf(&[x], &[])
}
pub fn constant(data: &[f64], shape: &[usize]) -> V {
    Variable::from_data(tensor(data, shape))
}
pub fn vals(v: &V) -> Vec<f64> {
    v.data().data.to_vec()
}
pub fn val(v: &V) -> f64 {
    let d = v.data();
    assert_eq!(d.data.len(), 1);
    d.data[0]
}
pub fn grad_vals(v: &V) -> Vec<f64> {
    vals(&v.grad().expect("no grad"))
}
pub fn assert_close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-9 * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

// ---------------------------------------------------------------- mul
pub struct MulBackward0 {
    pub self_: SavedVariable<TT>,
    pub other: SavedVariable<TT>,
}
impl Node<TT> for MulBackward0 {
    fn name(&self) -> &str {
        "MulBackward0"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        let Some(g) = &grads[0] else {
            return Ok(variable_list![None, None]);
        };
        let a = self.self_.unpack()?;
        let b = self.other.unpack()?;
        Ok(variable_list![Some(mul(g, &b)), Some(mul(g, &a))])
    }
    fn release_variables(&mut self) {
        self.self_.reset();
        self.other.reset();
    }
    fn visit_saved(&self, f: &mut dyn FnMut(&str, &SavedVariable<TT>)) {
        f("self", &self.self_);
        f("other", &self.other);
    }
}
pub fn mul(a: &V, b: &V) -> V {
    let raw = a.data().zip(&b.data(), |x, y| x * y);
    if !should_record(&[a, b]) {
        return Variable::from_data(raw);
    }
    let node = MulBackward0 {
        self_: SavedVariable::new(a, false),
        other: SavedVariable::new(b, false),
    };
    let ([out], _) = record(node, &[Some(a), Some(b)], [raw]);
    out
}

// ---------------------------------------------------------------- scalar ops
pub struct MulScalarBackward {
    pub other: f64,
}
impl Node<TT> for MulScalarBackward {
    fn name(&self) -> &str {
        "MulBackward1"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        Ok(variable_list![
            grads[0].as_ref().map(|g| mul_scalar(g, self.other))
        ])
    }
}
pub fn mul_scalar(a: &V, s: f64) -> V {
    let raw = a.data().map(|x| x * s);
    if !should_record(&[a]) {
        return Variable::from_data(raw);
    }
    record(MulScalarBackward { other: s }, &[Some(a)], [raw]).0[0].clone()
}

pub struct AddScalarBackward;
impl Node<TT> for AddScalarBackward {
    fn name(&self) -> &str {
        "AddBackward1"
    }
    fn apply(&mut self, mut grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        Ok(variable_list![grads.take(0)])
    }
}
pub fn add_scalar(a: &V, s: f64) -> V {
    let raw = a.data().map(|x| x + s);
    if !should_record(&[a]) {
        return Variable::from_data(raw);
    }
    let ([out], _) = record(AddScalarBackward, &[Some(a)], [raw]);
    out
}

/// In-place `a += s` (like `add_`).
pub fn add_scalar_(a: &V, s: f64) -> Result<(), AutogradError> {
    a.check_inplace()?;
    let raw = a.data().map(|x| x + s);
    if !should_record(&[a]) {
        a.set_data(raw);
        a.bump_version();
        return Ok(());
    }
    record_inplace(AddScalarBackward, &[Some(a)], a, Some(raw))?;
    Ok(())
}

/// In-place `a *= b` (like `mul_`): saves the original self and other.
pub fn mul_(a: &V, b: &V) -> Result<(), AutogradError> {
    a.check_inplace()?;
    let raw = a.data().zip(&b.data(), |x, y| x * y);
    if !should_record(&[a, b]) {
        a.set_data(raw);
        a.bump_version();
        return Ok(());
    }
    // The original value of self is needed by the formula: save a copy.
    let original = Variable::from_data(a.data());
    let node = MulBackward0 {
        self_: SavedVariable::new(&original, false),
        other: SavedVariable::new(b, false),
    };
    record_inplace(node, &[Some(a), Some(b)], a, Some(raw))?;
    Ok(())
}

pub fn add(a: &V, b: &V) -> V {
    autograd_runtime::ops::add(a, b)
}

// ---------------------------------------------------------------- exp / tanh / pow
pub struct ExpBackward0 {
    pub result: SavedVariable<TT>,
}
impl Node<TT> for ExpBackward0 {
    fn name(&self) -> &str {
        "ExpBackward0"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        let result = self.result.unpack()?;
        Ok(variable_list![grads[0].as_ref().map(|g| mul(g, &result))])
    }
    fn release_variables(&mut self) {
        self.result.reset();
    }
    fn visit_saved(&self, f: &mut dyn FnMut(&str, &SavedVariable<TT>)) {
        f("result", &self.result);
    }
    fn visit_saved_mut(&mut self, f: &mut dyn FnMut(&str, &mut SavedVariable<TT>)) {
        f("result", &mut self.result);
    }
}
pub fn exp(a: &V) -> V {
    let raw = a.data().map(f64::exp);
    if !should_record(&[a]) {
        return Variable::from_data(raw);
    }
    let ([out], h) = record(
        ExpBackward0 {
            result: SavedVariable::default(),
        },
        &[Some(a)],
        [raw],
    );
    h.with(|n| n.result = SavedVariable::new(&out, true));
    out
}

pub struct TanhBackward0 {
    pub result: SavedVariable<TT>,
}
impl Node<TT> for TanhBackward0 {
    fn name(&self) -> &str {
        "TanhBackward0"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        let y = self.result.unpack()?;
        Ok(variable_list![grads[0].as_ref().map(|g| {
            // g * (1 - y^2)
            mul(g, &add_scalar(&mul_scalar(&mul(&y, &y), -1.0), 1.0))
        })])
    }
    fn release_variables(&mut self) {
        self.result.reset();
    }
}
pub fn tanh(a: &V) -> V {
    let raw = a.data().map(f64::tanh);
    if !should_record(&[a]) {
        return Variable::from_data(raw);
    }
    let ([out], h) = record(
        TanhBackward0 {
            result: SavedVariable::default(),
        },
        &[Some(a)],
        [raw],
    );
    h.with(|n| n.result = SavedVariable::new(&out, true));
    out
}

pub struct PowBackward0 {
    pub self_: SavedVariable<TT>,
    pub exponent: f64,
}
impl Node<TT> for PowBackward0 {
    fn name(&self) -> &str {
        "PowBackward0"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        let a = self.self_.unpack()?;
        let e = self.exponent;
        Ok(variable_list![grads[0].as_ref().map(|g| {
            if e == 0.0 {
                mul_scalar(g, 0.0)
            } else {
                mul(g, &mul_scalar(&pow(&a, e - 1.0), e))
            }
        })])
    }
    fn release_variables(&mut self) {
        self.self_.reset();
    }
    fn visit_saved(&self, f: &mut dyn FnMut(&str, &SavedVariable<TT>)) {
        f("self", &self.self_);
    }
}
pub fn pow(a: &V, e: f64) -> V {
    let raw = a.data().map(|x| x.powf(e));
    if !should_record(&[a]) {
        return Variable::from_data(raw);
    }
    let ([out], _) = record(
        PowBackward0 {
            self_: SavedVariable::new(a, false),
            exponent: e,
        },
        &[Some(a)],
        [raw],
    );
    out
}

// ---------------------------------------------------------------- sum / expand
pub struct SumBackward0 {
    pub self_sym_sizes: Vec<usize>,
}
impl Node<TT> for SumBackward0 {
    fn name(&self) -> &str {
        "SumBackward0"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        Ok(variable_list![
            grads[0].as_ref().map(|g| expand(g, &self.self_sym_sizes))
        ])
    }
}
pub fn sum(a: &V) -> V {
    let raw = TT::new(vec![a.data().data.iter().sum()], &[]);
    if !should_record(&[a]) {
        return Variable::from_data(raw);
    }
    let ([out], _) = record(
        SumBackward0 {
            self_sym_sizes: a.shape(),
        },
        &[Some(a)],
        [raw],
    );
    out
}
pub struct ExpandBackward0;
impl Node<TT> for ExpandBackward0 {
    fn name(&self) -> &str {
        "ExpandBackward0"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        Ok(variable_list![grads[0].as_ref().map(sum)])
    }
}
/// Expands a one-element tensor to `shape`.
pub fn expand(a: &V, shape: &[usize]) -> V {
    let x = a.data().data[0];
    let raw = TT::new(vec![x; shape.iter().product()], shape);
    if !should_record(&[a]) {
        return Variable::from_data(raw);
    }
    record(ExpandBackward0, &[Some(a)], [raw]).0[0].clone()
}

// ---------------------------------------------------------------- views, multi-output
pub struct ViewBackward0 {
    pub self_sym_sizes: Vec<usize>,
}
impl Node<TT> for ViewBackward0 {
    fn name(&self) -> &str {
        "ViewBackward0"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        Ok(variable_list![
            grads[0].as_ref().map(|g| view(g, &self.self_sym_sizes))
        ])
    }
}
/// A view: same elements, other shape, shares the version counter.
pub fn view(a: &V, shape: &[usize]) -> V {
    let d = a.data();
    let raw = TT {
        data: d.data.clone(),
        shape: shape.to_vec(),
        dtype: d.dtype,
    };
    let out = if should_record(&[a]) {
        record(
            ViewBackward0 {
                self_sym_sizes: a.shape(),
            },
            &[Some(a)],
            [raw],
        )
        .0[0]
            .clone()
    } else {
        Variable::from_data(raw)
    };
    out.share_version_counter(a).unwrap();
    out
}

/// Two outputs: the first half and the second half of a 1-d tensor.
pub struct SplitBackward0 {
    pub n: usize,
}
impl Node<TT> for SplitBackward0 {
    fn name(&self) -> &str {
        "SplitBackward0"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        let h = self.n / 2;
        let part = |g: &Option<V>, len: usize| -> Vec<f64> {
            match g {
                Some(g) => vals(g),
                None => vec![0.0; len],
            }
        };
        if grads[0].is_none() && grads[1].is_none() {
            return Ok(variable_list![None]);
        }
        let mut v = part(&grads[0], h);
        v.extend(part(&grads[1], self.n - h));
        Ok(variable_list![Some(constant(&v, &[self.n]))])
    }
}
pub fn split2(a: &V) -> (V, V) {
    let d = vals(a);
    let h = d.len() / 2;
    let (l, r) = (tensor(&d[..h], &[h]), tensor(&d[h..], &[d.len() - h]));
    if !should_record(&[a]) {
        return (Variable::from_data(l), Variable::from_data(r));
    }
    let ([x, y], _) = record(SplitBackward0 { n: d.len() }, &[Some(a)], [l, r]);
    (x, y)
}
