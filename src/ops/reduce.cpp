// Reduction front-ends: sum, mean, amax/amin, argmax/argmin, var/std, and sum_to (the inverse of
// broadcasting, used by every backward formula that broadcasts).
#include <algorithm>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "kernels/kernels.h"
#include "ops/autocast.h"
#include "ops/util.h"

namespace ember {

using kernels::ReduceOp;

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = std::max<int64_t>(ndim, 1);
  EMBER_CHECK(dim >= -n && dim < n, IndexError, op, ": dimension ", dim, " out of range for a ",
              ndim, "-d tensor (expected in [", -n, ", ", n - 1, "])");
  return dim < 0 ? dim + n : dim;
}

namespace {
std::vector<int64_t> normalize_dims(const Tensor& a, std::vector<int64_t> dims, const char* op) {
  if (dims.empty()) {
    dims.resize(a.dim());
    for (int64_t i = 0; i < a.dim(); ++i) dims[i] = i;
    return dims;
  }
  for (auto& d : dims) d = wrap_dim(d, a.dim(), op);
  std::sort(dims.begin(), dims.end());
  EMBER_CHECK(std::adjacent_find(dims.begin(), dims.end()) == dims.end(), ValueError, op,
              ": a dimension appears more than once in the list of dims");
  if (a.dim() == 0) dims.clear();
  return dims;
}
Shape keep_shape(const Tensor& a, const std::vector<int64_t>& dims) {
  Shape s = a.sizes();
  for (int64_t d : dims) s[d] = 1;
  return s;
}
Shape drop_shape(const Tensor& a, const std::vector<int64_t>& dims) {
  Shape s;
  for (int64_t i = 0; i < a.dim(); ++i)
    if (!std::binary_search(dims.begin(), dims.end(), i)) s.push_back(a.sizes()[i]);
  return s;
}
Tensor reduce_raw(ReduceOp op, const Tensor& a, const std::vector<int64_t>& dims, DType out_dtype) {
  Tensor out = empty(keep_shape(a, dims), {.dtype = out_dtype, .device = a.device()});
  kernels::reduce(a.device())(op, a, dims, out);
  return out;
}
}  // namespace

Tensor sum(const Tensor& a_in, std::vector<int64_t> dims_in, bool keepdim) {
  const Tensor a = autocast_detail::to_float32(AutocastOp::Sum, a_in);
  auto dims = normalize_dims(a, std::move(dims_in), "sum");
  DType odt = is_floating(a.dtype()) ? a.dtype() : DType::Int64;
  Tensor src = a.dtype() == DType::BFloat16 || a.dtype() == DType::Float16 ? a.to(DType::Float32) : a;
  Tensor out = reduce_raw(ReduceOp::Sum, src.detach(), dims, src.dtype() == odt ? odt : odt);
  if (!keepdim) out = out.detach().view(drop_shape(a, dims));
  if (autograd::any_requires_grad({&a})) {
    Shape in_shape = a.sizes(), kshape = keep_shape(a, dims);
    autograd::record(autograd::make_node("SumBackward", [=](const std::vector<Tensor>& g) {
                       return std::vector<Tensor>{g[0].reshape(kshape).expand(in_shape)};
                     }),
                     {a}, {out});
  }
  return out;
}

Tensor mean(const Tensor& a_in, std::vector<int64_t> dims_in, bool keepdim) {
  const Tensor a = autocast_detail::to_float32(AutocastOp::Mean, a_in);
  EMBER_CHECK(is_floating(a.dtype()), DTypeError, "mean: expected a floating-point tensor, got ",
              dtype_name(a.dtype()), "; convert with .to(DType::Float32)");
  auto dims = normalize_dims(a, dims_in, "mean");
  int64_t count = 1;
  for (int64_t d : dims) count *= a.sizes()[d];
  return mul(sum(a, dims, keepdim), 1.0 / double(count));  // count 0 gives nan, as PyTorch
}

namespace {
Tensor minmax(ReduceOp op, const Tensor& a, std::vector<int64_t> dims_in, bool keepdim, const char* name) {
  auto dims = normalize_dims(a, std::move(dims_in), name);
  for (int64_t d : dims)
    EMBER_CHECK(a.sizes()[d] > 0, ShapeError, name, ": cannot reduce over dimension ", d,
                " of size 0 (shape ", shape_str(a.sizes()), ")");
  EMBER_CHECK(a.numel() > 0, ShapeError, name, ": cannot reduce an empty tensor");
  Tensor kept = reduce_raw(op, a.detach(), dims, a.dtype());
  Tensor out = keepdim ? kept : kept.view(drop_shape(a, dims));
  if (autograd::any_requires_grad({&a})) {
    autograd::SavedTensor sa(a);
    Shape in_shape = a.sizes();
    Shape kshape = keep_shape(a, dims);
    std::string nm = std::string(name) + "Backward";
    autograd::record(autograd::make_node(nm, [=](const std::vector<Tensor>& g) {
                       // Ties share the gradient evenly, as PyTorch's amax/amin.
                       Tensor mask = eq(sa.unpack(nm), kept).to(g[0].dtype());
                       Tensor count = sum(mask, dims, true);
                       return std::vector<Tensor>{div(mul(mask, g[0].reshape(kshape)), count)};
                     }),
                     {a}, {out});
  }
  return out;
}
Tensor arg_minmax(ReduceOp op, const Tensor& a, int64_t dim, bool keepdim, const char* name) {
  dim = wrap_dim(dim, a.dim(), name);
  EMBER_CHECK(a.dim() == 0 || a.sizes()[dim] > 0, ShapeError, name, ": cannot reduce over dimension ",
              dim, " of size 0");
  std::vector<int64_t> dims = a.dim() == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{dim};
  Tensor out = reduce_raw(op, a.detach(), dims, DType::Int64);
  return keepdim ? out : out.view(drop_shape(a, dims));
}
}  // namespace

Tensor amax(const Tensor& a, std::vector<int64_t> dims, bool keepdim) { return minmax(ReduceOp::Max, a, dims, keepdim, "amax"); }
Tensor amin(const Tensor& a, std::vector<int64_t> dims, bool keepdim) { return minmax(ReduceOp::Min, a, dims, keepdim, "amin"); }
Tensor argmax(const Tensor& a, int64_t dim, bool keepdim) { return arg_minmax(ReduceOp::ArgMax, a, dim, keepdim, "argmax"); }
Tensor argmin(const Tensor& a, int64_t dim, bool keepdim) { return arg_minmax(ReduceOp::ArgMin, a, dim, keepdim, "argmin"); }

Tensor var(const Tensor& a, std::vector<int64_t> dims_in, int64_t correction, bool keepdim) {
  EMBER_CHECK(is_floating(a.dtype()), DTypeError, "var: expected a floating-point tensor, got ",
              dtype_name(a.dtype()));
  auto dims = normalize_dims(a, dims_in, "var");
  int64_t count = 1;
  for (int64_t d : dims) count *= a.sizes()[d];
  Tensor d = sub(a, mean(a, dims, true));
  return mul(sum(mul(d, d), dims, keepdim), 1.0 / double(std::max<int64_t>(count - correction, 0)));
}
Tensor std(const Tensor& a, std::vector<int64_t> dims, int64_t correction, bool keepdim) {
  return sqrt(var(a, dims, correction, keepdim));
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.sizes() == shape) return grad;
  int64_t lead = grad.dim() - int64_t(shape.size());
  EMBER_ASSERT(lead >= 0, "sum_to: ", shape_str(grad.sizes()), " -> ", shape_str(shape));
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < grad.dim(); ++i) {
    if (i < lead) dims.push_back(i);
    else if (shape[i - lead] == 1 && grad.sizes()[i] != 1) dims.push_back(i);
  }
  Tensor r = dims.empty() ? grad : sum(grad, dims, true);
  return r.reshape(shape);
}

Tensor Tensor::sum() const { return ember::sum(*this); }
Tensor Tensor::sum(std::vector<int64_t> dims, bool keepdim) const { return ember::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return ember::mean(*this); }
Tensor Tensor::mean(std::vector<int64_t> dims, bool keepdim) const { return ember::mean(*this, dims, keepdim); }
Tensor Tensor::max() const { return ember::amax(*this); }
Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return ember::argmax(*this, dim, keepdim); }

}  // namespace ember
