// layer_norm and group_norm as compositions of ember ops (mean, the biased variance, rsqrt, the
// affine broadcast): their gradients come from the ops, and they run on every device. ATen's
// order: y = (x - mean) * rsqrt(var + eps) * weight + bias.
#include <string>

#include "ember/ops.h"
#include "ember/ops_nn.h"
#include "ops/util.h"

namespace ember::nn::functional {

namespace {

void check_floating(const Tensor& x, const char* op) {
  EMBER_CHECK(x.dtype() == DType::Float32 || x.dtype() == DType::Float64, DTypeError, op,
              ": input must be float32 or float64, got ", dtype_name(x.dtype()));
}

void check_affine(const Tensor& x, const Tensor& t, const Shape& shape, const char* op, const char* name) {
  if (!t.defined()) return;
  check_same_device(x, t, op);
  EMBER_CHECK(t.sizes() == shape, ShapeError, op, ": ", name, " must have shape ", shape_str(shape), ", got ",
              shape_str(t.sizes()));
  EMBER_CHECK(t.dtype() == x.dtype(), DTypeError, op, ": ", name, " must have the input's dtype ", dtype_name(x.dtype()),
              ", got ", dtype_name(t.dtype()));
}

// (x - mean) * rsqrt(var + eps) over `dims` (biased variance, the statistics kept as (.., 1, ..)).
Tensor standardize(const Tensor& x, const std::vector<int64_t>& dims, double eps) {
  Tensor centered = sub(x, mean(x, dims, true));
  Tensor var = mean(mul(centered, centered), dims, true);
  return mul(centered, rsqrt(add(var, eps)));
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias, double eps) {
  check_floating(x, "layer_norm");
  const int64_t k = int64_t(normalized_shape.size());
  EMBER_CHECK(k >= 1, ValueError, "layer_norm: normalized_shape must name at least one dim, got []");
  bool fits = k <= x.dim();
  for (int64_t i = 0; fits && i < k; ++i) fits = x.size(x.dim() - k + i) == normalized_shape[size_t(i)];
  EMBER_CHECK(fits, ShapeError, "layer_norm: normalized_shape ", shape_str(normalized_shape),
              " must equal the input's last dims, got input of shape ", shape_str(x.sizes()));
  check_affine(x, weight, normalized_shape, "layer_norm", "weight");
  check_affine(x, bias, normalized_shape, "layer_norm", "bias");
  EMBER_CHECK(eps >= 0.0, ValueError, "layer_norm: eps must be >= 0, got ", eps);
  std::vector<int64_t> dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
  Tensor y = standardize(x, dims, eps);
  if (weight.defined()) y = mul(y, weight);
  if (bias.defined()) y = add(y, bias);
  return y;
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  check_floating(x, "group_norm");
  EMBER_CHECK(x.dim() >= 2, ShapeError, "group_norm: input must be (N, C, *), got shape ", shape_str(x.sizes()));
  const int64_t N = x.size(0), C = x.size(1);
  EMBER_CHECK(num_groups >= 1 && C % num_groups == 0, ValueError, "group_norm: the input's ", C,
              " channels (shape ", shape_str(x.sizes()), ") must divide into num_groups=", num_groups, " groups");
  check_affine(x, weight, {C}, "group_norm", "weight");
  check_affine(x, bias, {C}, "group_norm", "bias");
  EMBER_CHECK(eps >= 0.0, ValueError, "group_norm: eps must be >= 0, got ", eps);
  Tensor y = standardize(x.reshape({N, num_groups, -1}), {2}, eps).reshape(x.sizes());
  Shape channel(size_t(x.dim()), 1);
  channel[1] = C;
  if (weight.defined()) y = mul(y, weight.reshape(channel));
  if (bias.defined()) y = add(y, bias.reshape(channel));
  return y;
}

}  // namespace ember::nn::functional
