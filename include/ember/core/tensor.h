// Tensor: a strided view (sizes, strides, offset, dtype) of a Storage on one device, with the
// autograd fields. Copying a Tensor copies a handle, never the data (as in PyTorch).
//
// Autograd rule: backward() ADDS into .grad of every leaf that requires grad; it never
// overwrites. Call zero_grad() (or set_grad({})) between steps.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/core/error.h"
#include "ember/core/storage.h"

namespace ember {

using Shape = std::vector<int64_t>;
namespace autograd { class Node; }
struct ValuesIndices;  // max / min along a dim (defined below Tensor)

struct TensorImpl {
  Storage storage;
  Shape sizes;
  Shape strides;  // in elements
  int64_t offset = 0;  // in elements
  DType dtype = DType::Float32;

  // autograd
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<autograd::Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;
  std::weak_ptr<autograd::Node> grad_accumulator;  // leaves only
  bool retains_grad = false;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const Shape& sizes() const { return impl().sizes; }
  const Shape& shape() const { return impl().sizes; }
  const Shape& strides() const { return impl().strides; }
  int64_t size(int64_t dim) const;    // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return int64_t(impl().sizes.size()); }
  int64_t numel() const;
  int64_t storage_offset() const { return impl().offset; }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  size_t itemsize() const { return dtype_size(dtype()); }
  size_t nbytes() const { return size_t(numel()) * itemsize(); }
  bool is_contiguous() const;
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  const Storage& storage() const { return impl().storage; }

  // Pointer to the first element (storage base + offset). T must match the dtype's size.
  template <class T> T* data_ptr() const {
    return static_cast<T*>(impl().storage->data()) + impl().offset;
  }
  void* raw_data() const {
    return static_cast<char*>(impl().storage->data()) + impl().offset * int64_t(itemsize());
  }

  // Values (copied to the CPU and converted when needed).
  template <class T> T item() const;
  template <class T> T at(std::initializer_list<int64_t> index) const;
  template <class T> std::vector<T> to_vector() const;  // row-major, any layout or device
  // item(), at() and to_vector() are host reads: off the CPU each one waits for the device. They
  // are counted (host_read_count()) so that a loop's reads can be bounded by a test.

  // Views: share storage with *this.
  Tensor view(Shape shape) const;        // needs compatible strides; -1 infers one dim
  Tensor reshape(Shape shape) const;     // a view when possible, else a copy
  Tensor permute(std::vector<int64_t> dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;  // 2-D transpose
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor expand(Shape shape) const;      // -1 keeps a size; new leading dims allowed
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor contiguous() const;             // *this if already contiguous
  Tensor clone() const;
  Tensor detach() const;                 // same data, no history

  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor to(Device device, DType dtype) const;
  Tensor cpu() const { return to(Device::cpu()); }
  Tensor& copy_(const Tensor& src);      // broadcasting copy with dtype conversion, in place
  Tensor& fill_(double value);
  Tensor& zero_() { return fill_(0.0); }

  // autograd
  bool requires_grad() const { return impl().requires_grad; }
  Tensor& requires_grad_(bool on = true);
  bool is_leaf() const { return impl().grad_fn == nullptr; }
  Tensor grad() const { return impl().grad ? Tensor(impl().grad) : Tensor(); }
  void set_grad(const Tensor& g) const { impl_->grad = g.impl_; }
  const std::shared_ptr<autograd::Node>& grad_fn() const { return impl().grad_fn; }
  void retain_grad() const { impl_->retains_grad = true; }
  // backward() on a scalar, or with an explicit gradient of the same shape.
  void backward(const Tensor& gradient = {}, bool retain_graph = false) const;

  // Common ops as methods (see ember/ops.h for the full set).
  Tensor sum() const;
  Tensor sum(std::vector<int64_t> dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(std::vector<int64_t> dims, bool keepdim = false) const;
  Tensor max() const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor abs() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor pow(double exponent) const;
  Tensor matmul(const Tensor& other) const;
  Tensor& add_(const Tensor& other, double alpha = 1.0);
  Tensor& sub_(const Tensor& other) { return add_(other, -1.0); }
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(double value);
  Tensor& add_(double value);
  Tensor& div_(const Tensor& other);
  Tensor& clamp_(std::optional<double> min, std::optional<double> max);
  Tensor& relu_();

  // The tensor ops of ember/ops.h that PyTorch also has as methods (same semantics, see there).
  Tensor sin() const;
  Tensor cos() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round(int64_t decimals = 0) const;
  Tensor trunc() const;
  Tensor log1p() const;
  Tensor expm1() const;
  Tensor reciprocal() const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor lerp(const Tensor& end, double weight) const;
  Tensor prod() const;
  Tensor prod(int64_t dim, bool keepdim = false) const;
  Tensor cumsum(int64_t dim) const;
  Tensor cumprod(int64_t dim) const;
  Tensor all() const;
  Tensor any() const;
  Tensor logsumexp(std::vector<int64_t> dims, bool keepdim = false) const;
  Tensor norm(double p = 2.0) const;
  ValuesIndices max(int64_t dim, bool keepdim = false) const;
  ValuesIndices min(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  Tensor repeat(const Shape& repeats) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split_with_sizes(const std::vector<int64_t>& sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  Tensor unflatten(int64_t dim, const Shape& sizes) const;
  Tensor squeeze(const std::vector<int64_t>& dims) const;  // those of dims that have size 1
  Tensor movedim(const std::vector<int64_t>& source, const std::vector<int64_t>& destination) const;
  Tensor movedim(int64_t source, int64_t destination) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor flip(const std::vector<int64_t>& dims) const;
  Tensor roll(const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims = {}) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor masked_fill(const Tensor& mask, double value) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor nonzero() const;
  Tensor index(const std::vector<Tensor>& indices) const;
  // In place (the rule of add_: refused on a tensor that requires grad while grad mode is on).
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src);
  Tensor& scatter_(int64_t dim, const Tensor& index, double value);
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src);
  Tensor& masked_fill_(const Tensor& mask, double value);
  Tensor& masked_fill_(const Tensor& mask, const Tensor& value);
  Tensor& index_put_(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false);

  std::string str() const;  // PyTorch-style printing
  TensorImpl& impl() const {
    EMBER_CHECK(impl_, ValueError, "use of an undefined tensor (default-constructed Tensor)");
    return *impl_;
  }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// torch.max(x, dim) / torch.min(x, dim)'s result (PyTorch's named tuple): `auto [v, i] = x.max(1);`
struct ValuesIndices {
  Tensor values;
  Tensor indices;  // int64
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::string shape_str(const Shape& s);  // "[2, 3]"

// Contiguous strides for a shape.
Shape contiguous_strides(const Shape& sizes);
int64_t shape_numel(const Shape& sizes);

// Factories. All take the dtype and device they create on.
struct TensorOptions {
  DType dtype = DType::Float32;
  Device device = Device::cpu();
  bool requires_grad = false;
};
Tensor empty(Shape shape, TensorOptions opt = {});
Tensor zeros(Shape shape, TensorOptions opt = {});
Tensor ones(Shape shape, TensorOptions opt = {});
Tensor full(Shape shape, double value, TensorOptions opt = {});
Tensor arange(double end, TensorOptions opt = {});
Tensor arange(double start, double end, double step = 1.0, TensorOptions opt = {});
Tensor scalar_tensor(double value, TensorOptions opt = {});
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor empty_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
// Copies `count` elements of `dtype` from `data` (host memory) into a new tensor.
Tensor from_blob_copy(const void* data, Shape shape, DType dtype, Device device = Device::cpu());
template <class T> Tensor tensor(const std::vector<T>& values, Shape shape = {});
Tensor tensor(std::initializer_list<float> values);

std::string version();

// Calls of Tensor::to_vector() (item() and at() go through it) so far, on any device, by any
// thread: the device->host reads a training loop makes (one relaxed atomic per read).
uint64_t host_read_count();

}  // namespace ember

namespace ember {
template <class T> Tensor tensor(const std::vector<T>& values, Shape shape) {
  if (shape.empty() && values.size() != 1) shape = {int64_t(values.size())};
  EMBER_CHECK(shape_numel(shape) == int64_t(values.size()), ShapeError, "tensor(): ", values.size(),
              " values do not fill shape ", shape_str(shape));
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> b(values.begin(), values.end());
    return from_blob_copy(b.data(), std::move(shape), DType::Bool);
  } else {
    return from_blob_copy(values.data(), std::move(shape), dtype_of<T>());
  }
}
}  // namespace ember
