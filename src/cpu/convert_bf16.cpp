// float32 <-> bfloat16 array conversion: AVX-512F when the CPU has it (chosen once at run time,
// as nn_pool.cpp's max-pool), 16 values per step with integer arithmetic, so the result is the
// scalar rule's to the bit (vcvtneps2bf16 would flush denormals to zero); the scalar loop
// elsewhere. The scalar loop's NaN branch keeps GCC from vectorising it, and autocast casts every
// lowered op's input and each weight with it every training step.
#include "cpu/convert_bf16.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>

#include "cpu/bf16_avx512.h"
#include "core/isa.h"
#include "ember/core/dtype.h"

namespace ember::cpu {

namespace {

// GCC 12 warns that the "undefined" pass-through operand inside _mm512_srli_epi32 and
// _mm512_cvtepi32_epi16 may be used uninitialised (its _mm512_undefined_epi32 self-initialises);
// a false positive of the intrinsics headers, not of this code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

__attribute__((target("avx512f"))) void f32_to_bf16_avx512(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), f32x16_to_bf16(_mm512_loadu_si512(src + i)));
  for (; i < n; ++i) dst[i] = float_to_bf16(src[i]);
}

__attribute__((target("avx512f"))) void bf16_to_f32_avx512(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    _mm512_storeu_si512(dst + i, _mm512_slli_epi32(h, 16));
  }
  for (; i < n; ++i) dst[i] = bf16_to_float(src[i]);
}

#pragma GCC diagnostic pop

// Large arrays (a batch of activations) are split over the OpenMP threads; a weight of a few
// thousand values is not worth waking them.
constexpr int64_t kPerThread = 1 << 16;

template <class F>
void chunked(int64_t n, F&& f) {
  const int64_t chunks = n / kPerThread;
  if (chunks < 2 || omp_in_parallel()) return f(0, n);
  const int threads = int(std::min<int64_t>(chunks, omp_get_max_threads()));
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = n * t / nt, end = n * (t + 1) / nt;
    f(begin, end);
  }
}

}  // namespace

void f32_to_bf16_array(const float* src, uint16_t* dst, int64_t n) {
  chunked(n, [&](int64_t b, int64_t e) {
    if (have_avx512()) return f32_to_bf16_avx512(src + b, dst + b, e - b);
    for (int64_t i = b; i < e; ++i) dst[i] = float_to_bf16(src[i]);
  });
}

void round_to_bf16_in_place(float* v, int64_t n) {
  chunked(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) v[i] = bf16_to_float(float_to_bf16(v[i]));
  });
}

void bf16_to_f32_array(const uint16_t* src, float* dst, int64_t n) {
  chunked(n, [&](int64_t b, int64_t e) {
    if (have_avx512()) return bf16_to_f32_avx512(src + b, dst + b, e - b);
    for (int64_t i = b; i < e; ++i) dst[i] = bf16_to_float(src[i]);
  });
}

}  // namespace ember::cpu
