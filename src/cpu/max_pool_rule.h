// Max pooling's choice of a window's maximum, shared by the forward kernels (nn_pool.cpp) and the
// backward that finds the maxima again in the input instead of reading indices (pool_grad.cpp):
// the two must pick the same tap, so the rule lives once.
//
// Taps in row-major order; t replaces best where t > best, or t is NaN while best is a number (a
// NaN once taken stays, so the first NaN wins; else the first maximum).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "ember/core/dtype.h"
#include "kernels/nn_kernels.h"

namespace ember::cpu {

template <class T>
inline bool max_pool_takes(T t, T best) {
  return t > best || (t != t && best == best);
}

// The 2x2, stride-2, unpadded window (the zoo's pooling after a convolution).
inline bool window_2x2(const kernels::Pool2dParams& p) {
  return p.kernel_h == 2 && p.kernel_w == 2 && p.stride_h == 2 && p.stride_w == 2 && p.pad_h == 0 && p.pad_w == 0;
}

// A held element widened to float32 (bf16 exactly).
inline float widen_elem(float v) { return v; }
inline float widen_elem(uint16_t v) { return bf16_to_float(v); }

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized in their own helpers (the undefined upper
// halves of the cast intrinsics); nothing here is uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// The lanes where v replaces best (max_pool_takes, 16 lanes).
__attribute__((target("avx512f"), always_inline)) inline __mmask16 take_mask(__m512 best, __m512 v) {
  return _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) |
         (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) & _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q));
}

// 16 held elements (bfloat16 or float32) widened to float32.
template <bool kBf16>
__attribute__((target("avx512f"), always_inline)) inline __m512 load16(const void* p) {
  if constexpr (kBf16)
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(p))), 16));
  else
    return _mm512_loadu_ps(static_cast<const float*>(p));
}

#pragma GCC diagnostic pop

}  // namespace ember::cpu
