// The helpers the op set's formulas call (derivatives.yaml), as C++ declarations: the
// translation of `autograd_ops!(.., formulas = "cpp", header = "functions.h")` resolves calls
// against them and the schemas of native_functions.yaml. The first part is copied from
// PyTorch's torch/csrc/autograd/FunctionsManual.h (PyTorch 2.15; BSD-3-Clause, see
// LICENSE-PYTORCH); `// rust:
// NAME` names the Rust function of an overload. The Rust implementations, with the same
// names and argument order, are in src/helpers/ (over Variable<T> and over raw tensors).
namespace torch::autograd::generated::details {

Tensor amaxamin_jvp(
    const Tensor& x,
    const Tensor& dx,
    const Tensor& result,
    IntArrayRef dim,
    bool keepdim);

Tensor
apply_loss_reduction(const Tensor& unreduced, int64_t reduction);
Tensor cat_jvp(const at::ITensorListRef& tensors, int64_t dim);
std::vector<at::Tensor> cat_tensors_backward(
    const at::Tensor& grad,
    const std::vector<std::vector<c10::SymInt>>& sizes,
    const std::vector<ScalarType>& dtypes,
    int64_t dim);
at::Tensor clamp_backward(
    const at::Tensor& grad,
    const at::Tensor& self,
    const std::optional<at::Scalar>& min,
    const std::optional<at::Scalar>& max);
at::Tensor div_tensor_other_backward(
    const Tensor& grad,
    const Tensor& self,
    const Tensor& other,
    const std::optional<std::string_view>& rounding_mode = std::nullopt);
template <typename T>
at::Tensor div_tensor_self_backward(
    const Tensor& grad,
    const T& other,
    ScalarType self_st,
    const std::optional<std::string_view>& rounding_mode = std::nullopt);
Tensor gather_with_keepdimed_indices(
    const Tensor& input,
    int64_t dim,
    const Tensor& indices,
    bool keepdim);
at::Tensor infinitely_differentiable_native_dropout_backward(
    const at::Tensor& grad,
    const at::Tensor& mask,
    double scale);
at::Tensor log1p_backward(const at::Tensor& grad, const at::Tensor& self);
at::Tensor logsumexp_backward(
    at::Tensor grad,
    const at::Tensor& self,
    at::Tensor result,
    at::IntArrayRef dim,
    bool keepdim);
at::Tensor logsumexp_jvp(
    const at::Tensor& self_p,
    const at::Tensor& self_t,
    IntArrayRef dim,
    bool keepdim);
Tensor masked_fill_backward(const Tensor& grad, const Tensor& mask);
Tensor masked_fill_inplace_if_safe(
    const Tensor& tensor,
    const Tensor& mask,
    const Scalar& value);
at::Tensor maybe_multiply(const at::Tensor& t, const at::Scalar& s);
Tensor mean_backward(
    const Tensor& grad,
    c10::SymIntArrayRef shape,
    at::OptionalIntArrayRef opt_dim,
    const c10::SymInt& numel,
    bool keepdim);
at::Tensor mm_mat1_backward(
    const Tensor& grad,
    const Tensor& mat2,
    at::SymIntArrayRef mat1_sizes,
    at::SymIntArrayRef mat1_strides,
    c10::Layout mat1_layout,
    const Scalar& alpha);
at::Tensor mm_mat2_backward(
    const at::Tensor& grad,
    const at::Tensor& mat1,
    at::SymIntArrayRef sizes,
    at::SymIntArrayRef strides,
    c10::Layout layout,
    const at::Scalar& alpha);
at::Tensor native_dropout_double_backward(
    const at::Tensor& ggI,
    const at::Tensor& grad,
    const at::Tensor& mask,
    double scale);
at::Tensor permute_backwards(const at::Tensor& grad, at::IntArrayRef fwd_dims);
at::Tensor pow_backward(
    at::Tensor grad,
    const at::Tensor& self,
    const at::Scalar& exponent_);
at::Tensor pow_backward_exponent(
    const at::Tensor& grad,
    const at::Tensor& self,
    const at::Tensor& exponent,
    const at::Tensor& result);
// rust: pow_backward_exponent_scalar_base
at::Tensor pow_backward_exponent(
    const at::Tensor& grad,
    const at::Scalar& base,
    const at::Tensor& exponent,
    const at::Tensor& result);
at::Tensor pow_backward_self(
    const at::Tensor& grad,
    const at::Tensor& self,
    const at::Tensor& exponent);
Tensor restore_reduced_dims(
    const Tensor& output,
    IntArrayRef dims,
    bool keepdim);
Tensor scale_grad_by_count(
    const Tensor& grad,
    const Tensor& mask,
    IntArrayRef dims);
Tensor slice_backward_wrapper(
    const at::Tensor& grad,
    const c10::SymIntArrayRef& input_sizes,
    int64_t dim,
    std::optional<c10::SymInt> start,
    std::optional<c10::SymInt> end,
    const c10::SymInt& step);
at::Tensor split_backward(
    const std::vector<torch::autograd::Variable>& grads,
    const c10::SymInt& split_size,
    int64_t dim,
    c10::SymIntArrayRef sizes,
    const at::TensorOptions& options);
Tensor stack_jvp(at::TensorList tensors, int64_t dim);
Tensor cat_jvp(const at::ITensorListRef& tensors, int64_t dim);
std::vector<at::Tensor> stack_tensors_backward(
    const at::Tensor& grad,
    int64_t dim,
    const std::vector<ScalarType>& dtypes);
at::Tensor sum_backward(
    const at::Tensor& grad,
    at::SymIntArrayRef sizes,
    at::OptionalIntArrayRef opt_dims,
    bool keepdim);
// rust: sum_backward_dims
at::Tensor sum_backward(
    const at::Tensor& grad,
    c10::SymIntArrayRef sizes,
    c10::IntArrayRef dims,
    bool keepdim);
at::Tensor unbind_backward(const variable_list& grads, int64_t dim);
at::Tensor unsqueeze_to(const at::Tensor& self, c10::SymIntArrayRef sym_sizes);
// rust: unsqueeze_to_dim
at::Tensor unsqueeze_to(
    const at::Tensor& self,
    int64_t dim,
    c10::SymIntArrayRef sym_sizes);
// rust: unsqueeze_to_dims
at::Tensor unsqueeze_to(
    const at::Tensor& self,
    IntArrayRef dim,
    c10::SymIntArrayRef sym_sizes);
template <typename T>
at::Tensor mul_tensor_backward(
    const Tensor& grad,
    const T& other,
    ScalarType self_st);
Tensor sgn_backward(const Tensor& x, const Tensor& gx, const Tensor& sgn);

// Convolution and pooling (issue 30). convolution_jvp's bias_p and bias_t are
// `const Tensor&` in PyTorch, where an absent bias is an undefined tensor; here they are
// the optionals they are (the one difference from PyTorch's declarations, listed in
// tests/pytorch_entries.rs).
Tensor convolution_jvp(
    const Tensor& input_p,
    const Tensor& input_t,
    const Tensor& weight_p,
    const Tensor& weight_t,
    const std::optional<Tensor>& bias_p,
    const std::optional<Tensor>& bias_t,
    at::SymIntArrayRef stride,
    at::SymIntArrayRef padding,
    at::SymIntArrayRef dilation,
    bool transposed,
    at::SymIntArrayRef output_padding,
    const c10::SymInt& groups);
Tensor convolution_backward_jvp_grad_bias(
    const Tensor& grad_out_t,
    const Tensor& grad_bias);
at::Tensor max_pool_double_backward(
    const at::Tensor& grad,
    const at::Tensor& indices,
    int dim);
Tensor constant_pad_nd_backward(const Tensor& grad, c10::SymIntArrayRef pad);

std::tuple<Tensor, Tensor> atan2_backward(
    const Tensor& grad,
    const Tensor& self,
    const Tensor& other,
    std::array<bool, 2> output_mask);
at::Tensor elu_double_backward(
    const Tensor& grad,
    const Tensor& grad_output,
    const Scalar& alpha,
    const Scalar& scale,
    const Scalar& input_scale,
    bool is_result,
    const Tensor& self_or_result);
// normalization and variance (issue 30). `// undefined: a, b` (the op set's annotation)
// marks the `const Tensor&` parameters PyTorch's helper tests with `.defined()`.
at::Tensor var_backward(
    at::Tensor grad,
    const at::Tensor& self,
    at::OptionalIntArrayRef dim,
    const std::optional<c10::Scalar>& correction,
    bool keepdim);
// undefined: ggI, ggG, ggB
std::tuple<Tensor, Tensor, Tensor> batchnorm_double_backward(
    const Tensor& input,
    const std::optional<Tensor>& gamma,
    const Tensor& ggI,
    const Tensor& ggG,
    const Tensor& ggB,
    const Tensor& gO,
    const std::optional<Tensor>& running_mean,
    const std::optional<Tensor>& running_var,
    bool training,
    double eps,
    const std::optional<Tensor>& save_mean,
    const std::optional<Tensor>& save_invstd,
    std::array<bool, 3> output_mask);
// undefined: weight_p, weight_t, bias_p, bias_t
Tensor batch_norm_jvp(
    const Tensor& input_p,
    const Tensor& input_t,
    const Tensor& weight_p,
    const Tensor& weight_t,
    const Tensor& bias_p,
    const Tensor& bias_t,
    const std::optional<Tensor>& running_mean,
    const std::optional<Tensor>& running_var,
    const Tensor& saved_mean,
    const Tensor& saved_invstd,
    bool train,
    double eps);
// layer and group normalization (issue 30)
// undefined: ggI, ggG, ggB
std::tuple<Tensor, Tensor, Tensor> layer_norm_double_backward(
    const Tensor& input,
    const std::optional<Tensor>& gamma,
    const Tensor& ggI,
    const Tensor& ggG,
    const Tensor& ggB,
    const Tensor& gO,
    const Tensor& save_mean,
    const Tensor& save_invstd,
    c10::SymIntArrayRef normalized_shape,
    std::array<bool, 3> output_mask);
// undefined: weight_p, weight_t, bias_p, bias_t
Tensor layer_norm_jvp(
    const Tensor& input_p,
    const Tensor& input_t,
    const Tensor& weight_p,
    const Tensor& weight_t,
    const Tensor& bias_p,
    const Tensor& bias_t,
    const Tensor& saved_mean,
    const Tensor& saved_invstd,
    c10::SymIntArrayRef normalized_shape);

at::Tensor repeat_backward(
    at::Tensor grad,
    at::SymIntArrayRef repeats,
    at::SymIntArrayRef input_shape);

Tensor _to_copy_backward(
    const Tensor& grad,
    const c10::TensorOptions& self_options);
at::Tensor cumsum_backward(const at::Tensor& grad, int64_t dim);
Tensor cumprod_jvp(
    const Tensor& self_t,
    const Tensor& self_p,
    const Tensor& result,
    int dim);
at::Tensor prod_safe_zeros_backward(
    const at::Tensor& grad,
    const at::Tensor& inp,
    int64_t dim);
at::Tensor prod_backward(
    const at::Tensor& grad,
    const at::Tensor& input,
    const at::Tensor& result);
// rust: prod_backward_dim
at::Tensor prod_backward(
    at::Tensor grad,
    const at::Tensor& input,
    at::Tensor result,
    int64_t dim,
    bool keepdim);
// Softmax (issue 30): _softmax_backward_data's double backward.
at::Tensor softmax_double_backward(
    const at::Tensor& grad,
    const at::Tensor& grad_output,
    int dim,
    const at::Tensor& output);
at::Tensor index_backward(
    at::Tensor zeros_like_self,
    const torch::List<std::optional<Tensor>>& indices,
    const at::Tensor& grad);
// Selection (issue 30): clamp with tensor bounds. The bodies are PyTorch 2.15's as its
// behaviour shows them (a tie with a bound splits the gradient in halves).
// undefined: min, max
// rust: clamp_backward_tensor
at::Tensor clamp_backward(
    const at::Tensor& grad,
    const at::Tensor& self,
    const at::Tensor& min,
    const at::Tensor& max);
// undefined: min, max
std::tuple<at::Tensor, at::Tensor> clamp_backward_min_max(
    const at::Tensor& grad,
    const at::Tensor& self,
    const at::Tensor& min,
    const at::Tensor& max,
    const std::array<bool, 2>& /*grad_input_mask*/);
// undefined: min_p, min_t, max_p, max_t
at::Tensor clamp_jvp(
    const Tensor& self_p,
    const Tensor& self_t,
    const Tensor& min_p,
    const Tensor& min_t,
    const Tensor& max_p,
    const Tensor& max_t);
at::Tensor split_with_sizes_backward(
    const std::vector<torch::autograd::Variable>& grads,
    c10::SymIntArrayRef split_sizes,
    int64_t dim,
    c10::SymIntArrayRef sizes,
    const at::TensorOptions& options);
// as_strided (issue 30).
Tensor as_strided_backward(
    Tensor grad,
    const TensorGeometry& input_geometry,
    c10::SymIntArrayRef sizes,
    c10::SymIntArrayRef strides,
    const std::optional<c10::SymInt>& storage_offset_);
// Group normalization (issue 30). native_group_norm_backward_dispatcher's body is not in
// the stored FunctionsManual.cpp (it holds the older infinitely_differentiable_native_group_norm_backward,
// which the dispatcher replaced); the port follows PyTorch 2.15's behaviour: the mean's and
// the rstd's gradients each count on their own.
// undefined: dY, dmean, drstd
std::tuple<Tensor, Tensor, Tensor> native_group_norm_backward_dispatcher(
    const Tensor& dY,
    const Tensor& dmean,
    const Tensor& drstd,
    const Tensor& X,
    const Tensor& mean,
    const Tensor& rstd,
    const std::optional<Tensor>& gamma,
    const c10::SymInt& N,
    const c10::SymInt& C,
    const c10::SymInt& HxW,
    int64_t group,
    std::array<bool, 3> grad_input_mask);
// undefined: weight_p, weight_t, bias_p, bias_t
Tensor group_norm_jvp(
    const Tensor& input_p,
    const Tensor& input_t,
    const Tensor& weight_p,
    const Tensor& weight_t,
    const Tensor& bias_p,
    const Tensor& bias_t,
    const Tensor& saved_mean,
    const Tensor& saved_invstd,
    int64_t groups);
Tensor group_norm_mean_jvp(
    const Tensor& input_t,
    const Tensor& mean_p,
    int64_t groups);
Tensor group_norm_invstd_jvp(
    const Tensor& input_p,
    const Tensor& input_t,
    const Tensor& mean_p,
    const Tensor& invstd_p,
    int64_t groups);
// grid sampling (issue 30): PyTorch 2.15's bodies are not in the stored sources; the
// Rust ports follow the graph PyTorch 2.15 builds (gathers of the taps, their weights'
// derivatives, scatter-adds) and agree with its gradgradcheck and forward AD values.
// undefined: ggI, ggGrid
std::tuple<Tensor, Tensor, Tensor> grid_sampler_2d_double_backward(
    const Tensor& ggI,
    const Tensor& ggGrid,
    const Tensor& grad_output,
    const Tensor& input,
    const Tensor& grid,
    int64_t interpolation_mode,
    int64_t padding_mode,
    bool align_corners,
    std::array<bool, 3> output_mask);
Tensor grid_sampler_2d_jvp(
    const Tensor& input_p,
    const Tensor& input_t,
    const Tensor& grid_p,
    const Tensor& grid_t,
    const Tensor& result,
    int64_t interpolation_mode,
    int64_t padding_mode,
    bool align_corners);
// Distances (issue 30): `_euclidean_dist`'s backward (PyTorch's), and the double backward
// of `_pdist_backward` and `_cdist_backward`.
std::tuple<Tensor, Tensor> _euclidean_dist_backward(
    const Tensor& grad,
    const Tensor& x1,
    const Tensor& x2,
    const Tensor& res);
// PyTorch 2.15's bodies are not in the sources read; these are derived from the kernels'
// maths (the derivatives of the backward kernels' factors) and agree with 2.15's values.
std::tuple<Tensor, Tensor, Tensor, Tensor> _cdist_backward_backward(
    const Tensor& grad,
    const Tensor& grad_output,
    const Tensor& x1,
    const Tensor& x2,
    double p,
    const Tensor& cdist,
    std::array<bool, 4> output_mask);
std::tuple<Tensor, Tensor, Tensor> _pdist_backward_backward(
    const Tensor& grad,
    const Tensor& grad_output,
    const Tensor& self,
    double p,
    const Tensor& pdist,
    std::array<bool, 3> output_mask);
// scatter_reduce (issue 30).
Tensor scatter_reduce_jvp(
    const Tensor& self_p,
    const Tensor& self_t,
    int dim,
    const Tensor& index,
    const Tensor& src_p,
    const Tensor& src_t,
    std::string_view reduce,
    bool include_self,
    const Tensor& result);
std::tuple<Tensor, Tensor> scatter_reduce_backward(
    const Tensor& grad,
    const Tensor& self,
    int dim,
    const Tensor& index,
    const Tensor& src,
    std::string_view reduce,
    bool include_self,
    const Tensor& result);
// Embeddings (issue 30): the double backward of `embedding_dense_backward`.
at::Tensor embedding_dense_double_backward_symint(
    const at::Tensor& grad,
    const at::Tensor& indices,
    const c10::SymInt& padding_idx);
// ---- The op set's own helpers (not PyTorch's declarations) ----------------------------
// Operators PyTorch has that the op set computes with differentiable ops (the signatures
// are PyTorch's operator signatures), and the helpers of the entries PyTorch does not have.
Tensor cumprod_backward(const Tensor& grad, const Tensor& input, int64_t dim, const Tensor& output);
Tensor sgn(const Tensor& self);
Tensor expand_as(const Tensor& self, const Tensor& other);
// rust: where_scalar_other
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other);
// rust: where_scalar_self
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other);
Tensor sigmoid_backward(const Tensor& grad_output, const Tensor& output);
Tensor leaky_relu_backward(const Tensor& grad_output, const Tensor& self, const Scalar& negative_slope, bool self_is_result);
Tensor gelu_backward(const Tensor& grad_output, const Tensor& self, c10::string_view approximate);
Tensor mse_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target, int64_t reduction);
Tensor select_backward_symint(const Tensor& grad_output, c10::SymIntArrayRef input_sizes, int64_t dim, c10::SymInt index);
Tensor narrow_backward_symint(const Tensor& grad, c10::SymIntArrayRef input_sizes, int64_t dim, c10::SymInt start, c10::SymInt length);
Tensor value_selecting_reduction_backward_symint(const Tensor& grad, int64_t dim, const Tensor& indices, c10::SymIntArrayRef sizes, bool keepdim);
Tensor index_select_backward_symint(const Tensor& grad, c10::SymIntArrayRef self_sizes, int64_t dim, const Tensor& index);
Tensor gather_backward(const Tensor& grad, const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad);
Tensor embedding_backward_symint(const Tensor& grad, const Tensor& indices, c10::SymInt num_weights, c10::SymInt padding_idx, bool scale_grad_by_freq, bool sparse);
Tensor native_layer_norm_backward_jvp(const Tensor& grad_out_p, const Tensor& grad_out_t, const Tensor& input_p, const Tensor& input_t, c10::SymIntArrayRef normalized_shape, const Tensor& mean_p, const Tensor& rstd_p, const std::optional<Tensor>& weight_p, const std::optional<Tensor>& weight_t, const std::optional<Tensor>& bias_p, int64_t output);
Tensor native_batch_norm_backward_jvp(const Tensor& grad_out_p, const Tensor& grad_out_t, const Tensor& input_p, const Tensor& input_t, const std::optional<Tensor>& weight_p, const std::optional<Tensor>& weight_t, const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var, const std::optional<Tensor>& save_mean, const std::optional<Tensor>& save_invstd, bool train, double eps, int64_t output);

// Convolution and pooling (issue 30): PyTorch's native `_convolution_double_backward`
// (Convolution.cpp, CompositeImplicitAutograd there; its schema's declaration), and the two
// composite methods the pooling formulas call (`flatten`, `view_as`).
// rust: convolution_double_backward
std::tuple<Tensor, Tensor, Tensor> _convolution_double_backward_symint(const std::optional<Tensor>& ggI, const std::optional<Tensor>& ggW, const std::optional<Tensor>& ggb, const Tensor& gO, const Tensor& weight, const Tensor& self, c10::SymIntArrayRef stride, c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed, c10::SymIntArrayRef output_padding, c10::SymInt groups, std::array<bool, 3> output_mask);
Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor view_as(const Tensor& self, const Tensor& other);

// Cumulative and product reductions (issue 30): the methods their entries call that the op
// set has no schema for (PyTorch's method signatures, computed with differentiable ops).
Tensor new_ones(const Tensor& self, c10::SymIntArrayRef size);
// Softmax (issue 30): the method `Tensor::to(ScalarType)` of the `_softmax_backward_data`
// and `_log_softmax_backward_data` entries (`grad.to(output.dtype())`).
Tensor to(const Tensor& self, ScalarType dtype);

// Grid sampling (issue 30): the forward formula of grid_sampler_2d_backward (the op set's;
// PyTorch 2.15 has none).
Tensor grid_sampler_2d_backward_jvp(const Tensor& grad_output_p, const Tensor& grad_output_t, const Tensor& input_p, const Tensor& input_t, const Tensor& grid_p, const Tensor& grid_t, int64_t interpolation_mode, int64_t padding_mode, bool align_corners, std::array<bool, 2> output_mask, int64_t output);
// Distances (issue 30): the methods `Tensor::contiguous` and `Tensor::mT` of
// `_cdist_forward`'s entry (PyTorch's method signatures; a copy in the contiguous layout, the
// last two dims swapped).
Tensor contiguous(const Tensor& self);
Tensor mT(const Tensor& self);

} // namespace torch::autograd::generated::details
