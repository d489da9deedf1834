//! What a gradcheck case is ([`Case`], [`case`]) and the helpers the families of cases share:
//! inputs ([`c`], [`avoid`], [`dims_of`]) and the operators whose forward mode PyTorch refuses.
//! The cases themselves are `cases.rs`'s and the families' (`*_cases.rs`).

use super::*;
use autograd::runtime::Variable;

/// A case's function of its inputs.
pub type F<B> = Box<dyn Fn(&[Variable<B>]) -> Variable<B>>;

/// One check: an operator (its schema name in the YAML), a description, inputs that all
/// require grad, the function of them, and whether second derivatives are checked.
pub struct Case<B: ConformanceTensor> {
    pub op: &'static str,
    pub label: String,
    pub inputs: Vec<B>,
    pub f: F<B>,
    /// `Some(reason)` skips gradgradcheck.
    pub no_gradgrad: Option<&'static str>,
    /// `Some(reason)`: the backward's raw form (without `create_graph`) runs another
    /// computation than its `Variable` form (PyTorch's `GradMode::is_enabled()` branches to a
    /// kernel), so the two are compared to a relative 1e-12, not bit for bit.
    pub raw_close: Option<&'static str>,
    /// `Some(text)`: every derivative of the op is PyTorch's `not_implemented` (the
    /// embedding-bag backward ops, issue 30), so the case's check is that backward fails
    /// with PyTorch's `text` (no gradgradcheck, no raw form).
    pub backward_refusal: Option<&'static str>,
}

/// Functions PyTorch 2.15 has no forward formula for and whose forward AD it refuses, as the
/// op set's does (the distances, issue 30): their forward check is that refusal, in PyTorch's
/// words.
pub const NO_FORWARD_FORMULA: &[&str] = &[
    "_pdist_forward",
    "_pdist_backward",
    "_cdist_forward",
    "_cdist_backward",
    "_euclidean_dist",
    // Embedding bags (issue 30).
    "_embedding_bag",
    "_embedding_bag_backward",
    "_embedding_bag_dense_backward",
];

/// The function whose refusal of forward AD a case of `op` meets, if any: `op` itself when
/// listed in [`NO_FORWARD_FORMULA`], or the function a composite calls (`pdist`,
/// `embedding_bag`; `cdist`, whose cases take the matrix-product path).
pub fn forward_refusal(op: &str) -> Option<&'static str> {
    let f = match op {
        "pdist" => "_pdist_forward",
        "cdist" => "_euclidean_dist",
        // Embedding bags (issue 30).
        "embedding_bag" | "embedding_bag.padding_idx" => "_embedding_bag",
        _ => op,
    };
    NO_FORWARD_FORMULA.iter().find(|&&g| g == f).copied()
}

/// PyTorch's refusal of forward AD by `function`, its first line (a panic's message quotes
/// the rest with its line breaks escaped).
pub fn refusal_text(function: &str) -> String {
    let full = autograd::runtime::forward::not_supported(function, false);
    full.lines().next().unwrap_or_default().to_string()
}

pub fn case<B: ConformanceTensor>(
    op: &'static str,
    label: &str,
    inputs: Vec<B>,
    f: impl Fn(&[Variable<B>]) -> Variable<B> + 'static,
) -> Case<B> {
    Case {
        op,
        label: label.to_string(),
        inputs,
        f: Box::new(f),
        no_gradgrad: None,
        raw_close: None,
        backward_refusal: None,
    }
}

pub fn c<B: ConformanceTensor>(t: &B) -> Variable<B> {
    Variable::from_data(t.clone())
}

/// Values of `t` moved at least `gap` away from each of `kinks`.
pub fn avoid<B: ConformanceTensor>(t: &B, kinks: &[f64], gap: f64) -> B {
    let v: Vec<f64> = t
        .to_f64_vec()
        .into_iter()
        .map(|mut x| {
            for k in kinks {
                if (x - k).abs() < gap {
                    x = if x >= *k { k + gap } else { k - gap };
                }
            }
            x
        })
        .collect();
    from_vec::<B>(v, t.shape())
}

pub fn dims_of(s: &[usize]) -> Vec<i64> {
    s.iter().map(|d| *d as i64).collect()
}
