//! Integer and boolean tensors: exact `i64` elements, PyTorch's result dtypes, no history
//! for them, promotion into floats with gradients, and the index-dtype errors. (The PyTorch
//! fixtures of `opset/fixtures/dtypes.json` check values, dtypes and messages against
//! PyTorch; these check what the fixtures cannot: integers beyond `f64`'s 2^53, `f32`
//! libraries, and the autograd side.)

use ndtensor::ops::*;
use ndtensor::{NdTensor, Var};

const BIG: i64 = (1 << 60) + 1; // not an f64

fn ints(v: Vec<i64>, shape: &[usize]) -> Var {
    Var::from_data(NdTensor::from_i64(v, shape))
}

#[test]
fn integers_beyond_f64_stay_exact_through_moves_and_integer_arithmetic() {
    let a = ints(vec![BIG, -BIG, 3, BIG - 2, 7, 8], &[2, 3]);
    let t = transpose_int(&a, 0, 1).unwrap();
    let r = reshape(&t, &[6]).unwrap();
    assert_eq!(
        r.data().to_i64_vec().unwrap(),
        vec![BIG, BIG - 2, -BIG, 7, 3, 8]
    );
    let i = ints(vec![2, 0, 0], &[3]);
    let s = index_select(&r, 0, &i).unwrap();
    assert_eq!(s.data().to_i64_vec().unwrap(), vec![-BIG, BIG, BIG]);
    let g = gather(&a, 1, &ints(vec![0, 0, 2, 1], &[2, 2]), false).unwrap();
    assert_eq!(g.data().to_i64_vec().unwrap(), vec![BIG, BIG, 8, 7]);
    let c = cat(&[s.clone(), ints(vec![1], &[1])], 0).unwrap();
    assert_eq!(c.data().to_i64_vec().unwrap(), vec![-BIG, BIG, BIG, 1]);
    // i64 arithmetic is i64 arithmetic, not f64's.
    let d = add_tensor(&s, &ints(vec![1, 1, -1], &[3]), 2).unwrap();
    assert_eq!(d.data().dtype(), "i64");
    assert_eq!(
        d.data().to_i64_vec().unwrap(),
        vec![-BIG + 2, BIG + 2, BIG - 2]
    );
    let m = mul_scalar(&ints(vec![BIG / 4], &[1]), 2).unwrap();
    assert_eq!(m.data().to_i64_vec().unwrap(), vec![BIG / 4 * 2]);
    let e = eq_scalar(&ints(vec![BIG, 5], &[2]), 5.0).unwrap();
    assert_eq!(e.data().to_bool_vec().unwrap(), vec![false, true]);
}

#[test]
fn comparisons_and_indices_have_pytorchs_dtypes_and_no_history() {
    let x = Var::new(
        NdTensor::<f64>::from_vec(vec![0.5, -1.0, 2.0, 0.0], &[2, 2]),
        true,
    );
    let m = gt_scalar(&x, 0.0).unwrap();
    assert_eq!(m.data().dtype(), "bool");
    assert!(!m.requires_grad() && m.grad_fn().is_none());
    let a = argmax(&x, Some(1), false).unwrap();
    assert_eq!(a.data().to_i64_vec().unwrap(), vec![0, 0]);
    assert!(!a.requires_grad());
    let (v, i) = max_dim(&x, 1, true).unwrap();
    assert!(v.requires_grad());
    assert_eq!(i.data().dtype(), "i64");
    assert!(!i.requires_grad());
    // The indices select the values again.
    let g = gather(&x, 1, &i, false).unwrap();
    assert_eq!(g.data().to_vec(), v.data().to_vec());
    let (_, mask) = native_dropout(&x, 0.5, Some(false)).unwrap();
    assert_eq!(mask.data().to_bool_vec().unwrap(), vec![true; 4]);
}

#[test]
fn a_mask_times_a_float_tensor_is_float_and_differentiable() {
    let x = Var::new(NdTensor::<f32>::from_vec(vec![0.5, -1.0, 2.0], &[3]), true);
    let mask = gt_scalar(&x, 0.0).unwrap();
    let y = mul_tensor(&x, &mask).unwrap();
    assert_eq!(y.data().dtype(), "f32");
    sum(&y, None).unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().data().to_vec(), vec![1.0, 0.0, 1.0]);
    // An integer tensor divided is float: PyTorch's true division.
    let q = div_tensor(&ints(vec![7, 2], &[2]), &ints(vec![2, 4], &[2])).unwrap();
    assert_eq!(q.data().to_vec(), vec![3.5, 0.5]);
    // The sum of a mask counts.
    let n = sum(&mask, None).unwrap();
    assert_eq!(n.data().to_i64_vec().unwrap(), vec![2]);
}

#[test]
fn index_arguments_must_be_i64_with_pytorchs_errors() {
    let x = Var::new(NdTensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[3]), true);
    let fi = Var::from_data(NdTensor::<f32>::from_vec(vec![0.0], &[1]));
    let msg = |r: Result<Var<f32>, autograd::runtime::AutogradError>| r.unwrap_err().to_string();
    assert_eq!(
        msg(gather(&x, 0, &fi, false)),
        "gather(): Expected dtype int32/int64 for index"
    );
    assert_eq!(
        msg(index_select(&x, 0, &fi)),
        "index_select(): Expected dtype int32 or int64 for index"
    );
    assert_eq!(
        msg(nll_loss(&x, &fi, None, 1, -100)),
        "expected target dtype to be Long or Byte, but got Float"
    );
    let w = Var::new(NdTensor::<f32>::zeros(&[3, 2]), true);
    assert_eq!(
        msg(embedding(&w, &fi, -1, false, false)),
        "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.FloatTensor instead (while checking arguments for embedding)"
    );
    // In an f32 library an index above 2^24 is not an f32: it stays exact.
    let big = Var::from_data(NdTensor::<f32>::from_i64(vec![(1 << 24) + 1], &[1]));
    assert_eq!(
        msg(gather(&x, 0, &big, false)),
        "index 16777217 is out of bounds for dimension 0 with size 3"
    );
}

#[test]
fn in_place_ops_keep_the_destinations_dtype() {
    let i = ints(vec![1, 2, 3], &[3]);
    let f = Var::from_data(NdTensor::<f64>::from_vec(vec![0.5, 0.5, 0.5], &[3]));
    let e = mul_tensor_(&i, &f).unwrap_err();
    assert_eq!(
        e.to_string(),
        "result type Double can't be cast to the desired output type Long"
    );
    let i = ints(vec![1, 2, 3], &[3]);
    add_tensor_(&i, &ints(vec![5, 5, 5], &[3]), 1).unwrap();
    assert_eq!(i.data().to_i64_vec().unwrap(), vec![6, 7, 8]);
    let f = Var::from_data(NdTensor::<f64>::from_vec(vec![0.5, 0.5, 0.5], &[3]));
    mul_tensor_(&f, &ints(vec![2, 0, 1], &[3])).unwrap();
    assert_eq!(f.data().dtype(), "f64");
    assert_eq!(f.data().to_vec(), vec![1.0, 0.0, 0.5]);
}

#[test]
fn in_place_ops_on_views_of_integer_tensors_reach_the_base() {
    let base = ints(vec![1, 2, 3, BIG], &[2, 2]);
    let v = select_int(&base, 0, 1).unwrap();
    add_tensor_(&v, &ints(vec![10, 10], &[2]), 1).unwrap();
    assert_eq!(base.data().to_i64_vec().unwrap(), vec![1, 2, 13, BIG + 10]);
    let m = Var::from_data(NdTensor::<f64>::from_bool(vec![true, false, true], &[3]));
    let t = narrow(&m, 0, 1, 2).unwrap();
    fill_scalar_(&t, 1.0).unwrap();
    assert_eq!(m.data().to_bool_vec().unwrap(), vec![true, true, true]);
}

/// A Scalar is an integer, a float or a boolean, as in PyTorch: `i64 + 2` stays `i64`,
/// `i64 + 2.0` is a float tensor (the library's float, PyTorch's default dtype), a boolean
/// plus `true` stays boolean, and a float `alpha` for integers is PyTorch's error.
#[test]
fn scalars_promote_by_their_kind() {
    let i = ints(vec![1, 2, 3], &[3]);
    let r = add_scalar(&i, 2, 1).unwrap();
    assert_eq!(r.data().dtype(), "i64");
    assert_eq!(r.data().to_i64_vec().unwrap(), vec![3, 4, 5]);
    let r = add_scalar(&i, 2.0, 1).unwrap();
    assert_eq!(r.data().dtype(), "f64");
    assert_eq!(r.data().to_vec(), vec![3.0, 4.0, 5.0]);
    assert_eq!(
        mul_scalar(&i, 2.5).unwrap().data().to_vec(),
        vec![2.5, 5.0, 7.5]
    );
    assert_eq!(mul_scalar(&i, true).unwrap().data().dtype(), "i64");
    let b = Var::from_data(NdTensor::<f64>::from_bool(vec![true, false], &[2]));
    let r = add_scalar(&b, true, 1).unwrap();
    assert_eq!(r.data().dtype(), "bool");
    assert_eq!(add_scalar(&b, 1, 1).unwrap().data().dtype(), "i64");
    assert_eq!(mul_scalar(&b, false).unwrap().data().dtype(), "bool");
    assert_eq!(
        add_scalar(&i, 1, 2.0).unwrap_err().to_string(),
        "For integral input tensors, argument alpha must not be a floating point number."
    );
    assert_eq!(
        add_tensor(&i, &i, true).unwrap_err().to_string(),
        "Boolean alpha only supported for Boolean results."
    );
    let c = clamp(&i, Some((-1.0).into()), None).unwrap();
    assert_eq!(c.data().dtype(), "f64");
    // In place, the float result cannot go into an integer tensor (this library's float
    // is `f64`: PyTorch names it Double).
    assert_eq!(
        add_scalar_(&ints(vec![1], &[1]), 2.0, 1)
            .unwrap_err()
            .to_string(),
        "result type Double can't be cast to the desired output type Long"
    );
}

#[test]
fn embedding_bag_follows_pytorchs_float32_fast_path() {
    // PyTorch 2.15's values: float32 weights in modes sum and mean without padding_idx take
    // its fast path, which leaves offset2bag empty in mode sum and, with
    // include_last_offset, ends the last bag at the last offset (indices 2..4 here); with a
    // padding_idx the reference path ends it at the last index.
    let w = Var::from_data(NdTensor::<f32>::from_vec(
        (0..10).map(|x| x as f32).collect(),
        &[5, 2],
    ));
    let idx = Var::from_data(NdTensor::<f32>::from_i64(vec![1, 2, 4, 4, 3, 0], &[6]));
    let off = Var::from_data(NdTensor::<f32>::from_i64(vec![0, 2, 2, 4], &[4]));
    let run =
        |mode, pad| _embedding_bag(&w, &idx, &off, false, mode, false, None, true, pad).unwrap();
    let ints = |v: &Var<f32>| v.data().to_i64_vec().unwrap();
    let (v, o2b, size, max) = run(0, -1);
    assert_eq!(v.data().dtype(), "f32");
    assert_eq!(v.data().to_vec(), vec![6.0, 8.0, 0.0, 0.0, 16.0, 18.0]);
    assert_eq!(
        (ints(&o2b), ints(&size), ints(&max)),
        (vec![], vec![0; 3], vec![0; 3])
    );
    let (v, o2b, size, max) = run(1, -1);
    assert_eq!(v.data().to_vec(), vec![3.0, 4.0, 0.0, 0.0, 4.0, 4.5]);
    assert_eq!(ints(&o2b), vec![0, 0, 2, 2, 2, 2]);
    assert_eq!((ints(&size), ints(&max)), (vec![2, 0, 4], vec![2, 0, 4]));
    let (v, o2b, _, _) = run(0, 4);
    assert_eq!(v.data().to_vec(), vec![6.0, 8.0, 0.0, 0.0, 6.0, 8.0]);
    assert_eq!(ints(&o2b), vec![0, 0, 2, 2, 2, 2]);
    // The fast path's message for an index out of range.
    let bad = Var::from_data(NdTensor::<f32>::from_i64(vec![1, 7, -1], &[3]));
    let zero = Var::from_data(NdTensor::<f32>::from_i64(vec![0], &[1]));
    let e = _embedding_bag(&w, &bad, &zero, false, 1, false, None, false, -1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Index 1 of input takes value 7 which is not in the valid range [0, 5)"
    );
}
