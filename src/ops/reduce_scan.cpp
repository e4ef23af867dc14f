// Reductions beyond reduce.cpp's and the scans, with PyTorch's result dtypes and gradients:
// cumsum / cumprod (the scan kernel, kernels/tensor_kernels.h), prod (the last element of a
// cumprod), all / any / count_nonzero (sums of comparisons), logsumexp (stable: shifted by the
// max), norm (p = 0, 1, 2, inf, -inf, any p; "fro"), max / min along a dim with their indices
// (argmax, then gather: the gradient goes to the index, as PyTorch's).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "kernels/tensor_kernels.h"
#include "ops/ops_detail.h"
#include "ops/util.h"

namespace ember {

using autograd::SavedTensor;
using kernels::ScanOp;
using ops_detail::record_one;

namespace {

// Sorted, wrapped, unique dims; empty means every dim (a 0-d tensor has none).
std::vector<int64_t> reduce_dims(const Tensor& a, std::vector<int64_t> dims, const char* op) {
  if (dims.empty()) {
    for (int64_t i = 0; i < a.dim(); ++i) dims.push_back(i);
    return dims;
  }
  for (auto& d : dims) d = wrap_dim(d, a.dim(), op);
  std::sort(dims.begin(), dims.end());
  EMBER_CHECK(std::adjacent_find(dims.begin(), dims.end()) == dims.end(), ValueError, op,
              ": a dimension appears more than once in the list of dims");
  if (a.dim() == 0) dims.clear();
  return dims;
}
Shape kept_shape(const Tensor& a, const std::vector<int64_t>& dims) {
  Shape s = a.sizes();
  for (int64_t d : dims) s[size_t(d)] = 1;
  return s;
}
Shape dropped_shape(const Tensor& a, const std::vector<int64_t>& dims) {
  Shape s;
  for (int64_t i = 0; i < a.dim(); ++i)
    if (!std::binary_search(dims.begin(), dims.end(), i)) s.push_back(a.sizes()[size_t(i)]);
  return s;
}

// The scan kernel's dtype: floats keep theirs, integers and bool accumulate in int64 (PyTorch's
// cumsum / cumprod / prod of an integer tensor is int64).
DType scan_dtype(DType t) { return is_floating(t) ? t : DType::Int64; }

// The scan of a (converted to its scan dtype) along dim, no autograd.
Tensor scan_raw(ScanOp op, const Tensor& a, int64_t dim, bool reverse) {
  const Tensor src = a.detach().to(scan_dtype(a.dtype()));
  Tensor out = empty(src.sizes(), {.dtype = src.dtype(), .device = src.device()});
  kernels::scan(src.device())(op, src, dim, reverse, out);
  return out;
}

// Product along dim of every element but the one at each position: the exclusive cumprods from both
// ends multiplied, so zeros need no division (PyTorch's prod backward when an input is zero).
Tensor prod_of_others(const Tensor& x, int64_t dim) {
  const int64_t n = x.sizes()[size_t(dim)];
  if (n == 1) return ones_like(x);
  Shape one = x.sizes();
  one[size_t(dim)] = 1;
  const Tensor ones1 = ones(one, {.dtype = x.dtype(), .device = x.device()});
  const Tensor before = scan_raw(ScanOp::Prod, cat({ones1, x.narrow(dim, 0, n - 1)}, dim), dim, false);
  const Tensor after = scan_raw(ScanOp::Prod, cat({x.narrow(dim, 1, n - 1), ones1}, dim), dim, true);
  return mul(before, after);
}

}  // namespace

// ---- scans ------------------------------------------------------------------------------------------
Tensor cumsum(const Tensor& a, int64_t dim) {
  dim = wrap_dim(dim, a.dim(), "cumsum");
  Tensor out = scan_raw(ScanOp::Sum, a, dim, false);
  record_one("CumsumBackward", a, out, [dim](const Tensor& g) { return scan_raw(ScanOp::Sum, g, dim, true); });
  return out;
}

Tensor cumprod(const Tensor& a, int64_t dim) {
  dim = wrap_dim(dim, a.dim(), "cumprod");
  Tensor out = scan_raw(ScanOp::Prod, a, dim, false);
  if (autograd::any_requires_grad({&a})) {
    SavedTensor sa(a), so(out);
    record_one("CumprodBackward", a, out, [sa, so, dim](const Tensor& g) {
      const Tensor x = sa.unpack("CumprodBackward"), y = so.unpack("CumprodBackward");
      if (x.numel() == 0 || x.dim() == 0) return g.clone();
      // grad_k = sum_{j >= k} g_j * prod_{i <= j, i != k} x_i. Before a line's first zero that is
      // reverse_cumsum(g * y)_k / x_k; at the first zero, the same sum with x_k taken as 1; after
      // it, every term holds that zero.
      const Tensor is_zero = eq(x, 0.0);
      const Tensor zeros_so_far = scan_raw(ScanOp::Sum, is_zero, dim, false);
      const Tensor before = eq(zeros_so_far, 0.0);
      const Tensor first_zero = bitwise_and(is_zero, eq(zeros_so_far, 1.0));
      const Tensor one = ones_like(x);
      const Tensor part_before = div(scan_raw(ScanOp::Sum, mul(g, y), dim, true), where(before, x, one));
      const Tensor y_without = scan_raw(ScanOp::Prod, where(first_zero, one, x), dim, false);
      const Tensor part_first = scan_raw(ScanOp::Sum, mul(g, y_without), dim, true);
      return where(before, part_before, where(first_zero, part_first, zeros_like(x)));
    });
  }
  return out;
}

// ---- prod, all, any, count_nonzero ------------------------------------------------------------------
Tensor prod(const Tensor& a, int64_t dim, bool keepdim) {
  dim = wrap_dim(dim, a.dim(), "prod");
  if (a.dim() == 0) return a.to(scan_dtype(a.dtype())).clone();
  const int64_t n = a.sizes()[size_t(dim)];
  Tensor kept;
  if (n == 0) {
    kept = ones(kept_shape(a, {dim}), {.dtype = scan_dtype(a.dtype()), .device = a.device()});
  } else {
    NoGradGuard g;
    kept = scan_raw(ScanOp::Prod, a, dim, false).narrow(dim, n - 1, 1).contiguous();
  }
  Tensor out = keepdim ? kept : kept.view(dropped_shape(a, {dim}));
  if (autograd::any_requires_grad({&a})) {
    SavedTensor sa(a);
    const Shape ks = kept_shape(a, {dim});
    record_one("ProdBackward", a, out, [sa, dim, ks](const Tensor& g) {
      const Tensor x = sa.unpack("ProdBackward");
      if (x.numel() == 0) return zeros_like(x);
      return mul(g.reshape(ks), prod_of_others(x, dim));
    });
  }
  return out;
}
Tensor prod(const Tensor& a) {
  if (a.dim() == 0) return prod(a, 0, false);
  return prod(a.reshape({a.numel()}), 0, false);
}

Tensor count_nonzero(const Tensor& a, std::vector<int64_t> dims) {
  NoGradGuard g;
  return sum(ne(a, scalar_like(a, 0.0)), reduce_dims(a, std::move(dims), "count_nonzero"), false);
}

namespace {
// all / any are Bool, except for a uint8 input, where PyTorch returns uint8.
Tensor logical_result(const Tensor& a, Tensor r) { return a.dtype() == DType::UInt8 ? r.to(DType::UInt8) : r; }
}  // namespace
Tensor all(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  NoGradGuard g;
  dims = reduce_dims(a, std::move(dims), "all");
  return logical_result(a, eq(sum(eq(a, scalar_like(a, 0.0)), dims, keepdim), 0.0));
}
Tensor any(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  NoGradGuard g;
  dims = reduce_dims(a, std::move(dims), "any");
  return logical_result(a, gt(sum(ne(a, scalar_like(a, 0.0)), dims, keepdim), 0.0));
}

// ---- logsumexp ----------------------------------------------------------------------------------------
Tensor logsumexp(const Tensor& a_in, std::vector<int64_t> dims_in, bool keepdim) {
  const Tensor a = is_floating(a_in.dtype()) ? a_in : a_in.to(DType::Float32);
  const auto dims = reduce_dims(a, std::move(dims_in), "logsumexp");
  // Shift by the (detached) max so exp never overflows; an infinite max shifts by 0 instead, so
  // a line of -inf gives -inf and a +inf gives +inf (PyTorch's rule).
  Tensor shift;
  {
    NoGradGuard g;
    bool empty_line = false;
    for (int64_t d : dims) empty_line = empty_line || a.sizes()[size_t(d)] == 0;
    if (empty_line || a.numel() == 0) {
      shift = zeros(kept_shape(a, dims), {.dtype = a.dtype(), .device = a.device()});
    } else {
      Tensor m = amax(a, dims, true);
      shift = where(isinf(m), zeros_like(m), m);
    }
  }
  Tensor out = log(sum(exp(sub(a, shift)), dims, true));
  out = add(out, shift);
  return keepdim ? out : out.reshape(dropped_shape(a, dims));
}

// ---- norm -----------------------------------------------------------------------------------------------
Tensor norm(const Tensor& a, double p, std::vector<int64_t> dims_in, bool keepdim) {
  EMBER_CHECK(is_floating(a.dtype()), DTypeError, "norm: expected a floating-point tensor, got ",
              dtype_name(a.dtype()), "; convert with .to(DType::Float32)");
  EMBER_CHECK(!std::isnan(p), ValueError, "norm: p must be a number, got nan");
  const auto dims = reduce_dims(a, std::move(dims_in), "norm");
  const double inf = std::numeric_limits<double>::infinity();
  Tensor kept;
  {
    NoGradGuard g;
    const Tensor x = a.detach();
    if (p == 0) kept = sum(ne(x, scalar_like(x, 0.0)), dims, true).to(a.dtype());
    else if (p == inf) kept = amax(abs(x), dims, true);
    else if (p == -inf) kept = amin(abs(x), dims, true);
    else if (p == 1) kept = sum(abs(x), dims, true);
    else if (p == 2) kept = sqrt(sum(mul(x, x), dims, true));
    else kept = pow(sum(pow(abs(x), p), dims, true), 1.0 / p);
  }
  Tensor out = keepdim ? kept : kept.view(dropped_shape(a, dims));
  if (autograd::any_requires_grad({&a})) {
    SavedTensor sa(a);
    const Shape ks = kept_shape(a, dims);
    record_one("NormBackward", a, out, [sa, kept, ks, p, dims, inf](const Tensor& g_in) {
      // PyTorch's norm_backward, case by case; the gradient at a zero norm is zero.
      const Tensor x = sa.unpack("NormBackward");
      const Tensor g = g_in.reshape(ks);
      const Tensor zero = zeros_like(kept);
      const Tensor at_zero = eq(kept, 0.0);
      if (p == 0) return zeros_like(x);
      if (p == 1) return mul(sign(x), g);
      if (p == 2) return mul(x, where(at_zero, zero, div(g, kept)));
      if (p == inf || p == -inf) {
        const Tensor is_max = eq(abs(x), kept).to(x.dtype());
        return mul(mul(sign(x), is_max), div(g, sum(is_max, dims, true)));
      }
      if (p < 1) {
        const Tensor scaled = mul(sign(x), where(eq(x, 0.0), zeros_like(x), pow(abs(x), p - 1)));
        return mul(mul(scaled, g), pow(kept, 1 - p));
      }
      const Tensor scaled = p < 2 ? mul(sign(x), pow(abs(x), p - 1)) : mul(x, pow(abs(x), p - 2));
      return mul(scaled, where(at_zero, zero, div(g, pow(kept, p - 1))));
    });
  }
  return out;
}
Tensor norm(const Tensor& a, const std::string& p, std::vector<int64_t> dims, bool keepdim) {
  EMBER_CHECK(p != "nuc", NotImplementedError, "norm: the nuclear norm (p = \"nuc\") needs a singular value "
              "decomposition, which ember does not have");
  EMBER_CHECK(p == "fro", ValueError, "norm: p must be a number or \"fro\", got \"", p, "\"");
  EMBER_CHECK(dims.size() <= 2, ValueError, "norm: the Frobenius norm takes at most 2 dims, got ", dims.size());
  return norm(a, 2.0, std::move(dims), keepdim);
}

// ---- max / min along a dim ------------------------------------------------------------------------------
namespace {
ValuesIndices extreme_along(const Tensor& a, int64_t dim, bool keepdim, bool is_max) {
  const char* name = is_max ? "max" : "min";
  dim = wrap_dim(dim, a.dim(), name);
  if (a.dim() == 0) return {a.clone(), zeros({}, {.dtype = DType::Int64, .device = a.device()})};
  EMBER_CHECK(a.sizes()[size_t(dim)] > 0, IndexError, name, ": expected reduction dim ", dim,
              " to have non-zero size (shape ", shape_str(a.sizes()), ")");
  // Ties and NaN as argmax / argmin (the first index, NaN wins); the value is gathered from that
  // index, so the gradient flows to it alone (PyTorch's max(dim) backward).
  const Tensor idx = is_max ? argmax(a, dim, true) : argmin(a, dim, true);
  Tensor values = gather(a, dim, idx);
  if (keepdim) return {values, idx};
  return {values.squeeze(dim), idx.squeeze(dim)};
}
}  // namespace
ValuesIndices max(const Tensor& a, int64_t dim, bool keepdim) { return extreme_along(a, dim, keepdim, true); }
ValuesIndices min(const Tensor& a, int64_t dim, bool keepdim) { return extreme_along(a, dim, keepdim, false); }
Tensor max(const Tensor& a) { return amax(a); }
Tensor min(const Tensor& a) { return amin(a); }

// ---- Tensor methods ---------------------------------------------------------------------------------------
Tensor Tensor::prod() const { return ember::prod(*this); }
Tensor Tensor::prod(int64_t dim, bool keepdim) const { return ember::prod(*this, dim, keepdim); }
Tensor Tensor::cumsum(int64_t dim) const { return ember::cumsum(*this, dim); }
Tensor Tensor::cumprod(int64_t dim) const { return ember::cumprod(*this, dim); }
Tensor Tensor::all() const { return ember::all(*this); }
Tensor Tensor::any() const { return ember::any(*this); }
Tensor Tensor::logsumexp(std::vector<int64_t> dims, bool keepdim) const { return ember::logsumexp(*this, std::move(dims), keepdim); }
Tensor Tensor::norm(double p) const { return ember::norm(*this, p); }
ValuesIndices Tensor::max(int64_t dim, bool keepdim) const { return ember::max(*this, dim, keepdim); }
ValuesIndices Tensor::min(int64_t dim, bool keepdim) const { return ember::min(*this, dim, keepdim); }
Tensor Tensor::min() const { return ember::amin(*this); }

}  // namespace ember
