// The helpers the toy's C++ formulas call: declarations copied from PyTorch's
// torch/csrc/autograd/FunctionsManual.h (PyTorch 2.15; BSD-3-Clause, see
// opset/LICENSE-PYTORCH in the repository); the Rust
// implementations are in src/cpp.rs.
namespace torch::autograd::generated::details {
at::Tensor maybe_multiply(const at::Tensor& t, const at::Scalar& s);
template <typename T>
at::Tensor mul_tensor_backward(
    const Tensor& grad,
    const T& other,
    ScalarType self_st);
template <typename T>
at::Tensor div_tensor_self_backward(
    const Tensor& grad,
    const T& other,
    ScalarType self_st,
    const std::optional<std::string_view>& rounding_mode = std::nullopt);
at::Tensor div_tensor_other_backward(
    const Tensor& grad,
    const Tensor& self,
    const Tensor& other,
    const std::optional<std::string_view>& rounding_mode = std::nullopt);
} // namespace torch::autograd::generated::details
