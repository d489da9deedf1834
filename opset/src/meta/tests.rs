//! The meta functions on their own: what they return, and PyTorch's error kind and text.

use super::*;
use crate::ErrorKind;

/// The error's kind and text.
fn err<T: std::fmt::Debug>(r: R<T>) -> (ErrorKind, String) {
    let e = r.unwrap_err();
    (e.kind(), e.to_string())
}

fn runtime(m: &str) -> (ErrorKind, String) {
    (ErrorKind::Runtime, m.to_string())
}

fn index(m: &str) -> (ErrorKind, String) {
    (ErrorKind::Index, m.to_string())
}

#[test]
fn select_counts_negative_indices_from_the_end() {
    assert_eq!(select(&[2, 5], 1, -1), Ok((1, 4)));
    assert_eq!(select(&[2, 5], -2, 1), Ok((0, 1)));
    assert_eq!(
        err(select(&[2, 5], 1, 5)),
        index("select(): index 5 out of range for tensor of size [2, 5] at dimension 1")
    );
    assert_eq!(
        err(select(&[], 0, 0)),
        index("select() cannot be applied to a 0-dim tensor.")
    );
    assert_eq!(
        err(select(&[2], 1, 0)),
        index("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    );
}

#[test]
fn split_gives_the_pieces_ranges() {
    assert_eq!(split(&[3, 5], 2, 1), Ok((1, vec![0..2, 2..4, 4..5])));
    let one_piece = |r: std::ops::Range<i64>| Ok((0, std::iter::once(r).collect()));
    assert_eq!(split(&[0], 0, 0), one_piece(0..0));
    assert_eq!(split(&[4], 4, -1), one_piece(0..4));
    assert_eq!(
        err(split(&[4], -1, 0)),
        runtime("split expects split_size be non-negative, but got split_size=-1")
    );
    assert_eq!(
        err(split(&[4], 0, 0)),
        runtime("split_size can only be 0 if dimension size is 0, but got dimension size of 4")
    );
    assert_eq!(
        err(split(&[], 1, 0)),
        runtime("split expects at least a 1-dimensional tensor")
    );
}

#[test]
fn unbind_needs_a_dim() {
    assert_eq!(unbind(&[2, 3], -1), Ok(1));
    assert_eq!(
        err(unbind(&[], 0)),
        index("Dimension specified as 0 but tensor has no dimensions")
    );
}

#[test]
fn narrow_checks_start_and_length() {
    assert_eq!(narrow(&[3, 4], 1, 4, 0), Ok((1, 4)));
    assert_eq!(narrow(&[3, 4], 0, -3, 3), Ok((0, 0)));
    assert_eq!(
        err(narrow(&[3, 4], 1, 5, 0)),
        index("start out of range (expected to be in range of [-4, 4], but got 5)")
    );
    assert_eq!(
        err(narrow(&[3, 4], 1, 0, -1)),
        runtime("narrow(): length must be non-negative.")
    );
    assert_eq!(
        err(narrow(&[], 0, 0, 0)),
        runtime("narrow() cannot be applied to a 0-dim tensor.")
    );
}

#[test]
fn slice_clamps_its_bounds() {
    assert_eq!(slice(&[5], 0, Some(-3), None, 2), Ok((0, 2..5)));
    assert_eq!(slice(&[2, 5], 1, Some(4), Some(1), 1), Ok((1, 4..4)));
    assert_eq!(slice(&[2, 5], 0, Some(-9), Some(9), 1), Ok((0, 0..2)));
    assert_eq!(
        err(slice(&[], 0, None, None, 0)),
        runtime("slice step must be positive")
    );
    assert_eq!(
        err(slice(&[], 0, None, None, 1)),
        runtime("slice() cannot be applied to a 0-dim tensor.")
    );
}

#[test]
fn slice_backward_checks_the_rank_before_the_step() {
    assert_eq!(
        slice_backward(&[2, 6], 1, 1, 9, 2),
        Ok((vec![2, 6], 1, 1..6))
    );
    assert_eq!(
        err(slice_backward(&[], 0, 0, 1, 0)),
        runtime("slice() cannot be applied to a 0-dim tensor.")
    );
    assert_eq!(
        err(slice_backward(&[2, -1], 0, 0, 1, 1)),
        runtime("Trying to create tensor with negative dimension -1: [2, -1]")
    );
}

#[test]
fn cat_and_stack_give_their_axis() {
    assert_eq!(cat(&[&[2, 3], &[2, 1]], -1), Ok(1));
    assert_eq!(
        err(cat(&[&[2, 3], &[1, 3]], 1)),
        runtime(
            "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 1 for tensor number 1 in the list."
        )
    );
    assert_eq!(stack(&[&[2, 3], &[2, 3]], -1), Ok(2));
    assert_eq!(
        err(stack(&[&[2, 3], &[3, 2]], 0)),
        runtime(
            "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 2] at entry 1"
        )
    );
    assert_eq!(
        err(stack(&[], 0)),
        runtime("stack expects a non-empty TensorList")
    );
}

#[test]
fn permute_and_transpose_normalize_dims() {
    assert_eq!(permute(3, &[-1, 0, 1]), Ok(vec![2, 0, 1]));
    assert_eq!(permute(0, &[]), Ok(vec![]));
    assert_eq!(
        err(permute(2, &[0, -2])),
        runtime("permute(): duplicate dims are not allowed.")
    );
    assert_eq!(
        err(permute(2, &[0])),
        runtime(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = 2 is not equal to len(dims) = 1"
        )
    );
    assert_eq!(transpose(3, -1, 0), Ok((2, 0)));
    assert_eq!(transpose(0, -1, 0), Ok((0, 0)));
    assert_eq!(t(2), Ok(()));
    assert_eq!(
        err(t(3)),
        runtime("t() expects a tensor with <= 2 dimensions, but self is 3D")
    );
}

#[test]
fn view_needs_compatible_strides() {
    assert_eq!(view(&[2, 3], &[3, 1], &[3, -1]), Ok(vec![3, 2]));
    // A transposed [3, 2] (strides [1, 3]) cannot be flattened without a copy.
    assert_eq!(
        err(view(&[3, 2], &[1, 3], &[6])),
        runtime(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    );
    assert_eq!(
        err(view(&[2, 3], &[3, 1], &[4, -1])),
        runtime("shape '[4, -1]' is invalid for input of size 6")
    );
}

#[test]
fn squeezes_drop_only_size_one_dims() {
    assert_eq!(squeeze(&[1, 2, 1]), vec![2]);
    assert_eq!(squeeze_dims(&[1, 2, 1], &[0, 1]), Ok(vec![2, 1]));
    assert_eq!(squeeze_dims(&[1, 2], &[]), Ok(vec![1, 2]));
    assert_eq!(
        err(squeeze_dims(&[1, 2], &[0, -2])),
        runtime("dim 0 appears multiple times in the list of dims")
    );
    assert_eq!(squeeze_dim(&[1, 2], -2), Ok(Some(0)));
    assert_eq!(squeeze_dim(&[1, 2], 1), Ok(None));
    assert_eq!(squeeze_dim(&[], 0), Ok(None));
    assert_eq!(unsqueeze(2, -1), Ok(2));
    assert_eq!(
        err(unsqueeze(2, 3)),
        index("Dimension out of range (expected to be in range of [-3, 2], but got 3)")
    );
}

#[test]
fn bmm_gives_the_output_shape() {
    assert_eq!(bmm(&[4, 2, 3], &[4, 3, 5]), Ok(vec![4, 2, 5]));
    assert_eq!(
        err(bmm(&[2, 3], &[4, 3, 5])),
        runtime("batch1 must be a 3D tensor")
    );
    assert_eq!(
        err(bmm(&[4, 2, 3], &[3, 5])),
        runtime("batch2 must be a 3D tensor")
    );
    assert_eq!(
        err(bmm(&[4, 2, 3], &[4, 2, 5])),
        runtime(
            "Expected size for first two dimensions of batch2 tensor to be: [4, 3] but got: [4, 2]."
        )
    );
}

#[test]
fn diagonal_geometry_with_offsets() {
    let d = diagonal(&[2, 3, 4], 1, 0, 2).unwrap();
    assert_eq!((d.d1, d.d2, d.len, d.rest.clone()), (0, 2, 2, vec![3]));
    assert_eq!(d.out_shape(), vec![3, 2]);
    assert_eq!(diagonal(&[2, 3], -1, 0, 1).unwrap().len, 1);
    assert_eq!(diagonal(&[2, 3], 5, 0, 1).unwrap().len, 0);
    assert_eq!(
        err(diagonal(&[2, 3], 0, 1, -1)),
        runtime("diagonal dimensions cannot be identical 1, -1")
    );
}

#[test]
fn argument_checks() {
    assert_eq!(clamp(None, Some(1.0)), Ok(()));
    assert_eq!(
        err(clamp(None, None)),
        runtime("torch.clamp: At least one of 'min' or 'max' must not be None")
    );
    assert_eq!(gelu("tanh"), Ok(true));
    assert_eq!(gelu("none"), Ok(false));
    assert_eq!(
        err(gelu("erf")),
        runtime("approximate argument must be either none or tanh.")
    );
    assert_eq!(native_dropout(1.0), Ok(()));
    assert_eq!(
        err(native_dropout(1.5)),
        runtime("bernoulli_ expects p to be in [0, 1], but got p=-0.5")
    );
}

#[test]
fn broadcasts() {
    assert_eq!(where_self(&[2, 1], &[3], &[1, 1, 1]), Ok(vec![1, 2, 3]));
    assert_eq!(broadcast_to(&[3], &[2, 3]), Ok(()));
    assert_eq!(
        err(broadcast_to(&[2, 3], &[3])),
        runtime("output with shape [3] doesn't match the broadcast shape [2, 3]")
    );
    assert_eq!(
        err(broadcast_to(&[2], &[3])),
        runtime(
            "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"
        )
    );
}

/// `nll_loss_backward`'s arguments: a `(3, 4)` input, three targets, mean reduction.
fn nll_back<'a>() -> NllBackward<'a> {
    NllBackward {
        grad_output: &[],
        input: &[3, 4],
        target: &[3],
        weight: None,
        reduction: 1,
        total_weight: &[],
    }
}

#[test]
fn nll_loss_checks_in_pytorchs_order_and_words() {
    assert_eq!(nll_loss_forward(&[3, 4], &[3], None), Ok(4));
    assert_eq!(nll_loss_forward(&[4], &[], None), Ok(4));
    assert_eq!(nll_loss_forward(&[4], &[1], None), Ok(4));
    assert_eq!(
        err(nll_loss_forward(&[2, 3], &[], None)),
        index("Dimension specified as 0 but tensor has no dimensions")
    );
    assert_eq!(
        err(nll_loss_forward(&[3], &[2], None)),
        runtime("For 1D input, 1D target must have size 1, but got target size: 2")
    );
    assert_eq!(
        err(nll_loss_forward(&[3], &[], Some(&[3, 2]))),
        runtime(
            "weight tensor should be defined either for all 3 classes or no classes but got weight tensor of shape: [3, 2]"
        )
    );
    assert_eq!(nll_loss_backward(nll_back()), Ok(4));
    // The backward takes a 1-D target beside a 1-D input only of the input's size.
    let one_sample = NllBackward {
        input: &[4],
        target: &[1],
        ..nll_back()
    };
    assert_eq!(
        err(nll_loss_backward(one_sample)),
        runtime("size mismatch (got input: [4], target: [1])")
    );
    let tw = NllBackward {
        total_weight: &[2],
        grad_output: &[2],
        ..nll_back()
    };
    assert_eq!(
        err(nll_loss_backward(tw)),
        runtime("expected total_weight to be a  single element tensor, got: [2] (2 elements)")
    );
    let weight = NllBackward {
        weight: Some(&[3]),
        ..nll_back()
    };
    assert_eq!(
        err(nll_loss_backward(weight)),
        runtime("weight tensor should be defined either for all or no classes")
    );
    let none = NllBackward {
        grad_output: &[3, 3],
        reduction: 0,
        ..nll_back()
    };
    assert_eq!(
        err(nll_loss_backward(none)),
        runtime(
            "Expected a tensor of dimension 1 and tensor.size[0] == 3 but got: dimension 2 and tensor.size[0] = 3"
        )
    );
    let single = NllBackward {
        grad_output: &[1, 1],
        ..nll_back()
    };
    assert_eq!(
        err(nll_loss_backward(single)),
        runtime("Expected a single element grad_output tensor, but got: [1, 1]")
    );
    assert_eq!(
        err(nll_target(-1.0, 3, -100)),
        index("Target -1 is out of bounds.")
    );
}

#[test]
fn index_elements_are_checked_against_their_dim() {
    assert_eq!(index_in_self(0.0, 1), Ok(0));
    assert_eq!(
        err(index_in_self(-1.0, 3)),
        index("index out of range in self")
    );
    assert_eq!(index_in_dim(2.0, 1, 3), Ok(2));
    assert_eq!(
        err(index_in_dim(3.0, 1, 3)),
        runtime("index 3 is out of bounds for dimension 1 with size 3")
    );
    assert_eq!(
        err(index_select(&[], 0, &[2])),
        runtime("index_select(): Index to scalar can have only 1 value, got 2 value(s)")
    );
    assert_eq!(
        err(index_select(&[3], 0, &[1, 1])),
        index("index_select(): Index is supposed to be a vector")
    );
    assert_eq!(err(embedding(&[3, 2, 1])), runtime("'weight' must be 2-D"));
}
