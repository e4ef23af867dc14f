// Tensor helpers shared by core and the ops layer's Tensor methods (src/ops/tensor.cpp): dimension
// wrapping with the view methods' rules and a view constructor that records no autograd history.
#pragma once

#include "ember/core/tensor.h"

namespace ember {
// Normalises a possibly negative dim against ndim (ndim + 1 with allow_end, for unsqueeze); a 0-d
// tensor accepts 0 and -1. Throws IndexError naming op.
int64_t wrap_tensor_dim(int64_t dim, int64_t ndim, const char* op, bool allow_end = false);
// A tensor sharing base's storage with the given sizes, strides and offset; no grad_fn.
Tensor make_view(const Tensor& base, Shape sizes, Shape strides, int64_t offset);
}  // namespace ember
