// When SGD / Adam may take the fused kernel (ops/optim_kernels.h) for one parameter instead of
// the reference path of in-place tensor ops: the kernels assume contiguous float32/float64
// tensors of one dtype, shape and device, and the device's backend must have the kernel.
#pragma once

#include <initializer_list>

#include "core/dispatch.h"
#include "ember/core/tensor.h"

namespace ember::optim::detail {

template <class Slot>
bool can_fuse(const Slot& slot, const Tensor& p, const Tensor& grad, std::initializer_list<const Tensor*> buffers) {
  auto same_layout = [&](const Tensor& t) {
    return t.dtype() == p.dtype() && t.device() == p.device() && t.sizes() == p.sizes() && t.is_contiguous();
  };
  if (p.dtype() != DType::Float32 && p.dtype() != DType::Float64) return false;
  if (!p.is_contiguous() || !same_layout(grad)) return false;
  for (const Tensor* b : buffers)
    if (b->defined() && !same_layout(*b)) return false;
  return slot.has(p.device().type);
}

}  // namespace ember::optim::detail
