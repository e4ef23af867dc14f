// The 16x16 float32 transposition in AVX-512 registers (unpack / shuffle network), shared by the
// NCHW <-> NHWC transpositions (layout_nhwc.cpp) and the fused activation gradient that reads a
// plain gradient into a channel-blocked layout (conv_act_grad.cpp).
#pragma once

#include <immintrin.h>

namespace ember::cpu {

// GCC 12 warns that the "undefined" pass-through operands inside the unpack / shuffle intrinsics
// may be used uninitialised: a false positive of the intrinsics headers (as in bf16_avx512.h).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// r[i] (16 floats each) <- the transpose of the 16x16 matrix whose row i is r[i].
__attribute__((target("avx512f"), always_inline)) inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  // Now each 128-bit lane k of r[4i+j] holds column j of rows 4i..4i+3, columns 4k..4k+3.
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < 4; ++j) {
      t[8 * h + j] = _mm512_shuffle_f32x4(r[8 * h + j], r[8 * h + 4 + j], 0x88);
      t[8 * h + 4 + j] = _mm512_shuffle_f32x4(r[8 * h + j], r[8 * h + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
}

#pragma GCC diagnostic pop

}  // namespace ember::cpu
