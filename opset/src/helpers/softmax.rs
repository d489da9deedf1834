//! PyTorch's softmax composites (CompositeImplicitAutograd in PyTorch's `SoftMax.cpp`):
//! `softmax.int` and `log_softmax.int` cast to their `dtype` argument first, then call
//! `_softmax` / `_log_softmax`. Over `Variable<T>` only (no formula calls them).

use super::*;
use autograd::types::ScalarType;

/// `input_.toType(dtype)` then `_softmax` (`log` false) or `_log_softmax`, as PyTorch's
/// composites. A cast to a float dtype is `_to_copy`, as PyTorch's; an
/// integer or boolean one would reach the kernel's dtype error, which is raised here
/// (after the same dim check), without a conversion the backend may not have.
fn softmax_composite<T: Backend>(
    log: bool,
    input: &V<T>,
    dim: i64,
    dtype: Option<ScalarType>,
) -> Res<V<T>> {
    let converted = match dtype {
        None => input.clone(),
        Some(d) => {
            let name = d.name();
            if crate::dtype::Kind::requested(d) != crate::dtype::Kind::Float {
                let shape = input.shape();
                crate::meta::softmax(log, name, &shape, dim, false)
                    .map_err(AutogradError::backend)?;
            }
            if input.with_data(|t| t.dtype()) == name {
                input.clone()
            } else {
                // PyTorch's cast: its `_to_copy` (a backend without that kernel gives
                // PyTorch's "Could not run 'aten::_to_copy'" error).
                _to_copy(input, Some(d), None, None, None, false, None)?
            }
        }
    };
    if log {
        _log_softmax(&converted, dim, false)
    } else {
        _softmax(&converted, dim, false)
    }
}

/// PyTorch's `softmax.int`: `_softmax` of the input cast to `dtype`.
pub fn softmax_int<T: Backend>(self_: &V<T>, dim: i64, dtype: Option<ScalarType>) -> Res<V<T>> {
    softmax_composite(false, self_, dim, dtype)
}

/// PyTorch's `log_softmax.int`: `_log_softmax` of the input cast to `dtype`.
pub fn log_softmax_int<T: Backend>(self_: &V<T>, dim: i64, dtype: Option<ScalarType>) -> Res<V<T>> {
    softmax_composite(true, self_, dim, dtype)
}
