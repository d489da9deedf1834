//! PyTorch's own answers, replayed: every fixture of `tests/fixtures/*.json` (recorded in
//! float64 by `tools/pytorch_fixtures/record.py`, which needs PyTorch; CI only replays) is a
//! small program of ATen operators. One dispatcher ([`dispatch`]) maps each step (the op's schema
//! name + its arguments by schema name) to ndtensor's generated wrapper; the values, the
//! gradients of `sum(output * proj)` (or `sum(output)`), the second-order gradients of
//! `sum_i <g_i, gv_i>`, and PyTorch's error messages are compared.
//!
//! `KNOWN_DIFFERENCES` lists the fixtures ndtensor does not match yet, each with its reason
//! (mostly issue 12's view + in-place items). Every other fixture must pass, and every listed
//! fixture must still fail: fixing a difference forces removing it from the list.

mod common;

use autograd::runtime::{self as rt, AutogradError, GradModeGuard};
use ndtensor::ops::*;
use ndtensor::{NdTensor, Var};
use serde_json::{Map, Value};
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};

const RTOL: f64 = 1e-6;
const ATOL: f64 = 1e-9;

/// Fixtures ndtensor does not match yet: `(fixture name, reason)`. Each must FAIL.
#[rustfmt::skip]
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    // ---- issue 12 item 5
    ("view_inplace/chunk", "issue 12 item 5: PyTorch's chunk is a composite of split, so its message names Split; ndtensor's chunk has its own node (Chunk)"),
    ("errors/inplace_multi_output_view_chunk", "issue 12 item 5: PyTorch's chunk is a composite of split, so its message names Split; ndtensor's chunk has its own node (Chunk)"),
    ("errors/repeated_dim", "issue 12 item 5: a dim repeated in a dim list is not refused"),
    ("errors/repeated_dim_negative", "issue 12 item 5: a dim repeated in a dim list (1 and -1) is not refused"),
    ("errors/view_of_noncontiguous", "issue 12 item 5: view of a non-contiguous tensor is not refused"),
    // ---- issue 12 item 7
    ("losses/nll_nchw", "issue 12 item 7: PyTorch's error text, but raised as a panic, not an Err"),
    ("shape_errors/add_mismatch", "issue 12 item 7: shape error with ndtensor's own wording (a panic), not PyTorch's"),
    ("shape_errors/bmm_2d", "issue 12 item 7: shape error with ndtensor's own wording (a panic), not PyTorch's"),
    ("shape_errors/cat_mismatch", "issue 12 item 7: shape error with ndtensor's own wording (a panic), not PyTorch's"),
    ("shape_errors/cross_entropy_batch_mismatch", "issue 12 item 7: shape error with ndtensor's own wording (a panic), not PyTorch's"),
    ("shape_errors/dim_out_of_range", "issue 12 item 7: shape error with ndtensor's own wording (a panic), not PyTorch's"),
    ("shape_errors/matmul_mismatch", "issue 12 item 7: shape error with ndtensor's own wording (a panic), not PyTorch's"),
    ("shape_errors/mm_1d", "issue 12 item 7: shape error with ndtensor's own wording (a panic), not PyTorch's"),
    ("shape_errors/mm_mismatch", "issue 12 item 7: shape error with ndtensor's own wording (a panic), not PyTorch's"),
    ("shape_errors/mse_loss_mismatch", "issue 12 item 7: shape error with ndtensor's own wording (a panic), not PyTorch's"),
    ("shape_errors/nll_loss_batch_mismatch", "issue 12 item 7: shape error with ndtensor's own wording (a panic), not PyTorch's"),
    ("shape_errors/nll_loss_target_out_of_bounds", "issue 12 item 7: shape error with ndtensor's own wording (a panic), not PyTorch's"),
    ("shape_errors/view_bad_size", "issue 12 item 7: shape error with ndtensor's own wording (a panic), not PyTorch's"),
    ("zero_dim/dim_out_of_range", "issue 12 item 7: error wording differs (dimension out of range)"),
    // ---- issue 12 item 9
    // ---- not in issue 12's list
    ("empty/amax_empty", "not in issue 12: amax over an empty dim does not raise"),
    ("shape_errors/mse_loss_mismatch_broadcast", "documented PyTorch difference: with a target that broadcasts, PyTorch's mse_loss_backward normalizes the target's gradient by the target's numel (PyTorch warns this 'will likely lead to incorrect results'); ndtensor gives the true derivative, half of it here"),
];

/// Functions of ndtensor's YAML that no fixture exercises: `(schema name, reason)`.
const EXCLUDED: &[(&str, &str)] = &[];

/// Pseudo-ops of the program format (not ATen operators).
const SPECIAL: &[&str] = &["detach", "set_grad_enabled", "requires_grad_"];

// ------------------------------------------------------------------------------- fixtures

fn fixtures() -> Vec<Value> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("tests/fixtures")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{f:?}: {e}"));
        out.extend(v["fixtures"].as_array().expect("fixtures").iter().cloned());
    }
    out
}

fn num(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap(),
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) if s == "inf" => f64::INFINITY,
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        Value::String(s) if s == "nan" => f64::NAN,
        v => panic!("not a number: {v}"),
    }
}

fn shape_of(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect()
}

fn tensor(data: &Value, shape: &[usize]) -> NdTensor<f64> {
    let d: Vec<f64> = data.as_array().unwrap().iter().map(num).collect();
    NdTensor::from_vec(d, shape)
}

// ------------------------------------------------------------------------------- dispatcher

/// The arguments of one step, by schema argument name.
struct Args<'a> {
    a: &'a Map<String, Value>,
    env: &'a HashMap<String, Var>,
}

type R<T> = Result<T, String>;

impl Args<'_> {
    fn get(&self, k: &str) -> R<&Value> {
        self.a.get(k).ok_or_else(|| format!("argument {k} missing"))
    }
    fn t(&self, k: &str) -> R<Var> {
        let v = self.get(k)?;
        let name = v["t"]
            .as_str()
            .ok_or_else(|| format!("{k}: not a tensor"))?;
        self.env
            .get(name)
            .cloned()
            .ok_or_else(|| format!("unknown tensor {name}"))
    }
    fn ot(&self, k: &str) -> R<Option<Var>> {
        match self.a.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.t(k).map(Some),
        }
    }
    fn tl(&self, k: &str) -> R<Vec<Var>> {
        let v = self.get(k)?;
        v["tl"]
            .as_array()
            .ok_or_else(|| format!("{k}: not a tensor list"))?
            .iter()
            .map(|n| {
                let n = n.as_str().unwrap();
                self.env
                    .get(n)
                    .cloned()
                    .ok_or_else(|| format!("unknown tensor {n}"))
            })
            .collect()
    }
    fn f(&self, k: &str) -> R<f64> {
        Ok(num(self.get(k)?))
    }
    fn of(&self, k: &str) -> R<Option<f64>> {
        match self.a.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => Ok(Some(num(v))),
        }
    }
    fn i(&self, k: &str) -> R<i64> {
        self.get(k)?
            .as_i64()
            .ok_or_else(|| format!("{k}: not an int"))
    }
    fn oi(&self, k: &str) -> R<Option<i64>> {
        match self.a.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.i(k).map(Some),
        }
    }
    fn b(&self, k: &str) -> R<bool> {
        self.get(k)?
            .as_bool()
            .ok_or_else(|| format!("{k}: not a bool"))
    }
    fn ob(&self, k: &str) -> R<Option<bool>> {
        match self.a.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.b(k).map(Some),
        }
    }
    fn ints(&self, k: &str) -> R<Vec<i64>> {
        self.get(k)?
            .as_array()
            .ok_or_else(|| format!("{k}: not an int list"))?
            .iter()
            .map(|x| x.as_i64().ok_or_else(|| format!("{k}: not an int")))
            .collect()
    }
    fn oints(&self, k: &str) -> R<Option<Vec<i64>>> {
        match self.a.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.ints(k).map(Some),
        }
    }
    fn s(&self, k: &str) -> R<String> {
        Ok(self
            .get(k)?
            .as_str()
            .ok_or_else(|| format!("{k}: not a string"))?
            .to_string())
    }
}

fn ip(r: Result<Var, AutogradError>) -> R<Vec<Var>> {
    r.map(|v| vec![v]).map_err(|e| e.to_string())
}

/// One step: the op's schema name and its arguments -> the outputs. An `Err` is an error
/// ndtensor reports (its message is compared with PyTorch's); an op ndtensor lacks gives
/// `op missing in ndtensor: <op>`. Long on purpose: one match arm per op of the YAML, a table.
fn dispatch(op: &str, a: &Args) -> R<Vec<Var>> {
    let one = |v: Var| Ok(vec![v]);
    let two = |(x, y): (Var, Var)| Ok(vec![x, y]);
    match op {
        "add.Tensor" => one(add_tensor(&a.t("self")?, &a.t("other")?, a.f("alpha")?)),
        "add_.Tensor" => ip(add_tensor_(&a.t("self")?, &a.t("other")?, a.f("alpha")?)),
        "add.out" => ip(add_out(
            &a.t("self")?,
            &a.t("other")?,
            a.f("alpha")?,
            &a.t("out")?,
        )),
        "add.Scalar" => one(add_scalar(&a.t("self")?, a.f("other")?, a.f("alpha")?)),
        "add_.Scalar" => ip(add_scalar_(&a.t("self")?, a.f("other")?, a.f("alpha")?)),
        "sub.Tensor" => one(sub_tensor(&a.t("self")?, &a.t("other")?, a.f("alpha")?)),
        "sub_.Tensor" => ip(sub_tensor_(&a.t("self")?, &a.t("other")?, a.f("alpha")?)),
        "sub.out" => ip(sub_out(
            &a.t("self")?,
            &a.t("other")?,
            a.f("alpha")?,
            &a.t("out")?,
        )),
        "sub.Scalar" => one(sub_scalar(&a.t("self")?, a.f("other")?, a.f("alpha")?)),
        "sub_.Scalar" => ip(sub_scalar_(&a.t("self")?, a.f("other")?, a.f("alpha")?)),
        "abs_" => ip(abs_(&a.t("self")?)),
        "pow_.Scalar" => ip(pow_scalar_(&a.t("self")?, a.f("exponent")?)),
        "leaky_relu_" => ip(leaky_relu_(&a.t("self")?, a.f("negative_slope")?)),
        "mul.Tensor" => one(mul_tensor(&a.t("self")?, &a.t("other")?)),
        "mul_.Tensor" => ip(mul_tensor_(&a.t("self")?, &a.t("other")?)),
        "mul.out" => ip(mul_out(&a.t("self")?, &a.t("other")?, &a.t("out")?)),
        "mul.Scalar" => one(mul_scalar(&a.t("self")?, a.f("other")?)),
        "mul_.Scalar" => ip(mul_scalar_(&a.t("self")?, a.f("other")?)),
        "div.Tensor" => one(div_tensor(&a.t("self")?, &a.t("other")?)),
        "div_.Tensor" => ip(div_tensor_(&a.t("self")?, &a.t("other")?)),
        "div.out" => ip(div_out(&a.t("self")?, &a.t("other")?, &a.t("out")?)),
        "div.Scalar" => one(div_scalar(&a.t("self")?, a.f("other")?)),
        "div_.Scalar" => ip(div_scalar_(&a.t("self")?, a.f("other")?)),
        "neg" => one(neg(&a.t("self")?)),
        "neg_" => ip(neg_(&a.t("self")?)),
        "neg.out" => ip(neg_out(&a.t("self")?, &a.t("out")?)),
        "exp" => one(exp(&a.t("self")?)),
        "exp_" => ip(exp_(&a.t("self")?)),
        "exp.out" => ip(exp_out(&a.t("self")?, &a.t("out")?)),
        "log" => one(log(&a.t("self")?)),
        "log_" => ip(log_(&a.t("self")?)),
        "sqrt" => one(sqrt(&a.t("self")?)),
        "sqrt_" => ip(sqrt_(&a.t("self")?)),
        "rsqrt" => one(rsqrt(&a.t("self")?)),
        "pow.Tensor_Scalar" => one(pow_tensor_scalar(&a.t("self")?, a.f("exponent")?)),
        "pow.Tensor_Tensor" => one(pow_tensor_tensor(&a.t("self")?, &a.t("exponent")?)),
        "abs" => one(abs(&a.t("self")?)),
        "sign" => one(sign(&a.t("self")?)),
        "sin" => one(sin(&a.t("self")?)),
        "sin_" => ip(sin_(&a.t("self")?)),
        "cos" => one(cos(&a.t("self")?)),
        "erf" => one(erf(&a.t("self")?)),
        "tanh" => one(tanh(&a.t("self")?)),
        "tanh_" => ip(tanh_(&a.t("self")?)),
        "tanh.out" => ip(tanh_out(&a.t("self")?, &a.t("out")?)),
        "tanh_backward" => one(tanh_backward(&a.t("grad_output")?, &a.t("output")?)),
        "sigmoid" => one(sigmoid(&a.t("self")?)),
        "sigmoid_" => ip(sigmoid_(&a.t("self")?)),
        "relu" => one(relu(&a.t("self")?)),
        "relu_" => ip(relu_(&a.t("self")?)),
        "leaky_relu" => one(leaky_relu(&a.t("self")?, a.f("negative_slope")?)),
        "threshold_backward" => one(threshold_backward(
            &a.t("grad_output")?,
            &a.t("self")?,
            a.f("threshold")?,
        )),
        "gelu" => one(gelu(&a.t("self")?, &a.s("approximate")?)),
        "gelu_" => ip(gelu_(&a.t("self")?, &a.s("approximate")?)),
        "clamp" => one(clamp(&a.t("self")?, a.of("min")?, a.of("max")?)),
        "clamp_" => ip(clamp_(&a.t("self")?, a.of("min")?, a.of("max")?)),
        "clamp.out" => ip(clamp_out(
            &a.t("self")?,
            a.of("min")?,
            a.of("max")?,
            &a.t("out")?,
        )),
        "where.self" => one(where_self(
            &a.t("condition")?,
            &a.t("self")?,
            &a.t("other")?,
        )),
        "maximum" => one(maximum(&a.t("self")?, &a.t("other")?)),
        "eq.Tensor" => one(eq_tensor(&a.t("self")?, &a.t("other")?)),
        "eq.Scalar" => one(eq_scalar(&a.t("self")?, a.f("other")?)),
        "ne.Scalar" => one(ne_scalar(&a.t("self")?, a.f("other")?)),
        "gt.Tensor" => one(gt_tensor(&a.t("self")?, &a.t("other")?)),
        "gt.Scalar" => one(gt_scalar(&a.t("self")?, a.f("other")?)),
        "lt.Tensor" => one(lt_tensor(&a.t("self")?, &a.t("other")?)),
        "lt.Scalar" => one(lt_scalar(&a.t("self")?, a.f("other")?)),
        "ge.Scalar" => one(ge_scalar(&a.t("self")?, a.f("other")?)),
        "le.Scalar" => one(le_scalar(&a.t("self")?, a.f("other")?)),
        "argmax" => one(argmax(&a.t("self")?, a.oi("dim")?, a.b("keepdim")?)),
        "new_zeros" => one(new_zeros(
            &a.t("self")?,
            &a.ints("size")?,
            None,
            None,
            None,
            None,
        )),
        "zeros_like" => one(zeros_like(&a.t("self")?, None, None, None, None, None)),
        "zero_" => ip(zero_(&a.t("self")?)),
        "fill_.Scalar" => ip(fill_scalar_(&a.t("self")?, a.f("value")?)),
        "mm" => one(mm(&a.t("self")?, &a.t("mat2")?)),
        "mm.out" => ip(mm_out(&a.t("self")?, &a.t("mat2")?, &a.t("out")?)),
        "matmul" => one(matmul(&a.t("self")?, &a.t("other")?)),
        "bmm" => one(bmm(&a.t("self")?, &a.t("mat2")?)),
        "sum" => one(sum(&a.t("self")?, None)),
        "sum.dim_IntList" => one(sum_dim_intlist(
            &a.t("self")?,
            a.oints("dim")?.as_deref(),
            a.b("keepdim")?,
            None,
        )),
        "sum.IntList_out" => ip(sum_intlist_out(
            &a.t("self")?,
            a.oints("dim")?.as_deref(),
            a.b("keepdim")?,
            None,
            &a.t("out")?,
        )),
        "mean" => one(mean(&a.t("self")?, None)),
        "mean.dim" => one(mean_dim(
            &a.t("self")?,
            a.oints("dim")?.as_deref(),
            a.b("keepdim")?,
            None,
        )),
        "max.dim" => two(max_dim(&a.t("self")?, a.i("dim")?, a.b("keepdim")?)),
        "amax" => one(amax(&a.t("self")?, &a.ints("dim")?, a.b("keepdim")?)),
        "softmax.int" => one(softmax_int(&a.t("self")?, a.i("dim")?, None)),
        "log_softmax.int" => one(log_softmax_int(&a.t("self")?, a.i("dim")?, None)),
        "logsumexp" => one(logsumexp(&a.t("self")?, &a.ints("dim")?, a.b("keepdim")?)),
        "transpose.int" => one(transpose_int(&a.t("self")?, a.i("dim0")?, a.i("dim1")?)),
        "t" => one(t(&a.t("self")?)),
        "permute" => one(permute(&a.t("self")?, &a.ints("dims")?)),
        "reshape" => one(reshape(&a.t("self")?, &a.ints("shape")?)),
        "view" => one(view(&a.t("self")?, &a.ints("size")?)),
        "expand" => one(expand(&a.t("self")?, &a.ints("size")?, a.b("implicit")?)),
        "squeeze" => one(squeeze(&a.t("self")?)),
        "squeeze.dim" => one(squeeze_dim(&a.t("self")?, a.i("dim")?)),
        "unsqueeze" => one(unsqueeze(&a.t("self")?, a.i("dim")?)),
        "slice.Tensor" => one(slice_tensor(
            &a.t("self")?,
            a.i("dim")?,
            a.oi("start")?,
            a.oi("end")?,
            a.i("step")?,
        )),
        "slice_backward" => one(slice_backward(
            &a.t("grad_output")?,
            &a.ints("input_sizes")?,
            a.i("dim")?,
            a.i("start")?,
            a.i("end")?,
            a.i("step")?,
        )),
        "cat" => one(cat(&a.tl("tensors")?, a.i("dim")?)),
        "cat.out" => ip(cat_out(&a.tl("tensors")?, a.i("dim")?, &a.t("out")?)),
        "stack" => one(stack(&a.tl("tensors")?, a.i("dim")?)),
        "unbind.int" => Ok(unbind_int(&a.t("self")?, a.i("dim")?)),
        "squeeze.dims" => one(squeeze_dims(&a.t("self")?, &a.ints("dim")?)),
        "clone" => one(clone(&a.t("self")?, None)),
        "diagonal" => one(diagonal(
            &a.t("self")?,
            a.i("offset")?,
            a.i("dim1")?,
            a.i("dim2")?,
        )),
        "diagonal_backward" => one(diagonal_backward(
            &a.t("grad_output")?,
            &a.ints("input_sizes")?,
            a.i("offset")?,
            a.i("dim1")?,
            a.i("dim2")?,
        )),
        "narrow" => one(narrow(
            &a.t("self")?,
            a.i("dim")?,
            a.i("start")?,
            a.i("length")?,
        )),
        "select.int" => one(select_int(&a.t("self")?, a.i("dim")?, a.i("index")?)),
        "split.Tensor" => Ok(split_tensor(&a.t("self")?, a.i("split_size")?, a.i("dim")?)),
        "chunk" => Ok(chunk(&a.t("self")?, a.i("chunks")?, a.i("dim")?)),
        "index_select" => one(index_select(&a.t("self")?, a.i("dim")?, &a.t("index")?)),
        "index_add" => one(index_add(
            &a.t("self")?,
            a.i("dim")?,
            &a.t("index")?,
            &a.t("source")?,
            a.f("alpha")?,
        )),
        "gather" => one(gather(
            &a.t("self")?,
            a.i("dim")?,
            &a.t("index")?,
            a.b("sparse_grad")?,
        )),
        "scatter_add" => one(scatter_add(
            &a.t("self")?,
            a.i("dim")?,
            &a.t("index")?,
            &a.t("src")?,
        )),
        "mse_loss" => one(mse_loss(&a.t("self")?, &a.t("target")?, a.i("reduction")?)),
        "nll_loss" => one(nll_loss(
            &a.t("self")?,
            &a.t("target")?,
            a.ot("weight")?.as_ref(),
            a.i("reduction")?,
            a.i("ignore_index")?,
        )),
        "nll_loss_forward" => two(nll_loss_forward(
            &a.t("self")?,
            &a.t("target")?,
            a.ot("weight")?.as_ref(),
            a.i("reduction")?,
            a.i("ignore_index")?,
        )),
        "nll_loss_backward" => one(nll_loss_backward(
            &a.t("grad_output")?,
            &a.t("self")?,
            &a.t("target")?,
            a.ot("weight")?.as_ref(),
            a.i("reduction")?,
            a.i("ignore_index")?,
            &a.t("total_weight")?,
        )),
        "cross_entropy_loss" => one(cross_entropy_loss(
            &a.t("self")?,
            &a.t("target")?,
            a.ot("weight")?.as_ref(),
            a.i("reduction")?,
            a.i("ignore_index")?,
            a.f("label_smoothing")?,
        )),
        "native_dropout" => two(native_dropout(&a.t("input")?, a.f("p")?, a.ob("train")?)),
        "native_dropout_backward" => one(native_dropout_backward(
            &a.t("grad_output")?,
            &a.t("mask")?,
            a.f("scale")?,
        )),
        "layer_norm" => one(layer_norm(
            &a.t("input")?,
            &a.ints("normalized_shape")?,
            a.ot("weight")?.as_ref(),
            a.ot("bias")?.as_ref(),
            a.f("eps")?,
            a.b("cudnn_enable")?,
        )),
        "embedding" => one(embedding(
            &a.t("weight")?,
            &a.t("indices")?,
            a.i("padding_idx")?,
            a.b("scale_grad_by_freq")?,
            a.b("sparse")?,
        )),
        // Pseudo-ops of the program format.
        "detach" => one(a.t("self")?.detach()),
        _ => Err(format!("op missing in ndtensor: {op}")),
    }
}

// ------------------------------------------------------------------------------- replay

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else {
        "panic".to_string()
    }
}

thread_local! {
    /// Set while a replay runs on this thread: its panics are expected and not printed.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Installs (once) a panic hook that stays silent on a thread replaying fixtures and defers to
/// the previous hook everywhere else (other tests of this binary run in parallel).
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                prev(info)
            }
        }));
    });
}

/// Runs `f`, turning a panic into an `Err` with its message marked as a panic: a panic
/// never matches PyTorch's error (a crash in a user's loop is not an error it can handle),
/// even with PyTorch's text.
fn guarded<T>(f: impl FnOnce() -> R<T>) -> R<T> {
    quiet_panics();
    let was = QUIET.with(|q| q.replace(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    match r {
        Ok(r) => r,
        Err(p) => Err(format!("(a panic) {}", panic_message(p))),
    }
}

fn close(got: &NdTensor<f64>, want: &Value, what: &str) -> R<()> {
    let shape = shape_of(&want["shape"]);
    if got.shape() != shape.as_slice() {
        return Err(format!(
            "{what}: shape {:?}, PyTorch {:?}",
            got.shape(),
            shape
        ));
    }
    let w: Vec<f64> = want["data"].as_array().unwrap().iter().map(num).collect();
    for (i, (g, e)) in got.to_vec().iter().zip(&w).enumerate() {
        let ok = (g.is_nan() && e.is_nan()) || g == e || (g - e).abs() <= ATOL + RTOL * e.abs();
        if !ok {
            return Err(format!("{what}[{i}]: {g}, PyTorch {e}"));
        }
    }
    Ok(())
}

fn check_error(got: &str, want: &Value, stage: &str) -> R<()> {
    let msg = want["message"].as_str().unwrap();
    let ok = match want.get("prefix").and_then(Value::as_str) {
        Some(p) => got.starts_with(p),
        None => got == msg,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{stage} error: ndtensor says {got:?}, PyTorch {msg:?}"
        ))
    }
}

struct State {
    env: HashMap<String, Var>,
    guard: Option<GradModeGuard>,
}

fn constant(data: &Value, shape: &[usize]) -> Var {
    Var::from_data(tensor(data, shape))
}

/// Replays one fixture: `Ok` when ndtensor gives PyTorch's answer.
fn replay(fx: &Value) -> R<()> {
    let mut st = State {
        env: HashMap::new(),
        guard: None,
    };
    let r = replay_in(fx, &mut st);
    drop(st.guard.take());
    r
}

/// One fixture: the inputs, the steps (forward), then first- and second-order gradients.
fn replay_in(fx: &Value, st: &mut State) -> R<()> {
    let expect = &fx["expect"];
    let err = expect.get("error");
    let mut leaves = Vec::new();
    for i in fx["inputs"].as_array().unwrap() {
        let shape = shape_of(&i["shape"]);
        let rg = i["requires_grad"].as_bool().unwrap();
        let v = Var::new(tensor(&i["data"], &shape), rg);
        if rg {
            leaves.push(v.clone());
        }
        st.env.insert(i["name"].as_str().unwrap().to_string(), v);
    }
    if let Some(done) = run_steps(fx, st)? {
        return done;
    }
    drop(st.guard.take());
    let out = st.env[fx["output"].as_str().unwrap()].clone();
    close(&out.data(), &expect["value"], "value")?;
    if leaves.is_empty() || (expect.get("grads").is_none() && err.is_none()) {
        return Ok(());
    }
    let Some(gs) = first_order(fx, &out, &leaves)? else {
        return Ok(());
    };
    second_order(fx, &gs, &leaves)
}

/// The forward steps. `Some(result)` ends the fixture there (an expected forward error).
fn run_steps(fx: &Value, st: &mut State) -> R<Option<R<()>>> {
    let err = fx["expect"].get("error");
    let err_stage = err.map(|e| e["stage"].as_str().unwrap());
    for (k, step) in fx["steps"].as_array().unwrap().iter().enumerate() {
        let op = step["op"].as_str().unwrap();
        let args = step["args"].as_object().unwrap();
        let res = match op {
            "set_grad_enabled" => {
                let on = args["enabled"].as_bool().unwrap();
                st.guard = None;
                if !on {
                    st.guard = Some(rt::set_grad_enabled(false));
                }
                continue;
            }
            "requires_grad_" => {
                let a = Args {
                    a: args,
                    env: &st.env,
                };
                let v = a.t("self")?;
                guarded(|| {
                    v.set_requires_grad(a.ob("requires_grad")?.unwrap_or(true))
                        .map_err(|e| e.to_string())?;
                    Ok(vec![v.clone()])
                })
            }
            _ => {
                let a = Args {
                    a: args,
                    env: &st.env,
                };
                guarded(|| dispatch(op, &a))
            }
        };
        match res {
            Err(e) => {
                return if err_stage == Some("forward")
                    && err.unwrap()["step"].as_u64() == Some(k as u64)
                {
                    Ok(Some(check_error(&e, err.unwrap(), "forward")))
                } else {
                    Err(format!("step {k} ({op}) failed: {e}"))
                };
            }
            Ok(outs) => match &step.get("out") {
                Some(Value::String(n)) => {
                    let v = outs.into_iter().next().ok_or("no output")?;
                    st.env.insert(n.clone(), v);
                }
                Some(Value::Array(ns)) => {
                    if ns.len() != outs.len() {
                        return Err(format!(
                            "step {k} ({op}): {} outputs, PyTorch {}",
                            outs.len(),
                            ns.len()
                        ));
                    }
                    for (n, v) in ns.iter().zip(outs) {
                        st.env.insert(n.as_str().unwrap().to_string(), v);
                    }
                }
                _ => {}
            },
        }
    }
    if err_stage == Some("forward") {
        return Err("PyTorch raised in the forward, ndtensor did not".into());
    }
    Ok(None)
}

/// Gradients of `sum(out * proj)` (or `sum(out)`) with `create_graph`, compared; `None` when
/// the fixture ends with them (an expected backward error).
fn first_order(fx: &Value, out: &Var, leaves: &[Var]) -> R<Option<Vec<Var>>> {
    let expect = &fx["expect"];
    let err = expect.get("error");
    let err_stage = err.map(|e| e["stage"].as_str().unwrap());
    let gs = guarded(|| {
        let l = match fx.get("proj") {
            Some(p) => sum(&mul_tensor(out, &constant(p, &out.shape())), None),
            None => sum(out, None),
        };
        rt::grad(&[l], leaves, &[None], Some(true), true, true).map_err(|e| e.to_string())
    });
    let gs = match gs {
        Err(e) if err_stage == Some("backward") => {
            return check_error(&e, err.unwrap(), "backward").map(|()| None);
        }
        Err(e) => return Err(format!("backward failed: {e}")),
        Ok(_) if err_stage == Some("backward") => {
            return Err("PyTorch raised in the backward, ndtensor did not".into());
        }
        Ok(g) => g,
    };
    let gs: Vec<Var> = gs
        .into_iter()
        .zip(leaves)
        .map(|(g, x)| g.unwrap_or_else(|| Var::from_data(NdTensor::zeros(&x.shape()))))
        .collect();
    for (i, (g, w)) in gs
        .iter()
        .zip(expect["grads"].as_array().unwrap())
        .enumerate()
    {
        close(&g.data(), w, &format!("grad of input {i}"))?;
    }
    Ok(Some(gs))
}

/// Second order: the gradient of `sum_i <g_i, gv_i>`, compared.
fn second_order(fx: &Value, gs: &[Var], leaves: &[Var]) -> R<()> {
    let expect = &fx["expect"];
    let err = expect.get("error");
    let err_stage = err.map(|e| e["stage"].as_str().unwrap());
    let Some(gv) = fx.get("gv") else {
        return Ok(());
    };
    let g2 = guarded(|| {
        let mut s: Option<Var> = None;
        for (g, v) in gs.iter().zip(gv.as_array().unwrap()) {
            if !g.requires_grad() {
                continue;
            }
            let term = sum(&mul_tensor(g, &constant(v, &g.shape())), None);
            s = Some(match s {
                None => term,
                Some(acc) => add_tensor(&acc, &term, 1.0),
            });
        }
        match s {
            None => Ok(vec![None; leaves.len()]),
            Some(s) => {
                rt::grad(&[s], leaves, &[None], None, false, true).map_err(|e| e.to_string())
            }
        }
    });
    let g2 = match g2 {
        Err(e) if err_stage == Some("grad2") => return check_error(&e, err.unwrap(), "grad2"),
        Err(e) => return Err(format!("second-order backward failed: {e}")),
        Ok(_) if err_stage == Some("grad2") => {
            return Err("PyTorch raised in the double backward, ndtensor did not".into());
        }
        Ok(g) => g,
    };
    for (i, ((g, x), w)) in g2
        .into_iter()
        .zip(leaves)
        .zip(expect["grad2"].as_array().unwrap())
        .enumerate()
    {
        let g = g
            .map(|g| g.data())
            .unwrap_or_else(|| NdTensor::zeros(&x.shape()));
        close(&g, w, &format!("second-order grad of input {i}"))?;
    }
    Ok(())
}

// ------------------------------------------------------------------------------- tests

#[test]
fn pytorch_fixtures_replay() {
    let all = fixtures();
    assert!(all.len() >= 400, "{} fixtures", all.len());
    let known: BTreeMap<&str, &str> = KNOWN_DIFFERENCES.iter().copied().collect();
    assert_eq!(
        known.len(),
        KNOWN_DIFFERENCES.len(),
        "duplicate known difference"
    );
    let names: BTreeSet<&str> = all.iter().map(|f| f["name"].as_str().unwrap()).collect();
    for k in known.keys() {
        assert!(names.contains(k), "known difference {k} names no fixture");
    }
    let mut failures = Vec::new();
    let mut fixed = Vec::new();
    let (mut passed, mut known_failing) = (0, 0);
    for fx in &all {
        let name = fx["name"].as_str().unwrap();
        let r = guarded(|| replay(fx));
        match (r, known.get(name)) {
            (Ok(()), None) => passed += 1,
            (Err(e), None) => failures.push(format!("{name}: {e}")),
            (Err(_), Some(_)) => known_failing += 1,
            (Ok(()), Some(why)) => fixed.push(format!("{name} ({why})")),
        }
    }
    println!(
        "pytorch fixtures: {passed} passed, {known_failing} known differences, {} failed, {} known differences now pass",
        failures.len(),
        fixed.len()
    );
    assert!(
        failures.is_empty() && fixed.is_empty(),
        "{} fixtures differ from PyTorch:\n{}\n\n{} known differences now pass (remove them from KNOWN_DIFFERENCES):\n{}",
        failures.len(),
        failures.join("\n"),
        fixed.len(),
        fixed.join("\n")
    );
}

#[test]
fn every_function_of_the_yaml_has_a_fixture_or_an_exclusion() {
    let all = fixtures();
    let mut random_ops = BTreeSet::new();
    let mut any_ops = BTreeSet::new();
    for fx in &all {
        for s in fx["steps"].as_array().unwrap() {
            let op = s["op"].as_str().unwrap().to_string();
            if fx["category"] == "random" {
                random_ops.insert(op.clone());
            }
            any_ops.insert(op);
        }
    }
    let yaml: BTreeSet<String> = common::all_functions()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let excluded: BTreeMap<&str, &str> = EXCLUDED.iter().copied().collect();
    let missing: Vec<&String> = yaml
        .iter()
        .filter(|f| !random_ops.contains(*f) && !excluded.contains_key(f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "functions of ndtensor's YAML without a random fixture or an exclusion: {missing:?}"
    );
    for f in excluded.keys() {
        assert!(yaml.contains(*f), "exclusion {f} is not in the YAML");
    }
    // Every op a fixture names is in the YAML, a pseudo-op, or an op ndtensor lacks, whose
    // fixtures are all known differences.
    let known: BTreeSet<&str> = KNOWN_DIFFERENCES.iter().map(|k| k.0).collect();
    for fx in &all {
        for s in fx["steps"].as_array().unwrap() {
            let op = s["op"].as_str().unwrap();
            if !yaml.contains(op) && !SPECIAL.contains(&op) {
                let name = fx["name"].as_str().unwrap();
                assert!(
                    known.contains(name),
                    "{name} uses {op}, which ndtensor lacks, and is not a known difference"
                );
            }
        }
    }
}
