// linear's training products through oneDNN (linear_matmul.cpp), used by the linear slots of
// linear_dnnl.cpp: bfloat16 (autocast) always, float32 where it is faster than ember's tiled OpenBLAS
// and the thread count may partition the sums. Each returns false, writing nothing, when it does not
// take the case; the caller then takes its inner-product or GEMM path.
#pragma once

#include "ember/core/tensor.h"

namespace ember::cpu {

// out (N, O) f32 = x (N, I) bf16 @ w (O, I)^T bf16 + b (O) f32 (b may be undefined).
bool linear_forward_matmul_bf16(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out);

// The float32 products of linear's training step go to oneDNN only outside ember::deterministic()
// (oneDNN partitions a product's sums by the thread count; ember's tiled OpenBLAS does not) and
// from this many multiply-adds up (N * I * O; below it the tiled OpenBLAS call was as fast or
// faster: mlp's 64x256 -> 10 layer).
inline constexpr int64_t kMinDnnlLinearWork = int64_t(1) << 19;
// out (N, O) f32 = x (N, I) f32 @ w (O, I)^T f32 + b (O) f32 (b may be undefined), one oneDNN
// matmul with the bias in its epilogue.
bool linear_forward_matmul_f32(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out);
// grad_x (N, I) f32 = grad_out (N, O) f32 @ w (O, I) f32, oneDNN's sgemm.
bool linear_backward_data_sgemm_f32(const Tensor& go, const Tensor& w, const Tensor& gx);
// grad_x (N, I) f32 = grad_out (N, O) f32 (rounded to bf16) @ w (O, I) bf16.
bool linear_backward_data_matmul_bf16(const Tensor& go, const Tensor& w, const Tensor& gx);
// grad_w (O, I) f32 = grad_out^T (rounded to bf16) @ x (N, I) bf16; grad_b (O) f32 = the column
// sums of grad_out (in f32, unrounded) when defined.
bool linear_backward_weights_matmul_bf16(const Tensor& go, const Tensor& x, const Tensor& gw, const Tensor& gb);

// c (M, N) f32 = a^T @ b for a (K, M) and b (K, N), both bf16 row-major: the product of two
// tall matrices over their shared rows (a convolution's weight gradient, nn_conv_wgrad.cpp).
bool matmul_at_b_bf16(const uint16_t* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n);

}  // namespace ember::cpu
