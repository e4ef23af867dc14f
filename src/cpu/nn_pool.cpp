// Pooling on the CPU, float32 and float64, twin of src/cuda/nn_pool.cu. Max pooling: one (n, c) plane
// per OpenMP task, window bounds clipped once per output row/column instead of tested per tap, and a
// branch-free path for 2x2/2; same results as the reference, including the first-maximum rule on
// ties and NaN propagation. Average and adaptive average: the reference kernels (reference/nn_pool.cpp).
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/avx512_transpose.h"
#include "cpu/dnnl_form.h"
#include "cpu/dnnl_util.h"
#include "core/isa.h"
#include "cpu/max_pool_rule.h"
#include "cpu/pool_grad.h"
#include "cpu/reference/nn.h"

namespace ember::cpu {

using kernels::Pool2dParams;

namespace {

// The 2x2, stride-2, unpadded window every zoo model uses: the four taps of a window are
// compared with selects instead of a loop with early exits, so the row loop vectorises. Same rule
// as the general loop: the first NaN in row-major order wins, else the first maximum.
// Built for AVX-512, AVX2 and the baseline (function multiversioning picks one at load time), so
// the selects vectorise on the machines that have the wide units; the library itself is compiled
// without -march flags.
// `id` null: values only (inference).
template <class T>
inline void max_pool2d_2x2_rows(const T* r0, const T* r1, int64_t base, int64_t W, int64_t OW, T* o,
                                int64_t* id) {
  for (int64_t ow = 0; ow < OW; ++ow) {
    T best = r0[2 * ow];
    int64_t arg = 0;
    const T taps[3] = {r0[2 * ow + 1], r1[2 * ow], r1[2 * ow + 1]};
    const int64_t offs[3] = {1, W, W + 1};
    for (int k = 0; k < 3; ++k) {
      const T v = taps[k];
      // v > best is false once best is NaN, so a NaN is only taken while best is a number.
      const bool take = max_pool_takes(v, best);
      best = take ? v : best;
      arg = take ? offs[k] : arg;
    }
    o[ow] = best;
    if (id != nullptr) id[ow] = base + 2 * ow + arg;
  }
}
__attribute__((target_clones("avx2", "default")))
void max_pool2d_2x2_plane_f32_generic(const float* plane, int64_t W, int64_t OH, int64_t OW, float* o, int64_t* id) {
  for (int64_t oh = 0; oh < OH; ++oh)
    max_pool2d_2x2_rows(plane + 2 * oh * W, plane + (2 * oh + 1) * W, 2 * oh * W, W, OW, o + oh * OW,
                        id == nullptr ? nullptr : id + oh * OW);
}

// AVX-512: 16 outputs per step with masked loads and stores, so short rows (LeNet-5's 14 and 5
// outputs, mnistnet's 13) run vectorised too; the compiler's loop above only vectorises rows of
// 16+ outputs and leaves the rest to its scalar epilogue (max-pool was 13% of a LeNet-5 training
// step). Same four taps in row-major order and the same take rule, so the same values and indices.
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized in their own helpers (the undefined
// upper halves of the cast/extract intrinsics); nothing here is uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) void max_pool2d_2x2_plane_f32_avx512(const float* plane, int64_t W, int64_t OH,
                                                                         int64_t OW, float* o, int64_t* id) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i lane2 = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i off1 = _mm512_set1_epi32(1), offW = _mm512_set1_epi32(int(W)), offW1 = _mm512_set1_epi32(int(W + 1));
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* r0 = plane + 2 * oh * W;
    const float* r1 = r0 + W;
    float* orow = o + oh * OW;
    int64_t* irow = id == nullptr ? nullptr : id + oh * OW;
    for (int64_t ow = 0; ow < OW; ow += 16) {
      const int64_t n = std::min<int64_t>(16, OW - ow);
      const int64_t inputs = 2 * n;  // taps read from each row: 2n <= 32
      const __mmask16 lo = __mmask16(inputs >= 16 ? 0xFFFF : (1u << inputs) - 1);
      const __mmask16 hi = __mmask16(inputs <= 16 ? 0 : (inputs >= 32 ? 0xFFFF : (1u << (inputs - 16)) - 1));
      const __mmask16 out_mask = __mmask16(n >= 16 ? 0xFFFF : (1u << n) - 1);
      const __m512 a0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * ow), a1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * ow + 16);
      const __m512 b0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * ow), b1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * ow + 16);
      const __m512 taps[4] = {_mm512_permutex2var_ps(a0, even, a1), _mm512_permutex2var_ps(a0, odd, a1),
                              _mm512_permutex2var_ps(b0, even, b1), _mm512_permutex2var_ps(b0, odd, b1)};
      const __m512i offs[3] = {off1, offW, offW1};
      __m512 best = taps[0];
      __m512i arg = _mm512_setzero_si512();
      for (int k = 1; k < 4; ++k) {
        const __m512 v = taps[k];
        const __mmask16 take = take_mask(best, v);
        best = _mm512_mask_blend_ps(take, best, v);
        arg = _mm512_mask_blend_epi32(take, arg, offs[k - 1]);
      }
      _mm512_mask_storeu_ps(orow + ow, out_mask, best);
      if (irow == nullptr) continue;
      // index = 2*oh*W + 2*(ow + lane) + arg, as int64 in two halves of 8.
      const __m512i local = _mm512_add_epi32(arg, _mm512_add_epi32(lane2, _mm512_set1_epi32(int(2 * ow))));
      const __m512i base = _mm512_set1_epi64(2 * oh * W);
      const __m512i lo64 = _mm512_add_epi64(base, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(local)));
      const __m512i hi64 = _mm512_add_epi64(base, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(local, 1)));
      _mm512_mask_storeu_epi64(irow + ow, __mmask8(out_mask & 0xFF), lo64);
      _mm512_mask_storeu_epi64(irow + ow + 8, __mmask8(out_mask >> 8), hi64);
    }
  }
}

// Any other window, float32: 16 consecutive outputs of a row per step, for the columns whose
// windows lie inside the row (the rows are clipped once per output row, the same for every lane);
// the border columns through the scalar window below. Taps in the scalar loop's row-major order
// with its take rule, so the same values and indices. Strides 1 and 2 read the taps with (masked)
// contiguous loads, others gather. ResNet's 3x3/2 stem pool on the plain tensor had been 8% of
// resnet18's bf16 training step (perf, Zen 5, 2026-12-02).
template <class T>
inline void max_pool2d_window(const T* plane, int64_t W, int64_t h0, int64_t h1, int64_t w0, int64_t w1, T* o,
                              int64_t* id) {
  T best = plane[h0 * W + w0];
  int64_t arg = h0 * W + w0;
  for (int64_t h = h0; h < h1 && !std::isnan(best); ++h)
    for (int64_t w = w0; w < w1; ++w) {
      const T v = plane[h * W + w];
      if (v > best || std::isnan(v)) {
        best = v;
        arg = h * W + w;
        if (std::isnan(v)) break;
      }
    }
  *o = best;
  if (id != nullptr) *id = arg;
}
inline __mmask16 low_bits16(int64_t n) { return __mmask16(n >= 16 ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1); }
__attribute__((target("avx512f"))) void max_pool2d_plane_f32_avx512(const float* plane, int64_t H, int64_t W,
                                                                     int64_t OH, int64_t OW, const Pool2dParams& p,
                                                                     float* o, int64_t* id) {
  const int64_t KH = p.kernel_h, KW = p.kernel_w, SH = p.stride_h, SW = p.stride_w;
  // Columns whose whole window lies in [0, W): ow * SW - pad_w >= 0 and ow * SW - pad_w + KW <= W.
  const int64_t ow_lo = std::min<int64_t>((p.pad_w + SW - 1) / SW, OW);
  const int64_t ow_hi = W + p.pad_w - KW < 0 ? ow_lo : std::clamp<int64_t>((W + p.pad_w - KW) / SW + 1, ow_lo, OW);
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i lane_cols = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(int(SW)));
  for (int64_t oh = 0; oh < OH; ++oh) {
    const int64_t h0 = std::max<int64_t>(oh * SH - p.pad_h, 0);
    const int64_t h1 = std::min<int64_t>(oh * SH - p.pad_h + KH, H);
    float* orow = o + oh * OW;
    int64_t* irow = id == nullptr ? nullptr : id + oh * OW;
    auto border = [&](int64_t ow) {
      const int64_t w0 = std::max<int64_t>(ow * SW - p.pad_w, 0);
      const int64_t w1 = std::min<int64_t>(ow * SW - p.pad_w + KW, W);
      max_pool2d_window(plane, W, h0, h1, w0, w1, orow + ow, irow == nullptr ? nullptr : irow + ow);
    };
    for (int64_t ow = 0; ow < ow_lo; ++ow) border(ow);
    for (int64_t ow = ow_hi; ow < OW; ++ow) border(ow);
    for (int64_t ow = ow_lo; ow < ow_hi; ow += 16) {
      const int64_t n = std::min<int64_t>(16, ow_hi - ow);
      const __mmask16 out_mask = low_bits16(n);
      const int64_t c0 = ow * SW - p.pad_w;  // the first lane's first column
      __m512 best = _mm512_setzero_ps();
      __m512i arg = _mm512_setzero_si512();
      bool first = true;
      for (int64_t h = h0; h < h1; ++h) {
        const float* row = plane + h * W;
        for (int64_t kw = 0; kw < KW; ++kw) {
          const float* t = row + c0 + kw;
          __m512 v;
          if (SW == 1) {
            v = _mm512_maskz_loadu_ps(out_mask, t);
          } else if (SW == 2) {
            const int64_t count = 2 * n - 1;  // columns t[0], t[2], ..., t[2n-2]
            const __m512 a0 = _mm512_maskz_loadu_ps(low_bits16(count), t);
            const __m512 a1 = _mm512_maskz_loadu_ps(low_bits16(count - 16), t + 16);
            v = _mm512_permutex2var_ps(a0, even, a1);
          } else {
            v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), out_mask, lane_cols, t, 4);
          }
          const __m512i idx = _mm512_add_epi32(lane_cols, _mm512_set1_epi32(int(h * W + c0 + kw)));
          if (first) {
            best = v;
            arg = idx;
            first = false;
            continue;
          }
          const __mmask16 take = take_mask(best, v);
          best = _mm512_mask_blend_ps(take, best, v);
          arg = _mm512_mask_blend_epi32(take, arg, idx);
        }
      }
      _mm512_mask_storeu_ps(orow + ow, out_mask, best);
      if (irow == nullptr) continue;
      _mm512_mask_storeu_epi64(irow + ow, __mmask8(out_mask & 0xFF), _mm512_cvtepi32_epi64(_mm512_castsi512_si256(arg)));
      _mm512_mask_storeu_epi64(irow + ow + 8, __mmask8(out_mask >> 8),
                               _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(arg, 1)));
    }
  }
}
#pragma GCC diagnostic pop

void max_pool2d_2x2_plane_f32(const float* plane, int64_t W, int64_t OH, int64_t OW, float* o, int64_t* id) {
  const bool avx512 = have_avx512();
  // Offsets are computed in 32 bits: planes up to 2^30 elements (any image a conv net sees).
  if (avx512 && 2 * OH * W < (int64_t(1) << 30)) return max_pool2d_2x2_plane_f32_avx512(plane, W, OH, OW, o, id);
  max_pool2d_2x2_plane_f32_generic(plane, W, OH, OW, o, id);
}
template <class T>
void max_pool2d_2x2_plane(const T* plane, int64_t W, int64_t OH, int64_t OW, T* o, int64_t* id) {
  if constexpr (std::is_same_v<T, float>) {
    max_pool2d_2x2_plane_f32(plane, W, OH, OW, o, id);
  } else {
    for (int64_t oh = 0; oh < OH; ++oh)
      max_pool2d_2x2_rows(plane + 2 * oh * W, plane + (2 * oh + 1) * W, 2 * oh * W, W, OW, o + oh * OW,
                          id == nullptr ? nullptr : id + oh * OW);
  }
}

// Max pooling of an activation held in oneDNN's nChw16c layout (dnnl_form.h), float32 or bfloat16,
// into the same layout and dtype: each of the 16 lanes is one channel's window, taken in the plain
// loop's row-major order with its rule (a NaN once seen stays, else the first maximum), so the values
// equal the plain kernel's (bfloat16 compares as the float32 it widens to exactly, and the maximum is
// one of its inputs, so narrowing it back is exact). Padding channels (zeros) pool to zeros, as
// oneDNN requires of them. Values only: inference.
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized in their own helpers (as above).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <bool kBf16>
__attribute__((target("avx512f"))) inline void store16(void* p, __m512 v) {
  if constexpr (kBf16)
    _mm256_storeu_si256(static_cast<__m256i*>(p), _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16)));
  else
    _mm512_storeu_ps(static_cast<float*>(p), v);
}
// v replaces best where v > best, or v is NaN while best is a number (the plain kernel's rule).
__attribute__((target("avx512f"))) inline __m512 take_max(__m512 best, __m512 v) {
  return _mm512_mask_blend_ps(take_mask(best, v), best, v);
}
template <bool kBf16>
__attribute__((target("avx512f"))) void max_pool2d_nchw16c_avx512(const void* x, void* out, int64_t N, int64_t CB,
                                                                  int64_t H, int64_t W, int64_t OH, int64_t OW,
                                                                  const Pool2dParams& p) {
  using E = std::conditional_t<kBf16, uint16_t, float>;
  const E* xp = static_cast<const E*>(x);
  E* op = static_cast<E*>(out);
  const int64_t planes = N * CB;
  const bool window_2x2_fits = window_2x2(p) && 2 * OH <= H && 2 * OW <= W;
  // 2x2/2: the four taps in row-major order, without the general loop's bounds.
#pragma omp parallel for schedule(static) if (planes * OH * OW > 256)
  for (int64_t nc = 0; nc < planes; ++nc) {
    const E* plane = xp + nc * H * W * 16;
    E* o = op + nc * OH * OW * 16;
    if (window_2x2_fits) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        const E* r0 = plane + 2 * oh * W * 16;
        const E* r1 = r0 + W * 16;
        E* orow = o + oh * OW * 16;
        for (int64_t ow = 0; ow < OW; ++ow) {
          __m512 best = load16<kBf16>(r0 + 32 * ow);
          best = take_max(best, load16<kBf16>(r0 + 32 * ow + 16));
          best = take_max(best, load16<kBf16>(r1 + 32 * ow));
          best = take_max(best, load16<kBf16>(r1 + 32 * ow + 16));
          store16<kBf16>(orow + 16 * ow, best);
        }
      }
      continue;
    }
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t h0 = std::max<int64_t>(oh * p.stride_h - p.pad_h, 0);
      const int64_t h1 = std::min<int64_t>(oh * p.stride_h - p.pad_h + p.kernel_h, H);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t w0 = std::max<int64_t>(ow * p.stride_w - p.pad_w, 0);
        const int64_t w1 = std::min<int64_t>(ow * p.stride_w - p.pad_w + p.kernel_w, W);
        __m512 best = load16<kBf16>(plane + (h0 * W + w0) * 16);
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = (h == h0 ? w0 + 1 : w0); w < w1; ++w) {
            best = take_max(best, load16<kBf16>(plane + (h * W + w) * 16));
          }
        store16<kBf16>(o + (oh * OW + ow) * 16, best);
      }
    }
  }
}

#pragma GCC diagnostic pop

// true (out held in the blocked layout) when x is held in nChw16c and no indices are wanted.
bool max_pool2d_held(const Tensor& x, const Pool2dParams& p, const Tensor& out, const Tensor& indices) {
  const bool avx512 = have_avx512();
  if (indices.defined() || !forms_enabled() || !avx512) return false;
  const DnnlForm* form = dnnl_form_of(x);
  if (form == nullptr) return false;
  using dnnl::memory;
  const memory::data_type type = form->desc().data_type();
  const memory::dims xd{x.size(0), x.size(1), x.size(2), x.size(3)};
  if (form->desc() != memory::desc(xd, type, memory::format_tag::nChw16c)) return false;
  const memory::desc od({out.size(0), out.size(1), out.size(2), out.size(3)}, type, memory::format_tag::nChw16c);
  Storage buffer = std::make_shared<StorageImpl>(od.get_size(), Device::cpu());
  const int64_t CB = (x.size(1) + 15) / 16;
  auto pool = type == memory::data_type::bf16 ? &max_pool2d_nchw16c_avx512<true> : &max_pool2d_nchw16c_avx512<false>;
  pool(form->data(), buffer->data(), x.size(0), CB, x.size(2), x.size(3), out.size(2), out.size(3), p);
  hold_in_form(out, dnnl::memory(od, dnnl_cpu_engine(), buffer->data()), buffer);
  return true;
}

// A row of outputs, held as OW x 16 (value, index) pairs, written out one channel's row at a time
// (contiguous stores, not 16 planes per pixel).
inline void write_pooled_row(const float* row_best, const int32_t* row_at, int64_t w, int64_t OW, int64_t plane,
                             float* out, int64_t* idx) {
  for (int64_t v = 0; v < w; ++v)
    for (int64_t ow = 0; ow < OW; ++ow) {
      out[v * plane + ow] = row_best[ow * 16 + v];
      if (idx != nullptr) idx[v * plane + ow] = row_at[ow * 16 + v];
    }
}

// The windows of w <= 16 channels (a channel-blocked image's group: stride V between pixels), one
// output row at a time. Plain loops: the NHWC tail group and CPUs without AVX-512.
template <class T>
void max_pool2d_group(const T* img, int64_t V, int64_t H, int64_t W, int64_t OH, int64_t OW, const Pool2dParams& p,
                      int64_t w, float* out, int64_t* idx, float* row_best, int32_t* row_at) {
  for (int64_t oh = 0; oh < OH; ++oh) {
    const int64_t h0 = std::max<int64_t>(oh * p.stride_h - p.pad_h, 0);
    const int64_t h1 = std::min<int64_t>(oh * p.stride_h - p.pad_h + p.kernel_h, H);
    for (int64_t ow = 0; ow < OW; ++ow) {
      const int64_t w0 = std::max<int64_t>(ow * p.stride_w - p.pad_w, 0);
      const int64_t w1 = std::min<int64_t>(ow * p.stride_w - p.pad_w + p.kernel_w, W);
      float* best = row_best + ow * 16;
      int32_t* at = row_at + ow * 16;
      for (int64_t v = 0; v < w; ++v) {
        best[v] = widen_elem(img[(h0 * W + w0) * V + v]);
        at[v] = int32_t(h0 * W + w0);
      }
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t x = (h == h0 ? w0 + 1 : w0); x < w1; ++x)
          for (int64_t v = 0; v < w; ++v) {
            const float t = widen_elem(img[(h * W + x) * V + v]);
            if (max_pool_takes(t, best[v])) {
              best[v] = t;
              at[v] = int32_t(h * W + x);
            }
          }
    }
    write_pooled_row(row_best, row_at, w, OW, OH * OW, out + oh * OW, idx == nullptr ? nullptr : idx + oh * OW);
  }
}

// write_pooled_row for a whole group of 16 channels: 16 outputs of the row at a time transposed in
// registers and stored as 16 channel rows (masked at the row's end), the indices widened to int64.
// The scalar loop's strided reads and 8-byte scalar stores had been 45% of this kernel's time in
// mnistnet's bf16 training (perf annotate, Zen 5, 2026-12-03). (GCC 12's intrinsics headers trip
// -Wmaybe-uninitialized here, as above.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
__attribute__((target("avx512f"))) void write_pooled_row16_avx512(const float* row_best, const int32_t* row_at,
                                                                  int64_t OW, int64_t plane, float* out,
                                                                  int64_t* idx) {
  for (int64_t ow0 = 0; ow0 < OW; ow0 += 16) {
    const int64_t n = std::min<int64_t>(16, OW - ow0);
    const __mmask16 m = __mmask16(n == 16 ? 0xFFFF : (1u << n) - 1);
    __m512 r[16];
    for (int i = 0; i < 16; ++i) r[i] = i < n ? _mm512_loadu_ps(row_best + (ow0 + i) * 16) : _mm512_setzero_ps();
    transpose16(r);  // r[v]: channel v's outputs ow0 .. ow0 + 15
    for (int v = 0; v < 16; ++v) _mm512_mask_storeu_ps(out + v * plane + ow0, m, r[v]);
    if (idx == nullptr) continue;  // the forward that keeps its input instead (pool_grad.h)
    for (int i = 0; i < 16; ++i)
      r[i] = i < n ? _mm512_castsi512_ps(_mm512_loadu_si512(row_at + (ow0 + i) * 16)) : _mm512_setzero_ps();
    transpose16(r);
    for (int v = 0; v < 16; ++v) {
      const __m512i at = _mm512_castps_si512(r[v]);
      _mm512_mask_storeu_epi64(idx + v * plane + ow0, __mmask8(m & 0xFF), _mm512_cvtepi32_epi64(_mm512_castsi512_si256(at)));
      _mm512_mask_storeu_epi64(idx + v * plane + ow0 + 8, __mmask8(m >> 8),
                               _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(at, 1)));
    }
  }
}
#pragma GCC diagnostic pop

// A whole group of 16 channels with AVX-512 intrinsics, the best values and their indices in
// registers (an auto-vectorised version of the loop above kept them on the stack behind masked
// stores, whose forwarding stalled each next load: a third of the kernel's time, perf annotate).
// kIdx false: values only (idx null; the forward that keeps its input, pool_grad.h).
template <bool kBf16, bool kIdx>
__attribute__((target("avx512f"))) void max_pool2d_group16_avx512(const void* img_v, int64_t V, int64_t H, int64_t W,
                                                                   int64_t OH, int64_t OW, const Pool2dParams& p,
                                                                   float* out, int64_t* idx, float* row_best,
                                                                   int32_t* row_at) {
  using T = std::conditional_t<kBf16, uint16_t, float>;
  const T* img = static_cast<const T*>(img_v);
  const int64_t plane = OH * OW;
  for (int64_t oh = 0; oh < OH; ++oh) {
    const int64_t h0 = std::max<int64_t>(oh * p.stride_h - p.pad_h, 0);
    const int64_t h1 = std::min<int64_t>(oh * p.stride_h - p.pad_h + p.kernel_h, H);
    for (int64_t ow = 0; ow < OW; ++ow) {
      const int64_t w0 = std::max<int64_t>(ow * p.stride_w - p.pad_w, 0);
      const int64_t w1 = std::min<int64_t>(ow * p.stride_w - p.pad_w + p.kernel_w, W);
      __m512 best = load16<kBf16>(img + (h0 * W + w0) * V);
      __m512i at = _mm512_set1_epi32(int32_t(h0 * W + w0));
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t x = (h == h0 ? w0 + 1 : w0); x < w1; ++x) {
          const __m512 t = load16<kBf16>(img + (h * W + x) * V);
          const __mmask16 take = take_mask(best, t);
          best = _mm512_mask_blend_ps(take, best, t);
          if constexpr (kIdx) at = _mm512_mask_blend_epi32(take, at, _mm512_set1_epi32(int32_t(h * W + x)));
        }
      _mm512_storeu_ps(row_best + ow * 16, best);
      if constexpr (kIdx) _mm512_storeu_si512(row_at + ow * 16, at);
    }
    write_pooled_row16_avx512(row_best, row_at, OW, plane, out + oh * OW, kIdx ? idx + oh * OW : nullptr);
  }
}

// Training's max pooling of an activation held channel-blocked at float32, or bfloat16 under
// autocast (dnnl_form.h's ChannelBlocked: NHWC or nChw16c, the layout a convolution, batch norm and
// ReLU left it in; bf16 values are compared widened, exactly, and written widened): the
// windows are read where the values are, 16 channels a step, and the output and the indices written
// plain (NCHW, indices h * W + w in the plane, as the plain kernel writes them) for the backward and
// for whatever reads the pooled tensor -- a quarter of the input's size. Before, reading the input
// plain reordered all of it (NHWC -> NCHW: 5% of a bncnn48_fc128 bf16 training step, perf, Zen 5).
// The taps in row-major order with the plain kernel's rule (v > best, or v NaN while best is a
// number), so the same values and indices.
// `ip` null: values only -- the forward that keeps its input for the backward (pool_grad.h).
bool max_pool2d_train_held(const Tensor& x, const Pool2dParams& p, const Tensor& out, int64_t* ip) {
  if (x.dtype() != DType::Float32 || !forms_enabled()) return false;
  const ChannelBlocked b = channel_blocked(x);  // float32, or bfloat16 (training under autocast)
  if (b.form == nullptr) return false;
  const int64_t N = b.N, C = b.C, V = b.V, CB = C / V, H = x.size(2), W = x.size(3);
  const int64_t OH = out.size(2), OW = out.size(3), G = (V + 15) / 16;
  if (H * W >= (int64_t(1) << 31)) return false;  // indices in 32 bits within a row
  const bool avx512 = have_avx512();
  const char* xp = static_cast<const char*>(b.raw());
  const size_t elem = b.bf16 ? sizeof(uint16_t) : sizeof(float);
  float* op = out.data_ptr<float>();
#pragma omp parallel if (N * C * OH * OW > 4096)
  {
    std::vector<float> row_best(size_t(OW * 16));
    std::vector<int32_t> row_at(size_t(OW * 16));
#pragma omp for schedule(static) collapse(2)
    for (int64_t nb = 0; nb < N * CB; ++nb)
      for (int64_t g = 0; g < G; ++g) {
        const int64_t c0 = g * 16, w = std::min<int64_t>(16, V - c0);
        const void* img = xp + size_t(nb * H * W * V + c0) * elem;
        const int64_t first = (nb * V + c0) * OH * OW;  // channel (nb / CB) * C + (nb % CB) * V + c0's plane
        int64_t* id = ip == nullptr ? nullptr : ip + first;
        if (w == 16 && avx512) {
          auto group = b.bf16 ? (id != nullptr ? &max_pool2d_group16_avx512<true, true>
                                               : &max_pool2d_group16_avx512<true, false>)
                              : (id != nullptr ? &max_pool2d_group16_avx512<false, true>
                                               : &max_pool2d_group16_avx512<false, false>);
          group(img, V, H, W, OH, OW, p, op + first, id, row_best.data(), row_at.data());
        }
        else if (b.bf16)
          max_pool2d_group(static_cast<const uint16_t*>(img), V, H, W, OH, OW, p, w, op + first, id,
                           row_best.data(), row_at.data());
        else
          max_pool2d_group(static_cast<const float*>(img), V, H, W, OH, OW, p, w, op + first, id,
                           row_best.data(), row_at.data());
      }
  }
  return true;
}

void max_pool2d_forward_planes(const Tensor& x, const Pool2dParams& p, const Tensor& out,
                               const Tensor& indices) {
  if (max_pool2d_held(x, p, out, indices)) return;
  if (indices.defined() && max_pool2d_train_held(x, p, out, indices.data_ptr<int64_t>())) return;
  const bool avx512 = have_avx512();
  // Indices in 32 bits in the vector kernel: planes up to 2^30 elements.
  const bool vector_planes = avx512 && x.size(2) * x.size(3) < (int64_t(1) << 30);
  dispatch_floating(x.dtype(), "max_pool2d", [&]<class T>() {
    const int64_t NC = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
    const int64_t OH = out.size(2), OW = out.size(3);
    const T* xp = x.data_ptr<T>();
    T* op = out.data_ptr<T>();
    int64_t* ip = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;
#pragma omp parallel for schedule(static) if (NC * OH * OW > 4096)
    for (int64_t nc = 0; nc < NC; ++nc) {
      const T* plane = xp + nc * H * W;
      T* o = op + nc * OH * OW;
      int64_t* id = ip == nullptr ? nullptr : ip + nc * OH * OW;
      if (window_2x2(p) && 2 * OH <= H && 2 * OW <= W) {
        max_pool2d_2x2_plane(plane, W, OH, OW, o, id);
        continue;
      }
      if constexpr (std::is_same_v<T, float>) {
        if (vector_planes) {
          max_pool2d_plane_f32_avx512(plane, H, W, OH, OW, p, o, id);
          continue;
        }
      }
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t h0 = std::max<int64_t>(oh * p.stride_h - p.pad_h, 0);
        const int64_t h1 = std::min<int64_t>(oh * p.stride_h - p.pad_h + p.kernel_h, H);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t w0 = std::max<int64_t>(ow * p.stride_w - p.pad_w, 0);
          const int64_t w1 = std::min<int64_t>(ow * p.stride_w - p.pad_w + p.kernel_w, W);
          max_pool2d_window(plane, W, h0, h1, w0, w1, o + oh * OW + ow, id == nullptr ? nullptr : id + oh * OW + ow);
        }
      }
    }
  });
}

void max_pool2d_backward_planes(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_x) {
  dispatch_floating(grad_x.dtype(), "max_pool2d_backward", [&]<class T>() {
    const int64_t NC = grad_x.size(0) * grad_x.size(1), HW = grad_x.size(2) * grad_x.size(3);
    const int64_t OHW = grad_out.size(2) * grad_out.size(3);
    const T* gp = grad_out.data_ptr<T>();
    const int64_t* ip = indices.data_ptr<int64_t>();
    T* xp = grad_x.data_ptr<T>();
    // Planes are disjoint, so each thread zeroes and scatters into its own planes.
#pragma omp parallel for schedule(static) if (NC * HW > 4096)
    for (int64_t nc = 0; nc < NC; ++nc) {
      T* gx = xp + nc * HW;
      std::fill(gx, gx + HW, T(0));
      const T* g = gp + nc * OHW;
      const int64_t* id = ip + nc * OHW;
      for (int64_t k = 0; k < OHW; ++k) gx[id[k]] += g[k];
    }
  });
}

}  // namespace

// Training's 2x2 / stride-2 pooling of a held activation, values only: the backward finds the
// maxima again from the input (pool_grad.h), so the forward writes no indices.
bool max_pool2d_forward_keep_input(const Tensor& x, const Pool2dParams& p, const Tensor& out) {
  if (!window_2x2(p) || x.dim() != 4 || 2 * out.size(2) > x.size(2) || 2 * out.size(3) > x.size(3)) return false;
  return max_pool2d_train_held(x, p, out, nullptr);
}

void register_nn_pool_kernels() {
  kernels::max_pool2d_forward.set(DeviceType::CPU, &max_pool2d_forward_planes);
  kernels::max_pool2d_backward.set(DeviceType::CPU, &max_pool2d_backward_planes);
  kernels::max_pool2d_forward_keep_input.set(DeviceType::CPU, &max_pool2d_forward_keep_input);
  kernels::max_pool2d_backward_from_input.set(DeviceType::CPU, &max_pool2d_backward_from_input);
  kernels::avg_pool2d_forward.set(DeviceType::CPU, &reference::avg_pool2d_forward);
  kernels::avg_pool2d_backward.set(DeviceType::CPU, &reference::avg_pool2d_backward);
  kernels::adaptive_avg_pool2d_forward.set(DeviceType::CPU, &reference::adaptive_avg_pool2d_forward);
  kernels::adaptive_avg_pool2d_backward.set(DeviceType::CPU, &reference::adaptive_avg_pool2d_backward);
}

}  // namespace ember::cpu
