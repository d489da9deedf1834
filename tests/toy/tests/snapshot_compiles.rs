//! The expansion snapshot of `autograd-codegen/tests/fixtures/small.yaml` compiles and runs
//! against a backend: the snapshot is real code, not just text.

#[allow(dead_code)]
mod generated {
    include!("../../../autograd-codegen/tests/snapshots/small.rs");
}

use autograd::runtime::Variable;
use autograd_toy::Toy;
use generated::{Backend, exp, max_dim, mul_tensor, sum};

impl Backend for Toy {
    fn mul_tensor(self_: &Self, other: &Self) -> Self {
        <Toy as autograd_toy::Backend>::mul_tensor(self_, other)
    }
    fn exp(self_: &Self) -> Self {
        <Toy as autograd_toy::Backend>::exp(self_)
    }
    fn sum(self_: &Self, _dtype: Option<autograd::types::ScalarType>) -> Self {
        <Toy as autograd_toy::Backend>::sum(self_)
    }
    fn expand(self_: &Self, size: &[i64], _implicit: bool) -> Self {
        <Toy as autograd_toy::Backend>::expand(self_, size)
    }
    fn max_dim(self_: &Self, dim: i64, keepdim: bool) -> (Self, Self) {
        <Toy as autograd_toy::Backend>::max_dim(self_, dim, keepdim)
    }
}

#[test]
fn snapshot_code_computes_gradients() {
    let x = Variable::new(Toy::vec(vec![0.5, -1.0]), true);
    let y = sum(&mul_tensor(&exp(&x), &x), None);
    y.backward().unwrap();
    let g = x.grad().unwrap().data();
    for (gi, xi) in g.data.iter().zip([0.5f64, -1.0]) {
        assert!((gi - (1.0 + xi) * xi.exp()).abs() < 1e-12);
    }
    let (values, indices) = max_dim(&x, 0, false);
    assert!(values.requires_grad() && !indices.requires_grad());
    let err = sum(&values, None).backward().unwrap_err().to_string();
    assert!(err.contains("max.dim backward"), "{err}");
}
