//! `scatter_reduce.two` (Core ATen; issue 30): the op set's `meta::scatter_reduce_checked`
//! checks the arguments (the index read on the host) and gives the positions;
//! `meta::scatter_reduce_values` reduces the elements on the host (candle has no scatter
//! with `prod`, `amax`, `amin` or counts): floating-point dtypes in `f64`, then back to the
//! dtype; integers and booleans in `i64`, with PyTorch's wrapping arithmetic and floored
//! mean.

use crate::tensor::CandleTensor;
use autograd::runtime::Tensor as _;
use autograd_opset::error::Error;
use autograd_opset::meta;
use candle_core::{DType, Tensor};

type C = CandleTensor;
type R<T> = Result<T, Error>;

fn ce<T>(r: candle_core::Result<T>) -> R<T> {
    r.map_err(|e| {
        let m = e.to_string();
        Error::internal("candle", m.lines().next().unwrap_or_default())
    })
}

/// The row-major elements of `t` converted to `d` on the host.
fn host<X: candle_core::WithDType>(t: &Tensor, d: DType) -> R<Vec<X>> {
    let t = ce(ce(t.to_dtype(d))?.contiguous())?;
    ce(ce(t.flatten_all())?.to_vec1::<X>())
}

/// `scatter_reduce.two`: `self` with `src`'s elements reduced into the positions `index`
/// gives along `dim` (`sum`, `prod`, `mean`, `amax`, `amin`), starting from `self`'s
/// element with `include_self`, else from the first element scattered there.
pub(super) fn scatter_reduce(
    self_: &C,
    dim: i64,
    index: &C,
    src: &C,
    reduce: &str,
    include_self: bool,
) -> R<C> {
    let i = super::advanced::scatter_index(index)?;
    let (r, plan) = meta::scatter_reduce_checked(
        (self_.shape(), self_.dtype()),
        dim,
        (index.shape(), &i),
        (src.shape(), src.dtype()),
        reduce,
    )?;
    let shape = self_.shape();
    let d = self_.t.dtype();
    let out = match d {
        DType::F64 | DType::F32 | DType::F16 | DType::BF16 => {
            let (x, s) = (
                host::<f64>(&self_.t, DType::F64)?,
                host(&src.t, DType::F64)?,
            );
            let v = meta::scatter_reduce_values(&x, &s, &plan, r, include_self);
            ce(ce(Tensor::from_vec(v, shape, self_.t.device()))?.to_dtype(d))?
        }
        _ => {
            let (x, s) = (
                host::<i64>(&self_.t, DType::I64)?,
                host(&src.t, DType::I64)?,
            );
            let v = meta::scatter_reduce_values(&x, &s, &plan, r, include_self);
            let t = ce(Tensor::from_vec(v, shape, self_.t.device()))?;
            match d {
                DType::U8 => ce(ce(t.ne(0i64))?.to_dtype(DType::U8))?,
                _ => ce(t.to_dtype(d))?,
            }
        }
    };
    Ok(C::new(out))
}
