// NCHW <-> NHWC transposition of a batch of activations, for the bf16 convolution (nn_conv_dnnl.cpp):
// oneDNN 2.6's AMX kernels want channels-last (nhwc) bf16 inputs and give channels-last f32 outputs,
// and its generic reorder (jit:uni) moved those at ~9 GB/s, 3x slower than the blocked f32 reorders.
#pragma once

#include <cstdint>

namespace ember::cpu {

// src (N, C, HW) float32 -> dst (N, HW, C) bfloat16, each value rounded as float_to_bf16
// (ember/core/dtype.h: nearest even, NaN kept quiet, denormals kept). No aliasing.
void nchw_f32_to_nhwc_bf16(const float* src, uint16_t* dst, int64_t n, int64_t c, int64_t hw);

// src (N, HW, C) float32 -> dst (N, C, HW) float32, the values copied bit for bit. No aliasing.
void nhwc_to_nchw_f32(const float* src, float* dst, int64_t n, int64_t c, int64_t hw);
// src (N, C, HW) float32 -> dst (N, HW, C) float32, the values copied bit for bit. No aliasing.
void nchw_to_nhwc_f32(const float* src, float* dst, int64_t n, int64_t c, int64_t hw);

}  // namespace ember::cpu
