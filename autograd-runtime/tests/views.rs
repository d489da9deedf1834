//! Views on value tensors (functionalization): writes through a view reach its base with
//! PyTorch's gradients (CopySlices), writes to a base reach its views, views share the
//! base's version counter, and PyTorch's errors for in-place ops on views. The expected
//! values are PyTorch 2.15's (float64) for the same programs.

mod common;

use common::*;
use std::sync::Arc;

/// `a[start..start + len]` of a 1-d tensor, as generated code records it.
struct NarrowBackward {
    n: usize,
    start: usize,
}
impl Node<TT> for NarrowBackward {
    fn name(&self) -> &str {
        "NarrowBackward0"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        let Some(g) = &grads[0] else {
            return Ok(variable_list![None]);
        };
        let zeros = constant(&vec![0.0; self.n], &[self.n]);
        Ok(variable_list![Some(slice_scatter(&zeros, g, self.start))])
    }
}

fn narrow_raw(a: &V, start: usize, len: usize) -> V {
    let d = vals(a);
    let raw = tensor(&d[start..start + len], &[len]);
    if !should_record(&[a]) {
        return Variable::from_data(raw);
    }
    let n = d.len();
    record(NarrowBackward { n, start }, &[Some(a)], [raw]).0[0].clone()
}

/// `base` with `src` written at `start`: the inverse of `narrow`.
struct SliceScatterBackward {
    start: usize,
    len: usize,
}
impl Node<TT> for SliceScatterBackward {
    fn name(&self) -> &str {
        "SliceScatterBackward0"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        let Some(g) = &grads[0] else {
            return Ok(variable_list![None, None]);
        };
        let mut outside = vals(g);
        let inside = outside[self.start..self.start + self.len].to_vec();
        for x in &mut outside[self.start..self.start + self.len] {
            *x = 0.0;
        }
        let n = outside.len();
        Ok(variable_list![
            Some(constant(&outside, &[n])),
            Some(constant(&inside, &[self.len]))
        ])
    }
}

fn slice_scatter(base: &V, src: &V, start: usize) -> V {
    let mut d = vals(base);
    let s = vals(src);
    d[start..start + s.len()].copy_from_slice(&s);
    let n = d.len();
    let raw = tensor(&d, &[n]);
    if !should_record(&[base, src]) {
        return Variable::from_data(raw);
    }
    let node = SliceScatterBackward {
        start,
        len: s.len(),
    };
    record(node, &[Some(base), Some(src)], [raw]).0[0].clone()
}

/// `narrow` as a generated view op: the output is a view of `a`.
fn narrow(a: &V, start: usize, len: usize) -> V {
    let out = narrow_raw(a, start, len);
    let view_fn: view::ViewFn<TT> = Arc::new(move |b| Ok(narrow_raw(b, start, len)));
    let scatter: view::ScatterFn<TT> = Arc::new(move |b, new| Ok(slice_scatter(b, new, start)));
    view::make_view(&out, a, view_fn, view::ViewInverse::Scatter(scatter));
    out
}

/// `a *= s` as a generated in-place op: on a view it goes through `inplace_on_view`.
fn mul_scalar_(a: &V, s: f64) -> Result<V, AutogradError> {
    if a.is_view() {
        return view::inplace_on_view(a, a.requires_grad(), |c| mul_scalar_(c, s).map(|_| ()));
    }
    let two = constant(&vec![s; a.shape().iter().product()], &a.shape());
    mul_(a, &two)?;
    Ok(a.clone())
}

fn arange4() -> V {
    leaf(&[0.0, 1.0, 2.0, 3.0], &[4])
}

#[test]
fn a_write_through_a_view_reaches_the_base_with_copy_slices_gradients() {
    // b = a.clone(); v = b.narrow(0, 0, 2); v.mul_(2.0); b.sum().backward()
    let a = arange4();
    let b = mul_scalar(&a, 1.0);
    let v = narrow(&b, 0, 2);
    assert!(v.is_view() && v.base().unwrap().ptr_eq(&b));
    mul_scalar_(&v, 2.0).unwrap();
    assert_eq!(vals(&b), [0.0, 2.0, 2.0, 3.0]);
    assert_eq!(vals(&v), [0.0, 2.0]);
    assert_eq!(b.grad_fn().unwrap().name(), "SliceScatterBackward0");
    sum(&b).backward().unwrap();
    assert_eq!(grad_vals(&a), [2.0, 2.0, 1.0, 1.0]);
}

#[test]
fn the_view_itself_leads_to_the_new_history() {
    // ... v.mul_(2.0); v.sum().backward(): a.grad == [2, 2, 0, 0]
    let a = arange4();
    let b = mul_scalar(&a, 1.0);
    let v = narrow(&b, 1, 2);
    mul_scalar_(&v, 3.0).unwrap();
    sum(&v).backward().unwrap();
    assert_eq!(grad_vals(&a), [0.0, 3.0, 3.0, 0.0]);
}

#[test]
fn writes_to_the_base_reach_views_taken_before() {
    let a = arange4();
    let b = mul_scalar(&a, 1.0);
    let v = narrow(&b, 2, 2);
    let w = narrow(&b, 0, 3);
    add_scalar_(&b, 10.0).unwrap();
    assert_eq!(vals(&v), [12.0, 13.0]);
    // A write through one view is seen by another view of the same base.
    mul_scalar_(&w, 2.0).unwrap();
    assert_eq!(vals(&v), [24.0, 13.0]);
    assert_eq!(vals(&b), [20.0, 22.0, 24.0, 13.0]);
    sum(&v).backward().unwrap();
    assert_eq!(grad_vals(&a), [0.0, 0.0, 2.0, 1.0]);
}

#[test]
fn a_view_of_a_view_writes_into_the_root() {
    let a = arange4();
    let b = mul_scalar(&a, 1.0);
    let v = narrow(&b, 1, 3);
    let vv = narrow(&v, 1, 1); // b[2]
    assert!(vv.base().unwrap().ptr_eq(&b));
    mul_scalar_(&vv, 5.0).unwrap();
    assert_eq!(vals(&b), [0.0, 1.0, 10.0, 3.0]);
    assert_eq!(vals(&v), [1.0, 10.0, 3.0]);
    sum(&b).backward().unwrap();
    assert_eq!(grad_vals(&a), [1.0, 1.0, 5.0, 1.0]);
}

#[test]
fn a_saved_view_sees_the_bases_version() {
    // w = v * v saves v; b.mul_(2) bumps the shared counter; backward fails.
    let a = arange4();
    let b = mul_scalar(&a, 1.0);
    let v = narrow(&b, 0, 2);
    let w = mul(&v, &v);
    add_scalar_(&b, 1.0).unwrap();
    let e = sum(&w).backward().unwrap_err().to_string();
    assert!(
        e.starts_with("one of the variables needed for gradient computation has been modified by an inplace operation"),
        "{e}"
    );
}

#[test]
fn without_grad_writes_through_views_still_reach_the_base() {
    let b = constant(&[1.0, 1.0, 1.0], &[3]);
    let v = narrow(&b, 1, 2);
    mul_scalar_(&v, 4.0).unwrap();
    assert_eq!(vals(&b), [1.0, 4.0, 4.0]);
    // In no_grad mode, on a view of a leaf that requires grad (an optimizer step).
    let w = leaf(&[1.0, 2.0], &[2]);
    let part = narrow(&w, 0, 1);
    {
        let _g = no_grad();
        mul_scalar_(&part, 3.0).unwrap();
    }
    assert_eq!(vals(&w), [3.0, 2.0]);
    assert!(w.is_leaf() && w.requires_grad());
}

#[test]
fn pytorchs_errors_for_in_place_ops_on_views() {
    let a = arange4();
    let e = mul_scalar_(&narrow(&a, 0, 2), 2.0).unwrap_err().to_string();
    assert_eq!(e, view::ERR_VIEW_OF_LEAF);
    let b = mul_scalar(&a, 1.0);
    let v = {
        let _g = no_grad();
        narrow(&b, 0, 2)
    };
    let e = mul_scalar_(&v, 2.0).unwrap_err().to_string();
    assert_eq!(e, view::ERR_NO_GRAD_VIEW);
    // One of several views from one op.
    let (l, _) = split2(&b);
    let id: view::ViewFn<TT> = Arc::new(|b| Ok(split2(b).0));
    let inv = view::ViewInverse::MultiOutput {
        op: "Split".into(),
        index: 0,
    };
    view::make_view(&l, &b, id, inv);
    let e = mul_scalar_(&l, 2.0).unwrap_err().to_string();
    assert!(
        e.starts_with("Output 0 of Split is a view and is being modified inplace. This view is the output of a function that returns multiple views."),
        "{e}"
    );
    // Overlapping elements (expand), with or without grad.
    let c = constant(&[1.0], &[1]);
    let x = expand(&c, &[3]);
    let id: view::ViewFn<TT> = Arc::new(|b| Ok(expand(b, &[3])));
    view::make_view(&x, &c, id, view::ViewInverse::Overlapping);
    assert_eq!(
        mul_scalar_(&x, 2.0).unwrap_err().to_string(),
        view::ERR_OVERLAP
    );
}
