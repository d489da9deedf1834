//! Saved-tensor hooks on generated nodes: the scoped default and
//! `register_saved_hooks` (PyTorch's `grad_fn._raw_saved_result.register_hooks`), checked
//! against PyTorch 2.15 (float64).

use autograd::runtime::{AutogradError, Variable, saved_tensors_hooks};
use autograd_toy::Toy;
use autograd_toy::ops::*;
use std::sync::{Arc, Mutex};

type V = Variable<Toy>;

fn vals(v: &V) -> Vec<f64> {
    v.data().data.to_vec()
}

fn close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-12 * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

/// f32 copies of the saved values: what `pack` keeps.
fn pack(v: &V) -> Result<(Vec<f32>, Vec<usize>), AutogradError> {
    let t = v.data();
    Ok((t.data.iter().map(|&x| x as f32).collect(), t.shape.clone()))
}

fn unpack(p: &(Vec<f32>, Vec<usize>)) -> Result<V, AutogradError> {
    let data: Vec<f64> = p.0.iter().map(|&x| x as f64).collect();
    Ok(Variable::from_data(Toy {
        data: Arc::new(data),
        shape: p.1.clone(),
    }))
}

#[test]
fn generated_nodes_pack_and_unpack_through_scoped_hooks() {
    // PyTorch, with hooks packing to float16: y = (x*x).sum() packs x twice, backward
    // unpacks twice; with exact (here f32-representable) values x.grad = 2x = [3., 4., 6.].
    let x = Variable::new(Toy::vec(vec![1.5, 2.0, 3.0]), true);
    let y = {
        let _hooks = saved_tensors_hooks(pack, unpack);
        sum(&mul_tensor(&x, &x))
    };
    y.backward().unwrap();
    close(&vals(&x.grad().unwrap()), &[3.0, 4.0, 6.0]);
}

#[test]
fn register_saved_hooks_on_a_generated_node() {
    // PyTorch: y = x.exp(); y.grad_fn._raw_saved_result.register_hooks(p2, u2);
    // y.sum().backward() -> ['p2', 'u2'], x.grad = exp(x); an unknown name ->
    // AttributeError "'ExpBackward0' object has no attribute '_raw_saved_foo'".
    let calls = Arc::new(Mutex::new(Vec::new()));
    let x = Variable::new(Toy::vec(vec![0.5, 1.0]), true);
    let y = exp(&x);
    let f = y.grad_fn().unwrap();
    let (p, u) = (calls.clone(), calls.clone());
    f.register_saved_hooks(
        "result",
        move |v: &V| {
            p.lock().unwrap().push("p2");
            Ok(v.data())
        },
        move |t: &Toy| {
            u.lock().unwrap().push("u2");
            Ok(Variable::from_data(t.clone()))
        },
    )
    .unwrap();
    let err = f
        .register_saved_hooks(
            "foo",
            |v: &V| Ok(v.data()),
            |t: &Toy| Ok(Variable::from_data(t.clone())),
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "'ExpBackward0' object has no attribute '_raw_saved_foo'"
    );
    sum(&y).backward().unwrap();
    assert_eq!(*calls.lock().unwrap(), ["p2", "u2"]);
    close(&vals(&x.grad().unwrap()), &[0.5f64.exp(), 1.0f64.exp()]);
}
