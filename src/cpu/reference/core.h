// Plain-loop reference kernels for the core ops with fast paths (kept forever as test oracles).
// They take and return contiguous CPU tensors and accumulate in double.
#pragma once

#include "ember/core/tensor.h"
#include "kernels/kernels.h"

namespace ember::cpu::reference {
// (B, M, K) x (B, K, N) -> (B, M, N), any float dtype; output in the input dtype.
Tensor batched_matmul(const Tensor& a, const Tensor& b);
// Sum over one dim (keepdim), any float dtype.
Tensor sum_dim(const Tensor& a, int64_t dim);
// activation.cpp: the activation slots (kernels.h) with their signatures, float32 and float64,
// each element computed in double from activation_math.h and rounded once.
void activation_forward(kernels::Activation f, const Tensor& x, const Tensor& out);
void activation_backward(kernels::Activation f, const Tensor& grad_out, const Tensor& x, const Tensor& grad_x);
}  // namespace ember::cpu::reference
