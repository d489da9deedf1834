//! The conformance kit (feature `conformance`): the checks every backend of the op set must
//! pass, generic over the backend. A backend implements [`ConformanceTensor`] (constructors
//! from values, and optionally a strided layout, a seed and f32 tensors) and runs
//! [`check_backend`], which runs every kind of case:
//!
//! * [`cases::cases`]: one or more gradcheck cases per differentiable function (random
//!   shapes, broadcasting, non-contiguous inputs, each op's options), through gradcheck,
//!   gradgradcheck, the forward-mode check and the raw-form check in f64
//!   ([`gradcheck_cases`]), and built in f32 against f64 ([`precision`]);
//! * [`inplace_cases`], [`out_cases`], [`view_cases`]: one case per in-place function, out=
//!   function and view function (more for some views), with their checks;
//! * [`missing_cases`]: the functions of the op set's analysis without a case of their
//!   kind, so that a new operator cannot escape;
//! * [`fixtures`]: the PyTorch-recorded programs of `opset/fixtures` (values, gradients,
//!   second derivatives, jvps, HVPs and error texts), fixture by fixture;
//! * [`no_panic`]: every function with random arguments, then backward: `Ok` or `Err`,
//!   never a panic.
//!
//! Every case runs on a worker thread under `catch_unwind` and a time limit ([`runner`]):
//! an error, a panic or a hang in a kernel is a failed (or timed-out) check, never the
//! end of the kit. Each check is a [`report::Record`]; with `OPSET_KIT_REPORT` set they are
//! appended to that file as JSON lines, and [`report::markdown_table`] makes the table of
//! operators per backend. [`check_backend_with`] takes [`KitOptions`] (a subset of
//! operators, the dtypes, the time limit, the report file). A backend's one conformance
//! test is
//!
//! ```ignore
//! #[test]
//! fn the_op_sets_conformance_kit_passes() {
//!     let failures = autograd_opset::conformance::check_backend::<MyTensor>(&[]);
//!     assert!(failures.is_empty(), "{}", failures.join("\n"));
//! }
//! ```

pub mod args;
pub mod case;
pub mod cases;
pub mod conv_cases;
pub mod dispatch;
pub mod dist_cases;
pub mod fixtures;
pub mod geom_cases;
pub mod grid_cases;
pub mod group_norm_cases;
pub mod index_cases;
pub mod inplace_cases;
pub mod kit;
// The masked family (issue 30).
pub mod masked_cases;
pub mod no_panic;
pub mod norm_cases;
pub mod norms_cases;
pub mod out_cases;
pub mod pool3d_cases;
// Embeddings (issue 30).
pub mod embedding_cases;
// Embedding bags (issue 30).
pub mod bag_cases;
pub mod precision;
pub mod products_cases;
pub mod report;
pub mod resample_cases;
pub mod runner;
pub mod scatter_cases;
pub mod select_cases;
pub mod softmax_cases;
pub mod source;
pub mod view_cases;
// In-place forms of the functional operators.
pub mod inplace_forms_cases;

pub use kit::{
    Kit, KitOptions, KitRun, OP_SET_DIFFERENCES, backend_kernels, check_backend,
    check_backend_with, check_partial_backend,
};

use autograd::gradcheck::{ElementAccess, Tolerances, check_forward, gradcheck, gradgradcheck};
use autograd::runtime::{GradOptions, Variable, grad_with};
use autograd::types::Generator;
use autograd_codegen::emit::{Config, analyze_config};
use runner::{Ctx, Job, run_jobs};
use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::Arc;

/// What the kit needs of a backend's tensor beyond the op set's kernels.
///
/// Its constructors are [`FromValues`](crate::nn::FromValues)'s: `from_f64` for
/// floating-point tensors, `from_i64` for indices and class targets, `from_bool` for masks;
/// the runtime's `Tensor::dtype` names the dtype (`"f32"`/`"f64"`, `"i64"`, `"bool"`), and
/// the fixture replay compares it with PyTorch's. Every other method has a default.
pub trait ConformanceTensor: crate::nn::FromValues + ElementAccess {
    /// The same values in another (strided, non-contiguous) layout, where the backend has
    /// layouts; the identity otherwise.
    fn noncontiguous(&self) -> Self {
        self.clone()
    }
    /// Seeds the backend's random ops (dropout) so that repeated evaluations agree.
    fn seed(_seed: u64) {}
    /// A floating-point tensor of these values in `dtype` (`"f32"`, `"f64"`), `None` when
    /// this type has no tensors of that dtype. The default converts `from_f64`'s tensor
    /// with the runtime's `Tensor::to_dtype` (the engine's conversion of gradients).
    fn from_f64_as(values: &[f64], shape: &[usize], dtype: &'static str) -> Option<Self> {
        let t = Self::from_f64(values, shape);
        if autograd::runtime::Tensor::dtype(&t) == dtype {
            Some(t)
        } else {
            autograd::runtime::Tensor::to_dtype(&t, dtype)
        }
    }
    /// The kit's f32 checks: every gradcheck case built in f32 and compared with the same
    /// case in f64 ([`precision::compare_dtype`]). The default builds both in this type
    /// ([`ConformanceTensor::from_f64_as`]); a backend whose f32 tensors are another type
    /// (ndtensor's `NdTensor<f32>` beside `NdTensor<f64>`) calls
    /// `precision::compare_dtype::<ItsF32Type, Self>(kit, "f32")` instead.
    fn f32_checks(kit: &mut Kit) {
        precision::compare_dtype::<Self, Self>(kit, "f32");
    }
}

thread_local! {
    /// The dtype the kit's constructors build floating-point tensors in, on this thread.
    static BUILD_DTYPE: Cell<&'static str> = const { Cell::new("f64") };
}

/// Runs `f` with the kit's constructors ([`make`], [`Rng`], [`v`], [`from_vec`],
/// [`scalar`]) building floating-point tensors in `dtype` on this thread.
pub fn with_dtype<T>(dtype: &'static str, f: impl FnOnce() -> T) -> T {
    struct Restore(&'static str);
    impl Drop for Restore {
        fn drop(&mut self) {
            BUILD_DTYPE.with(|d| d.set(self.0));
        }
    }
    let _restore = Restore(BUILD_DTYPE.with(|d| d.replace(dtype)));
    f()
}

/// A floating-point tensor of these values, in the dtype of [`with_dtype`] (`f64` outside
/// it). Panics when the backend has no tensors of that dtype (the f32 checks ask first).
pub fn make<B: ConformanceTensor>(values: &[f64], shape: &[usize]) -> B {
    match BUILD_DTYPE.with(Cell::get) {
        "f64" => B::from_f64(values, shape),
        d => B::from_f64_as(values, shape, d)
            .unwrap_or_else(|| panic!("the backend has no {d} tensors (from_f64_as)")),
    }
}

/// A tensor of `v` shaped `shape`.
pub fn from_vec<B: ConformanceTensor>(v: Vec<f64>, shape: &[usize]) -> B {
    make(&v, shape)
}

/// A 0-d tensor.
pub fn scalar<B: ConformanceTensor>(x: f64) -> B {
    make(&[x], &[])
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
        make(&v, shape)
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
        make(&v, shape)
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
    make(x, shape)
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
        // Functional composites are differentiable through the ops their kernel calls (an
        // in-place composite, `resize_`, refuses a tensor that requires grad).
        let composite = a.functions[r.func].composite_kernel.is_some() && kind(f) == "functional";
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

/// The view functions of the native file (`transpose.int`, `select.int`, `split.Tensor`, ...).
pub fn view_functions() -> Vec<String> {
    analysis()
        .functions
        .iter()
        .filter(|f| f.is_view_op())
        .map(|f| f.func.name.to_string())
        .collect()
}

/// Functions without a case of their kind, and cases naming no function: differentiable
/// functional operators without a gradcheck case ([`cases::cases`]), differentiable
/// in-place ones without an in-place case ([`inplace_cases::inplace_cases`]), out= ones
/// without an out= case ([`out_cases::out_cases`]) and views without a view case
/// ([`view_cases::view_cases`]).
pub fn missing_cases<B: ConformanceTensor>() -> Vec<String> {
    let diff = differentiable_functions();
    let all = all_functions();
    let of = |k: &str, from: &[(String, &str)]| -> Vec<String> {
        from.iter()
            .filter(|(_, kind)| *kind == k)
            .map(|(op, _)| op.clone())
            .collect()
    };
    let lists: [(&str, Vec<String>, Vec<&str>); 4] = [
        (
            "case",
            of("functional", &diff),
            cases::cases::<B>().iter().map(|c| c.op).collect(),
        ),
        (
            "in-place case",
            of("inplace", &diff),
            inplace_cases::inplace_cases::<B>()
                .iter()
                .map(|c| c.op)
                .collect(),
        ),
        (
            "out= case",
            of("out", &all),
            out_cases::out_cases::<B>().iter().map(|c| c.op).collect(),
        ),
        (
            "view case",
            view_functions(),
            view_cases::view_cases::<B>().iter().map(|c| c.op).collect(),
        ),
    ];
    let known: BTreeSet<&str> = all.iter().map(|(o, _)| o.as_str()).collect();
    let mut out = Vec::new();
    for (what, ops, covered) in &lists {
        let covered: BTreeSet<&str> = covered.iter().copied().collect();
        out.extend(
            ops.iter()
                .filter(|op| !covered.contains(op.as_str()))
                .map(|op| format!("no {what} for {op}")),
        );
        out.extend(
            covered
                .iter()
                .filter(|op| !known.contains(*op))
                .map(|op| format!("{what} for unknown operator {op}")),
        );
    }
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

/// [`check_every_case`]'s checks as records, one per check of each case, passed or not
/// (each case under the kit's default time limit).
pub fn case_records<B: ConformanceTensor>() -> Vec<report::Record> {
    let mut kit = Kit::new(KitOptions::default());
    gradcheck_cases::<B>(&mut kit);
    kit.records
}

/// The jobs of a kind: `(op, label)` of each case of `build()`'s list that `kit`'s options
/// select, built on this thread (a panic while building is recorded, and gives no jobs).
pub(crate) fn jobs_of<T>(
    kit: &mut Kit,
    kind: &str,
    build: impl FnOnce() -> Vec<T>,
    describe: impl Fn(&T) -> (String, String),
) -> Vec<Job> {
    match dispatch::guarded(|| Ok(build())) {
        Ok(list) => list
            .iter()
            .enumerate()
            .map(|(index, c)| {
                let (op, label) = describe(c);
                Job { op, label, index }
            })
            .filter(|j| kit.options.wants(&j.op))
            .collect(),
        Err(e) => {
            let e = format!(
                "building the cases panicked: {}",
                e.trim_start_matches("(a panic) ")
            );
            kit.records
                .push(report::Record::of("(all)", kind, "the case list", Err(e)));
            Vec::new()
        }
    }
}

/// Runs every gradcheck case ([`cases::cases`]) that `kit`'s options select through
/// gradcheck, gradgradcheck, the forward-mode check and the raw-form check, in f64.
pub fn gradcheck_cases<B: ConformanceTensor>(kit: &mut Kit) {
    let jobs = jobs_of(kit, "gradcheck cases", cases::cases::<B>, |c| {
        (c.op.to_string(), format!("{} ({})", c.op, c.label))
    });
    run_jobs(
        kit,
        "gradcheck cases (f64)",
        &jobs,
        Arc::new(cases::cases::<B>),
        Arc::new(|cs: &Vec<cases::Case<B>>, i, ctx: &Ctx| run_case(&cs[i], ctx)),
    );
}

/// One case's checks.
fn run_case<B: ConformanceTensor>(cs: &cases::Case<B>, ctx: &Ctx) {
    let second = Tolerances {
        eps: 1e-5,
        atol: 1e-4,
        rtol: 1e-3,
    };
    let f = |x: &[Variable<B>]| (cs.f)(x);
    let name = format!("{} ({})", cs.op, cs.label);
    let run = |check: &str, body: &dyn Fn() -> Result<(), String>| {
        ctx.check((cs.op, check, "f64"), &name, body);
    };
    if let Some(text) = cs.backward_refusal {
        run("gradcheck", &|| backward_refused(f, &cs.inputs, text));
    } else {
        run("gradcheck", &|| {
            gradcheck(f, &cs.inputs, Tolerances::default()).map_err(|e| e.to_string())
        });
    }
    if cs.no_gradgrad.is_none() && cs.backward_refusal.is_none() {
        run("gradgradcheck", &|| {
            gradgradcheck(f, &cs.inputs, second).map_err(|e| e.to_string())
        });
    }
    run("forward", &|| match cases::forward_refusal(cs.op) {
        Some(function) => forward_refused(f, &cs.inputs, function),
        None => check_forward(f, &cs.inputs, Tolerances::default()).map_err(|e| e.to_string()),
    });
    if cs.backward_refusal.is_none() {
        run("raw form", &|| {
            raw_form_matches(f, &cs.inputs, cs.raw_close.is_some())
        });
    }
}

/// The gradcheck of an op whose derivatives are all PyTorch's `not_implemented`: backward
/// fails with PyTorch's `text`.
fn backward_refused<B: ConformanceTensor>(
    f: impl Fn(&[Variable<B>]) -> Variable<B>,
    inputs: &[B],
    text: &str,
) -> Result<(), String> {
    match gradcheck(f, inputs, Tolerances::default()) {
        Err(e) if e.to_string().contains(text) => Ok(()),
        Err(e) => Err(format!("backward failed with another error: {e}")),
        Ok(()) => Err(format!("backward ran; PyTorch refuses it: {text}")),
    }
}

/// The forward check of a function without a forward formula: PyTorch's refusal, naming it.
fn forward_refused<B: ConformanceTensor>(
    f: impl Fn(&[Variable<B>]) -> Variable<B>,
    inputs: &[B],
    function: &str,
) -> Result<(), String> {
    let want = cases::refusal_text(function);
    // The op's call returns the refusal (a case's function unwraps it: a panic with it).
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        check_forward(f, inputs, Tolerances::default()).map_err(|e| e.to_string())
    }));
    let got = match r {
        Ok(r) => r,
        Err(p) => Err(dispatch::panic_message(p)),
    };
    match got {
        Err(e) if e.contains(&want) => Ok(()),
        Err(e) => Err(format!("forward AD refused with another error: {e}")),
        Ok(()) => Err(format!("forward AD ran; PyTorch refuses it: {want}")),
    }
}

/// The gradients of `f` at `inputs` from a backward pass without `create_graph` (each node's
/// raw form, `Node::apply_raw`) equal, bit for bit, those with `create_graph` (its `Variable`
/// form): the two forms of every formula compute the same thing. The output's gradient is
/// `1, 2, 3, ...` so that a formula that mixes up elements shows. With `close` (an entry
/// whose forms run different computations, [`cases::Case::raw_close`]) they agree to a
/// relative 1e-12.
fn raw_form_matches<B: ConformanceTensor>(
    f: impl Fn(&[Variable<B>]) -> Variable<B>,
    inputs: &[B],
    close: bool,
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
                let near = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0);
                let eq = |a: &f64, b: &f64| a.to_bits() == b.to_bits() || (close && near(*a, *b));
                r.len() == v.len() && r.iter().zip(v).all(|(a, b)| eq(a, b))
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
