//! Argument conversions: how a value of one type passes to a parameter of another, at what
//! rank (0 exact, 1 promotion or wrapping, 2+ conversions), and the Rust argument it becomes
//! for the parameter types of generated wrappers and helpers (`&Variable<T>`,
//! `Option<&Variable<T>>`, `&[i64]`, `f64`, ...).

use super::lower::{Lowerer, Val, as_f64, slice_of};
use super::types::Ty;

impl Lowerer<'_> {
    /// `v` passed to a parameter of type `to`: its rank and Rust code; `None` when C++ would
    /// not convert it.
    pub(super) fn coerce(&self, v: &Val, to: &Ty, generics: &[String]) -> Option<(u32, String)> {
        if let Ty::Opaque(g) = to
            && generics.contains(g)
        {
            return self.coerce_generic(v);
        }
        if let Ty::Brace(_) = v.ty {
            return self.coerce_brace(v, to);
        }
        let c = &v.code;
        Some(match (&v.ty, to) {
            (Ty::Tensor, Ty::Tensor) => (0, format!("&{c}")),
            (Ty::OptTensor, Ty::Tensor) if v.by_ref => {
                (3, format!("&defined(&{c}.cloned()){}", self.q()))
            }
            (Ty::OptTensor, Ty::Tensor) => (3, format!("&defined(&{c}){}", self.q())),
            (Ty::Tensor, Ty::OptTensor) => (1, format!("Some(&{c})")),
            (Ty::OptTensor, Ty::OptTensor) if v.by_ref => (0, c.clone()),
            (Ty::OptTensor, Ty::OptTensor) => (0, format!("{c}.as_ref()")),
            (Ty::Nullopt, Ty::OptTensor | Ty::Opt(_)) => (0, "None".into()),
            (Ty::TensorList, Ty::TensorList) => (0, slice_of(c)),
            (Ty::OptTensorList, Ty::OptTensorList) => (0, slice_of(c)),
            (Ty::TensorList, Ty::OptTensorList) => (2, format!("&to_opt_list({})", slice_of(c))),
            (Ty::IntList, Ty::IntList) => (0, slice_of(c)),
            (Ty::FloatList, Ty::FloatList) => (0, slice_of(c)),
            (Ty::Int, Ty::IntList) => (3, format!("&[{c}]")),
            (Ty::BoolArray(_), Ty::BoolArray(_)) => (0, c.clone()),
            (Ty::Int, Ty::Int) | (Ty::Float, Ty::Float) | (Ty::Bool, Ty::Bool) => (0, c.clone()),
            (Ty::Scalar, Ty::Scalar) => (0, c.clone()),
            (Ty::Int, Ty::Float) => (1, as_f64(c)),
            (Ty::Int | Ty::Float | Ty::Bool, Ty::Scalar) => (2, self.scalar_of(v)),
            (Ty::Bool, Ty::Int) => (1, format!("i64::from({c})")),
            (Ty::Float, Ty::Int) => (4, format!("({c}) as i64")),
            (Ty::Int, Ty::Bool) => (4, format!("({c} != 0)")),
            (Ty::ScalarType, Ty::Options) => (3, format!("TensorOptions::from({c})")),
            (Ty::Opt(a), Ty::Opt(b)) if a == b => (0, c.clone()),
            (t, Ty::Opt(inner)) if t != &Ty::Nullopt => {
                let (k, code) = self.coerce(v, inner, generics)?;
                (k + 1, format!("Some({})", super::lower::bare(&code)))
            }
            (a, b) if a == b => (0, c.clone()),
            _ => return None,
        })
    }

    /// A number passed to a `Scalar` parameter: `autograd::types::Scalar` keeps whether it is
    /// a boolean, an integer or a float, as a C++ `Scalar` does; a plain-number Scalar (the
    /// macro's `types = { Scalar = f64 }`) is the number as an `f64`.
    fn scalar_of(&self, v: &Val) -> String {
        let c = super::lower::bare(&v.code);
        match (self.scalar_number, &v.ty) {
            (true, _) => f64_of(v),
            (false, Ty::Int) => format!("__ag::types::Scalar::Int({c})"),
            (false, Ty::Bool) => format!("__ag::types::Scalar::Bool({c})"),
            (false, Ty::Float) => format!("__ag::types::Scalar::Float({c})"),
            _ => v.code.clone(),
        }
    }

    /// A `Scalar` read as a C++ `double`.
    pub(super) fn scalar_value(&self, code: &str) -> String {
        match self.scalar_number {
            true => code.to_string(),
            false => format!("__ag::types::Scalar::to_f64({code})"),
        }
    }

    /// A template parameter (`const T&`) binds a tensor by reference, anything else by value.
    fn coerce_generic(&self, v: &Val) -> Option<(u32, String)> {
        Some(match &v.ty {
            Ty::Tensor => (0, format!("&{}", v.code)),
            Ty::Scalar => (0, self.scalar_value(&v.code)),
            Ty::Int | Ty::Float | Ty::Bool => (0, f64_of(v)),
            _ => (0, v.owned()),
        })
    }

    /// A brace list passed to a list, array, tuple or optional parameter.
    fn coerce_brace(&self, v: &Val, to: &Ty) -> Option<(u32, String)> {
        let elems = &v.elems;
        // `{{1, 1}}`: the inner list initialises the parameter.
        if let [inner] = elems.as_slice()
            && matches!(inner.ty, Ty::Brace(_))
        {
            return self.coerce_brace(inner, to);
        }
        let all = |t: &dyn Fn(&Ty) -> bool| elems.iter().all(|e| t(&e.ty));
        Some(match to {
            Ty::IntList if all(&|t| matches!(t, Ty::Int | Ty::Bool)) => {
                if elems.is_empty() {
                    (1, "&[0_i64; 0]".into())
                } else {
                    let codes: Vec<&str> = elems.iter().map(|e| e.code.as_str()).collect();
                    (1, format!("&[{}]", codes.join(", ")))
                }
            }
            Ty::FloatList if all(&|t| t.is_number()) => {
                let codes: Vec<String> = elems
                    .iter()
                    .map(|e| match e.ty {
                        Ty::Scalar => self.scalar_value(&e.code),
                        _ => f64_of(e),
                    })
                    .collect();
                (1, format!("&[{}]", codes.join(", ")))
            }
            Ty::BoolArray(n) if all(&|t| *t == Ty::Bool) && (*n == 0 || *n == elems.len()) => {
                let codes: Vec<&str> = elems.iter().map(|e| e.code.as_str()).collect();
                (1, format!("[{}]", codes.join(", ")))
            }
            Ty::TensorList if all(&|t| *t == Ty::Tensor) => {
                let codes: Vec<String> = elems.iter().map(Val::owned).collect();
                (1, format!("&[{}]", codes.join(", ")))
            }
            Ty::OptTensorList if all(&Ty::is_tensor) => {
                let codes: Vec<String> = elems
                    .iter()
                    .map(|e| match e.ty {
                        Ty::Tensor => format!("Some({})", e.owned()),
                        _ => e.owned(),
                    })
                    .collect();
                (1, format!("&[{}]", codes.join(", ")))
            }
            Ty::Opt(inner) => {
                let (k, code) = self.coerce_brace(v, inner)?;
                (k + 1, format!("Some({code})"))
            }
            _ => return None,
        })
    }
}

/// A number as an `f64` (a `float[]` element, or what a template parameter binds): integer
/// literals get `.0`, other integers a cast.
pub(super) fn f64_of(v: &Val) -> String {
    match v.ty {
        Ty::Int => as_f64(&v.code),
        Ty::Bool => format!("f64::from(u8::from({}))", v.code),
        _ => v.code.clone(),
    }
}
