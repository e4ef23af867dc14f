// float <-> bfloat16 / float16 conversions in device code, bit for bit as the CPU's
// ember::float_to_bf16 / float_to_half (round to nearest even; a NaN stays a quiet NaN with its
// sign). Shared by the generic copy kernel (elementwise.cu) and the contiguous casts (cast.cu).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace ember::cuda {

__device__ __forceinline__ float bf16_to_float_dev(uint16_t h) { return __uint_as_float(uint32_t(h) << 16); }
__device__ __forceinline__ uint16_t float_to_bf16_dev(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
__device__ __forceinline__ float half_to_float_dev(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t float_to_half_dev(float f) {
  if (::isnan(f)) return uint16_t(((__float_as_uint(f) >> 16) & 0x8000) | 0x7e00);
  return __half_as_ushort(__float2half_rn(f));
}

}  // namespace ember::cuda
