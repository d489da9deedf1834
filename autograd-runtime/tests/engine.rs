#![allow(clippy::cloned_ref_to_slice_refs)] // `&[x.clone()]` reads better in tests
mod common;
use common::*;

/// A pre-hook on the node of `v` that counts its calls.
fn count_prehook_calls(v: &V) -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = calls.clone();
    v.grad_fn().unwrap().register_prehook(move |_| {
        c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    });
    calls
}

#[test]
fn simple_backward_accumulates_into_leaves() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let w = leaf(&[4.0, 5.0, 6.0], &[3]);
    let y = sum(&mul(&x, &w));
    assert_eq!(val(&y), 32.0);
    assert!(y.requires_grad() && !y.is_leaf());
    assert_eq!(y.grad_fn().unwrap().name(), "SumBackward0");
    y.backward().unwrap();
    assert_close(&grad_vals(&x), &[4.0, 5.0, 6.0]);
    assert_close(&grad_vals(&w), &[1.0, 2.0, 3.0]);
    assert!(
        y.grad().is_none(),
        "non-leaf grads are not retained by default"
    );
}

#[test]
fn accumulation_across_two_backward_calls() {
    let x = leaf(&[1.0, 2.0], &[2]);
    sum(&mul_scalar(&x, 3.0)).backward().unwrap();
    let first = x.grad().unwrap();
    sum(&mul_scalar(&x, 3.0)).backward().unwrap();
    assert_close(&grad_vals(&x), &[6.0, 6.0]);
    // Without create_graph the accumulation is in place (`grad += g`).
    assert!(first.ptr_eq(&x.grad().unwrap()));
    assert_eq!(first.version(), 1);
    x.zero_grad();
    assert!(x.grad().is_none());
    sum(&x).backward().unwrap();
    assert_close(&grad_vals(&x), &[1.0, 1.0]);
}

#[test]
fn diamond_graph_sums_gradients_and_runs_each_node_once() {
    // a = exp(x); b = a * 2; c = a * 3; y = sum(b * c) = 6 exp(2x)
    let x = leaf(&[0.5, -1.0], &[2]);
    let a = exp(&x);
    let calls = count_prehook_calls(&a);
    let b = mul_scalar(&a, 2.0);
    let c = mul_scalar(&a, 3.0);
    let y = sum(&mul(&b, &c));
    y.backward().unwrap();
    let expected: Vec<f64> = [0.5f64, -1.0]
        .iter()
        .map(|v| 12.0 * (2.0 * v).exp())
        .collect();
    assert_close(&grad_vals(&x), &expected);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn chains_of_unequal_length_meeting_at_one_leaf_run_each_node_once() {
    // A single-input node whose gradient has nowhere else to come from runs next without
    // being queued (`deliver_direct`); one that other pending nodes may still reach does
    // not. y = sum(tanh(tanh(tanh(x))) * exp(x)) + sum(x * 2): a three-node chain, a
    // one-node chain and a direct edge, all meeting at x; a hook and a retained gradient
    // in the middle of the long chain.
    let x = leaf(&[0.3, -0.7], &[2]);
    let t1 = tanh(&x);
    let t2 = tanh(&t1);
    t2.retain_grad().unwrap();
    let calls = count_prehook_calls(&t2);
    let t3 = tanh(&t2);
    let e = exp(&x);
    let y = add(&sum(&mul(&t3, &e)), &sum(&mul_scalar(&x, 2.0)));
    y.backward().unwrap();
    let (mut dx, mut dt2) = (Vec::new(), Vec::new());
    for v in [0.3f64, -0.7] {
        let (a, b) = (v.tanh(), v.tanh().tanh());
        let c = b.tanh();
        let d_t2 = v.exp() * (1.0 - c * c);
        dt2.push(d_t2);
        dx.push(d_t2 * (1.0 - b * b) * (1.0 - a * a) + c * v.exp() + 2.0);
    }
    assert_close(&grad_vals(&x), &dx);
    assert_close(&grad_vals(&t2), &dt2);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn hooks_and_retained_gradients_inside_a_chain_run_from_its_top() {
    // Backward from a chain's top runs its hook-less single-input nodes one after the
    // other without vertex states (`run_chain`); a node with hooks, a tensor hook or a
    // retained gradient goes through the usual vertex, and the chain goes on below it.
    // y = sum(tanh(3 * tanh(2 * x))): a tensor hook doubling the gradient of t1 = tanh(2x),
    // a retained gradient on s = 3 * t1, a pre-hook on t2 = tanh(s)'s node. PyTorch 2.15.0
    // (float64, the same program) gives x.grad = [1.2591720159927258, 0.050665050202657394],
    // s.grad = [0.14746245154037546, 0.01953291457299267] and one pre-hook call: the
    // closed forms below, to the last bits.
    let x = leaf(&[0.3, -0.7], &[2]);
    let t1 = tanh(&mul_scalar(&x, 2.0));
    t1.register_hook(|g| Ok(Some(mul_scalar(g, 2.0)))).unwrap();
    let s = mul_scalar(&t1, 3.0);
    s.retain_grad().unwrap();
    let t2 = tanh(&s);
    let calls = count_prehook_calls(&t2);
    sum(&t2).backward().unwrap();
    let (mut dx, mut ds) = (Vec::new(), Vec::new());
    for v in [0.3f64, -0.7] {
        let a = (2.0 * v).tanh();
        let b = (3.0 * a).tanh();
        let d_s = 1.0 - b * b;
        ds.push(d_s);
        dx.push(d_s * 3.0 * 2.0 * (1.0 - a * a) * 2.0);
    }
    assert_close(&grad_vals(&s), &ds);
    assert_close(&grad_vals(&x), &dx);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn shared_input_used_twice_by_one_node() {
    let x = leaf(&[3.0], &[1]);
    let y = sum(&mul(&x, &x));
    y.backward().unwrap();
    assert_close(&grad_vals(&x), &[6.0]);
}

#[test]
fn second_backward_fails_without_retain_graph() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = sum(&exp(&x));
    y.backward().unwrap();
    let err = y.backward().unwrap_err();
    assert_eq!(err, AutogradError::BackwardTwice);
    assert_eq!(
        err.to_string(),
        "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward."
    );
}

#[test]
fn retain_graph_allows_second_backward() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = sum(&exp(&x));
    y.backward_with(None, Some(true), false).unwrap();
    y.backward_with(None, Some(true), false).unwrap();
    let e: Vec<f64> = [1.0f64, 2.0].iter().map(|v| 2.0 * v.exp()).collect();
    assert_close(&grad_vals(&x), &e);
    // The last backward without retain_graph frees; the next one fails.
    y.backward().unwrap();
    assert!(y.backward().is_err());
}

#[test]
fn nodes_without_saved_variables_can_backward_twice() {
    let x = leaf(&[1.0], &[1]);
    let y = sum(&add_scalar(&x, 1.0));
    y.backward().unwrap();
    y.backward().unwrap();
    assert_close(&grad_vals(&x), &[2.0]);
}

#[test]
fn grad_returns_gradients_without_touching_dot_grad() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let w = leaf(&[3.0, 4.0], &[2]);
    let y = sum(&mul(&x, &w));
    let g = grad(&[y.clone()], &[x.clone()], &[], Some(true), false, false).unwrap();
    assert_close(&vals(g[0].as_ref().unwrap()), &[3.0, 4.0]);
    assert!(x.grad().is_none() && w.grad().is_none());
    // Both inputs, same input twice.
    let g = grad(&[y], &[w.clone(), x.clone(), w], &[], None, false, false).unwrap();
    assert_close(&vals(g[0].as_ref().unwrap()), &[1.0, 2.0]);
    assert_close(&vals(g[1].as_ref().unwrap()), &[3.0, 4.0]);
    assert_close(&vals(g[2].as_ref().unwrap()), &[1.0, 2.0]);
    assert!(x.grad().is_none());
}

#[test]
fn grad_allow_unused() {
    let x = leaf(&[1.0], &[1]);
    let unused = leaf(&[5.0, 6.0], &[2]);
    let y = sum(&mul_scalar(&x, 2.0));
    let err = grad(
        &[y.clone()],
        &[x.clone(), unused.clone()],
        &[],
        Some(true),
        false,
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."
    );
    let g = grad(
        &[y.clone()],
        &[x.clone(), unused.clone()],
        &[],
        Some(true),
        false,
        true,
    )
    .unwrap();
    assert_close(&vals(g[0].as_ref().unwrap()), &[2.0]);
    assert!(g[1].is_none());
    let opts = GradOptions {
        retain_graph: Some(true),
        materialize_grads: true,
        ..Default::default()
    };
    let g = grad_with(&[y.clone()], &[unused], &[], opts).unwrap();
    assert_close(&vals(g[0].as_ref().unwrap()), &[0.0, 0.0]);
    let c = constant(&[1.0], &[1]);
    assert_eq!(
        grad(&[y], &[c], &[], Some(true), false, true)
            .unwrap_err()
            .to_string(),
        "One of the differentiated Tensors does not require grad"
    );
}

#[test]
fn grad_with_respect_to_non_leaf_runs_only_needed_part() {
    let x = leaf(&[2.0], &[1]);
    let h = exp(&x);
    let y = sum(&mul_scalar(&h, 3.0));
    let g = grad(&[y], &[h.clone()], &[], None, false, false).unwrap();
    assert_close(&vals(g[0].as_ref().unwrap()), &[3.0]);
    // ExpBackward0 did not run: its saved output was not released and x has no grad.
    assert!(x.grad().is_none());
    let z = sum(&h);
    z.backward().unwrap();
    assert_close(&grad_vals(&x), &[2f64.exp()]);
}

#[test]
fn third_derivative_of_x_cubed_through_create_graph() {
    let x = scalar(2.0);
    let y = pow(&x, 3.0);
    let g1 = grad(&[y], &[x.clone()], &[], Some(true), true, false).unwrap()[0]
        .clone()
        .unwrap();
    assert_close(&vals(&g1), &[12.0]); // 3x^2
    assert!(g1.requires_grad(), "create_graph records the backward pass");
    let g2 = grad(&[g1], &[x.clone()], &[], Some(true), true, false).unwrap()[0]
        .clone()
        .unwrap();
    assert_close(&vals(&g2), &[12.0]); // 6x
    let g3 = grad(&[g2], &[x.clone()], &[], Some(true), true, false).unwrap()[0]
        .clone()
        .unwrap();
    assert_close(&vals(&g3), &[6.0]); // 6
    let g4 = grad(&[g3], &[x], &[], Some(true), true, true).unwrap();
    // d/dx 6 through `mul_scalar(pow(x, 0), 0)`-style formulas: zero.
    assert!(g4[0].as_ref().is_none_or(|g| vals(g) == vec![0.0]));
}

#[test]
fn create_graph_through_summed_gradients_and_leaf_accumulation() {
    // y = x*x + x*x*x  => dy/dx = 2x + 3x^2 ; d2y/dx2 = 2 + 6x
    let x = scalar(1.5);
    let y = add(&mul(&x, &x), &mul(&mul(&x, &x), &x));
    y.backward_with(None, Some(true), true).unwrap();
    let g = x.grad().unwrap();
    assert_close(&vals(&g), &[2.0 * 1.5 + 3.0 * 1.5 * 1.5]);
    assert!(g.requires_grad());
    x.zero_grad();
    g.backward().unwrap();
    assert_close(&grad_vals(&x), &[2.0 + 6.0 * 1.5]);
}

#[test]
fn backward_argument_errors() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = mul_scalar(&x, 2.0);
    assert_eq!(
        y.backward().unwrap_err().to_string(),
        "grad can be implicitly created only for scalar outputs"
    );
    let c = constant(&[1.0], &[1]);
    assert_eq!(
        c.backward().unwrap_err().to_string(),
        "element 0 of tensors does not require grad and does not have a grad_fn"
    );
    assert_eq!(
        backward(&[sum(&y), c], &[], None, false)
            .unwrap_err()
            .to_string(),
        "element 1 of tensors does not require grad and does not have a grad_fn"
    );
    let wrong = constant(&[1.0, 1.0, 1.0], &[3]);
    assert_eq!(
        y.backward_with(Some(&wrong), None, false)
            .unwrap_err()
            .to_string(),
        "Mismatch in shape: grad_output[0] has a shape of [3] and output[0] has a shape of [2]."
    );
    assert_eq!(
        backward(&[y.clone()], &[None, None], None, false)
            .unwrap_err()
            .to_string(),
        "got 1 tensors and 2 gradients"
    );
    let go = constant(&[1.0, 10.0], &[2]);
    y.backward_with(Some(&go), None, false).unwrap();
    assert_close(&grad_vals(&x), &[2.0, 20.0]);
}

#[test]
fn multiple_roots_and_backward_on_a_leaf() {
    let x = leaf(&[1.0], &[1]);
    let a = mul_scalar(&x, 2.0);
    let b = mul_scalar(&x, 5.0);
    backward(&[a, b], &[], None, false).unwrap();
    assert_close(&grad_vals(&x), &[7.0]);
    let z = scalar(4.0);
    z.backward().unwrap();
    assert_close(&grad_vals(&z), &[1.0]);
}

#[test]
fn multi_output_node_and_undefined_gradients() {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let (l, r) = split2(&x);
    assert_eq!(l.output_nr(), 0);
    assert_eq!(r.output_nr(), 1);
    assert!(l.grad_fn().unwrap().ptr_eq(&r.grad_fn().unwrap()));
    assert_eq!(l.grad_fn().unwrap().num_inputs(), 2);
    // Only the right half is used: the left gradient arrives as None.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s2 = seen.clone();
    r.grad_fn().unwrap().register_prehook(move |g| {
        s2.lock().unwrap().extend(g.iter().map(Option::is_some));
        Ok(())
    });
    sum(&mul_scalar(&r, 3.0)).backward().unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![false, true]);
    assert_close(&grad_vals(&x), &[0.0, 0.0, 3.0, 3.0]);
}

/// A user-defined function, like `torch.autograd.Function`: y = x^2 computed
/// by hand with a hand-written (non-differentiable) backward on raw data.
struct Square {
    x: SavedVariable<TT>,
}
impl Node<TT> for Square {
    fn name(&self) -> &str {
        "SquareBackward"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        let x = self.x.unpack()?.data();
        Ok(variable_list![grads[0].as_ref().map(|g| {
            Variable::from_data(g.data().zip(&x, |g, x| 2.0 * g * x))
        })])
    }
    fn release_variables(&mut self) {
        self.x.reset();
    }
}

#[test]
fn custom_function() {
    let x = leaf(&[3.0, -1.0], &[2]);
    let raw = x.data().map(|v| v * v);
    let ([y], handle) = record(
        Square {
            x: SavedVariable::new(&x, false),
        },
        &[Some(&x)],
        [raw],
    );
    assert!(handle.node_ref().ptr_eq(&y.grad_fn().unwrap()));
    handle.with(|n| assert!(!n.x.was_released()));
    sum(&y).backward().unwrap();
    assert_close(&grad_vals(&x), &[6.0, -2.0]);
    handle.with(|n| assert!(n.x.was_released()));
    // record_vec for a dynamic number of outputs.
    let (outs, _) = record_vec(AddScalarBackward, &[Some(&x)], vec![x.data()]);
    assert_eq!(outs.len(), 1);
}

struct BadCount;
impl Node<TT> for BadCount {
    fn name(&self) -> &str {
        "BadCountBackward"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        let g = grads[0].clone();
        Ok(variable_list![g.clone(), g])
    }
}
struct BadShape;
impl Node<TT> for BadShape {
    fn name(&self) -> &str {
        "BadShapeBackward"
    }
    fn apply(&mut self, _grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        Ok(variable_list![Some(constant(&[1.0, 2.0, 3.0], &[3]))])
    }
}
struct BadDtype;
impl Node<TT> for BadDtype {
    fn name(&self) -> &str {
        "BadDtypeBackward"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        let mut d = grads[0].as_ref().unwrap().data();
        d.dtype = "f32";
        Ok(variable_list![Some(Variable::from_data(d))])
    }
}

#[test]
fn validation_of_returned_gradients_names_the_node() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let ([y], _) = record(BadCount, &[Some(&x)], [x.data()]);
    assert_eq!(
        sum(&y).backward().unwrap_err().to_string(),
        "Function BadCountBackward returned an invalid number of gradients - expected 1, but got 2"
    );
    let ([y], _) = record(BadShape, &[Some(&x)], [x.data()]);
    assert_eq!(
        sum(&y).backward().unwrap_err().to_string(),
        "Function BadShapeBackward returned an invalid gradient at index 0 - got [3] but expected shape compatible with [2]"
    );
    // Against a non-leaf input: checked with the producing node's metadata.
    let h = exp(&x);
    let ([y], _) = record(BadShape, &[Some(&h)], [h.data()]);
    let err = sum(&y).backward().unwrap_err();
    assert!(
        matches!(err, AutogradError::InvalidGradientShape { ref node, index: 0, .. } if node == "BadShapeBackward")
    );
    let ([y], _) = record(BadDtype, &[Some(&x)], [x.data()]);
    assert_eq!(
        sum(&y).backward().unwrap_err().to_string(),
        "Function BadDtypeBackward returned an invalid gradient at index 0 - expected dtype f64 but got f32"
    );
}

/// Returns a gradient of the given shape, whatever it receives.
struct GradOfShape(Vec<usize>);
impl Node<TT> for GradOfShape {
    fn name(&self) -> &str {
        "GradOfShapeBackward"
    }
    fn apply(&mut self, _grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        let n = self.0.iter().product();
        Ok(variable_list![Some(constant(&vec![1.0; n], &self.0))])
    }
}

#[test]
fn gradients_are_checked_against_packed_and_unpacked_output_shapes() {
    // A node keeps one output's shape packed in a word when it fits (up to four
    // dimensions, 15 bits each at four) and a list otherwise: both check the same way.
    // The text is PyTorch's: torch 2.15 says `Function FBackward returned an invalid gradient
    // at index 0 - got [3, 2, 1] but expected shape compatible with [2, 3]` for a custom
    // Function returning a [3, 2, 1] gradient for a [2, 3] input.
    let shapes: [&[usize]; 5] = [
        &[6],
        &[2, 3],
        &[1, 2, 1, 3],
        &[1, 1, 1, 1, 6],
        &[40000, 1, 1, 1],
    ];
    for s in shapes {
        let n: usize = s.iter().product();
        let x = leaf(&vec![0.5; n], s);
        let h = exp(&x); // the producer whose metadata is checked
        let ([y], _) = record(GradOfShape(s.to_vec()), &[Some(&h)], [h.data()]);
        sum(&y).backward().unwrap();
        assert_eq!(x.grad().unwrap().shape(), s.to_vec());
        let mut other = s.to_vec();
        other.reverse();
        other.push(1);
        let ([y], _) = record(GradOfShape(other.clone()), &[Some(&h)], [h.data()]);
        assert_eq!(
            sum(&y).backward().unwrap_err().to_string(),
            format!(
                "Function GradOfShapeBackward returned an invalid gradient at index 0 - got {other:?} but expected shape compatible with {s:?}"
            )
        );
    }
}

#[test]
fn not_implemented_error_from_a_formula() {
    struct Nope;
    impl Node<TT> for Nope {
        fn name(&self) -> &str {
            "LuUnpackBackward0"
        }
        fn apply(&mut self, _: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
            Err(AutogradError::not_implemented("lu_unpack", None))
        }
    }
    let x = leaf(&[1.0], &[1]);
    let ([y], _) = record(Nope, &[Some(&x)], [x.data()]);
    assert_eq!(
        y.backward().unwrap_err().to_string(),
        "the derivative for 'lu_unpack' is not implemented."
    );
    assert_eq!(
        AutogradError::not_implemented("foo", Some("(argument 'other')")).to_string(),
        "the derivative for 'foo' is not implemented. (argument 'other')"
    );
}

#[test]
fn inputs_that_do_not_require_grad_get_no_edge() {
    let x = leaf(&[1.0], &[1]);
    let c = constant(&[2.0], &[1]);
    let y = mul(&x, &c);
    let f = y.grad_fn().unwrap();
    assert_eq!(f.next_edges().len(), 2);
    assert!(
        f.next_edges()[0]
            .as_ref()
            .unwrap()
            .leaf()
            .unwrap()
            .ptr_eq(&x)
    );
    assert!(f.next_edges()[1].is_none());
    assert_eq!(f.next_edges()[0].as_ref().unwrap().name(), "AccumulateGrad");
    y.backward().unwrap();
    assert_close(&grad_vals(&x), &[2.0]);
    assert!(c.grad().is_none());
    let z = mul(&y.detach(), &c);
    assert!(!z.requires_grad());
}

#[test]
fn long_chain_backward_and_drop_do_not_overflow_the_stack() {
    let x = scalar(0.5);
    let mut y = x.clone();
    for _ in 0..100_000 {
        y = tanh(&add_scalar(&mul_scalar(&y, 0.999), 0.001));
    }
    y.backward().unwrap();
    assert!(x.grad().is_some());
    drop(y); // 300k nodes freed iteratively
}

#[test]
fn chains_of_two_input_nodes_are_freed_whichever_edge_holds_them() {
    // Each node holds the last reference of two nodes: the chain's previous one
    // and a one-node branch. A node's first such edge is freed in the dropping
    // loop, any other by guarded recursion: with the chain on either side, all
    // nodes are freed and the stack does not overflow (under Miri, a chain
    // still deeper than the recursion's guard of 48).
    let n = if cfg!(miri) { 100 } else { 50_000 };
    let start = autograd_runtime::live_nodes();
    let x = scalar(0.5);
    for chain_first in [true, false] {
        let mut y = mul_scalar(&x, 1.0);
        for _ in 0..n {
            let branch = mul_scalar(&x, 2.0);
            y = if chain_first {
                add(&y, &branch)
            } else {
                add(&branch, &y)
            };
        }
        assert_eq!(autograd_runtime::live_nodes() - start, 2 * n as isize + 1);
        drop(y);
        assert_eq!(autograd_runtime::live_nodes(), start);
    }
}

#[test]
fn formulas_see_whether_the_graph_is_retained() {
    use autograd_runtime::__private::is_retaining_graph;
    use autograd_runtime::{AutogradError, Node, VariableList, record};
    use std::sync::{Arc, Mutex};
    struct Probe(Arc<Mutex<Vec<bool>>>);
    impl Node<TT> for Probe {
        fn name(&self) -> &str {
            "Probe"
        }
        fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
            self.0.lock().unwrap().push(is_retaining_graph());
            Ok(grads)
        }
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let x = leaf(&[1.0], &[]);
    let ([y], _) = record(Probe(seen.clone()), &[Some(&x)], [tensor(&[1.0], &[])]);
    assert!(!is_retaining_graph());
    y.backward_with(None, Some(true), false).unwrap();
    y.backward_with(None, None, false).unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![true, false]);
    assert!(!is_retaining_graph());
}

/// Records what `is_retaining_graph()` says while it runs.
struct SeesRetain(std::sync::Arc<std::sync::Mutex<Vec<bool>>>);
impl Node<TT> for SeesRetain {
    fn name(&self) -> &str {
        "SeesRetainBackward"
    }
    fn apply(&mut self, grads: VariableList<TT>) -> Result<VariableList<TT>, AutogradError> {
        self.0
            .lock()
            .unwrap()
            .push(autograd_runtime::is_retaining_graph());
        Ok(variable_list![grads[0].clone()])
    }
}

#[test]
fn a_hand_written_node_learns_whether_the_graph_is_retained() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let x = leaf(&[1.0, 2.0], &[2]);
    let ([y], _) = record(SeesRetain(seen.clone()), &[Some(&x)], [x.data()]);
    let s = sum(&y);
    s.backward_with(None, Some(true), false).unwrap();
    s.backward_with(None, None, false).unwrap();
    assert_eq!(*seen.lock().unwrap(), [true, false]);
    assert!(
        !autograd_runtime::is_retaining_graph(),
        "false outside backward"
    );
}
