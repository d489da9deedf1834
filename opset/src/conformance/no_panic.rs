//! The no-panic property test, generic over the backend: every function of the op set with
//! random arguments of its schema's types must give `Ok` or `Err`, never a panic.

use super::ConformanceTensor;
use super::args::{Args, guarded};
use super::dispatch::dispatch;
use super::runner::{Ctx, run_jobs};
use crate::ops::*;
use autograd::runtime::{AutogradError, Variable};
use autograd::types::Generator;
use autograd_codegen::model::schema::{Argument, BaseTy, Type};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

struct Gen<B: ConformanceTensor> {
    g: Generator,
    env: HashMap<String, Variable<B>>,
}

impl<B: ConformanceTensor> Gen<B> {
    fn below(&self, n: u64) -> u64 {
        self.g.next_u64() % n
    }
    fn chance(&self, p: f64) -> bool {
        self.g.next_f64() < p
    }
    fn pick<T: Copy>(&self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }

    /// A shape of rank 0..=3 with sizes 0..=3 (mostly 1..=3).
    fn shape(&self) -> Vec<usize> {
        let rank = self.below(4) as usize;
        (0..rank)
            .map(|_| {
                if self.chance(0.1) {
                    0
                } else {
                    1 + self.below(3) as usize
                }
            })
            .collect()
    }

    /// The dtype of a random tensor: index arguments are mostly `i64`, masks mostly `bool`,
    /// other tensors mostly floating point; each sometimes another dtype (the kernels'
    /// dtype checks and promotion).
    fn dtype(&self, name: &str) -> &'static str {
        let usual = match name {
            "index" | "target" | "indices" => "i64",
            "condition" | "mask" => "bool",
            _ => "f64",
        };
        match (usual, self.below(10)) {
            ("f64", 0) => "i64",
            ("f64", 1) => "bool",
            (_, 0) => "f64",
            (_, 1) => "bool",
            (_, 2) => "i64",
            _ => usual,
        }
    }

    /// A tensor in the environment; integer ones hold small values (some out of range).
    fn tensor(&mut self, name: &str) -> Value {
        let shape = self.shape();
        let n: usize = shape.iter().product();
        let dtype = self.dtype(name);
        let mut t = match dtype {
            "i64" => {
                let v: Vec<i64> = (0..n).map(|_| self.below(6) as i64 - 1).collect();
                B::from_i64(&v, &shape)
            }
            "bool" => {
                let v: Vec<bool> = (0..n).map(|_| self.chance(0.5)).collect();
                B::from_bool(&v, &shape)
            }
            _ => {
                let v: Vec<f64> = (0..n).map(|_| self.g.next_f64() * 4.0 - 2.0).collect();
                B::from_f64(&v, &shape)
            }
        };
        if shape.len() >= 2 && self.chance(0.3) {
            t = t.noncontiguous();
        }
        let requires_grad = dtype == "f64" && self.chance(0.7);
        let leaf = Variable::new(t, requires_grad);
        // Most inputs are non-leaf (in-place on a leaf that requires grad is an error).
        let v = if requires_grad && self.chance(0.7) {
            // A backend without `mul.Scalar` yet: the leaf itself.
            mul_scalar(&leaf, 1.0).unwrap_or_else(|_| leaf.clone())
        } else {
            leaf
        };
        let name = format!("x{}", self.env.len());
        self.env.insert(name.clone(), v);
        json!({ "t": name })
    }

    fn scalar(&self) -> Value {
        let x = self.pick(&[-1.5, 0.0, 0.5, 1.0, 2.0, 3.0, 1e3, -0.25]);
        if self.chance(0.05) {
            json!(self.pick(&["nan", "inf", "-inf"]))
        } else {
            json!(x)
        }
    }

    fn int(&self) -> i64 {
        self.below(8) as i64 - 3
    }

    fn value(&mut self, name: &str, ty: &Type) -> Value {
        match ty {
            Type::Optional(inner) => {
                if self.chance(0.3) {
                    Value::Null
                } else {
                    self.value(name, inner)
                }
            }
            Type::List { elem, .. } => match &**elem {
                Type::Base(BaseTy::Tensor) => {
                    let n = self.below(4);
                    let names: Vec<Value> =
                        (0..n).map(|_| self.tensor(name)["t"].clone()).collect();
                    json!({ "tl": names })
                }
                Type::Base(BaseTy::Bool) => json!(
                    (0..self.below(4))
                        .map(|_| self.chance(0.5))
                        .collect::<Vec<_>>()
                ),
                _ => json!((0..self.below(4)).map(|_| self.int()).collect::<Vec<_>>()),
            },
            Type::Base(b) => self.base(name, *b),
            Type::CustomClass(_) => Value::Null,
        }
    }

    fn base(&mut self, name: &str, b: BaseTy) -> Value {
        match b {
            BaseTy::Tensor => self.tensor(name),
            BaseTy::Int | BaseTy::SymInt => json!(self.int()),
            BaseTy::Float | BaseTy::Scalar => self.scalar(),
            BaseTy::Bool => json!(self.chance(0.5)),
            BaseTy::Str => json!(self.pick(&["none", "tanh", "mean", "bogus"])),
            _ => Value::Null,
        }
    }
}

fn all_arguments(f: &autograd_codegen::model::schema::FunctionSchema) -> Vec<&Argument> {
    let a = &f.arguments;
    a.flat_non_out().chain(a.out.iter()).collect()
}

/// Backward through every output that carries a gradient (errors are fine, panics are not).
fn backward_through<B: ConformanceTensor>(outs: &[Variable<B>]) -> Result<(), AutogradError> {
    for o in outs.iter().filter(|o| o.requires_grad()) {
        sum(o, None)?.backward()?;
    }
    Ok(())
}

/// What [`random_calls`] found.
pub struct NoPanicReport {
    /// Calls (and backward passes) that returned `Ok`.
    pub ok: usize,
    /// Calls that returned an `Err`.
    pub err: usize,
    /// `op with {arguments}: message`, for each call that panicked.
    pub panics: Vec<String>,
}

/// Calls every function of the op set `rounds` times with random arguments of its schema's
/// types (0-d and empty tensors, the backend's non-contiguous layout, out-of-range dims and
/// indices, NaN and huge scalars, leaf and non-leaf inputs), then backward through what it
/// returned. A backend must never panic: every call gives `Ok` or `Err`.
pub fn random_calls<B: ConformanceTensor>(rounds: usize) -> NoPanicReport {
    let analysis = super::analysis();
    let mut r = NoPanicReport {
        ok: 0,
        err: 0,
        panics: Vec::new(),
    };
    for (fi, f) in analysis.functions.iter().enumerate() {
        let one = calls_of::<B>(fi, &f.func, rounds);
        r.ok += one.ok;
        r.err += one.err;
        r.panics.extend(one.panics);
    }
    r
}

/// [`random_calls`] as one case per function of the op set that `kit`'s options select
/// (each on the kit's worker thread under its time limit): one record per function (check
/// `no panic`), failed with the first panic and how many calls panicked.
pub fn no_panic_calls<B: ConformanceTensor>(kit: &mut super::Kit) {
    let rounds = kit.options.rounds;
    let names = |a: &autograd_codegen::analysis::Analysis| -> Vec<String> {
        a.functions
            .iter()
            .map(|f| f.func.name.to_string())
            .collect()
    };
    let jobs = super::jobs_of(
        kit,
        "no panic",
        || names(&super::analysis()),
        |n| (n.clone(), n.clone()),
    );
    let run = Arc::new(
        move |a: &autograd_codegen::analysis::Analysis, i: usize, ctx: &Ctx| {
            let f = &a.functions[i].func;
            let op = f.name.to_string();
            let case = format!("{op}, {rounds} random calls");
            ctx.check((&op, "no panic", "f64"), &case, || {
                let r = calls_of::<B>(i, f, rounds);
                ctx.calls(r.ok, r.err);
                match r.panics.first() {
                    None => Ok(()),
                    Some(p) => Err(format!(
                        "{} of {rounds} calls panicked, first {p}",
                        r.panics.len()
                    )),
                }
            });
        },
    );
    run_jobs(
        kit,
        "no-panic calls (f64)",
        &jobs,
        Arc::new(super::analysis),
        run,
    );
    println!(
        "[kit] no-panic property test: {} calls Ok, {} Err",
        kit.calls.0, kit.calls.1
    );
}

/// `rounds` random calls of the function `f`, the `fi`-th of the analysis (its seeds).
fn calls_of<B: ConformanceTensor>(
    fi: usize,
    schema: &autograd_codegen::model::schema::FunctionSchema,
    rounds: usize,
) -> NoPanicReport {
    let op = schema.name.to_string();
    let mut r = NoPanicReport {
        ok: 0,
        err: 0,
        panics: Vec::new(),
    };
    for round in 0..rounds {
        let mut rng = Gen::<B> {
            g: Generator::new((fi * 1000 + round) as u64),
            env: HashMap::new(),
        };
        let mut args = Map::new();
        for a in all_arguments(schema) {
            let v = rng.value(&a.name, &a.ty);
            args.insert(a.name.clone(), v);
        }
        let env = std::mem::take(&mut rng.env);
        let out = guarded(|| {
            let outs = dispatch(
                &op,
                &Args {
                    a: &args,
                    env: &env,
                },
            )?;
            backward_through(&outs).map_err(|e| e.to_string())
        });
        match out {
            Err(e) if e.starts_with("(a panic)") => {
                r.panics
                    .push(format!("{op} with {}: {e}", Value::Object(args.clone())));
            }
            Err(e) if e.starts_with("op missing") => r.panics.push(e),
            Err(_) => r.err += 1,
            Ok(()) => r.ok += 1,
        }
    }
    r
}
