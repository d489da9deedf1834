//! A backend in its first hour: a newtype over ndtensor's tensor that writes five kernels
//! (`mul.Tensor`, `add.Tensor`, `exp`, `sum.dim_IntList`, `expand`) and takes the op set's
//! in-place and out= kernels (`written_back_kernels!`, with a `write_back` of a few lines). It
//! compiles (every other kernel of the generated trait defaults to PyTorch's "Could not run"
//! error), its ops differentiate, and the kit's partial mode passes it while naming each
//! operator it lacks.

use autograd::gradcheck::ElementAccess;
use autograd::runtime::Variable;
use autograd_opset::conformance::report::{Status, not_implemented};
use autograd_opset::conformance::{case_records, check_backend, check_partial_backend};
use autograd_opset::ops::{self, Backend};
use ndtensor::NdTensor;

type R<T> = Result<T, autograd_opset::Error>;
type N = NdTensor<f64>;

/// A tensor that computes with ndtensor's kernels, five of them.
#[derive(Clone, Debug)]
struct Part(N);

impl autograd::runtime::Tensor for Part {
    fn shape(&self) -> &[usize] {
        autograd::runtime::Tensor::shape(&self.0)
    }
    fn dtype(&self) -> &'static str {
        autograd::runtime::Tensor::dtype(&self.0)
    }
    fn ones_like(&self) -> Self {
        Part(self.0.ones_like())
    }
    fn zeros_like(&self) -> Self {
        Part(self.0.zeros_like())
    }
    fn zero_tensor_like(&self) -> Self {
        Part(self.0.zero_tensor_like())
    }
    fn add(&self, other: &Self) -> Self {
        Part(autograd::runtime::Tensor::add(&self.0, &other.0))
    }
    fn has_nan(&self) -> bool {
        self.0.has_nan()
    }
    fn is_differentiable(&self) -> bool {
        self.0.is_differentiable()
    }
    fn sum_to(&self, shape: &[usize]) -> Option<Self> {
        autograd::runtime::Tensor::sum_to(&self.0, shape).map(Part)
    }
    fn expand_to(&self, shape: &[usize]) -> Option<Self> {
        autograd::runtime::Tensor::expand_to(&self.0, shape).map(Part)
    }
}

impl ElementAccess for Part {
    fn to_f64_vec(&self) -> Vec<f64> {
        self.0.to_f64_vec()
    }
    fn with_f64_vec(&self, values: &[f64]) -> Self {
        Part(self.0.with_f64_vec(values))
    }
}

impl autograd_opset::nn::FromValues for Part {
    fn from_f64(values: &[f64], shape: &[usize]) -> Self {
        Part(N::from_f64(values, shape))
    }
    fn from_i64(values: &[i64], shape: &[usize]) -> Self {
        Part(N::from_i64(values.to_vec(), shape))
    }
    fn from_bool(values: &[bool], shape: &[usize]) -> Self {
        Part(N::from_bool(values.to_vec(), shape))
    }
}

impl autograd_opset::conformance::ConformanceTensor for Part {}

/// Where the op set's in-place and out= kernels (`written_back_kernels!`) store a result:
/// PyTorch's cast check, then the result in the destination's dtype.
fn write_back(dest: &mut Part, r: Part) -> R<()> {
    use autograd::runtime::Tensor;
    autograd_opset::dtype::check_cast(r.dtype(), dest.dtype())?;
    let (shape, v) = (r.shape().to_vec(), r.0.to_f64_vec());
    *dest = match dest.dtype() {
        d if d == r.dtype() => r,
        "i64" => Part(N::from_i64(v.iter().map(|x| *x as i64).collect(), &shape)),
        "bool" => Part(N::from_bool(v.iter().map(|x| *x != 0.0).collect(), &shape)),
        _ => Part(N::from_f64(&v, &shape)),
    };
    Ok(())
}

impl Backend for Part {
    type Error = autograd_opset::Error;
    fn backend_name() -> &'static str {
        "Part"
    }
    // The in-place and out= kernels: the functional ones, stored with PyTorch's dtype rules.
    autograd_opset::written_back_kernels!(write_back);
    fn mul_tensor(self_: &Self, other: &Self) -> R<Self> {
        <N as Backend>::mul_tensor(&self_.0, &other.0).map(Part)
    }
    fn add_tensor(self_: &Self, other: &Self, alpha: autograd::types::Scalar) -> R<Self> {
        <N as Backend>::add_tensor(&self_.0, &other.0, alpha).map(Part)
    }
    fn exp(self_: &Self) -> R<Self> {
        <N as Backend>::exp(&self_.0).map(Part)
    }
    fn sum_dim_intlist(
        self_: &Self,
        dim: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<autograd::types::ScalarType>,
    ) -> R<Self> {
        <N as Backend>::sum_dim_intlist(&self_.0, dim, keepdim, dtype).map(Part)
    }
    fn expand(self_: &Self, size: &[i64], implicit: bool) -> R<Self> {
        <N as Backend>::expand(&self_.0, size, implicit).map(Part)
    }
}

#[test]
fn its_ops_differentiate_and_the_rest_say_could_not_run() {
    let x = Variable::new(Part::from(vec![0.5, 1.0, 2.0]), true);
    let y = ops::sum(&ops::mul_tensor(&ops::exp(&x).unwrap(), &x).unwrap(), None).unwrap();
    y.backward().unwrap();
    // d/dx sum(x e^x) = (1 + x) e^x
    let g = x.grad().unwrap().data().to_f64_vec();
    for (gi, xi) in g.iter().zip([0.5f64, 1.0, 2.0]) {
        assert!((gi - (1.0 + xi) * xi.exp()).abs() < 1e-12, "{g:?}");
    }
    let e = ops::sin(&x).unwrap_err().to_string();
    assert!(
        e.starts_with("Could not run 'aten::sin' with arguments from the 'Part' backend."),
        "{e}"
    );
}

#[test]
fn the_kit_passes_it_and_names_what_it_lacks() {
    let failures = check_partial_backend::<Part>(&[]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let records = case_records::<Part>();
    let of = |op: &str| -> Vec<Status> {
        records
            .iter()
            .filter(|r| r.op == op)
            .map(|r| r.status)
            .collect()
    };
    // Its own ops pass every check; one that needs another kernel is not implemented.
    for op in ["exp", "sum"] {
        assert!(
            !of(op).is_empty() && of(op).iter().all(|s| *s == Status::Pass),
            "{op}: {:?}",
            of(op)
        );
    }
    assert!(of("sin").iter().all(|s| *s == Status::NotImplemented));
    let missing = not_implemented(&records);
    let sin = missing
        .iter()
        .find(|(op, _)| op == "sin")
        .expect("sin is listed");
    assert_eq!(sin.1, ["aten::sin"]);
    // The full kit counts what is missing as failures, one line per operator with the
    // kernels its checks need (sin's fixtures need `permute` too), and f32 tensors, which
    // this backend does not have (its `from_f64_as` is the default, and its tensor has no
    // `to_dtype`): exp's gradcheck cases pass in f64, its f32 checks do not run.
    let full = check_backend::<Part>(&[]);
    let line = |op: &str| {
        full.iter()
            .find(|f| f.starts_with(&format!("{op}: needs ")))
    };
    assert!(
        line("sin").is_some_and(|l| l.contains("aten::sin")),
        "{}",
        full.join("\n")
    );
    assert!(
        line("exp").is_some_and(|l| l.ends_with(", f32 tensors")),
        "{full:?}"
    );
}

impl From<Vec<f64>> for Part {
    fn from(v: Vec<f64>) -> Self {
        let n = v.len();
        Part(N::from_f64(&v, &[n]))
    }
}
