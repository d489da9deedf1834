//! Function transforms on top of forward and reverse mode (`torch.func`): [`jvp`], [`vjp`],
//! [`hvp`], [`jacobian`] and [`hessian`].
//!
//! A transformed function takes its inputs as a slice of variables and returns one variable,
//! directly or as a `Result` (what the wrappers of infallible and fallible backends return).
//! Forward mode runs the generated forward formulas inside a [`dual_level`]; reverse mode the
//! generated backward nodes.
//!
//! * [`jvp`]: the Jacobian-vector product `J v`, one forward pass (`torch.func.jvp`).
//! * [`vjp`]: the vector-Jacobian product `u^T J` for any number of `u`, one forward pass and
//!   one backward pass per `u` (`torch.func.vjp`).
//! * [`hvp`]: the Hessian-vector product `H v` of a scalar function, one forward-over-reverse
//!   pass: the backward pass runs on dual variables, so the gradient's tangent is `H v`.
//! * [`jacobian`]: the whole Jacobian, by columns with forward mode when the inputs have no
//!   more elements than the output (`torch.func.jacfwd`), else by rows with reverse mode
//!   (`jacrev`); [`jacobian_with`] chooses explicitly.
//! * [`hessian`]: forward over reverse, one [`hvp`] per input element (`torch.func.hessian`,
//!   which is `jacfwd(jacrev(f))`).

use crate::gradcheck::ElementAccess;
use crate::runtime::forward::{make_dual, unpack_dual};
use crate::runtime::{AutogradError, GradOptions, Tensor, Variable, dual_level, grad_with};

/// What a transformed function may return: a variable, or a `Result` of one.
pub trait FunctionOutput<T: Tensor> {
    /// The output variable.
    fn into_output(self) -> Result<Variable<T>, AutogradError>;
}

impl<T: Tensor> FunctionOutput<T> for Variable<T> {
    fn into_output(self) -> Result<Variable<T>, AutogradError> {
        Ok(self)
    }
}

impl<T: Tensor> FunctionOutput<T> for Result<Variable<T>, AutogradError> {
    fn into_output(self) -> Result<Variable<T>, AutogradError> {
        self
    }
}

/// `torch.func`'s message when primals and tangents do not match.
fn structure_error(what: &str, a: usize, b: usize) -> AutogradError {
    AutogradError::msg(format!(
        "{what}: Expected primals and tangents to have the same python structure. For example, if primals is a tuple of 3 tensors, tangents also must be. Got primals with {a} tensors and tangents with {b} tensors"
    ))
}

/// Zeros shaped like `v` (an undefined tangent or gradient).
fn zeros_like<T: Tensor>(v: &Variable<T>) -> Variable<T> {
    Variable::from_data(v.with_data(T::zeros_like))
}

/// Fresh leaves holding the primals' values.
fn leaves<T: Tensor>(primals: &[Variable<T>]) -> Vec<Variable<T>> {
    primals
        .iter()
        .map(|p| Variable::new(p.data(), true))
        .collect()
}

/// The output of `f` at `primals` and the Jacobian-vector product `J tangents`
/// (`torch.func.jvp`): one forward pass with the generated forward formulas.
///
/// ```
/// use autograd::functional::jvp;
/// use autograd::runtime::Variable;
/// use autograd_toy::{Toy, ops::*};
///
/// // f(x, y) = x * exp(y): J (u, w) = exp(y) u + x exp(y) w
/// let x = Variable::from_data(Toy::vec(vec![1.0, 2.0]));
/// let y = Variable::from_data(Toy::vec(vec![0.0, 1.0]));
/// let u = Variable::from_data(Toy::vec(vec![1.0, 0.0]));
/// let w = Variable::from_data(Toy::vec(vec![0.0, 1.0]));
/// let (out, tangent) = jvp(|p| mul_tensor(&p[0], &exp(&p[1])), &[x, y], &[u, w])?;
/// assert_eq!(out.data().data.to_vec(), vec![1.0, 2.0 * 1f64.exp()]);
/// assert_eq!(tangent.data().data.to_vec(), vec![1.0, 2.0 * 1f64.exp()]);
/// # Ok::<(), autograd::runtime::AutogradError>(())
/// ```
pub fn jvp<T: Tensor, O: FunctionOutput<T>>(
    f: impl FnOnce(&[Variable<T>]) -> O,
    primals: &[Variable<T>],
    tangents: &[Variable<T>],
) -> Result<(Variable<T>, Variable<T>), AutogradError> {
    if primals.len() != tangents.len() {
        return Err(structure_error("jvp", primals.len(), tangents.len()));
    }
    let _level = dual_level();
    let duals = primals
        .iter()
        .zip(tangents)
        .map(|(p, t)| make_dual(p, t))
        .collect::<Result<Vec<_>, _>>()?;
    let out = f(&duals).into_output()?;
    let u = unpack_dual(&out)?;
    let tangent = u.tangent.unwrap_or_else(|| zeros_like(&out));
    Ok((u.primal, tangent))
}

/// The vector-Jacobian products of a function at a point, for any number of cotangents
/// (what [`vjp`] returns besides the output).
pub struct VjpFn<T: Tensor> {
    inputs: Vec<Variable<T>>,
    output: Variable<T>,
}

impl<T: Tensor> VjpFn<T> {
    /// `cotangent^T J`: one gradient per primal (zeros for primals the output does not
    /// depend on).
    pub fn call(&self, cotangent: &Variable<T>) -> Result<Vec<Variable<T>>, AutogradError> {
        if !self.output.requires_grad() {
            return Ok(self.inputs.iter().map(zeros_like).collect());
        }
        let opts = GradOptions {
            retain_graph: Some(true),
            allow_unused: true,
            materialize_grads: true,
            ..Default::default()
        };
        let g = grad_with(
            std::slice::from_ref(&self.output),
            &self.inputs,
            &[Some(cotangent.clone())],
            opts,
        )?;
        Ok(g.into_iter()
            .zip(&self.inputs)
            .map(|(g, x)| g.unwrap_or_else(|| zeros_like(x)))
            .collect())
    }
}

/// The output of `f` at `primals` and a function computing vector-Jacobian products there
/// (`torch.func.vjp`): one forward pass, then one backward pass per call. The primals are
/// taken as values (fresh leaves).
///
/// ```
/// use autograd::functional::vjp;
/// use autograd::runtime::Variable;
/// use autograd_toy::{Toy, ops::*};
///
/// // f(x) = x * x: u^T J = 2 x u
/// let x = Variable::from_data(Toy::vec(vec![1.0, 3.0]));
/// let (out, vjp_fn) = vjp(|p| mul_tensor(&p[0], &p[0]), &[x])?;
/// assert_eq!(out.data().data.to_vec(), vec![1.0, 9.0]);
/// let g = vjp_fn.call(&Variable::from_data(Toy::vec(vec![1.0, 0.5])))?;
/// assert_eq!(g[0].data().data.to_vec(), vec![2.0, 3.0]);
/// # Ok::<(), autograd::runtime::AutogradError>(())
/// ```
pub fn vjp<T: Tensor, O: FunctionOutput<T>>(
    f: impl FnOnce(&[Variable<T>]) -> O,
    primals: &[Variable<T>],
) -> Result<(Variable<T>, VjpFn<T>), AutogradError> {
    let inputs = leaves(primals);
    let output = f(&inputs).into_output()?;
    Ok((output.detach(), VjpFn { inputs, output }))
}

/// The Hessian-vector products `H v` of a scalar function `f` at `primals` (one `v` per
/// primal, one result per primal), by forward over reverse: the gradient is computed with
/// `create_graph` on dual inputs, so its tangent is `H v` (one pass, no second backward).
///
/// ```
/// use autograd::functional::hvp;
/// use autograd::runtime::Variable;
/// use autograd_toy::{Toy, ops::*};
///
/// // f(x) = sum(x^3): H = diag(6 x)
/// let x = Variable::from_data(Toy::vec(vec![1.0, -2.0]));
/// let v = Variable::from_data(Toy::vec(vec![1.0, 1.0]));
/// let (value, hv) = hvp(|p| sum(&pow_tensor_scalar(&p[0], 3.0)), &[x], &[v])?;
/// assert_eq!(value.data().data.to_vec(), vec![-7.0]);
/// assert_eq!(hv[0].data().data.to_vec(), vec![6.0, -12.0]);
/// # Ok::<(), autograd::runtime::AutogradError>(())
/// ```
pub fn hvp<T: Tensor, O: FunctionOutput<T>>(
    f: impl FnOnce(&[Variable<T>]) -> O,
    primals: &[Variable<T>],
    tangents: &[Variable<T>],
) -> Result<(Variable<T>, Vec<Variable<T>>), AutogradError> {
    if primals.len() != tangents.len() {
        return Err(structure_error("hvp", primals.len(), tangents.len()));
    }
    let _level = dual_level();
    let inputs = leaves(primals);
    let duals = inputs
        .iter()
        .zip(tangents)
        .map(|(x, t)| make_dual(x, t))
        .collect::<Result<Vec<_>, _>>()?;
    let out = f(&duals).into_output()?;
    if out.with_data(|d| d.numel()) != 1 {
        return Err(AutogradError::msg(
            "hvp: the function must return a single-element tensor",
        ));
    }
    let value = unpack_dual(&out)?.primal.detach();
    if !out.requires_grad() {
        return Ok((value, inputs.iter().map(zeros_like).collect()));
    }
    let opts = GradOptions {
        create_graph: true,
        retain_graph: Some(true),
        allow_unused: true,
        materialize_grads: true,
    };
    let grads = grad_with(std::slice::from_ref(&out), &inputs, &[], opts)?;
    let hv = grads
        .iter()
        .zip(&inputs)
        .map(|(g, x)| {
            let t = match g {
                Some(g) => unpack_dual(g)?.tangent,
                None => None,
            };
            Ok(match t {
                Some(t) => t.detach(),
                None => zeros_like(x),
            })
        })
        .collect::<Result<Vec<_>, AutogradError>>()?;
    Ok((value, hv))
}

/// A dense matrix of `f64`, row-major (a Jacobian block or a Hessian).
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// `rows * cols` values, row after row.
    pub data: Vec<f64>,
}

impl Matrix {
    fn zeros(rows: usize, cols: usize) -> Self {
        Matrix {
            rows,
            cols,
            data: vec![0.0; rows * cols],
        }
    }

    /// The element at `(row, col)`.
    pub fn at(&self, row: usize, col: usize) -> f64 {
        self.data[row * self.cols + col]
    }

    fn set(&mut self, row: usize, col: usize, x: f64) {
        self.data[row * self.cols + col] = x;
    }
}

/// How [`jacobian_with`] computes a Jacobian.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Column by column, one [`jvp`] per input element (`torch.func.jacfwd`).
    Forward,
    /// Row by row, one vector-Jacobian product per output element (`torch.func.jacrev`).
    Reverse,
}

/// The Jacobian of `f` at `primals`: one block per primal, `output elements x primal
/// elements` (elements in row-major order). Forward mode when the primals have no more
/// elements in all than the output, reverse mode otherwise (the cheaper of the two).
///
/// ```
/// use autograd::functional::jacobian;
/// use autograd::runtime::Variable;
/// use autograd_toy::{Toy, ops::*};
///
/// // f(x) = exp(x) elementwise: J = diag(exp(x))
/// let x = Variable::from_data(Toy::vec(vec![0.0, 1.0]));
/// let j = jacobian(|p| exp(&p[0]), &[x])?;
/// assert_eq!(j[0].data, vec![1.0, 0.0, 0.0, 1f64.exp()]);
/// # Ok::<(), autograd::runtime::AutogradError>(())
/// ```
pub fn jacobian<T: ElementAccess, O: FunctionOutput<T>>(
    f: impl Fn(&[Variable<T>]) -> O,
    primals: &[Variable<T>],
) -> Result<Vec<Matrix>, AutogradError> {
    let n: usize = primals.iter().map(|p| p.with_data(|d| d.numel())).sum();
    let m = f(primals).into_output()?.with_data(|d| d.numel());
    let mode = if n <= m { Mode::Forward } else { Mode::Reverse };
    jacobian_with(f, primals, mode)
}

/// [`jacobian`] with the mode chosen by the caller.
pub fn jacobian_with<T: ElementAccess, O: FunctionOutput<T>>(
    f: impl Fn(&[Variable<T>]) -> O,
    primals: &[Variable<T>],
    mode: Mode,
) -> Result<Vec<Matrix>, AutogradError> {
    let sizes: Vec<usize> = primals.iter().map(|p| p.with_data(|d| d.numel())).collect();
    match mode {
        Mode::Forward => jacfwd(&f, primals, &sizes),
        Mode::Reverse => jacrev(&f, primals, &sizes),
    }
}

/// The basis vector `e_k` shaped like `like`.
fn basis<T: ElementAccess>(like: &Variable<T>, k: Option<usize>) -> Variable<T> {
    like.with_data(|d| {
        let mut e = vec![0.0; d.numel()];
        if let Some(k) = k {
            e[k] = 1.0;
        }
        Variable::from_data(d.with_f64_vec(&e))
    })
}

fn jacfwd<T: ElementAccess, O: FunctionOutput<T>>(
    f: &impl Fn(&[Variable<T>]) -> O,
    primals: &[Variable<T>],
    sizes: &[usize],
) -> Result<Vec<Matrix>, AutogradError> {
    let mut blocks: Vec<Matrix> = Vec::with_capacity(primals.len());
    for (i, &n) in sizes.iter().enumerate() {
        let mut block: Option<Matrix> = None;
        for col in 0..n {
            let tangents: Vec<Variable<T>> = primals
                .iter()
                .enumerate()
                .map(|(k, p)| basis(p, (k == i).then_some(col)))
                .collect();
            let (_, jv) = jvp(|x| f(x), primals, &tangents)?;
            let column = jv.data().to_f64_vec();
            let b = block.get_or_insert_with(|| Matrix::zeros(column.len(), n));
            for (row, x) in column.into_iter().enumerate() {
                b.set(row, col, x);
            }
        }
        let m = f(primals).into_output()?.with_data(|d| d.numel());
        blocks.push(block.unwrap_or_else(|| Matrix::zeros(m, 0)));
    }
    Ok(blocks)
}

fn jacrev<T: ElementAccess, O: FunctionOutput<T>>(
    f: &impl Fn(&[Variable<T>]) -> O,
    primals: &[Variable<T>],
    sizes: &[usize],
) -> Result<Vec<Matrix>, AutogradError> {
    let (out, vjp_fn) = vjp(|x| f(x), primals)?;
    let m = out.with_data(|d| d.numel());
    let mut blocks: Vec<Matrix> = sizes.iter().map(|&n| Matrix::zeros(m, n)).collect();
    for row in 0..m {
        let gs = vjp_fn.call(&basis(&out, Some(row)))?;
        for (b, g) in blocks.iter_mut().zip(gs) {
            for (col, x) in g.data().to_f64_vec().into_iter().enumerate() {
                b.set(row, col, x);
            }
        }
    }
    Ok(blocks)
}

/// The Hessian of a scalar function `f` at `primals`, over all their elements in order
/// (primal 0's elements first): forward over reverse, one [`hvp`] per element
/// (`torch.func.hessian`, `jacfwd(jacrev(f))`).
///
/// ```
/// use autograd::functional::hessian;
/// use autograd::runtime::Variable;
/// use autograd_toy::{Toy, ops::*};
///
/// // f(x, y) = sum(x * y): the Hessian couples x_i with y_i only
/// let x = Variable::from_data(Toy::vec(vec![1.0, 2.0]));
/// let y = Variable::from_data(Toy::vec(vec![3.0, 4.0]));
/// let h = hessian(|p| sum(&mul_tensor(&p[0], &p[1])), &[x, y])?;
/// assert_eq!((h.rows, h.cols), (4, 4));
/// assert_eq!(h.at(0, 2), 1.0);
/// assert_eq!(h.at(0, 1), 0.0);
/// assert_eq!(h.at(3, 1), 1.0);
/// # Ok::<(), autograd::runtime::AutogradError>(())
/// ```
pub fn hessian<T: ElementAccess, O: FunctionOutput<T>>(
    f: impl Fn(&[Variable<T>]) -> O,
    primals: &[Variable<T>],
) -> Result<Matrix, AutogradError> {
    let sizes: Vec<usize> = primals.iter().map(|p| p.with_data(|d| d.numel())).collect();
    let n: usize = sizes.iter().sum();
    let mut h = Matrix::zeros(n, n);
    let mut col = 0;
    for (i, &ni) in sizes.iter().enumerate() {
        for k in 0..ni {
            let tangents: Vec<Variable<T>> = primals
                .iter()
                .enumerate()
                .map(|(j, p)| basis(p, (j == i).then_some(k)))
                .collect();
            let (_, hv) = hvp(|x| f(x), primals, &tangents)?;
            let column: Vec<f64> = hv.iter().flat_map(|t| t.data().to_f64_vec()).collect();
            for (row, x) in column.into_iter().enumerate() {
                h.set(row, col, x);
            }
            col += 1;
        }
    }
    Ok(h)
}
