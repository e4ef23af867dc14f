// Tensor helpers shared by core and the ops layer's Tensor methods (src/ops/tensor.cpp): dimension
// wrapping with the view methods' rules, a view constructor that records no autograd history, and
// the checked byte count of a new tensor.
#pragma once

#include "ember/core/tensor.h"

namespace ember {
// Normalises a possibly negative dim against ndim (ndim + 1 with allow_end, for unsqueeze); a 0-d
// tensor accepts 0 and -1. Throws IndexError naming op.
int64_t wrap_tensor_dim(int64_t dim, int64_t ndim, const char* op, bool allow_end = false);
// A tensor sharing base's storage with the given sizes, strides and offset; no grad_fn.
Tensor make_view(const Tensor& base, Shape sizes, Shape strides, int64_t offset);
// The bytes of a contiguous tensor of that shape and dtype. Like shape_numel and
// contiguous_strides, throws ShapeError naming the shape when the count overflows int64 (a size of
// 9223372036854775807 from a model spec, say), so no allocation is ever sized by a wrapped count.
size_t shape_nbytes(const Shape& sizes, DType dtype);
}  // namespace ember
