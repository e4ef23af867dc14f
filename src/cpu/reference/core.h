// Plain-loop reference kernels for the core ops with fast paths (kept forever as test oracles).
// They take and return contiguous CPU tensors and accumulate in double.
#pragma once

#include "ember/core/tensor.h"

namespace ember::cpu::reference {
// (B, M, K) x (B, K, N) -> (B, M, N), any float dtype; output in the input dtype.
Tensor batched_matmul(const Tensor& a, const Tensor& b);
// Sum over one dim (keepdim), any float dtype.
Tensor sum_dim(const Tensor& a, int64_t dim);
}  // namespace ember::cpu::reference
