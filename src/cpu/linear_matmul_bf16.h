// linear's bfloat16 training products through oneDNN's matmul primitive (linear_matmul_bf16.cpp),
// used by the linear slots of linear_dnnl.cpp. Each returns false, writing nothing, when oneDNN has
// no matmul for the case; the caller then takes its inner-product path.
#pragma once

#include "ember/core/tensor.h"

namespace ember::cpu {

// out (N, O) f32 = x (N, I) bf16 @ w (O, I)^T bf16 + b (O) f32 (b may be undefined).
bool linear_forward_matmul_bf16(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out);
// grad_x (N, I) f32 = grad_out (N, O) f32 (rounded to bf16) @ w (O, I) bf16.
bool linear_backward_data_matmul_bf16(const Tensor& go, const Tensor& w, const Tensor& gx);
// grad_w (O, I) f32 = grad_out^T (rounded to bf16) @ x (N, I) bf16; grad_b (O) f32 = the column
// sums of grad_out (in f32, unrounded) when defined.
bool linear_backward_weights_matmul_bf16(const Tensor& go, const Tensor& x, const Tensor& gw, const Tensor& gb);

// c (M, N) f32 = a^T @ b for a (K, M) and b (K, N), both bf16 row-major: the product of two
// tall matrices over their shared rows (a convolution's weight gradient, nn_conv_wgrad.cpp).
bool matmul_at_b_bf16(const uint16_t* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n);

}  // namespace ember::cpu
