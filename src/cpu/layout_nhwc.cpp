// NCHW <-> NHWC activation transposition (layout_nhwc.h): 16 channels x 16 pixels at a time,
// transposed in AVX-512 registers (unpack / shuffle network), one image per OpenMP iteration so an
// image's planes stay in L2; the bf16 rounding is bf16_avx512.h's, the scalar rule's to the bit.
// Without AVX-512, or for a channel count that is not a multiple of 16, plain loops.
#include "cpu/layout_nhwc.h"

#include <immintrin.h>
#include <omp.h>

#include "cpu/avx512_transpose.h"
#include "cpu/bf16_avx512.h"
#include "core/isa.h"
#include "ember/core/dtype.h"

namespace ember::cpu {

namespace {

constexpr int64_t kTile = 16;

// GCC 12 warns that the "undefined" pass-through operands inside the unpack / shuffle intrinsics
// may be used uninitialised: a false positive of the intrinsics headers (as in convert_bf16.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// A 16x16 block: 16 rows of 16 floats `src_stride` apart, written transposed as 16 rows
// `dst_stride` apart.
__attribute__((target("avx512f"), always_inline)) inline void transpose_tile(const float* src, int64_t src_stride, float* dst,
                                                             int64_t dst_stride) {
  __m512 r[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * src_stride);
  transpose16(r);
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + i * dst_stride, r[i]);
}

// Checked against the plain loops below by tests/unit/test_cpu_bf16_fast_paths.cpp.
__attribute__((target("avx512f"))) void image_nchw_to_nhwc_bf16_avx512(const float* src, uint16_t* dst, int64_t c,
                                                                       int64_t hw) {
  const int64_t full = hw / kTile * kTile;
  for (int64_t p0 = 0; p0 < full; p0 += kTile)
    for (int64_t ch = 0; ch < c; ch += kTile) {
      __m512 r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + (ch + i) * hw + p0);
      transpose16(r);  // r[i]: pixel p0 + i, channels ch .. ch + 15
      for (int i = 0; i < 16; ++i)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (p0 + i) * c + ch), f32x16_to_bf16(_mm512_castps_si512(r[i])));
    }
  for (int64_t p = full; p < hw; ++p)
    for (int64_t ch = 0; ch < c; ++ch) dst[p * c + ch] = float_to_bf16(src[ch * hw + p]);
}

__attribute__((target("avx512f"))) void image_nhwc_to_nchw_avx512(const float* src, float* dst, int64_t c, int64_t hw) {
  const int64_t full = hw / kTile * kTile;
  for (int64_t p0 = 0; p0 < full; p0 += kTile)
    for (int64_t ch = 0; ch < c; ch += kTile) transpose_tile(src + p0 * c + ch, c, dst + ch * hw + p0, hw);
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t p = full; p < hw; ++p) dst[ch * hw + p] = src[p * c + ch];
}

__attribute__((target("avx512f"))) void image_nchw_to_nhwc_avx512(const float* src, float* dst, int64_t c, int64_t hw) {
  const int64_t full = hw / kTile * kTile;
  for (int64_t p0 = 0; p0 < full; p0 += kTile)
    for (int64_t ch = 0; ch < c; ch += kTile) transpose_tile(src + ch * hw + p0, hw, dst + p0 * c + ch, c);
  for (int64_t p = full; p < hw; ++p)
    for (int64_t ch = 0; ch < c; ++ch) dst[p * c + ch] = src[ch * hw + p];
}

#pragma GCC diagnostic pop

void image_nchw_to_nhwc_loops(const float* src, float* dst, int64_t c, int64_t hw) {
  for (int64_t p = 0; p < hw; ++p)
    for (int64_t ch = 0; ch < c; ++ch) dst[p * c + ch] = src[ch * hw + p];
}

void image_nchw_to_nhwc_bf16_loops(const float* src, uint16_t* dst, int64_t c, int64_t hw) {
  for (int64_t p = 0; p < hw; ++p)
    for (int64_t ch = 0; ch < c; ++ch) dst[p * c + ch] = float_to_bf16(src[ch * hw + p]);
}

void image_nhwc_to_nchw_loops(const float* src, float* dst, int64_t c, int64_t hw) {
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t p = 0; p < hw; ++p) dst[ch * hw + p] = src[p * c + ch];
}

// f(i) for each image i, over the OpenMP threads unless already inside a parallel region.
template <class F>
void per_image(int64_t n, F&& f) {
  if (n < 2 || omp_in_parallel()) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) f(i);
}

// One image's transposition per call: the AVX-512 tiles where C is a multiple of 16, the loops
// otherwise.
template <class D>
void each_image(const float* src, D* dst, int64_t n, int64_t c, int64_t hw,
                void (*vec)(const float*, D*, int64_t, int64_t), void (*loops)(const float*, D*, int64_t, int64_t)) {
  const auto image = have_avx512() && c % kTile == 0 ? vec : loops;
  per_image(n, [&](int64_t i) { image(src + i * c * hw, dst + i * c * hw, c, hw); });
}

}  // namespace

void nchw_f32_to_nhwc_bf16(const float* src, uint16_t* dst, int64_t n, int64_t c, int64_t hw) {
  each_image(src, dst, n, c, hw, image_nchw_to_nhwc_bf16_avx512, image_nchw_to_nhwc_bf16_loops);
}

void nhwc_to_nchw_f32(const float* src, float* dst, int64_t n, int64_t c, int64_t hw) {
  each_image(src, dst, n, c, hw, image_nhwc_to_nchw_avx512, image_nhwc_to_nchw_loops);
}

void nchw_to_nhwc_f32(const float* src, float* dst, int64_t n, int64_t c, int64_t hw) {
  each_image(src, dst, n, c, hw, image_nchw_to_nhwc_avx512, image_nchw_to_nhwc_loops);
}

}  // namespace ember::cpu
