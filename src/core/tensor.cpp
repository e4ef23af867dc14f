// Tensor's own bookkeeping: shape helpers, sizes and strides, contiguity, detach, requires_grad_.
// Everything that allocates, reads or writes element values, records autograd history or makes a
// view lives in src/ops/tensor.cpp (the ops layer); backward() in src/autograd/engine.cpp.
#include "ember/core/tensor.h"

#include <algorithm>

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
Shape contiguous_strides(const Shape& sizes) {
  Shape st(sizes.size());
  int64_t acc = 1;
  for (int64_t i = int64_t(sizes.size()) - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= std::max<int64_t>(sizes[i], 1);
  }
  return st;
}
int64_t shape_numel(const Shape& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

int64_t Tensor::size(int64_t d) const { return sizes()[wrap_tensor_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_tensor_dim(d, dim(), "stride")]; }
int64_t Tensor::numel() const { return shape_numel(sizes()); }
bool Tensor::is_contiguous() const {
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
