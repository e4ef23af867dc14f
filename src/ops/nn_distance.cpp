// normalize, cosine_similarity and pairwise_distance, composed from ember ops over one p-norm with
// ATen's norm backward (a zero gradient where the norm is 0, where sqrt's derivative would give
// NaN): the norm is local to this file until the tensor-op family has its own vector_norm.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/ops_nn.h"
#include "ops/util.h"

namespace ember::nn::functional {

namespace {

void check_floating(const Tensor& x, const char* op, const char* name) {
  EMBER_CHECK(x.dtype() == DType::Float32 || x.dtype() == DType::Float64, DTypeError, op, ": ", name,
              " must be float32 or float64, got ", dtype_name(x.dtype()));
}

// x's shape with 1 at each of `dims` (sorted, wrapped).
Shape kept_shape(const Shape& s, const std::vector<int64_t>& dims) {
  Shape k = s;
  for (int64_t d : dims) k[size_t(d)] = 1;
  return k;
}

// ||x||_p over `dims`: 0 counts the non-zeros, +-inf is the largest / smallest |x|.
Tensor norm_value(const Tensor& x, double p, const std::vector<int64_t>& dims, bool keepdim) {
  if (p == 2.0) return sqrt(sum(mul(x, x), dims, keepdim));
  if (p == 1.0) return sum(abs(x), dims, keepdim);
  if (std::isinf(p)) return p > 0 ? amax(abs(x), dims, keepdim) : amin(abs(x), dims, keepdim);
  if (p == 0.0) return sum(ne(x, scalar_like(x, 0.0)).to(x.dtype()), dims, keepdim);
  return pow(sum(pow(abs(x), p), dims, keepdim), 1.0 / p);
}

// ATen's norm_backward: the gradient of ||x||_p from g and the norm n (both kept-dim shaped).
Tensor norm_grad(const Tensor& g, const Tensor& x, const Tensor& n, double p, const std::vector<int64_t>& dims) {
  if (p == 0.0) return zeros_like(x);
  if (p == 1.0) return mul(sign(x), g);
  Tensor zero = scalar_like(x, 0.0);
  if (std::isinf(p)) {
    // Split evenly between the elements that reach the norm.
    Tensor hit = eq(abs(x), n).to(x.dtype());
    return mul(mul(sign(x), hit), div(g, sum(hit, dims, true)));
  }
  Tensor scaled;
  if (p == 2.0) scaled = mul(x, div(g, n));
  else if (p < 1.0) scaled = mul(mul(sign(x), pow(abs(x), p - 1.0)), div(g, pow(n, p - 1.0)));
  else scaled = mul(mul(x, pow(abs(x), p - 2.0)), div(g, pow(n, p - 1.0)));
  return where(eq(n, zero), zero, scaled);
}

Tensor vector_norm(const Tensor& x, double p, std::vector<int64_t> dims, bool keepdim) {
  for (int64_t& d : dims) d = wrap_dim(d, x.dim(), "norm");
  std::sort(dims.begin(), dims.end());
  Tensor n;
  {
    NoGradGuard ng;
    n = norm_value(x.detach(), p, dims, keepdim);
  }
  if (autograd::any_requires_grad({&x})) {
    autograd::SavedTensor sx(x), sn(n);
    const Shape kept = kept_shape(x.sizes(), dims);
    autograd::record(autograd::make_node("NormBackward", [sx, sn, kept, p, dims](const std::vector<Tensor>& g) {
                       const Tensor xv = sx.unpack("NormBackward");
                       return std::vector<Tensor>{norm_grad(g[0].reshape(kept), xv, sn.unpack("NormBackward").reshape(kept), p, dims)};
                     }),
                     {x}, {n});
  }
  return n;
}

// What n + delta needs to hold max(n, eps) without history: ATen clamps the norms in place under
// no_grad, so their gradient stays the unclamped norm's.
Tensor clamp_delta(const Tensor& n, double eps) {
  NoGradGuard ng;
  const Tensor v = n.detach();
  return sub(clamp(v, eps, std::nullopt), v);
}

}  // namespace

Tensor normalize(const Tensor& x, double p, int64_t dim, double eps) {
  check_floating(x, "normalize", "input");
  EMBER_CHECK(x.dim() >= 1, ShapeError, "normalize: input must have at least 1 dimension, got a 0-d tensor");
  Tensor denom = clamp(vector_norm(x, p, {dim}, true), eps, std::nullopt);
  return div(x, denom);
}

Tensor cosine_similarity(const Tensor& x1_in, const Tensor& x2_in, int64_t dim_in, double eps) {
  check_floating(x1_in, "cosine_similarity", "x1");
  check_floating(x2_in, "cosine_similarity", "x2");
  check_same_device(x1_in, x2_in, "cosine_similarity");
  EMBER_CHECK(x1_in.dtype() == x2_in.dtype(), DTypeError, "cosine_similarity: x1 and x2 must have one dtype, got ",
              dtype_name(x1_in.dtype()), " and ", dtype_name(x2_in.dtype()));
  const Shape shape = broadcast_shapes(x1_in.sizes(), x2_in.sizes(), "cosine_similarity");
  EMBER_CHECK(!shape.empty(), ShapeError, "cosine_similarity: inputs must have at least 1 dimension, got 0-d tensors");
  const int64_t dim = wrap_dim(dim_in, int64_t(shape.size()), "cosine_similarity");
  const Tensor x1 = x1_in.expand(shape), x2 = x2_in.expand(shape);
  // Each input divided by its own norm first (ATen: keeps the result in [-1, 1]); the norms are
  // clamped to eps without changing their gradient.
  Tensor n1 = vector_norm(x1, 2.0, {dim}, true), n2 = vector_norm(x2, 2.0, {dim}, true);
  n1 = add(n1, clamp_delta(n1, eps));
  n2 = add(n2, clamp_delta(n2, eps));
  return sum(mul(div(x1, n1), div(x2, n2)), {dim});
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  check_floating(x1, "pairwise_distance", "x1");
  check_floating(x2, "pairwise_distance", "x2");
  check_same_device(x1, x2, "pairwise_distance");
  EMBER_CHECK(x1.dtype() == x2.dtype(), DTypeError, "pairwise_distance: x1 and x2 must have one dtype, got ",
              dtype_name(x1.dtype()), " and ", dtype_name(x2.dtype()));
  EMBER_CHECK(p >= 0.0, ValueError, "pairwise_distance: p must be >= 0, got ", p);
  const Shape shape = broadcast_shapes(x1.sizes(), x2.sizes(), "pairwise_distance");
  EMBER_CHECK(!shape.empty(), ShapeError, "pairwise_distance: inputs must have at least 1 dimension, got 0-d tensors");
  return vector_norm(add(sub(x1, x2), eps), p, {int64_t(shape.size()) - 1}, keepdim);
}

}  // namespace ember::nn::functional
