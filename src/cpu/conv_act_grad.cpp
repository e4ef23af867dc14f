// The output gradient of a fused ReLU / ReLU6 convolution in training under autocast
// (kernels::conv_activation_grad_bf16), made in the one pass its bfloat16 backward primitives need.
//
// The convolution's output is held in bf16 in its primitive's layout (nChw16c on AVX512-BF16, NHWC
// on AMX; nn_conv_dnnl.cpp). Its backward masks grad_out by the activation (from that output) and
// hands the result to the backward-data and backward-weights primitives, which multiply it in
// bf16 in that same layout. Unfused that was up to four passes over the largest activation of a
// small CNN: the bf16 output settled to NCHW float32 for the plain ReLU mask (widening, then a
// transposition), the mask, and the float32 -> bf16 transposition back into the primitive's
// layout -- 12% of mnistnet's bf16 training step (perf, Zen 5, 2026-12-03), whose conv2 gradient
// arrives plain from the max pooling's backward. Here: grad_out read where it is (plain NCHW,
// transposed 16 channels x 16 pixels in registers, or held at float32 in the output's layout),
// the mask taken from the bf16 output as it is held, and the result rounded to bf16 (nearest even,
// NaN kept quiet, denormals kept: convert_bf16's rule, which the primitives' own conversion applies)
// and written in the output's layout.
//
// Values: the rounded values of the float32 mask -- what the primitives multiplied before, so the
// input and weight gradients are the same; the bias gradient oneDNN sums from the same bf16 values
// (nn_conv_dnnl.cpp: as PyTorch's autocast sums its bf16 output gradient). Not under
// ember::deterministic(), whose im2col weight gradient and separate bias sum read the float32 mask,
// nor for a depthwise convolution, whose input gradient multiplies the float32 one.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "cpu/avx512_transpose.h"
#include "cpu/bf16_avx512.h"
#include "cpu/dnnl_form.h"
#include "core/isa.h"
#include "cpu/nn_conv.h"
#include "cpu/pool_grad.h"
#include "ember/core/dtype.h"
#include "ember/core/settings.h"
#include "ember/core/storage.h"

namespace ember::cpu {

namespace {

using kernels::ConvEpilogue;

template <ConvEpilogue kAct>
inline bool passes(float o) {
  if constexpr (kAct == ConvEpilogue::Relu6) return o > 0.f && o < 6.f;
  else return o > 0.f;
}

// One value: bf16(passes(o) ? g : 0), o the bf16 output.
template <ConvEpilogue kAct>
inline uint16_t masked(uint16_t o, float g) {
  return float_to_bf16(passes<kAct>(bf16_to_float(o)) ? g : 0.f);
}

// gx[i] = masked(o[i], g[i]) over a run of n values in one layout.
template <ConvEpilogue kAct>
void mask_run(const float* g, const uint16_t* o, uint16_t* gx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gx[i] = masked<kAct>(o[i], g[i]);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

template <ConvEpilogue kAct>
__attribute__((target("avx512f"), always_inline)) inline __mmask16 pass_mask(const uint16_t* o) {
  const __m512 v = _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(o))), 16));
  __mmask16 m = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ);  // NaN: not passed
  if constexpr (kAct == ConvEpilogue::Relu6) m &= _mm512_cmp_ps_mask(v, _mm512_set1_ps(6.f), _CMP_LT_OQ);
  return m;
}

template <ConvEpilogue kAct>
__attribute__((target("avx512f"), always_inline)) inline void store_masked(uint16_t* gx, const uint16_t* o, __m512 g) {
  const __m512 kept = _mm512_maskz_mov_ps(pass_mask<kAct>(o), g);  // +0 where masked, as the scalar 0.f
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(gx), f32x16_to_bf16(_mm512_castps_si512(kept)));
}

template <ConvEpilogue kAct>
__attribute__((target("avx512f"))) void mask_run_avx512(const float* g, const uint16_t* o, uint16_t* gx, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store_masked<kAct>(gx + i, o + i, _mm512_loadu_ps(g + i));
  mask_run<kAct>(g + i, o + i, gx + i, n - i);
}

// w <= 16 channels of one image from a plain NCHW gradient, pixels s0 .. S - 1: g points at the
// group's first plane (planes S apart), o and gx at its first pixel in the blocked array (pixels V
// apart). Without AVX-512, for an NHWC tail group, and the vector kernel's last pixels.
template <ConvEpilogue kAct>
void mask_group_from_planes(const float* g, int64_t S, const uint16_t* o, uint16_t* gx, int64_t V, int64_t w,
                            int64_t s0 = 0) {
  for (int64_t s = s0; s < S; ++s)
    for (int64_t v = 0; v < w; ++v)
      gx[s * V + v] = masked<kAct>(o[s * V + v], g[v * S + s]);
}

// The same for a whole group of 16 channels, 16 pixels at a time.
template <ConvEpilogue kAct>
__attribute__((target("avx512f"))) void mask_group_from_planes_avx512(const float* g, int64_t S, const uint16_t* o,
                                                                      uint16_t* gx, int64_t V) {
  int64_t s0 = 0;
  for (; s0 + 16 <= S; s0 += 16) {
    __m512 r[16];
    for (int v = 0; v < 16; ++v) r[v] = _mm512_loadu_ps(g + v * S + s0);
    transpose16(r);  // r[i]: pixel s0 + i, the group's 16 channels
    for (int i = 0; i < 16; ++i) store_masked<kAct>(gx + (s0 + i) * V, o + (s0 + i) * V, r[i]);
  }
  mask_group_from_planes<kAct>(g, S, o, gx, V, 16, s0);
}

#pragma GCC diagnostic pop

template <ConvEpilogue kAct>
void run(const ChannelBlocked& ob, const float* held_g, const float* plain_g, uint16_t* gx) {
  const auto* o = static_cast<const uint16_t*>(ob.raw());
  const int64_t N = ob.N, C = ob.C, S = ob.S, V = ob.V, CB = C / V, total = N * C * S;
  const bool avx512 = have_avx512();
  if (held_g != nullptr) {  // grad_out already in the output's layout at float32: one streaming pass
    for_chunks(total, [&](int64_t b, int64_t e) {
      avx512 ? mask_run_avx512<kAct>(held_g + b, o + b, gx + b, e - b) : mask_run<kAct>(held_g + b, o + b, gx + b, e - b);
    });
    return;
  }
  // Plain NCHW: per image, per block of V channels, per group of 16 of them.
  const int64_t G = (V + 15) / 16;
#pragma omp parallel for schedule(static) collapse(2) if (total > 32768)
  for (int64_t nb = 0; nb < N * CB; ++nb)
    for (int64_t q = 0; q < G; ++q) {
      const int64_t n = nb / CB, c0 = (nb % CB) * V + q * 16, w = std::min<int64_t>(16, V - q * 16);
      const float* gp = plain_g + (n * C + c0) * S;
      const int64_t at = nb * S * V + q * 16;  // the group's first pixel in the blocked array
      if (w == 16 && avx512) mask_group_from_planes_avx512<kAct>(gp, S, o + at, gx + at, V);
      else mask_group_from_planes<kAct>(gp, S, o + at, gx + at, V, w);
    }
}

bool conv_activation_grad_bf16(ConvEpilogue act, const Tensor& grad_out, const Tensor& out,
                               const kernels::Conv2dParams& p, const Tensor& grad_x) {
  if ((act != ConvEpilogue::Relu && act != ConvEpilogue::Relu6) || deterministic() || !forms_enabled()) return false;
  // A depthwise convolution's input gradient runs the float32 primitive on the float32 gradient
  // (nn_conv_dnnl.cpp); with groups == C_out it may be one.
  if (p.compute != DType::BFloat16 || (p.groups > 1 && p.groups == out.size(1))) return false;
  const ChannelBlocked ob = channel_blocked(out);
  if (ob.form == nullptr || !ob.bf16 || out.dim() != 4 || !can_hold(grad_x, ob)) return false;
  if (grad_out.dtype() != DType::Float32 || grad_out.sizes() != out.sizes() || !grad_out.is_contiguous()) return false;
  // grad_out: a 2x2 max pooling's gradient over this very output (mnistnet's conv2, LeNet-5's two
  // convolutions), never written: made here, masked and rounded, from the pooled gradient and the
  // maxima found again in the output (pool_grad.h).
  if (const PooledGradForm* pf = pooled_grad_form(grad_out); pf != nullptr && pf->pooled(out)) {
    Storage buffer = std::make_shared<StorageImpl>(ob.form->desc().get_size(), Device::cpu());
    const auto kind = act == ConvEpilogue::Relu ? PooledGradOut::Bf16Relu : PooledGradOut::Bf16Relu6;
    if (write_pooled_grad(*pf, kind, buffer->data())) {
      hold_array(grad_x, ob.form->desc(), std::move(buffer));
      return true;
    }
  }
  // grad_out: held at float32 in the output's layout, read there; held otherwise, reordered into it
  // (one pass); plain, transposed on the fly.
  const float* held_g = nullptr;
  const float* plain_g = nullptr;
  Storage scratch;
  const ChannelBlocked gb = channel_blocked(grad_out);
  if (gb.form != nullptr && !gb.bf16 && gb.form->desc() == ob.f32_desc()) held_g = gb.data();
  else if (grad_out.storage()->form() == nullptr) plain_g = grad_out.data_ptr<float>();
  else held_g = data_in_layout(grad_out, ob, scratch);
  if (held_g == nullptr && plain_g == nullptr) return false;
  Storage buffer = std::make_shared<StorageImpl>(ob.form->desc().get_size(), Device::cpu());
  auto* gx = static_cast<uint16_t*>(buffer->data());
  if (act == ConvEpilogue::Relu) run<ConvEpilogue::Relu>(ob, held_g, plain_g, gx);
  else run<ConvEpilogue::Relu6>(ob, held_g, plain_g, gx);
  hold_array(grad_x, ob.form->desc(), std::move(buffer));
  return true;
}

}  // namespace

void register_conv_activation_grad_kernel() {
  kernels::conv_activation_grad_bf16.set(DeviceType::CPU, &conv_activation_grad_bf16);
}

}  // namespace ember::cpu
