// The float32 -> bfloat16 rounding of 16 lanes in AVX-512 integer arithmetic, shared by the array
// conversion (convert_bf16.cpp) and the NCHW -> NHWC transposition (layout_nhwc.cpp): the bits of
// the scalar float_to_bf16 (ember/core/dtype.h), where vcvtneps2bf16 would flush denormals to zero.
#pragma once

#include <immintrin.h>

namespace ember::cpu {

// GCC 12 warns that the "undefined" pass-through operand inside _mm512_srli_epi32 and
// _mm512_cvtepi32_epi16 may be used uninitialised: a false positive of the intrinsics headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// u: 16 float32 bit patterns; returns their 16 bfloat16 bit patterns (round to nearest even, NaN
// kept and made quiet).
__attribute__((target("avx512f"), always_inline)) inline __m256i f32x16_to_bf16(__m512i u) {
  const __m512i round = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i quiet = _mm512_set1_epi32(0x400000);  // 0x40 once shifted down: a quiet NaN
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
  __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(round, lsb));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
  r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(u, quiet));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
}

#pragma GCC diagnostic pop

}  // namespace ember::cpu
