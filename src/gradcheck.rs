//! Gradient checks: analytic gradients (the generated backward formulas) against central
//! finite differences, in `f64`; and second derivatives through `create_graph`.

use crate::runtime::{AutogradError, GradOptions, Tensor, Variable, grad_with};

/// A raw tensor whose elements can be read and written as `f64`, for finite differences.
pub trait ElementAccess: Tensor {
    /// The elements in row-major order.
    fn to_f64_vec(&self) -> Vec<f64>;
    /// A tensor shaped like `self` with these elements.
    fn with_f64_vec(&self, values: &[f64]) -> Self;
}

/// Tolerances and step of a check.
#[derive(Debug, Clone, Copy)]
pub struct Tolerances {
    /// Finite-difference step.
    pub eps: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            eps: 1e-6,
            atol: 1e-5,
            rtol: 1e-3,
        }
    }
}

/// A failed check: which input and element, analytic vs numeric.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// Index of the input.
    pub input: usize,
    /// Element index within it.
    pub element: usize,
    /// The backward formula's value.
    pub analytic: f64,
    /// The finite difference.
    pub numeric: f64,
}

/// Why a check failed.
#[derive(Debug)]
pub enum GradcheckError {
    /// Backward itself failed.
    Autograd(AutogradError),
    /// Gradients disagree.
    Mismatch(Mismatch),
    /// Forward mode disagrees: the Jacobian-vector product with finite differences (output
    /// `element`), or with reverse mode (`u.(Jv)` against `(J^T u).v`, `element` 0).
    Forward {
        /// `"jvp vs finite differences"` or `"jvp vs vjp"`.
        what: &'static str,
        /// Output element.
        element: usize,
        /// The forward formulas' value.
        analytic: f64,
        /// What it is checked against.
        expected: f64,
    },
}

impl std::fmt::Display for GradcheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GradcheckError::Autograd(e) => write!(f, "backward failed: {e}"),
            GradcheckError::Forward {
                what,
                element,
                analytic,
                expected,
            } => write!(
                f,
                "{what} mismatch at output element {element}: forward {analytic} vs {expected}"
            ),
            GradcheckError::Mismatch(m) => write!(
                f,
                "gradient mismatch for input {} element {}: analytic {} vs numeric {}",
                m.input, m.element, m.analytic, m.numeric
            ),
        }
    }
}

impl std::error::Error for GradcheckError {}

impl From<AutogradError> for GradcheckError {
    fn from(e: AutogradError) -> Self {
        GradcheckError::Autograd(e)
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A deterministic "random" projection vector for outputs.
fn projection(n: usize, salt: u64) -> Vec<f64> {
    let g = crate::types::Generator::new(0x5eed ^ salt);
    (0..n).map(|_| g.next_f64() * 2.0 - 1.0).collect()
}

/// Check the gradients of `f` at `inputs` (all made to require grad). `f` may return any
/// shape; the check projects it on a fixed random vector.
pub fn gradcheck<T: ElementAccess>(
    f: impl Fn(&[Variable<T>]) -> Variable<T>,
    inputs: &[T],
    tol: Tolerances,
) -> Result<(), GradcheckError> {
    let vars: Vec<Variable<T>> = inputs
        .iter()
        .map(|t| Variable::new(t.clone(), true))
        .collect();
    let y = f(&vars);
    let y_data = y.data();
    let v = projection(y_data.to_f64_vec().len(), 1);
    let v_t = Variable::from_data(y_data.with_f64_vec(&v));
    let opts = GradOptions {
        materialize_grads: true,
        allow_unused: true,
        ..Default::default()
    };
    // An output without history (e.g. the gradient of a linear op in gradgradcheck) is
    // constant: its analytic derivative is zero.
    let analytic = if y.requires_grad() {
        grad_with(&[y], &vars, &[Some(v_t)], opts)?
    } else {
        vec![None; vars.len()]
    };
    for (i, x) in inputs.iter().enumerate() {
        let base = x.to_f64_vec();
        let a = analytic[i]
            .as_ref()
            .map(|g| g.data().to_f64_vec())
            .unwrap_or_else(|| vec![0.0; base.len()]);
        for j in 0..base.len() {
            let eval = |delta: f64| {
                let mut p = base.clone();
                p[j] += delta;
                let xs: Vec<Variable<T>> = inputs
                    .iter()
                    .enumerate()
                    .map(|(k, t)| {
                        Variable::new(
                            if k == i {
                                t.with_f64_vec(&p)
                            } else {
                                t.clone()
                            },
                            true,
                        )
                    })
                    .collect();
                dot(&f(&xs).data().to_f64_vec(), &v)
            };
            let numeric = (eval(tol.eps) - eval(-tol.eps)) / (2.0 * tol.eps);
            if (a[j] - numeric).abs() > tol.atol + tol.rtol * numeric.abs() {
                return Err(GradcheckError::Mismatch(Mismatch {
                    input: i,
                    element: j,
                    analytic: a[j],
                    numeric,
                }));
            }
        }
    }
    Ok(())
}

/// Check second derivatives: the gradient of `f` (computed with `create_graph`, projected on
/// a fixed vector) is itself gradient-checked.
pub fn gradgradcheck<T: ElementAccess>(
    f: impl Fn(&[Variable<T>]) -> Variable<T>,
    inputs: &[T],
    tol: Tolerances,
) -> Result<(), GradcheckError> {
    let first = {
        let vars: Vec<Variable<T>> = inputs
            .iter()
            .map(|t| Variable::from_data(t.clone()))
            .collect();
        f(&vars).data()
    };
    let v = projection(first.to_f64_vec().len(), 2);
    for i in 0..inputs.len() {
        let g = |xs: &[Variable<T>]| -> Variable<T> {
            let y = f(xs);
            let v_t = Variable::from_data(y.data().with_f64_vec(&v));
            let opts = GradOptions {
                create_graph: true,
                retain_graph: Some(true),
                allow_unused: true,
                materialize_grads: true,
            };
            let gs = grad_with(&[y], xs, &[Some(v_t)], opts).expect("first backward");
            gs[i].clone().expect("materialized")
        };
        gradcheck(g, inputs, tol)?;
    }
    Ok(())
}

/// Check the forward-mode derivatives (the generated forward formulas) of `f` at `inputs`:
/// the Jacobian-vector product `Jv` for fixed random tangents `v` (one per input) against
/// central finite differences along `v`, and against reverse mode: `u.(Jv) == (J^T u).v` for
/// a fixed random `u` (PyTorch's `check_forward_ad` and its vjp/jvp consistency check).
/// A function without a forward formula fails with PyTorch's "Trying to use forward AD
/// with ..." error.
pub fn check_forward<T: ElementAccess>(
    f: impl Fn(&[Variable<T>]) -> Variable<T>,
    inputs: &[T],
    tol: Tolerances,
) -> Result<(), GradcheckError> {
    let tangents: Vec<T> = inputs
        .iter()
        .enumerate()
        .map(|(i, x)| x.with_f64_vec(&projection(x.to_f64_vec().len(), 10 + i as u64)))
        .collect();
    let vars: Vec<Variable<T>> = inputs
        .iter()
        .map(|t| Variable::new(t.clone(), true))
        .collect();
    let (y, jvp) = {
        let _level = crate::runtime::dual_level();
        let duals = vars
            .iter()
            .zip(&tangents)
            .map(|(x, t)| crate::runtime::make_dual(x, &Variable::from_data(t.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        let y = f(&duals);
        let u = crate::runtime::unpack_dual(&y)?;
        let n = y.with_data(|d| d.to_f64_vec().len());
        let jvp = u
            .tangent
            .map(|t| t.data().to_f64_vec())
            .unwrap_or_else(|| vec![0.0; n]);
        (y, jvp)
    };
    // Central differences along the tangents.
    let at = |sign: f64| -> Vec<f64> {
        let xs: Vec<Variable<T>> = inputs
            .iter()
            .zip(&tangents)
            .map(|(x, t)| {
                let p: Vec<f64> = x
                    .to_f64_vec()
                    .iter()
                    .zip(t.to_f64_vec())
                    .map(|(a, b)| a + sign * tol.eps * b)
                    .collect();
                Variable::from_data(x.with_f64_vec(&p))
            })
            .collect();
        f(&xs).data().to_f64_vec()
    };
    let (plus, minus) = (at(1.0), at(-1.0));
    for (k, a) in jvp.iter().enumerate() {
        let numeric = (plus[k] - minus[k]) / (2.0 * tol.eps);
        if (a - numeric).abs() > tol.atol + tol.rtol * numeric.abs() {
            return Err(GradcheckError::Forward {
                what: "jvp vs finite differences",
                element: k,
                analytic: *a,
                expected: numeric,
            });
        }
    }
    check_jvp_vjp(&y, &vars, &tangents, &jvp, tol)
}

/// `u.(Jv)` against `(J^T u).v`.
fn check_jvp_vjp<T: ElementAccess>(
    y: &Variable<T>,
    vars: &[Variable<T>],
    tangents: &[T],
    jvp: &[f64],
    tol: Tolerances,
) -> Result<(), GradcheckError> {
    let u = projection(jvp.len(), 3);
    let forward = dot(&u, jvp);
    let opts = GradOptions {
        materialize_grads: true,
        allow_unused: true,
        ..Default::default()
    };
    let reverse = if y.requires_grad() {
        let u_t = Variable::from_data(y.data().with_f64_vec(&u));
        let g = grad_with(std::slice::from_ref(y), vars, &[Some(u_t)], opts)?;
        g.iter()
            .zip(tangents)
            .map(|(g, t)| {
                g.as_ref()
                    .map_or(0.0, |g| dot(&g.data().to_f64_vec(), &t.to_f64_vec()))
            })
            .sum()
    } else {
        0.0
    };
    if (forward - reverse).abs() > tol.atol + tol.rtol * reverse.abs() {
        return Err(GradcheckError::Forward {
            what: "jvp vs vjp",
            element: 0,
            analytic: forward,
            expected: reverse,
        });
    }
    Ok(())
}
