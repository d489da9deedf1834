//! Forward-mode AD of every ndtensor operator: the generated forward formulas (PyTorch's,
//! translated) against central finite differences and against reverse mode
//! (`check_forward`), on the gradcheck cases (random shapes, broadcasting, non-contiguous
//! inputs, composites) and the in-place cases. Both lists are checked against the analysis of
//! the YAML files, so an operator added without a forward formula or a case fails here. Also:
//! PyTorch's errors (out= variants; a function whose formula is removed), views and in-place
//! ops on dual tensors, forward-over-reverse Hessian-vector products.

mod common;

use autograd::functional::hvp;
use autograd::gradcheck::{Tolerances, check_forward};
use autograd::runtime::{GradOptions, Variable, dual_level, grad_with, make_dual, unpack_dual};
use autograd_codegen::emit::build::Builder;
use common::cases::*;
use common::inplace_cases::*;
use common::*;
use ndtensor::ops::*;
use ndtensor::{NdTensor, Var};
use std::collections::BTreeSet;

/// Non-out= functions with a differentiable input and a differentiable output: each must
/// have a forward formula (`isnan`, whose input is `non_differentiable`, needs none, as in
/// torchgen).
fn functions_needing_a_forward_formula() -> Vec<(String, bool)> {
    let a = analysis();
    a.results
        .iter()
        .filter(|r| {
            !a.functions[r.func].func.is_out_fn()
                && r.main_info()
                    .is_some_and(|i| !i.args_with_derivatives.is_empty())
                && r.differentiable_outputs
                    .as_ref()
                    .is_ok_and(|o| !o.is_empty())
        })
        .map(|r| {
            let has = r
                .main_info()
                .is_some_and(|i| !i.forward_derivatives.is_empty());
            (a.functions[r.func].func.name.to_string(), has)
        })
        .collect()
}

#[test]
fn every_differentiable_function_has_a_forward_formula() {
    let all = functions_needing_a_forward_formula();
    // The functions PyTorch refuses forward AD for (the op set's refusal is checked by the
    // kit's forward check of their cases) have none.
    let refused = autograd_opset::conformance::cases::NO_FORWARD_FORMULA;
    let missing: Vec<&String> = all
        .iter()
        .filter(|(f, has)| !has && !refused.contains(&f.as_str()))
        .map(|(f, _)| f)
        .collect();
    assert!(missing.is_empty(), "no forward formula: {missing:?}");
    for f in refused {
        assert!(
            all.iter().any(|(g, has)| g == f && !has),
            "{f} is listed without a forward formula"
        );
    }
    assert!(all.len() >= 90, "{} functions", all.len());
}

#[test]
fn every_operator_has_a_forward_case() {
    let mut covered: BTreeSet<&str> = cases().iter().map(|c| c.op).collect();
    covered.extend(inplace_cases().iter().map(|c| c.op));
    let missing: Vec<String> = differentiable_functions()
        .into_iter()
        .filter(|(op, kind)| *kind != "out" && !covered.contains(op.as_str()))
        .map(|(op, _)| op)
        .collect();
    assert!(missing.is_empty(), "no forward case: {missing:?}");
}

/// `f` run under `catch_unwind`, so one failing case names itself and the others still run.
fn run_check(f: &dyn Fn(&[Var]) -> Var, inputs: &[T]) -> Result<(), String> {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        check_forward(f, inputs, Tolerances::default())
    }));
    match r {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(p) => Err(match p.downcast_ref::<&str>() {
            Some(s) => s.to_string(),
            None => p.downcast_ref::<String>().cloned().unwrap_or_default(),
        }),
    }
}

#[test]
fn every_operator_passes_check_forward() {
    let all = cases();
    let failures: Vec<String> = all
        .iter()
        .filter_map(|cs| {
            let r = run_check(&cs.f, &cs.inputs);
            use autograd_opset::conformance::cases::{forward_refusal, refusal_text};
            if let Some(function) = forward_refusal(cs.op) {
                // PyTorch's refusal, naming the function.
                let want = refusal_text(function);
                return match r {
                    Err(e) if e.contains(&want) => None,
                    other => Some(format!("{} ({}): not refused: {other:?}", cs.op, cs.label)),
                };
            }
            let e = r.err()?;
            Some(format!("{} ({}): {e}", cs.op, cs.label))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

#[test]
fn every_inplace_operator_passes_check_forward() {
    let all = inplace_cases();
    let failures: Vec<String> = all
        .iter()
        .filter_map(|c| {
            // In place on a differentiable non-leaf copy of the first input.
            let f = |x: &[Var]| {
                let t = mul_scalar(&x[0], 1.0).unwrap();
                (c.inplace)(&t, &x[1..])
            };
            let mut inputs = vec![c.x.clone()];
            inputs.extend(c.others.iter().cloned());
            let e = run_check(&f, &inputs).err()?;
            Some(format!("{}: {e}", c.op))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn inplace_on_views_passes_check_forward() {
    let r = Rng::new(31);
    // A row of a transposed copy, modified in place: the base takes the new tangent.
    let f = |x: &[Var]| {
        let b = mul_scalar(&x[0], 1.0).unwrap();
        let row = select_int(&t(&b).unwrap(), 0, 1).unwrap();
        mul_tensor_(&row, &x[1]).unwrap();
        exp_(&row).unwrap();
        b
    };
    run_check(&f, &[r.nc(&[3, 2]), r.t(&[3])]).unwrap();
    // A slice written through `add_` with a broadcast operand, then a reduction.
    let f = |x: &[Var]| {
        let b = mul_scalar(&x[0], 1.0).unwrap();
        let s = slice_tensor(&b, 1, Some(1), None, 1).unwrap();
        add_tensor_(&s, &x[1], 0.5).unwrap();
        sum_dim_intlist(&mul_tensor(&b, &b).unwrap(), Some(&[1]), false, None).unwrap()
    };
    run_check(&f, &[r.t(&[2, 4]), r.t(&[1, 3])]).unwrap();
}

fn vals(v: &Var) -> Vec<f64> {
    v.data().to_vec()
}

fn tangent(v: &Var) -> Vec<f64> {
    vals(&unpack_dual(v).unwrap().tangent.expect("a tangent"))
}

#[test]
fn views_and_inplace_on_duals() {
    let _l = dual_level();
    let p = Var::from_data(v(&[1.0, 2.0, 3.0, 4.0], &[2, 2]));
    let dual = make_dual(&p, &Var::from_data(v(&[1.0, 0.0, 0.0, 2.0], &[2, 2]))).unwrap();
    // A view's tangent is the view of its base's tangent.
    assert_eq!(tangent(&t(&dual).unwrap()), vec![1.0, 0.0, 0.0, 2.0]);
    assert_eq!(tangent(&select_int(&dual, 0, 1).unwrap()), vec![0.0, 2.0]);
    // In place on the dual: the write reaches the primal, the tangent stays with the dual.
    mul_scalar_(&dual, 3.0).unwrap();
    assert_eq!(vals(&p), vec![3.0, 6.0, 9.0, 12.0]);
    assert!(unpack_dual(&p).unwrap().tangent.is_none());
    assert_eq!(tangent(&dual), vec![3.0, 0.0, 0.0, 6.0]);
    // A view taken before an in-place change of its base follows the base's new tangent.
    let base = clone(&dual, None).unwrap();
    let col = select_int(&base, 1, 0).unwrap();
    exp_(&base).unwrap();
    let want: Vec<f64> = [3.0f64, 9.0]
        .iter()
        .zip([3.0, 0.0])
        .map(|(x, t)| t * x.exp())
        .collect();
    assert_eq!(tangent(&col), want);
    // In place on a view of a copy: the base's tangent changes in that row only.
    let base = clone(&dual, None).unwrap();
    let row = select_int(&base, 0, 0).unwrap();
    let other = make_dual(
        &Var::from_data(v(&[2.0, 2.0], &[2])),
        &Var::from_data(v(&[1.0, 1.0], &[2])),
    )
    .unwrap();
    mul_tensor_(&row, &other).unwrap();
    // d(row * other) = row_t * other + row * other_t = [3*2 + 3*1, 0*2 + 6*1].
    assert_eq!(tangent(&base), vec![9.0, 6.0, 0.0, 6.0]);
    assert_eq!(tangent(&row), vec![9.0, 6.0]);
    // Non-differentiable outputs get no tangent (PyTorch: argmax, comparisons).
    assert!(
        unpack_dual(&argmax(&dual, None, false).unwrap())
            .unwrap()
            .tangent
            .is_none()
    );
    assert!(
        unpack_dual(&gt_scalar(&dual, 0.0).unwrap())
            .unwrap()
            .tangent
            .is_none()
    );
}

#[test]
fn out_variants_raise_pytorchs_error() {
    let _l = dual_level();
    let x = make_dual(
        &Var::from_data(v(&[1.0, 2.0], &[2])),
        &Var::from_data(v(&[1.0, 1.0], &[2])),
    )
    .unwrap();
    let out = Var::from_data(v(&[0.0, 0.0], &[2]));
    for (name, r) in [
        ("mul_out", mul_out(&x, &x, &out)),
        ("exp_out", exp_out(&x, &out)),
        ("add_out", add_out(&x, &x, 1.0, &out)),
    ] {
        assert_eq!(
            r.unwrap_err().to_string(),
            format!(
                "Trying to use forward AD with {name} that does not support it because it is an out= function"
            )
        );
    }
    // Without a tangent among the inputs, out= works under a live level.
    let plain = Var::from_data(v(&[1.0, 2.0], &[2]));
    exp_out(&plain, &out).unwrap();
    assert!((vals(&out)[1] - 2f64.exp()).abs() < 1e-12);
}

#[test]
fn a_function_without_a_forward_formula_raises_pytorchs_error() {
    // ndtensor's YAML with `sin`'s forward formula removed: the generated wrapper refuses a
    // tangent with PyTorch's message (the toy crate's tests run that wrapper).
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ndtensor-no-fw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/../../opset");
    let yaml = std::fs::read_to_string(format!("{src}/derivatives.yaml")).unwrap();
    let cut = yaml.replace(
        "  self: grad * self.cos().conj()\n  result: auto_element_wise\n",
        "  self: grad * self.cos().conj()\n",
    );
    assert_ne!(cut, yaml, "sin's entry moved");
    std::fs::write(dir.join("derivatives.yaml"), cut).unwrap();
    for f in ["native_functions.yaml", "functions.h"] {
        std::fs::copy(format!("{src}/{f}"), dir.join(f)).unwrap();
    }
    let code = Builder::new("derivatives.yaml")
        .native("native_functions.yaml")
        .helpers("crate::helpers")
        .fallible(true)
        .cpp("functions.h")
        .base_dir(&dir)
        .generate()
        .expect("generates");
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        code.contains(r#"fw_forbid(&[self_], "sin", false)"#),
        "no check for sin"
    );
    assert!(
        code.contains(r#"fw_forbid(&[self_], "sin_", false)"#),
        "no check for sin_"
    );
    assert!(
        !code.contains(r#"fw_forbid(&[self_], "cos", false)"#),
        "cos has a formula"
    );
    assert_eq!(
        autograd::runtime::forward::not_supported("sin", false),
        "Trying to use forward AD with sin that does not support it because it has not been implemented yet.\nPlease file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so that we can prioritize its implementation or submit a PR adding the implementation to derivatives.yaml"
    );
}

/// H v by double backward: grad of (grad f . v).
fn hvp_double_backward(f: &dyn Fn(&[Var]) -> Var, x: &T, dir: &T) -> Vec<f64> {
    let xv = ndtensor::param(x.clone());
    let y = f(std::slice::from_ref(&xv));
    let opts = |cg| GradOptions {
        create_graph: cg,
        retain_graph: Some(true),
        ..Default::default()
    };
    let g = grad_with(&[y], std::slice::from_ref(&xv), &[], opts(true)).unwrap()[0]
        .clone()
        .unwrap();
    let gv = sum(&mul_tensor(&g, &Var::from_data(dir.clone())).unwrap(), None).unwrap();
    let h = grad_with(&[gv], std::slice::from_ref(&xv), &[], opts(false)).unwrap();
    vals(h[0].as_ref().unwrap())
}

#[test]
fn forward_over_reverse_hvp_equals_double_backward() {
    let r = Rng::new(99);
    let target = Var::from_data(T::from_i64(vec![0, 2, 1, 1], &[4]));
    let w2: T = r.t::<T>(&[3, 3]);
    type G = Box<dyn Fn(&[Var]) -> Var>;
    let fs: Vec<(&str, T, G)> = vec![
        ("log_softmax . nll_loss", r.t(&[4, 3]), {
            let tg = target.clone();
            Box::new(move |x: &[Var]| cross_entropy_loss(&x[0], &tg, None, 1, -100, 0.1).unwrap())
        }),
        ("mlp: tanh(x W) . mse", r.t(&[4, 3]), {
            let w = Var::from_data(w2.clone());
            Box::new(move |x: &[Var]| {
                let h = tanh(&matmul(&x[0], &w).unwrap()).unwrap();
                mse_loss(&h, &Var::from_data(NdTensor::zeros(&[4, 3])), 1).unwrap()
            })
        }),
        (
            "layer_norm . softmax . logsumexp",
            r.t(&[2, 5]),
            Box::new(|x: &[Var]| {
                let y = layer_norm(&x[0], &[5], None, None, 1e-5, true).unwrap();
                let s = softmax_int(&mul_scalar(&y, 2.0).unwrap(), 1, None).unwrap();
                sum(
                    &logsumexp(&mul_tensor(&s, &y).unwrap(), &[1], false).unwrap(),
                    None,
                )
                .unwrap()
            }),
        ),
        (
            "pow . sigmoid . gelu . amax",
            r.pos(&[3, 4]),
            Box::new(|x: &[Var]| {
                let y = gelu(
                    &sigmoid(&pow_tensor_scalar(&x[0], 1.5).unwrap()).unwrap(),
                    "tanh",
                )
                .unwrap();
                sum(
                    &amax(&mul_tensor(&y, &x[0]).unwrap(), &[1], false).unwrap(),
                    None,
                )
                .unwrap()
            }),
        ),
    ];
    for (name, x, f) in fs {
        let dir = r.t(x.shape());
        let a = hvp_double_backward(&f, &x, &dir);
        let (_, hv) = hvp(
            |p: &[Var]| f(p),
            &[Var::from_data(x.clone())],
            &[Var::from_data(dir.clone())],
        )
        .unwrap();
        let b = vals(&hv[0]);
        for (p, q) in a.iter().zip(&b) {
            assert!(
                (p - q).abs() < 1e-9 * (1.0 + p.abs()),
                "{name}: {a:?} vs {b:?}"
            );
        }
    }
}

#[test]
fn nested_levels_on_ndtensor_ops() {
    // f(x) = sum(exp(x) * x) at x: the outer level's tangent of the inner level's tangent is
    // v^T H v = sum(v^2 (x + 2) exp(x)).
    use autograd::runtime::forward::{make_dual_at, unpack_dual_at};
    let x = v(&[0.3, -0.4], &[2]);
    let dir = v(&[1.0, 2.0], &[2]);
    let outer = dual_level();
    let xo = make_dual_at(
        &Var::from_data(x.clone()),
        &Var::from_data(dir.clone()),
        outer.level(),
    )
    .unwrap();
    let inner = dual_level();
    let xi = make_dual_at(&xo, &Variable::from_data(dir.clone()), inner.level()).unwrap();
    let y = sum(&mul_tensor(&exp(&xi).unwrap(), &xi).unwrap(), None).unwrap();
    let t_inner = unpack_dual_at(&y, inner.level()).unwrap().tangent.unwrap();
    let d2 = unpack_dual_at(&t_inner, outer.level())
        .unwrap()
        .tangent
        .unwrap();
    let want: f64 = x
        .to_vec()
        .iter()
        .zip(dir.to_vec())
        .map(|(x, v)| v * v * (x + 2.0) * x.exp())
        .sum();
    assert!(
        (vals(&d2)[0] - want).abs() < 1e-12,
        "{:?} vs {want}",
        vals(&d2)
    );
    drop(inner);
    drop(outer);
}

#[test]
fn check_forward_catches_a_wrong_tangent() {
    // The tangent of `x * detach(x)` is x_t x; the finite difference sees 2 x x_t.
    let wrong = |x: &[Var]| mul_tensor(&x[0], &x[0].detach()).unwrap();
    assert!(run_check(&wrong, &[v(&[0.5, 2.0], &[2])]).is_err());
    // A panicking case is reported, not fatal to the loop.
    let panics = |_: &[Var]| -> Var { panic!("boom") };
    assert_eq!(run_check(&panics, &[v(&[1.0], &[1])]).unwrap_err(), "boom");
}

/// A hand-written node whose backward is a jvp: `tanh`'s gradient computed as the
/// Jacobian-vector product of `tanh` along the incoming gradient (its Jacobian is diagonal).
struct TanhByJvp(Var);

impl autograd::runtime::Node<NdTensor> for TanhByJvp {
    fn name(&self) -> &str {
        "TanhByJvpBackward"
    }
    fn apply(
        &mut self,
        grads: autograd::runtime::VariableList<NdTensor>,
    ) -> Result<autograd::runtime::VariableList<NdTensor>, autograd::runtime::AutogradError> {
        let g = grads[0].clone().expect("a gradient");
        let x = Var::from_data(self.0.data());
        let (_, t) = autograd::functional::jvp(|p| tanh(&p[0]), &[x], &[g])?;
        Ok(autograd::runtime::variable_list![Some(t)])
    }
}

#[test]
fn a_jvp_inside_backward() {
    // PyTorch 2.15: an autograd.Function whose backward returns
    // torch.func.jvp(torch.tanh, (x,), (g,))[1], at x = [0.3, -1.2, 2.0], with
    // L = sum(F(x) * [0.5, -1.0, 2.0]), gives x.grad below.
    let pytorch = [
        0.4575684809133146,
        -0.30501999620740905,
        0.14130164970632886,
    ];
    let x = Var::new(NdTensor::from_vec(vec![0.3, -1.2, 2.0], &[3]), true);
    let raw = tanh(&x.detach()).unwrap().data();
    let ([y], _) = autograd::runtime::record(TanhByJvp(x.clone()), &[Some(&x)], [raw]);
    let w = Var::from_data(NdTensor::from_vec(vec![0.5, -1.0, 2.0], &[3]));
    sum(&mul_tensor(&y, &w).unwrap(), None)
        .unwrap()
        .backward()
        .unwrap();
    let got = x.grad().unwrap().data().to_vec();
    for (a, b) in got.iter().zip(pytorch) {
        assert!((a - b).abs() < 1e-12, "{got:?} vs PyTorch {pytorch:?}");
    }
    // The same backward while a level is live (a backward pass inside a jvp, as in forward
    // over reverse): the node's jvp enters a level inside it and exits it again.
    let outer = dual_level();
    let v = Var::from_data(NdTensor::from_vec(vec![1.0, 2.0, -1.0], &[3]));
    let xd = make_dual(&x, &v).unwrap();
    let raw = tanh(&xd.detach()).unwrap().data();
    let ([y], _) = autograd::runtime::record(TanhByJvp(xd.clone()), &[Some(&xd)], [raw]);
    let l = sum(&mul_tensor(&y, &w).unwrap(), None).unwrap();
    let g = autograd::runtime::grad(&[l], std::slice::from_ref(&x), &[None], None, true, false)
        .unwrap();
    let g = g[0].clone().unwrap();
    assert_eq!(vals(&g), got, "the same gradient under a live level");
    drop(outer);
}

#[test]
fn a_tangent_computed_from_an_output_that_requires_grad_is_recorded() {
    // PyTorch 2.15, float64: x = [0.5] requiring grad, made dual with tangent [1] and taken
    // through two steps of W1's chain y = tanh(y * 0.999 + 0.001). The tangent's formula reads
    // the recorded `result`, so the tangent has a history of its own (grad_fn
    // TanhBackwardBackward0), and backward through it gives the second derivative.
    let x = Var::new(NdTensor::from_vec(vec![0.5], &[1]), true);
    let _level = dual_level();
    let one = Var::from_data(NdTensor::from_vec(vec![1.0], &[1]));
    let mut y = make_dual(&x, &one).unwrap();
    for _ in 0..2 {
        y = tanh(&add_scalar(&mul_scalar(&y, 0.999).unwrap(), 0.001, 1.0).unwrap()).unwrap();
    }
    let u = unpack_dual(&y).unwrap();
    let t = u.tangent.expect("a tangent");
    assert!((vals(&u.primal)[0] - 0.4325649766321398).abs() < 1e-15);
    assert!(
        (vals(&t)[0] - 0.6377207207222558).abs() < 1e-15,
        "{:?}",
        vals(&t)
    );
    assert!(t.requires_grad());
    let name = t.grad_fn().map(|n| n.name());
    assert_eq!(name.as_deref(), Some("TanhBackwardBackward0"));
    t.backward().unwrap();
    let g = vals(&x.grad().unwrap())[0];
    assert!((g - -1.0221394881937207).abs() < 1e-14, "{g}");
}
