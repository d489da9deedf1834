//! The in-place forms of the op set's functional operators: their
//! in-place cases (added to [`super::inplace_cases::inplace_cases`]) and their arms of the
//! fixture replayer (a fallback of [`super::dispatch::dispatch`]).

use super::args::{Args, R, ip};
use super::inplace_cases::{InplaceCase, ic};
use super::*;
use crate::ops::*;
use autograd::runtime::Variable;

/// A unary in-place case: `$name_` against `$name` on inputs from `$gen`.
macro_rules! unary_case {
    ($r:expr, $s:expr, $gen:ident, $inplace:ident, $functional:ident) => {
        ic(
            stringify!($inplace),
            $r.$gen(&$s),
            vec![],
            |x, _| $inplace(x).unwrap(),
            |x, _| $functional(x).unwrap(),
        )
    };
}

/// One case per in-place form of this family.
pub fn cases<B: ConformanceTensor>() -> Vec<InplaceCase<B>> {
    let r = Rng::new(78);
    let s = r.shape(2);
    vec![
        unary_case!(r, s, away, reciprocal_, reciprocal),
        unary_case!(r, s, pos, rsqrt_, rsqrt),
        unary_case!(r, s, pos, log1p_, log1p),
        unary_case!(r, s, t, expm1_, expm1),
        unary_case!(r, s, pos, log2_, log2),
        unary_case!(r, s, pos, log10_, log10),
        unary_case!(r, s, t, cos_, cos),
        unary_case!(r, s, t, tan_, tan),
        unary_case!(r, s, t, sinh_, sinh),
        unary_case!(r, s, t, cosh_, cosh),
        unary_case!(r, s, unit, asin_, asin),
        unary_case!(r, s, unit, acos_, acos),
        unary_case!(r, s, t, atan_, atan),
        unary_case!(r, s, t, erf_, erf),
        unary_case!(r, s, away, floor_, floor),
        unary_case!(r, s, away, ceil_, ceil),
        unary_case!(r, s, away, round_, round),
        unary_case!(r, s, away, trunc_, trunc),
        unary_case!(r, s, away, sign_, sign),
        ic(
            "copy_",
            r.t(&s),
            vec![r.t(&s[1..])],
            |x, o| copy_(x, &o[0], false).unwrap(),
            // `copy` has no derivative: `0 * x + src` has its values and gradients.
            |x, o| add_tensor(&mul_scalar(x, 0.0).unwrap(), &o[0], 1.0).unwrap(),
        ),
    ]
}

/// Inputs inside the operators' domains.
trait Domains {
    /// Values in `[-0.8, 0.8)` (inside `asin`'s and `acos`'s domains).
    fn unit<B: ConformanceTensor>(&self, shape: &[usize]) -> B;
}

impl Domains for Rng {
    fn unit<B: ConformanceTensor>(&self, shape: &[usize]) -> B {
        self.u(shape, -0.8, 0.8)
    }
}

/// The replayer's arms of this family's operators (`None`: another op).
pub fn dispatch<B: ConformanceTensor>(op: &str, a: &Args<B>) -> Option<R<Vec<Variable<B>>>> {
    if op == "copy_" {
        let call = || -> R<Vec<Variable<B>>> {
            let nb = a.ob("non_blocking")?.unwrap_or(false);
            ip(copy_(&a.t("self")?, &a.t("src")?, nb))
        };
        return Some(call());
    }
    let unary: fn(&Variable<B>) -> Result<Variable<B>, autograd::runtime::AutogradError> = match op
    {
        "reciprocal_" => reciprocal_,
        "rsqrt_" => rsqrt_,
        "log1p_" => log1p_,
        "expm1_" => expm1_,
        "log2_" => log2_,
        "log10_" => log10_,
        "cos_" => cos_,
        "tan_" => tan_,
        "sinh_" => sinh_,
        "cosh_" => cosh_,
        "asin_" => asin_,
        "acos_" => acos_,
        "atan_" => atan_,
        "erf_" => erf_,
        "floor_" => floor_,
        "ceil_" => ceil_,
        "round_" => round_,
        "trunc_" => trunc_,
        "sign_" => sign_,
        _ => return None,
    };
    Some(a.t("self").and_then(|x| ip(unary(&x))))
}
