//! The arguments of one step of a fixture or a no-panic call ([`Args`]: JSON by schema
//! argument name, read as the op set's types), the results' helpers ([`R`], [`ip`],
//! [`number`], [`es`]), and [`guarded`], which turns a panic into an error. Shared by the
//! dispatcher (`dispatch.rs`) and the families' own dispatchers (`*_cases.rs`).

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
