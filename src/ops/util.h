// Helpers shared by op front-ends.
#pragma once

#include "ember/core/tensor.h"

namespace ember {
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
void check_same_device(const Tensor& a, const Tensor& b, const char* op);
inline Tensor scalar_like(const Tensor& t, double v) {
  return full({}, v, {.dtype = t.dtype(), .device = t.device()});
}
inline int64_t broadcast_numel(const Tensor& a, const Tensor& b) {
  return shape_numel(broadcast_shapes(a.sizes(), b.sizes(), "broadcast"));
}
// Normalises a possibly negative dim against ndim; throws IndexError naming op.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
}  // namespace ember
