// The contiguous float32 <-> bfloat16 / float16 cast kernels (cast.h): one thread per 4 elements
// (16-byte float loads) when the length allows it, else one per element. Rounding as the CPU's
// (half_convert.cuh), so a tensor cast on the GPU equals the same tensor cast on the CPU.
#include "cuda/cast.h"

#include <algorithm>

#include "core/tensor_raw.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/half_convert.cuh"
#include "kernels/kernels.h"

namespace ember::cuda {

namespace {

constexpr int kThreads = 256;

template <bool kBf16>
__device__ __forceinline__ uint16_t narrow(float f) {
  if constexpr (kBf16) return float_to_bf16_dev(f);
  else return float_to_half_dev(f);
}
template <bool kBf16>
__device__ __forceinline__ float widen(uint16_t h) {
  if constexpr (kBf16) return bf16_to_float_dev(h);
  else return half_to_float_dev(h);
}

// n4 groups of 4 elements through float4 / uint2 (8 bytes of half) accesses, then the tail.
template <bool kBf16>
__global__ void narrow_kernel(const float* __restrict__ src, uint16_t* __restrict__ dst, int64_t n, bool vec) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (vec) {
    const int64_t n4 = n / 4;
    for (int64_t j = i; j < n4; j += stride) {
      const float4 v = reinterpret_cast<const float4*>(src)[j];
      uint2 o;
      o.x = uint32_t(narrow<kBf16>(v.x)) | (uint32_t(narrow<kBf16>(v.y)) << 16);
      o.y = uint32_t(narrow<kBf16>(v.z)) | (uint32_t(narrow<kBf16>(v.w)) << 16);
      reinterpret_cast<uint2*>(dst)[j] = o;
    }
    i += n4 * 4;
  }
  for (; i < n; i += stride) dst[i] = narrow<kBf16>(src[i]);
}

template <bool kBf16>
__global__ void widen_kernel(const uint16_t* __restrict__ src, float* __restrict__ dst, int64_t n, bool vec) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (vec) {
    const int64_t n4 = n / 4;
    for (int64_t j = i; j < n4; j += stride) {
      const uint2 v = reinterpret_cast<const uint2*>(src)[j];
      reinterpret_cast<float4*>(dst)[j] = make_float4(widen<kBf16>(uint16_t(v.x & 0xffffu)), widen<kBf16>(uint16_t(v.x >> 16)),
                                                      widen<kBf16>(uint16_t(v.y & 0xffffu)), widen<kBf16>(uint16_t(v.y >> 16)));
    }
    i += n4 * 4;
  }
  for (; i < n; i += stride) dst[i] = widen<kBf16>(src[i]);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool cast_contiguous(const Tensor& src, const Tensor& dst) {
  const DType s = src.dtype(), d = dst.dtype();
  const bool narrowing = s == DType::Float32 && is_half(d), widening = is_half(s) && d == DType::Float32;
  if (!(narrowing || widening) || !src.is_contiguous() || !dst.is_contiguous() || src.sizes() != dst.sizes())
    return false;
  const int64_t n = dst.numel();
  if (n == 0) return true;
  const int dev = dst.device().index;
  DeviceGuard g(dev);
  // The vector path needs 16-byte aligned floats and 8-byte aligned halves.
  const bool vec = n >= 4 && aligned16(narrowing ? src.raw_data() : dst.raw_data()) &&
                   reinterpret_cast<uintptr_t>(narrowing ? dst.raw_data() : src.raw_data()) % 8 == 0;
  const int64_t work = vec ? n / 4 + 3 : n;
  const int blocks = int(std::min<int64_t>((work + kThreads - 1) / kThreads, 65535));
  cudaStream_t st = stream(dev);
  const bool bf16 = (narrowing ? d : s) == DType::BFloat16;
  if (narrowing) {
    const float* in = static_cast<const float*>(src.raw_data());
    uint16_t* out = static_cast<uint16_t*>(dst.raw_data());
    if (bf16) narrow_kernel<true><<<blocks, kThreads, 0, st>>>(in, out, n, vec);
    else narrow_kernel<false><<<blocks, kThreads, 0, st>>>(in, out, n, vec);
  } else {
    const uint16_t* in = static_cast<const uint16_t*>(src.raw_data());
    float* out = static_cast<float*>(dst.raw_data());
    if (bf16) widen_kernel<true><<<blocks, kThreads, 0, st>>>(in, out, n, vec);
    else widen_kernel<false><<<blocks, kThreads, 0, st>>>(in, out, n, vec);
  }
  EMBER_CUDA_LAUNCH_CHECK();
  return true;
}

Tensor to_half(const Tensor& t, DType half) {
  if (t.dtype() == half && t.is_contiguous()) return t;
  Tensor out = core::empty(t.sizes(), half, t.device());
  if (!cast_contiguous(t, out)) kernels::copy(out.device())(t, out);  // strided or float64: the generic kernel
  return out;
}

}  // namespace ember::cuda
