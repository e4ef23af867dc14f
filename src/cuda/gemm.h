// The half-precision GEMM of the CUDA backend, shared by batched_gemm (gemm.cpp) and the lowered
// linear layer's kernels (linear_half.cpp).
#pragma once

#include "ember/core/tensor.h"

namespace ember::cuda {

// out (B, M, N) = a (B, M, K) @ b (B, K, N) + beta * out, a and b bfloat16 or float16 (one dtype),
// out float32 or a's dtype and contiguous; products summed in float32 on the tensor cores
// (cublasGemmStridedBatchedEx, CUBLAS_COMPUTE_32F). a and b may be transposed views in their last
// two dims (either unit stride; other layouts are copied) and broadcast (stride 0) in the first.
// beta: 0 (overwrite) or 1 (accumulate into out).
void gemm_half(const Tensor& a, const Tensor& b, const Tensor& out, float beta = 0.0f);

}  // namespace ember::cuda
