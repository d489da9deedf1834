//! The op dispatcher shared by the PyTorch fixture replay and the no-panic property test:
//! an ATen schema name and JSON arguments (by schema argument name) -> the op set's generated call.

use super::ConformanceTensor;
use crate::ops::*;
use autograd::runtime::AutogradError;
use autograd::runtime::Variable;
use autograd::types::Scalar;
use serde_json::{Map, Value};
use std::cell::Cell;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

pub fn num(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap(),
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) if s == "inf" => f64::INFINITY,
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        Value::String(s) if s == "nan" => f64::NAN,
        v => panic!("not a number: {v}"),
    }
}

/// A JSON number or boolean as the `Scalar` it was in the Python program (`2` an `int`,
/// `2.0` a `float`).
pub fn scalar(v: &Value) -> Scalar {
    match v {
        Value::Bool(b) => Scalar::Bool(*b),
        Value::Number(n) if n.is_i64() => Scalar::Int(n.as_i64().unwrap_or_default()),
        v => Scalar::Float(num(v)),
    }
}

// ------------------------------------------------------------------------------- dispatcher

/// The arguments of one step, by schema argument name.
pub struct Args<'a, B: ConformanceTensor> {
    pub a: &'a Map<String, Value>,
    pub env: &'a HashMap<String, Variable<B>>,
}

pub type R<T> = Result<T, String>;

impl<B: ConformanceTensor> Args<'_, B> {
    pub fn get(&self, k: &str) -> R<&Value> {
        self.a.get(k).ok_or_else(|| format!("argument {k} missing"))
    }
    pub fn t(&self, k: &str) -> R<Variable<B>> {
        let v = self.get(k)?;
        let name = v["t"]
            .as_str()
            .ok_or_else(|| format!("{k}: not a tensor"))?;
        self.env
            .get(name)
            .cloned()
            .ok_or_else(|| format!("unknown tensor {name}"))
    }
    pub fn ot(&self, k: &str) -> R<Option<Variable<B>>> {
        match self.a.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.t(k).map(Some),
        }
    }
    pub fn tl(&self, k: &str) -> R<Vec<Variable<B>>> {
        let v = self.get(k)?;
        // An empty list is written `[]` (no tensor names).
        if v.as_array().is_some_and(Vec::is_empty) {
            return Ok(Vec::new());
        }
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
    /// A `Tensor?[]`: `{"otl": ["x0", null]}` (`null` for `None`), or a plain tensor list.
    pub fn otl(&self, k: &str) -> R<Vec<Option<Variable<B>>>> {
        let v = self.get(k)?;
        let Some(names) = v["otl"].as_array() else {
            return Ok(self.tl(k)?.into_iter().map(Some).collect());
        };
        names
            .iter()
            .map(|n| match n.as_str() {
                None => Ok(None),
                Some(n) => self
                    .env
                    .get(n)
                    .cloned()
                    .map(Some)
                    .ok_or_else(|| format!("unknown tensor {n}")),
            })
            .collect()
    }
    pub fn f(&self, k: &str) -> R<f64> {
        Ok(num(self.get(k)?))
    }
    /// A `Scalar` as the program wrote it: a Python `int`, `float` or `bool`.
    pub fn sc(&self, k: &str) -> R<Scalar> {
        Ok(scalar(self.get(k)?))
    }
    pub fn osc(&self, k: &str) -> R<Option<Scalar>> {
        match self.a.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => Ok(Some(scalar(v))),
        }
    }
    /// A `MemoryFormat`, written as PyTorch names it (`"channels_last"`).
    pub fn mf(&self, k: &str) -> R<autograd::types::MemoryFormat> {
        use autograd::types::MemoryFormat as M;
        match self.get(k)?.as_str() {
            Some("contiguous_format") => Ok(M::Contiguous),
            Some("preserve_format") => Ok(M::Preserve),
            Some("channels_last") => Ok(M::ChannelsLast),
            Some("channels_last_3d") => Ok(M::ChannelsLast3d),
            _ => Err(format!("{k}: not a memory format")),
        }
    }
    /// An optional `MemoryFormat` (`null`: `None`).
    pub fn omf(&self, k: &str) -> R<Option<autograd::types::MemoryFormat>> {
        match self.a.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.mf(k).map(Some),
        }
    }
    pub fn i(&self, k: &str) -> R<i64> {
        self.get(k)?
            .as_i64()
            .ok_or_else(|| format!("{k}: not an int"))
    }
    pub fn oi(&self, k: &str) -> R<Option<i64>> {
        match self.a.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.i(k).map(Some),
        }
    }
    pub fn b(&self, k: &str) -> R<bool> {
        self.get(k)?
            .as_bool()
            .ok_or_else(|| format!("{k}: not a bool"))
    }
    pub fn ob(&self, k: &str) -> R<Option<bool>> {
        match self.a.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.b(k).map(Some),
        }
    }
    pub fn ints(&self, k: &str) -> R<Vec<i64>> {
        self.get(k)?
            .as_array()
            .ok_or_else(|| format!("{k}: not an int list"))?
            .iter()
            .map(|x| x.as_i64().ok_or_else(|| format!("{k}: not an int")))
            .collect()
    }
    pub fn oints(&self, k: &str) -> R<Option<Vec<i64>>> {
        match self.a.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.ints(k).map(Some),
        }
    }
    /// A `ScalarType?` argument: `null`, or the dtype's name (`"f64"`, `"f32"`, `"i64"`,
    /// `"bool"`).
    pub fn dtype(&self, k: &str) -> R<Option<autograd::types::ScalarType>> {
        use autograd::types::ScalarType as S;
        match self.a.get(k).and_then(Value::as_str) {
            None => Ok(None),
            Some("f64") => Ok(Some(S::F64)),
            Some("f32") => Ok(Some(S::F32)),
            Some("i64") => Ok(Some(S::I64)),
            Some("bool") => Ok(Some(S::Bool)),
            Some(d) => Err(format!("{k}: unknown dtype {d}")),
        }
    }
    pub fn s(&self, k: &str) -> R<String> {
        Ok(self
            .get(k)?
            .as_str()
            .ok_or_else(|| format!("{k}: not a string"))?
            .to_string())
    }
    pub fn os(&self, k: &str) -> R<Option<String>> {
        match self.a.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.s(k).map(Some),
        }
    }
}

/// An error as its message (what the fixtures compare).
pub fn es(e: AutogradError) -> String {
    e.to_string()
}

/// An op's number (`sym_numel`, `_local_scalar_dense`) as a 0-d tensor of its kind, as the
/// recorder keeps it (`torch.tensor(number)`: `long`, `double` or `bool`).
pub fn number<B: ConformanceTensor>(r: Result<Scalar, AutogradError>) -> R<Vec<Variable<B>>> {
    use autograd::types::ScalarType as S;
    let s = r.map_err(|e| e.to_string())?;
    let dtype = match s {
        Scalar::Bool(_) => S::Bool,
        Scalar::Int(_) => S::I64,
        Scalar::Float(_) => S::F64,
    };
    ip(scalar_tensor(s, Some(dtype), None, None, None))
}

pub fn ip<B: ConformanceTensor>(r: Result<Variable<B>, AutogradError>) -> R<Vec<Variable<B>>> {
    r.map(|v| vec![v]).map_err(|e| e.to_string())
}

/// One step: the op's schema name and its arguments -> the outputs. An `Err` is an error
/// the backend reports (its message is compared with PyTorch's); an op the op set lacks gives
/// `op missing in the op set: <op>`. Long on purpose: one match arm per op of the YAML, a table.
#[allow(
    clippy::too_many_lines,
    reason = "one match arm per op of the YAML, a table"
)]
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> R<Vec<Variable<B>>> {
    let one = ip::<B>;
    let two = |r: Result<(Variable<B>, Variable<B>), AutogradError>| {
        r.map(|(x, y)| vec![x, y]).map_err(|e| e.to_string())
    };
    match op {
        "add.Tensor" => one(add_tensor(&a.t("self")?, &a.t("other")?, a.sc("alpha")?)),
        "add_.Tensor" => ip(add_tensor_(&a.t("self")?, &a.t("other")?, a.sc("alpha")?)),
        "add.out" => ip(add_out(
            &a.t("self")?,
            &a.t("other")?,
            a.sc("alpha")?,
            &a.t("out")?,
        )),
        "add.Scalar" => one(add_scalar(&a.t("self")?, a.sc("other")?, a.sc("alpha")?)),
        "add_.Scalar" => ip(add_scalar_(&a.t("self")?, a.sc("other")?, a.sc("alpha")?)),
        "sub.Tensor" => one(sub_tensor(&a.t("self")?, &a.t("other")?, a.sc("alpha")?)),
        "sub_.Tensor" => ip(sub_tensor_(&a.t("self")?, &a.t("other")?, a.sc("alpha")?)),
        "sub.out" => ip(sub_out(
            &a.t("self")?,
            &a.t("other")?,
            a.sc("alpha")?,
            &a.t("out")?,
        )),
        "sub.Scalar" => one(sub_scalar(&a.t("self")?, a.sc("other")?, a.sc("alpha")?)),
        "sub_.Scalar" => ip(sub_scalar_(&a.t("self")?, a.sc("other")?, a.sc("alpha")?)),
        "abs_" => ip(abs_(&a.t("self")?)),
        "pow_.Scalar" => ip(pow_scalar_(&a.t("self")?, a.sc("exponent")?)),
        "leaky_relu_" => ip(leaky_relu_(&a.t("self")?, a.sc("negative_slope")?)),
        "mul.Tensor" => one(mul_tensor(&a.t("self")?, &a.t("other")?)),
        "mul_.Tensor" => ip(mul_tensor_(&a.t("self")?, &a.t("other")?)),
        "mul.out" => ip(mul_out(&a.t("self")?, &a.t("other")?, &a.t("out")?)),
        "mul.Scalar" => one(mul_scalar(&a.t("self")?, a.sc("other")?)),
        "mul_.Scalar" => ip(mul_scalar_(&a.t("self")?, a.sc("other")?)),
        "div.Tensor" => one(div_tensor(&a.t("self")?, &a.t("other")?)),
        "div_.Tensor" => ip(div_tensor_(&a.t("self")?, &a.t("other")?)),
        "div.out" => ip(div_out(&a.t("self")?, &a.t("other")?, &a.t("out")?)),
        "div.Scalar" => one(div_scalar(&a.t("self")?, a.sc("other")?)),
        "div_.Scalar" => ip(div_scalar_(&a.t("self")?, a.sc("other")?)),
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
        "pow.Tensor_Scalar" => one(pow_tensor_scalar(&a.t("self")?, a.sc("exponent")?)),
        "pow.Tensor_Tensor" => one(pow_tensor_tensor(&a.t("self")?, &a.t("exponent")?)),
        "abs" => one(abs(&a.t("self")?)),
        "sign" => one(sign(&a.t("self")?)),
        "sin" => one(sin(&a.t("self")?)),
        "sin_" => ip(sin_(&a.t("self")?)),
        "cos" => one(cos(&a.t("self")?)),
        "erf" => one(erf(&a.t("self")?)),
        "acos" => one(acos(&a.t("self")?)),
        "asin" => one(asin(&a.t("self")?)),
        "atan" => one(atan(&a.t("self")?)),
        "acosh" => one(acosh(&a.t("self")?)),
        "asinh" => one(asinh(&a.t("self")?)),
        "atanh" => one(atanh(&a.t("self")?)),
        "sinh" => one(sinh(&a.t("self")?)),
        "cosh" => one(cosh(&a.t("self")?)),
        "tan" => one(tan(&a.t("self")?)),
        "expm1" => one(expm1(&a.t("self")?)),
        "log1p" => one(log1p(&a.t("self")?)),
        "log2" => one(log2(&a.t("self")?)),
        "log10" => one(log10(&a.t("self")?)),
        "reciprocal" => one(reciprocal(&a.t("self")?)),
        "tanh" => one(tanh(&a.t("self")?)),
        "tanh_" => ip(tanh_(&a.t("self")?)),
        "tanh.out" => ip(tanh_out(&a.t("self")?, &a.t("out")?)),
        "tanh_backward" => one(tanh_backward(&a.t("grad_output")?, &a.t("output")?)),
        "sigmoid" => one(sigmoid(&a.t("self")?)),
        "sigmoid_" => ip(sigmoid_(&a.t("self")?)),
        "relu" => one(relu(&a.t("self")?)),
        "relu_" => ip(relu_(&a.t("self")?)),
        "leaky_relu" => one(leaky_relu(&a.t("self")?, a.sc("negative_slope")?)),
        "threshold_backward" => one(threshold_backward(
            &a.t("grad_output")?,
            &a.t("self")?,
            a.sc("threshold")?,
        )),
        "gelu" => one(gelu(&a.t("self")?, &a.s("approximate")?)),
        "gelu_" => ip(gelu_(&a.t("self")?, &a.s("approximate")?)),
        "clamp" => one(clamp(&a.t("self")?, a.osc("min")?, a.osc("max")?)),
        "clamp_" => ip(clamp_(&a.t("self")?, a.osc("min")?, a.osc("max")?)),
        "clamp.out" => ip(clamp_out(
            &a.t("self")?,
            a.osc("min")?,
            a.osc("max")?,
            &a.t("out")?,
        )),
        "where.self" => one(where_self(
            &a.t("condition")?,
            &a.t("self")?,
            &a.t("other")?,
        )),
        "maximum" => one(maximum(&a.t("self")?, &a.t("other")?)),
        "minimum" => one(minimum(&a.t("self")?, &a.t("other")?)),
        "eq.Tensor" => one(eq_tensor(&a.t("self")?, &a.t("other")?)),
        "eq.Scalar" => one(eq_scalar(&a.t("self")?, a.sc("other")?)),
        "ne.Scalar" => one(ne_scalar(&a.t("self")?, a.sc("other")?)),
        "gt.Tensor" => one(gt_tensor(&a.t("self")?, &a.t("other")?)),
        "ge.Tensor" => one(ge_tensor(&a.t("self")?, &a.t("other")?)),
        "le.Tensor" => one(le_tensor(&a.t("self")?, &a.t("other")?)),
        "ne.Tensor" => one(ne_tensor(&a.t("self")?, &a.t("other")?)),
        "gt.Scalar" => one(gt_scalar(&a.t("self")?, a.sc("other")?)),
        "lt.Tensor" => one(lt_tensor(&a.t("self")?, &a.t("other")?)),
        "lt.Scalar" => one(lt_scalar(&a.t("self")?, a.sc("other")?)),
        "ge.Scalar" => one(ge_scalar(&a.t("self")?, a.sc("other")?)),
        "le.Scalar" => one(le_scalar(&a.t("self")?, a.sc("other")?)),
        "argmax" => one(argmax(&a.t("self")?, a.oi("dim")?, a.b("keepdim")?)),
        "new_zeros" => one(new_zeros(
            &a.t("self")?,
            &a.ints("size")?,
            a.dtype("dtype")?,
            None,
            None,
            None,
        )),
        "zeros_like" => one(zeros_like(
            &a.t("self")?,
            a.dtype("dtype")?,
            None,
            None,
            None,
            None,
        )),
        "full_like" => one(full_like(
            &a.t("self")?,
            a.sc("fill_value")?,
            a.dtype("dtype")?,
            None,
            None,
            None,
            None,
        )),
        "zero_" => ip(zero_(&a.t("self")?)),
        "zero" => one(zero(&a.t("self")?)),
        "fill_.Scalar" => ip(fill_scalar_(&a.t("self")?, a.sc("value")?)),
        "mm" => one(mm(&a.t("self")?, &a.t("mat2")?)),
        "mm.out" => ip(mm_out(&a.t("self")?, &a.t("mat2")?, &a.t("out")?)),
        "matmul" => one(matmul(&a.t("self")?, &a.t("other")?)),
        "bmm" => one(bmm(&a.t("self")?, &a.t("mat2")?)),
        "sum" => one(sum(&a.t("self")?, a.dtype("dtype")?)),
        "sum.dim_IntList" => one(sum_dim_intlist(
            &a.t("self")?,
            a.oints("dim")?.as_deref(),
            a.b("keepdim")?,
            a.dtype("dtype")?,
        )),
        "sum.IntList_out" => ip(sum_intlist_out(
            &a.t("self")?,
            a.oints("dim")?.as_deref(),
            a.b("keepdim")?,
            a.dtype("dtype")?,
            &a.t("out")?,
        )),
        "mean" => one(mean(&a.t("self")?, a.dtype("dtype")?)),
        "mean.dim" => one(mean_dim(
            &a.t("self")?,
            a.oints("dim")?.as_deref(),
            a.b("keepdim")?,
            a.dtype("dtype")?,
        )),
        "max.dim" => two(max_dim(&a.t("self")?, a.i("dim")?, a.b("keepdim")?)),
        "amax" => one(amax(&a.t("self")?, &a.ints("dim")?, a.b("keepdim")?)),
        "amin" => one(amin(&a.t("self")?, &a.ints("dim")?, a.b("keepdim")?)),
        "min.dim" => two(min_dim(&a.t("self")?, a.i("dim")?, a.b("keepdim")?)),
        "argmin" => one(argmin(&a.t("self")?, a.oi("dim")?, a.b("keepdim")?)),
        "ceil" => one(ceil(&a.t("self")?)),
        "floor" => one(floor(&a.t("self")?)),
        "round" => one(round(&a.t("self")?)),
        "trunc" => one(trunc(&a.t("self")?)),
        "remainder.Scalar" => one(remainder_scalar(&a.t("self")?, a.sc("other")?)),
        "fmod.Scalar" => one(fmod_scalar(&a.t("self")?, a.sc("other")?)),
        "flip" => one(flip(&a.t("self")?, &a.ints("dims")?)),
        "isnan" => one(isnan(&a.t("self")?)),
        "isinf" => one(isinf(&a.t("self")?)),
        "logical_not" => one(logical_not(&a.t("self")?)),
        "logical_and" => one(logical_and(&a.t("self")?, &a.t("other")?)),
        "logical_or" => one(logical_or(&a.t("self")?, &a.t("other")?)),
        "logical_xor" => one(logical_xor(&a.t("self")?, &a.t("other")?)),
        "bitwise_not" => one(bitwise_not(&a.t("self")?)),
        "bitwise_and.Tensor" => one(bitwise_and_tensor(&a.t("self")?, &a.t("other")?)),
        "bitwise_and.Scalar" => one(bitwise_and_scalar(&a.t("self")?, a.sc("other")?)),
        "bitwise_or.Tensor" => one(bitwise_or_tensor(&a.t("self")?, &a.t("other")?)),
        "bitwise_or.Scalar" => one(bitwise_or_scalar(&a.t("self")?, a.sc("other")?)),
        "bitwise_xor.Tensor" => one(bitwise_xor_tensor(&a.t("self")?, &a.t("other")?)),
        "bitwise_xor.Scalar" => one(bitwise_xor_scalar(&a.t("self")?, a.sc("other")?)),
        "any" => one(any(&a.t("self")?)),
        "any.dim" => one(any_dim(&a.t("self")?, a.i("dim")?, a.b("keepdim")?)),
        "div.Tensor_mode" => one(div_tensor_mode(
            &a.t("self")?,
            &a.t("other")?,
            a.os("rounding_mode")?.as_deref(),
        )),
        "div.Scalar_mode" => one(div_scalar_mode(
            &a.t("self")?,
            a.sc("other")?,
            a.os("rounding_mode")?.as_deref(),
        )),
        "remainder.Tensor" => one(remainder_tensor(&a.t("self")?, &a.t("other")?)),
        "fmod.Tensor" => one(fmod_tensor(&a.t("self")?, &a.t("other")?)),
        "atan2" => one(atan2(&a.t("self")?, &a.t("other")?)),
        "atan2.out" => ip(atan2_out(&a.t("self")?, &a.t("other")?, &a.t("out")?)),
        "elu" => one(elu(
            &a.t("self")?,
            a.sc("alpha")?,
            a.sc("scale")?,
            a.sc("input_scale")?,
        )),
        "elu_backward" => one(elu_backward(
            &a.t("grad_output")?,
            a.sc("alpha")?,
            a.sc("scale")?,
            a.sc("input_scale")?,
            a.b("is_result")?,
            &a.t("self_or_result")?,
        )),
        "hardtanh" => one(hardtanh(&a.t("self")?, a.sc("min_val")?, a.sc("max_val")?)),
        "hardtanh_backward" => one(hardtanh_backward(
            &a.t("grad_output")?,
            &a.t("self")?,
            a.sc("min_val")?,
            a.sc("max_val")?,
        )),
        "any.dims" => one(any_dims(
            &a.t("self")?,
            a.oints("dim")?.as_deref(),
            a.b("keepdim")?,
        )),
        "softmax.int" => one(softmax_int(&a.t("self")?, a.i("dim")?, a.dtype("dtype")?)),
        "log_softmax.int" => one(log_softmax_int(
            &a.t("self")?,
            a.i("dim")?,
            a.dtype("dtype")?,
        )),
        "logsumexp" => one(logsumexp(&a.t("self")?, &a.ints("dim")?, a.b("keepdim")?)),
        "transpose.int" => one(transpose_int(&a.t("self")?, a.i("dim0")?, a.i("dim1")?)),
        "t" => one(t(&a.t("self")?)),
        "alias" => one(alias(&a.t("self")?)),
        "repeat" => one(repeat(&a.t("self")?, &a.ints("repeats")?)),
        "full" => one(full(
            &a.ints("size")?,
            a.sc("fill_value")?,
            a.dtype("dtype")?,
            None,
            None,
            None,
        )),
        "scalar_tensor" => one(scalar_tensor(
            a.sc("s")?,
            a.dtype("dtype")?,
            None,
            None,
            None,
        )),
        "arange.start_step" => one(arange_start_step(
            a.sc("start")?,
            a.sc("end")?,
            a.sc("step")?,
            a.dtype("dtype")?,
            None,
            None,
            None,
        )),
        "empty.memory_format" => one(empty_memory_format(
            &a.ints("size")?,
            a.dtype("dtype")?,
            None,
            None,
            None,
            None,
        )),
        "empty_strided" => one(empty_strided(
            &a.ints("size")?,
            &a.ints("stride")?,
            a.dtype("dtype")?,
            None,
            None,
            None,
        )),
        "rand" => one(rand(&a.ints("size")?, a.dtype("dtype")?, None, None, None)),
        "randn" => one(randn(&a.ints("size")?, a.dtype("dtype")?, None, None, None)),
        "randperm" => one(randperm(a.i("n")?, a.dtype("dtype")?, None, None, None)),
        "fill.Scalar" => one(fill_scalar(&a.t("self")?, a.sc("value")?)),
        "_to_copy" => one(_to_copy(
            &a.t("self")?,
            a.dtype("dtype")?,
            None,
            None,
            None,
            false,
            None,
        )),
        "copy" => one(copy(&a.t("self")?, &a.t("src")?, false)),
        "_local_scalar_dense" => number(_local_scalar_dense(&a.t("self")?)),
        "sym_size.int" => number(sym_size_int(&a.t("self")?, a.i("dim")?).map(Scalar::Int)),
        "sym_numel" => number(sym_numel(&a.t("self")?).map(Scalar::Int)),
        "sym_stride.int" => number(sym_stride_int(&a.t("self")?, a.i("dim")?).map(Scalar::Int)),
        "sym_storage_offset" => number(sym_storage_offset(&a.t("self")?).map(Scalar::Int)),
        "resize_" => one(resize_(
            &a.t("self")?,
            &a.ints("size")?,
            a.omf("memory_format")?,
        )),
        "sym_is_contiguous" => {
            number(sym_is_contiguous(&a.t("self")?, a.mf("memory_format")?).map(Scalar::Bool))
        }
        "index.Tensor" => one(index_tensor(&a.t("self")?, &a.otl("indices")?)),
        "scatter.src" => one(scatter_src(
            &a.t("self")?,
            a.i("dim")?,
            &a.t("index")?,
            &a.t("src")?,
        )),
        "scatter.value" => one(scatter_value(
            &a.t("self")?,
            a.i("dim")?,
            &a.t("index")?,
            a.sc("value")?,
        )),
        "index_put" => one(index_put(
            &a.t("self")?,
            &a.otl("indices")?,
            &a.t("values")?,
            a.b("accumulate")?,
        )),
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
        "unbind.int" => unbind_int(&a.t("self")?, a.i("dim")?).map_err(es),
        "squeeze.dims" => one(squeeze_dims(&a.t("self")?, &a.ints("dim")?)),
        "clone" => one(clone(&a.t("self")?, None)),
        "diagonal" => one(diagonal(
            &a.t("self")?,
            a.i("offset")?,
            a.i("dim1")?,
            a.i("dim2")?,
        )),
        "col2im" => one(col2im(
            &a.t("self")?,
            &a.ints("output_size")?,
            &a.ints("kernel_size")?,
            &a.ints("dilation")?,
            &a.ints("padding")?,
            &a.ints("stride")?,
        )),
        "im2col" => one(im2col(
            &a.t("self")?,
            &a.ints("kernel_size")?,
            &a.ints("dilation")?,
            &a.ints("padding")?,
            &a.ints("stride")?,
        )),
        "as_strided" => one(as_strided(
            &a.t("self")?,
            &a.ints("size")?,
            &a.ints("stride")?,
            a.oi("storage_offset")?,
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
        "split.Tensor" => split_tensor(&a.t("self")?, a.i("split_size")?, a.i("dim")?).map_err(es),
        "chunk" => chunk(&a.t("self")?, a.i("chunks")?, a.i("dim")?).map_err(es),
        "index_select" => one(index_select(&a.t("self")?, a.i("dim")?, &a.t("index")?)),
        "index_add" => one(index_add(
            &a.t("self")?,
            a.i("dim")?,
            &a.t("index")?,
            &a.t("source")?,
            a.sc("alpha")?,
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
        "detach" => Ok(vec![a.t("self")?.detach()]),
        _ => super::norm_cases::dispatch_norm(op, a)
            .or_else(|| super::norms_cases::dispatch(op, a))
            .or_else(|| super::conv_cases::dispatch(op, a))
            .or_else(|| super::resample_cases::dispatch(op, a))
            .or_else(|| super::products_cases::dispatch(op, a))
            .or_else(|| super::softmax_cases::dispatch(op, a))
            .or_else(|| super::select_cases::dispatch(op, a))
            .or_else(|| super::geom_cases::dispatch(op, a))
            // group normalization
            .or_else(|| super::group_norm_cases::dispatch(op, a))
            .or_else(|| super::grid_cases::dispatch(op, a))
            .or_else(|| super::dist_cases::dispatch(op, a))
            .or_else(|| super::scatter_cases::dispatch(op, a))
            // Embeddings (issue 30).
            .or_else(|| super::embedding_cases::dispatch(op, a))
            // Embedding bags (issue 30).
            .or_else(|| super::bag_cases::dispatch(op, a))
            // The masked family (issue 30).
            .or_else(|| super::masked_cases::dispatch(op, a))
            .unwrap_or_else(|| Err(format!("op missing in the op set: {op}"))),
    }
}

pub fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
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
pub fn quiet_panics() {
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
pub fn guarded<T>(f: impl FnOnce() -> R<T>) -> R<T> {
    quiet_panics();
    let was = QUIET.with(|q| q.replace(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    match r {
        Ok(r) => r,
        Err(p) => Err(format!("(a panic) {}", panic_message(p))),
    }
}
