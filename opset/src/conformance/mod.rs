//! The conformance kit (feature `conformance`): the checks every backend of the op set must
//! pass, generic over the backend. A backend implements [`ConformanceTensor`] (a
//! constructor from `f64` values, and optionally a strided layout and a seed) and runs:
//!
//! * [`cases::cases`]: one or more gradcheck cases per differentiable function (random
//!   shapes, broadcasting, non-contiguous inputs, each op's options), which
//!   [`check_every_case`] runs through gradcheck, gradgradcheck and the forward-mode check;
//! * [`inplace_cases::inplace_cases`]: one case per in-place operator;
//! * [`missing_cases`]: the functions of the op set's analysis without a case, so that a new
//!   operator cannot escape;
//! * [`fixtures::replay_all`]: the PyTorch-recorded programs of `opset/fixtures` (values,
//!   gradients, second derivatives, jvps, HVPs and error texts), fixture by fixture;
//! * [`no_panic::random_calls`]: every function with random arguments, then backward: `Ok`
//!   or `Err`, never a panic.
//!
//! [`check_backend`] runs them all: a backend's one conformance test is
//!
//! ```ignore
//! #[test]
//! fn the_op_sets_conformance_kit_passes() {
//!     let failures = autograd_opset::conformance::check_backend::<MyTensor>(&[]);
//!     assert!(failures.is_empty(), "{}", failures.join("\n"));
//! }
//! ```

pub mod cases;
pub mod dispatch;
pub mod fixtures;
pub mod inplace_cases;
pub mod kit;
pub mod no_panic;
pub mod report;
pub mod source;

pub use kit::{OP_SET_DIFFERENCES, backend_kernels, check_backend, check_partial_backend};

use autograd::gradcheck::{ElementAccess, Tolerances, check_forward, gradcheck, gradgradcheck};
use autograd::runtime::{GradOptions, Variable, grad_with};
use autograd::types::Generator;
use autograd_codegen::emit::{Config, analyze_config};
use std::collections::BTreeSet;

/// What the kit needs of a backend's tensor beyond the op set's kernels.
///
/// Its constructors are [`FromValues`](crate::nn::FromValues)'s: `from_f64` for
/// floating-point tensors, `from_i64` for indices and class targets, `from_bool` for masks;
/// the runtime's `Tensor::dtype` names the dtype (`"f32"`/`"f64"`, `"i64"`, `"bool"`), and
/// the fixture replay compares it with PyTorch's.
pub trait ConformanceTensor: crate::nn::FromValues + ElementAccess {
    /// The same values in another (strided, non-contiguous) layout, where the backend has
    /// layouts; the identity otherwise.
    fn noncontiguous(&self) -> Self {
        self.clone()
    }
    /// Seeds the backend's random ops (dropout) so that repeated evaluations agree.
    fn seed(_seed: u64) {}
}

/// A tensor of `v` shaped `shape`.
pub fn from_vec<B: ConformanceTensor>(v: Vec<f64>, shape: &[usize]) -> B {
    B::from_f64(&v, shape)
}

/// A 0-d tensor.
pub fn scalar<B: ConformanceTensor>(x: f64) -> B {
    B::from_f64(&[x], &[])
}

/// Deterministic random tensors and shapes.
pub struct Rng(pub Generator);

impl Rng {
    /// A generator with this seed.
    pub fn new(seed: u64) -> Self {
        Rng(Generator::new(seed))
    }
    /// A size in `2..=4`.
    pub fn size(&self) -> usize {
        2 + (self.0.next_u64() % 3) as usize
    }
    /// A random shape of rank `n`.
    pub fn shape(&self, n: usize) -> Vec<usize> {
        (0..n).map(|_| self.size()).collect()
    }
    /// Uniform in `[-1, 1)`.
    pub fn t<B: ConformanceTensor>(&self, shape: &[usize]) -> B {
        self.u(shape, -1.0, 1.0)
    }
    /// Uniform in `[lo, hi)`.
    pub fn u<B: ConformanceTensor>(&self, shape: &[usize], lo: f64, hi: f64) -> B {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n).map(|_| lo + (hi - lo) * self.0.next_f64()).collect();
        B::from_f64(&v, shape)
    }
    /// Positive values in `[0.5, 1.5)`.
    pub fn pos<B: ConformanceTensor>(&self, shape: &[usize]) -> B {
        self.u(shape, 0.5, 1.5)
    }
    /// Values at least 0.2 away from 0 (for ops with a kink at 0).
    pub fn away<B: ConformanceTensor>(&self, shape: &[usize]) -> B {
        let t: B = self.u(shape, 0.2, 1.0);
        let v: Vec<f64> = t
            .to_f64_vec()
            .into_iter()
            .map(|x| if self.0.next_f64() < 0.5 { -x } else { x })
            .collect();
        B::from_f64(&v, shape)
    }
    /// Uniform values in the backend's non-contiguous layout.
    pub fn nc<B: ConformanceTensor>(&self, shape: &[usize]) -> B {
        self.t::<B>(shape).noncontiguous()
    }
    /// An `i64` tensor of values in `0..n` (index tensors).
    pub fn index<B: ConformanceTensor>(&self, shape: &[usize], n: usize) -> B {
        let len: usize = shape.iter().product();
        let v: Vec<i64> = (0..len)
            .map(|_| (self.0.next_u64() % n as u64) as i64)
            .collect();
        B::from_i64(&v, shape)
    }
    /// A `bool` tensor, each element `true` with probability `p` (masks).
    pub fn mask<B: ConformanceTensor>(&self, shape: &[usize], p: f64) -> B {
        let len: usize = shape.iter().product();
        let v: Vec<bool> = (0..len).map(|_| self.0.next_f64() < p).collect();
        B::from_bool(&v, shape)
    }
}

/// A floating-point tensor of these values.
pub fn v<B: ConformanceTensor>(x: &[f64], shape: &[usize]) -> B {
    B::from_f64(x, shape)
}

/// An `i64` tensor of these values (indices, class targets).
pub fn iv<B: ConformanceTensor>(x: &[i64], shape: &[usize]) -> B {
    B::from_i64(x, shape)
}

/// The analysis of the op set's YAML files (what `autograd_ops!` generates from).
pub fn analysis() -> autograd_codegen::analysis::Analysis {
    analyze_config(&config()).expect("the op set's YAML files analyse")
}

/// The code generator's configuration for the op set's YAML files.
fn config() -> Config {
    let mut c = Config::new("derivatives.yaml");
    c.native = Some("native_functions.yaml".into());
    c.base_dir = env!("CARGO_MANIFEST_DIR").into();
    // As `autograd_ops!` in src/lib.rs: PyTorch's C++ formulas, fallible kernels.
    c.cpp = true;
    c.header = Some("functions.h".into());
    c.fallible = true;
    c
}

/// `"inplace"`, `"out"` or `"functional"` (mutable and scratch variants count
/// as functional and out).
fn kind(f: &autograd_codegen::model::schema::FunctionSchema) -> &'static str {
    if f.name.name.inplace {
        "inplace"
    } else if f.is_out_fn() {
        "out"
    } else {
        "functional"
    }
}

/// `(schema name, kind)` of every differentiable function (a backward node, or composite);
/// kind is "functional", "inplace" or "out".
pub fn differentiable_functions() -> Vec<(String, &'static str)> {
    let a = analysis();
    let mut out = Vec::new();
    for r in &a.results {
        let f = &a.functions[r.func].func;
        let has_node = r.main_info().is_some_and(|i| i.op.is_some());
        // Composite functions are differentiable through the ops their kernel calls.
        let composite = a.functions[r.func].composite_kernel.is_some();
        if has_node || composite {
            out.push((f.name.to_string(), kind(f)));
        }
    }
    out
}

/// `(schema name, kind)` of every function of the native file (kinds as above).
pub fn all_functions() -> Vec<(String, &'static str)> {
    let a = analysis();
    a.functions
        .iter()
        .map(|f| (f.func.name.to_string(), kind(&f.func)))
        .collect()
}

/// Differentiable functional operators without a case, and cases naming no operator.
pub fn missing_cases<B: ConformanceTensor>() -> Vec<String> {
    let covered: BTreeSet<&str> = cases::cases::<B>().iter().map(|c| c.op).collect();
    let diff = differentiable_functions();
    let mut out: Vec<String> = diff
        .iter()
        .filter(|(op, kind)| *kind == "functional" && !covered.contains(op.as_str()))
        .map(|(op, _)| format!("no case for {op}"))
        .collect();
    let ops: BTreeSet<&str> = diff.iter().map(|(o, _)| o.as_str()).collect();
    out.extend(
        covered
            .iter()
            .filter(|op| !ops.contains(*op))
            .map(|op| format!("case for unknown operator {op}")),
    );
    out
}

/// Every case through gradcheck, gradgradcheck (unless the case opts out) and the
/// forward-mode check (jvp against finite differences and against reverse mode): one line
/// per failure, naming the operator and the case. A check that panics fails with its
/// message; the others still run.
pub fn check_every_case<B: ConformanceTensor>() -> Vec<String> {
    case_records::<B>()
        .into_iter()
        .filter(|r| r.status != report::Status::Pass)
        .map(|r| {
            let (case, e) = r.detail.split_once(": ").unwrap_or((&r.detail, ""));
            format!("{case}: {}: {e}", r.check)
        })
        .collect()
}

/// [`check_every_case`]'s checks as records, one per check of each case, passed or not.
pub fn case_records<B: ConformanceTensor>() -> Vec<report::Record> {
    let second = Tolerances {
        eps: 1e-5,
        atol: 1e-4,
        rtol: 1e-3,
    };
    let mut records = Vec::new();
    let all = match std::panic::catch_unwind(cases::cases::<B>) {
        Ok(all) => all,
        Err(p) => {
            let e = format!("building the cases panicked: {}", panic_text(&p));
            return vec![report::Record::of(
                "(all)",
                "cases",
                "the case list",
                Err(e),
            )];
        }
    };
    for cs in all {
        let f = |x: &[autograd::runtime::Variable<B>]| (cs.f)(x);
        let name = format!("{} ({})", cs.op, cs.label);
        let mut run = |what: &str, check: &dyn Fn() -> Result<(), String>| {
            records.push(report::Record::of(cs.op, what, &name, guarded(check)));
        };
        run("gradcheck", &|| {
            gradcheck(f, &cs.inputs, Tolerances::default()).map_err(|e| e.to_string())
        });
        if cs.no_gradgrad.is_none() {
            run("gradgradcheck", &|| {
                gradgradcheck(f, &cs.inputs, second).map_err(|e| e.to_string())
            });
        }
        run("forward", &|| {
            check_forward(f, &cs.inputs, Tolerances::default()).map_err(|e| e.to_string())
        });
        run("raw form", &|| raw_form_matches(f, &cs.inputs));
    }
    records
}

/// The gradients of `f` at `inputs` from a backward pass without `create_graph` (each node's
/// raw form, `Node::apply_raw`) equal, bit for bit, those with `create_graph` (its `Variable`
/// form): the two forms of every formula compute the same thing. The output's gradient is
/// `1, 2, 3, ...` so that a formula that mixes up elements shows.
fn raw_form_matches<B: ConformanceTensor>(
    f: impl Fn(&[Variable<B>]) -> Variable<B>,
    inputs: &[B],
) -> Result<(), String> {
    let grads = |create_graph: bool| -> Result<Vec<Option<Vec<f64>>>, String> {
        let vars: Vec<Variable<B>> = inputs
            .iter()
            .map(|t| Variable::new(t.clone(), true))
            .collect();
        let y = f(&vars);
        let seed = y.with_data(|d| {
            let n: Vec<f64> = (1..=d.numel()).map(|i| i as f64).collect();
            d.with_f64_vec(&n)
        });
        let opts = GradOptions {
            create_graph,
            allow_unused: true,
            ..GradOptions::default()
        };
        let g = grad_with(&[y], &vars, &[Some(Variable::from_data(seed))], opts)
            .map_err(|e| e.to_string())?;
        Ok(g.iter()
            .map(|g| g.as_ref().map(|g| g.data().to_f64_vec()))
            .collect())
    };
    let (raw, var) = (grads(false)?, grads(true)?);
    for (i, (r, v)) in raw.iter().zip(&var).enumerate() {
        let same = match (r, v) {
            (Some(r), Some(v)) => {
                r.len() == v.len() && r.iter().zip(v).all(|(a, b)| a.to_bits() == b.to_bits())
            }
            (None, None) => true,
            _ => false,
        };
        if !same {
            return Err(format!(
                "input {i}: raw form gives {r:?}, the Variable form gives {v:?}"
            ));
        }
    }
    Ok(())
}

/// A panic's message.
fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    match p.downcast_ref::<&str>() {
        Some(s) => s.to_string(),
        None => p.downcast_ref::<String>().cloned().unwrap_or_default(),
    }
}

/// `check()`, a panic turned into its message (without the panic hook's report: the kit
/// lists it).
fn guarded(check: &dyn Fn() -> Result<(), String>) -> Result<(), String> {
    dispatch::guarded(check).map_err(|e| match e.strip_prefix("(a panic) ") {
        Some(m) => format!("panicked: {m}"),
        None => e,
    })
}
