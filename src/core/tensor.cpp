// Tensor's own bookkeeping: shape helpers, sizes and strides, contiguity, detach, requires_grad_.
// Everything that allocates, reads or writes element values, records autograd history or makes a
// view lives in src/ops/tensor.cpp (the ops layer); backward() in src/autograd/engine.cpp.
#include "ember/core/tensor.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/tensor_util.h"

namespace ember {

int64_t wrap_tensor_dim(int64_t dim, int64_t ndim, const char* op, bool allow_end) {
  int64_t n = allow_end ? ndim + 1 : ndim;
  if (n == 0 && (dim == 0 || dim == -1)) return 0;
  EMBER_CHECK(dim >= -n && dim < n, IndexError, op, ": dimension ", dim, " out of range for a ",
              ndim, "-d tensor (expected in [", -n, ", ", n - 1, "])");
  return dim < 0 ? dim + n : dim;
}

Tensor make_view(const Tensor& base, Shape sizes, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(std::move(impl));
}


std::string version() { return EMBER_VERSION_STRING; }

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
// Sizes come from users (a model spec, a flag, a file's header): every product below is checked,
// so a shape too large to address is a ShapeError here instead of a wrapped, negative or tiny
// count that later allocates the wrong number of bytes.
namespace {
[[noreturn]] void too_large(const Shape& sizes, const std::string& what) {
  throw ShapeError(detail::cat("shape ", shape_str(sizes), ": its ", what, " overflow int64 (more than ",
                               std::numeric_limits<int64_t>::max(), ")"),
                   "a size is far too large (a typo, or a number read from a file that is not what it claims?)");
}
}  // namespace
Shape contiguous_strides(const Shape& sizes) {
  Shape st(sizes.size());
  int64_t acc = 1;
  for (int64_t i = int64_t(sizes.size()) - 1; i >= 0; --i) {
    st[i] = acc;
    // The product after the outermost dim is no stride, so only the ones before it must fit.
    if (__builtin_mul_overflow(acc, std::max<int64_t>(sizes[i], 1), &acc) && i > 0) [[unlikely]]
      too_large(sizes, "strides");
  }
  return st;
}
int64_t shape_numel(const Shape& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    if (__builtin_mul_overflow(n, s, &n)) [[unlikely]] {
      // {2^62, 2^62, 0} holds no element: an empty tensor, as PyTorch counts it.
      if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return 0;
      too_large(sizes, "elements");
    }
  return n;
}
size_t shape_nbytes(const Shape& sizes, DType dtype) {
  int64_t bytes = 0;
  if (__builtin_mul_overflow(shape_numel(sizes), int64_t(dtype_size(dtype)), &bytes)) [[unlikely]]
    too_large(sizes, std::string(dtype_name(dtype)) + " bytes");
  return size_t(bytes);
}

int64_t Tensor::size(int64_t d) const { return sizes()[wrap_tensor_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_tensor_dim(d, dim(), "stride")]; }
int64_t Tensor::numel() const { return shape_numel(sizes()); }
bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // as in PyTorch: no element is out of place (randn({2, 0, 3}) asserted)
  int64_t expected = 1;
  for (int64_t i = dim() - 1; i >= 0; --i) {
    if (sizes()[i] == 1) continue;
    if (strides()[i] != expected) return false;
    expected *= sizes()[i];
  }
  return true;
}

Tensor Tensor::detach() const { return make_view(*this, sizes(), strides(), storage_offset()); }

Tensor& Tensor::requires_grad_(bool on) {
  EMBER_CHECK(!on || is_floating(dtype()), DTypeError,
              "requires_grad_: only floating-point tensors can require gradients, this one is ",
              dtype_name(dtype()));
  EMBER_CHECK(is_leaf() || on, AutogradError,
              "requires_grad_(false) on a non-leaf tensor; use detach() instead");
  impl().requires_grad = on;
  return *this;
}
}  // namespace ember
