// Tensors without autograd, for the layers that sit below the op front-ends: the backends allocate
// scratch and outputs, view and copy through these (never through Tensor's methods or the factories
// of ember/core/tensor.h, which the ops layer defines), and the ops layer's Tensor methods are these
// plus the autograd record. Allocation goes through core's allocator table, copies through the
// dispatch table's copy slots (core/dispatch.h), so every call here needs the backends registered:
// a tensor to work on proves they are; code with none calls ensure_backends() (src/backends) first.
#pragma once

#include <optional>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::core {

// ---- allocation --------------------------------------------------------------------------------
// A contiguous, uninitialised tensor. ShapeError (named "empty") on a negative size or a byte count
// that overflows.
Tensor empty(Shape sizes, DType dtype, Device device);
// A contiguous, uninitialised tensor of t's sizes, dtype and device.
Tensor empty_like(const Tensor& t);

// ---- views: same storage, no autograd history; the rules (and messages) of Tensor's view methods
// `sizes` with at most one -1 (inferred) checked against numel; ShapeError naming op otherwise.
Shape infer_size(Shape sizes, int64_t numel, const char* op);
// The strides that view (sizes, strides) as new_sizes without a copy (PyTorch's computeStride), or
// nullopt when the memory layout does not allow it.
std::optional<Shape> view_strides(const Shape& sizes, const Shape& strides, const Shape& new_sizes);
Tensor view(const Tensor& t, Shape sizes);  // ShapeError when t's strides do not allow it
Tensor permute(const Tensor& t, const std::vector<int64_t>& dims);
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1);
Tensor unsqueeze(const Tensor& t, int64_t dim);
Tensor expand(const Tensor& t, const Shape& sizes);  // -1 keeps a size; stride 0 where it broadcasts

// ---- copies through the copy slots ---------------------------------------------------------------
// dst's values from src, converted to dst's dtype; src has dst's shape (a broadcast view is fine);
// the two may be on different devices (staged through a contiguous tensor, device_copy slot).
void copy(const Tensor& src, const Tensor& dst);
Tensor clone(const Tensor& t);       // a contiguous copy
Tensor contiguous(const Tensor& t);  // t itself when contiguous, else clone(t)
// A view of t when its strides allow one, else a view of contiguous(t).
Tensor reshape(const Tensor& t, Shape sizes);
// t itself when it is already there in that dtype, else a contiguous converted copy.
Tensor to(const Tensor& t, Device device, DType dtype);
Tensor to(const Tensor& t, DType dtype);
Tensor to(const Tensor& t, Device device);

}  // namespace ember::core
