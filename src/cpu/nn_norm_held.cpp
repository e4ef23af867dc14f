// Batch norm on activations held channel-blocked (dnnl_form.h's ChannelBlocked: NHWC or nChw16c,
// float32 or bfloat16), issue 24's layouts that persist in training. A bf16 activation (a
// convolution's output under autocast) is read widened (exact) and the output written in bf16,
// rounded to nearest even -- the plain kernels' value rounded, as PyTorch's autocast stores a
// batch norm's output; with a residual the output is float32, the sum of the rounded value and
// the residual (what the unfused batch norm and add make). Gradients are float32 either way. A convolution in training leaves its
// output in the layout its primitive wrote (nn_conv_dnnl.cpp); the batch norm that follows reads it
// there and writes its own output (and, backward, the input gradient) in the same layout, so the
// next convolution takes it without a transposition. Before, each convolution's output went
// NHWC -> NCHW and each input NCHW -> NHWC: 10% of resnet18's bf16 training step at 224 px on the
// Zen 5 (perf, 2026-12-03), 23% of mobilenet_v2's.
//
// Values. Per element the same expressions as nn_norm.cpp's row loops: (x - m) * scale + shift, the
// activation's mask from that value, (g' - mean_g) * k1 - (x - m) * k3 -- so with the same
// statistics the outputs are the plain kernels' bit for bit. The statistics and the gradient sums
// are the same sums in another order: float within a chunk of at most kChunk pixels of one image,
// vectorised across the channels, double across chunks, merged in a fixed chunk order (so the
// result does not depend on the thread count, as the plain kernels' does not). They differ from
// the plain kernels' in the last bits.
//
// Each function returns false, with nothing written, where x is not held in such a layout; the
// caller then runs the plain kernel, which settles them (data()). A residual or a gradient in
// another layout (or plain) is reordered into x's (data_in_layout): one pass over it, where reading
// x plain would cost a pass over x and leave the output plain for the next convolution to convert.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <type_traits>
#include <cstdint>
#include <vector>

#include "cpu/bf16_avx512.h"
#include "cpu/dnnl_form.h"
#include "core/isa.h"
#include "cpu/loops.h"
#include "cpu/nn_norm.h"
#include "kernels/activation_math.h"

namespace ember::cpu {

namespace {

constexpr int64_t kChunk = 256;  // pixels summed in float before the sums move to double

using kernels::ConvEpilogue;

struct Chunks {
  int64_t N, CB, S, V, K;  // K chunks per image of V channels
  explicit Chunks(const ChannelBlocked& b)
      : N(b.N), CB(b.C / b.V), S(b.S), V(b.V), K((b.S + kChunk - 1) / kChunk) {}
  int64_t count() const { return N * CB * K; }
  // Chunk j: its first element's offset, its pixel count, and the first channel of its block.
  int64_t offset(int64_t j) const { return ((j / K) * S + (j % K) * kChunk) * V; }
  int64_t pixels(int64_t j) const { return std::min(kChunk, S - (j % K) * kChunk); }
  int64_t channel0(int64_t j) const { return ((j / K) % CB) * V; }
};

bool threads_pay(int64_t elements) {
  return elements >= kParallelGrain && omp_get_max_threads() > 1 && !omp_in_parallel();
}

// Loads and stores of an element held at float32 or bfloat16 (uint16_t: the upper half of the
// float, widened exactly; narrowed to nearest even as ember/core/dtype.h's float_to_bf16, NaN kept
// quiet), written so that the loops below stay vectorised.
inline float ld(const float* p, int64_t i) { return p[i]; }
inline float ld(const uint16_t* p, int64_t i) { return std::bit_cast<float>(uint32_t(p[i]) << 16); }
inline void st(float* p, int64_t i, float f) { p[i] = f; }
inline void st(uint16_t* p, int64_t i, float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  p[i] = uint16_t((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : rounded);
}

// The batch norm's value y as the unfused op leaves it before a residual add: rounded to bf16 for a
// bf16 activation (its output is bf16), as it is for a float32 one.
inline float as_stored(const float*, float y) { return y; }
inline float as_stored(const uint16_t*, float y) {
  uint16_t h;
  st(&h, 0, y);
  return ld(&h, 0);
}

template <ConvEpilogue kAct>
inline float act_value(float t) {
  if constexpr (kAct == ConvEpilogue::Relu6) return activation_math::relu6(t);
  else if constexpr (kAct == ConvEpilogue::Relu) return t > 0.f ? t : 0.f;
  else return t;
}
template <ConvEpilogue kAct>
inline float act_masked(float g, float t) {
  if constexpr (kAct == ConvEpilogue::Relu6) return t > 0.f && t < 6.f ? g : 0.f;
  else if constexpr (kAct == ConvEpilogue::Relu) return t > 0.f ? g : 0.f;
  else return g;
}

// ---- per-chunk loops -------------------------------------------------------------------------
// A chunk is `len` pixels of one image, each pixel V contiguous channels (stride V). The loops run
// per group of 16 channels (one AVX-512 register; the last group of an NHWC layout may be
// narrower), the pixel loop inner, so that a group's accumulators and per-channel constants stay in
// registers: with the V channels of a pixel inner (V a runtime count) GCC kept the sums in memory,
// and the statistics pass took twice the plain kernel's time (bncnn48_fc128 bf16, perf, Zen 5).
// Sums alternate between two accumulators by pixel parity (a fixed order: the same bits whatever
// the threads).

template <class Group>
inline void by_groups(int64_t V, Group&& group) {
  for (int64_t c0 = 0; c0 < V; c0 += 16) group(c0, std::min<int64_t>(16, V - c0));
}

// Per channel of the group: mean and M2 (sum of squared deviations), the deviations taken from the
// chunk's own float mean as nn_norm.cpp's blocks take them.
template <bool kFull, class XT>
__attribute__((target_clones("avx512f", "avx2", "default")))
void group_moments(const XT* x, int64_t stride, int64_t len, int wr, double* mean, double* m2) {
  const int w = kFull ? 16 : wr;
  float a0[16] = {}, a1[16] = {};
  int64_t p = 0;
  for (; p + 1 < len; p += 2) {
    const XT *r0 = x + p * stride, *r1 = r0 + stride;
#pragma omp simd
    for (int v = 0; v < w; ++v) {
      a0[v] += ld(r0, v);
      a1[v] += ld(r1, v);
    }
  }
  if (p < len)
    for (int v = 0; v < w; ++v) a0[v] += ld(x, p * stride + v);
  float sh[16];
  for (int v = 0; v < w; ++v) sh[v] = (a0[v] + a1[v]) / float(len);  // the shift
  float d0[16] = {}, d1[16] = {}, q0[16] = {}, q1[16] = {};
  for (p = 0; p + 1 < len; p += 2) {
    const XT *r0 = x + p * stride, *r1 = r0 + stride;
#pragma omp simd
    for (int v = 0; v < w; ++v) {
      const float e0 = ld(r0, v) - sh[v], e1 = ld(r1, v) - sh[v];
      d0[v] += e0;
      q0[v] += e0 * e0;
      d1[v] += e1;
      q1[v] += e1 * e1;
    }
  }
  if (p < len)
    for (int v = 0; v < w; ++v) {
      const float e = ld(x, p * stride + v) - sh[v];
      d0[v] += e;
      q0[v] += e * e;
    }
  const double dl = double(len);
  for (int v = 0; v < w; ++v) {
    const double sd = double(d0[v] + d1[v]);
    mean[v] = double(sh[v]) + sd / dl;
    m2[v] = std::max(0.0, double(q0[v] + q1[v]) - sd * sd / dl);
  }
}

template <class XT>
void chunk_moments(const XT* x, int64_t len, int64_t V, double* mean, double* m2) {
  by_groups(V, [&](int64_t c0, int64_t w) {
    if (w == 16) group_moments<true>(x + c0, V, len, 16, mean + c0, m2 + c0);
    else group_moments<false>(x + c0, V, len, int(w), mean + c0, m2 + c0);
  });
}

// out = act((x - m) * scale + shift [+ r]) for the group's channels.
// Without a residual out is in x's dtype: a bf16 activation's batch norm writes bf16 for the
// convolution after it. With one, out is float32, act(y + r) with y as the unfused batch norm
// stores it (bf16-rounded for a bf16 x) and the sum in float32, as the unfused add makes it.
template <bool kResidual, class XT>
using AffineOut = std::conditional_t<kResidual, float, XT>;
template <ConvEpilogue kAct, bool kResidual, bool kFull, class XT, class RT>
__attribute__((target_clones("avx512f", "avx2", "default")))
void group_affine(const XT* x, const RT* r, int64_t stride, int64_t len, int wr, const float* mp,
                  const float* sp, const float* bp, AffineOut<kResidual, XT>* out) {
  const int w = kFull ? 16 : wr;
  float m[16], scale[16], shift[16];
  for (int v = 0; v < w; ++v) {
    m[v] = mp[v];
    scale[v] = sp[v];
    shift[v] = bp[v];
  }
  for (int64_t p = 0; p < len; ++p) {
    const XT* xr = x + p * stride;
    auto* o = out + p * stride;
    if constexpr (kResidual) {
      const RT* rr = r + p * stride;
#pragma omp simd
      for (int v = 0; v < w; ++v) {
        const float y = as_stored(xr, (ld(xr, v) - m[v]) * scale[v] + shift[v]);
        st(o, v, act_value<kAct>(y + ld(rr, v)));
      }
    } else {
#pragma omp simd
      for (int v = 0; v < w; ++v) st(o, v, act_value<kAct>((ld(xr, v) - m[v]) * scale[v] + shift[v]));
    }
  }
}

// group_affine for a whole group of a bf16 activation without a residual (bf16 in, bf16 out) in
// AVX-512 intrinsics: GCC vectorised the loop above with 256-bit halves and an emulated unsigned
// compare for the rounding, and the held bf16 forward took more time than the float32 kernel it
// replaced (725 against 565 perf samples, resnet18 at 224 px, Zen 5). The same arithmetic (x - m,
// * scale, + shift as separate roundings: the library builds with -ffp-contract=off; the
// activation's selects with its NaN rule) and convert_bf16's rounding, so the same bits.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
template <ConvEpilogue kAct>
__attribute__((target("avx512f"))) void group_affine_bf16_avx512(const uint16_t* x, int64_t stride, int64_t len,
                                                                 const float* mp, const float* sp, const float* bp,
                                                                 uint16_t* out) {
  const __m512 m = _mm512_loadu_ps(mp), scale = _mm512_loadu_ps(sp), shift = _mm512_loadu_ps(bp);
  const __m512 zero = _mm512_setzero_ps(), six = _mm512_set1_ps(6.f);
  for (int64_t p = 0; p < len; ++p) {
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + p * stride)));
    __m512 t = _mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_castsi512_ps(_mm512_slli_epi32(h, 16)), m), scale), shift);
    if constexpr (kAct == ConvEpilogue::Relu) {
      t = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(t, zero, _CMP_GT_OQ), t);  // t > 0 ? t : 0 (NaN: 0)
    } else if constexpr (kAct == ConvEpilogue::Relu6) {  // activation_math::relu6 (NaN kept)
      t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(t, zero, _CMP_LT_OQ), zero);
      t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(t, six, _CMP_GT_OQ), six);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + p * stride), f32x16_to_bf16(_mm512_castps_si512(t)));
  }
}
#pragma GCC diagnostic pop

template <ConvEpilogue kAct, bool kResidual, class XT, class RT>
void chunk_affine(const XT* x, const RT* r, int64_t len, int64_t V, const float* m, const float* scale,
                  const float* shift, AffineOut<kResidual, XT>* out) {
  by_groups(V, [&](int64_t c0, int64_t w) {
    const RT* rc = kResidual ? r + c0 : nullptr;
    if constexpr (!kResidual && std::is_same_v<XT, uint16_t>) {
      if (w == 16 && have_avx512())
        return group_affine_bf16_avx512<kAct>(x + c0, V, len, m + c0, scale + c0, shift + c0, out + c0);
    }
    if (w == 16)
      group_affine<kAct, kResidual, true>(x + c0, rc, V, len, 16, m + c0, scale + c0, shift + c0, out + c0);
    else
      group_affine<kAct, kResidual, false>(x + c0, rc, V, len, int(w), m + c0, scale + c0, shift + c0, out + c0);
  });
}

// sum(g'), sum(g' * (x - m)) per channel of the group into s and q, g' the gradient the batch norm
// sees (g masked by the activation at t); with a residual g' is also written to gr (the residual's
// gradient).
template <ConvEpilogue kAct, bool kResidual, bool kFull, class XT, class RT>
__attribute__((target_clones("avx512f", "avx2", "default")))
void group_grad_sums(const float* g, const XT* x, const RT* r, int64_t stride, int64_t len, int wr,
                     const float* mp, const float* sp, const float* bp, float* gr, float* s, float* q) {
  const int w = kFull ? 16 : wr;
  float m[16], scale[16], shift[16];
  for (int v = 0; v < w; ++v) {
    m[v] = mp[v];
    scale[v] = sp[v];
    shift[v] = bp[v];
  }
  float s0[16] = {}, s1[16] = {}, q0[16] = {}, q1[16] = {};
  auto pixel = [&](int64_t p, float* sa, float* qa) {
    const float* gp = g + p * stride;
    const XT* xp = x + p * stride;
    if constexpr (kResidual) {
      const RT* rp = r + p * stride;
      float* grp = gr + p * stride;
#pragma omp simd
      for (int v = 0; v < w; ++v) {
        const float xm = ld(xp, v) - m[v];
        const float y = as_stored(xp, xm * scale[v] + shift[v]);
        const float gm = act_masked<kAct>(gp[v], y + ld(rp, v));
        grp[v] = gm;
        sa[v] += gm;
        qa[v] += gm * xm;
      }
    } else {
#pragma omp simd
      for (int v = 0; v < w; ++v) {
        const float xm = ld(xp, v) - m[v];
        const float gm = act_masked<kAct>(gp[v], xm * scale[v] + shift[v]);
        sa[v] += gm;
        qa[v] += gm * xm;
      }
    }
  };
  int64_t p = 0;
  for (; p + 1 < len; p += 2) {
    pixel(p, s0, q0);
    pixel(p + 1, s1, q1);
  }
  if (p < len) pixel(p, s0, q0);
  for (int v = 0; v < w; ++v) {
    s[v] = s0[v] + s1[v];
    q[v] = q0[v] + q1[v];
  }
}

template <ConvEpilogue kAct, bool kResidual, class XT, class RT>
void chunk_grad_sums(const float* g, const XT* x, const RT* r, int64_t len, int64_t V, const float* m,
                     const float* scale, const float* shift, float* gr, float* s, float* q) {
  by_groups(V, [&](int64_t c0, int64_t w) {
    const RT* rc = kResidual ? r + c0 : nullptr;
    float* grc = kResidual ? gr + c0 : nullptr;
    if (w == 16)
      group_grad_sums<kAct, kResidual, true>(g + c0, x + c0, rc, V, len, 16, m + c0, scale + c0, shift + c0, grc,
                                             s + c0, q + c0);
    else
      group_grad_sums<kAct, kResidual, false>(g + c0, x + c0, rc, V, len, int(w), m + c0, scale + c0, shift + c0,
                                              grc, s + c0, q + c0);
  });
}

// The input gradient: training (g' - mean_g) * k1 - (x - m) * k3, eval g' * k1; g' recomputed from
// g, or (the residual case, kAct None) read back from gr.
template <ConvEpilogue kAct, bool kTraining, bool kFull, class XT>
__attribute__((target_clones("avx512f", "avx2", "default")))
void group_grad_input(const float* g, const XT* x, int64_t stride, int64_t len, int wr, const float* mp,
                      const float* sp, const float* bp, const float* gp_mean, const float* k1p, const float* k3p,
                      float* gx) {
  const int w = kFull ? 16 : wr;
  float m[16], scale[16], shift[16], mean_g[16], k1[16], k3[16];
  for (int v = 0; v < w; ++v) {
    m[v] = mp[v];
    scale[v] = sp[v];
    shift[v] = bp[v];
    mean_g[v] = gp_mean[v];
    k1[v] = k1p[v];
    k3[v] = k3p[v];
  }
  for (int64_t p = 0; p < len; ++p) {
    const float* gp = g + p * stride;
    const XT* xp = x + p * stride;
    float* o = gx + p * stride;
#pragma omp simd
    for (int v = 0; v < w; ++v) {
      const float xm = ld(xp, v) - m[v];
      const float gm = act_masked<kAct>(gp[v], xm * scale[v] + shift[v]);
      if constexpr (kTraining) o[v] = (gm - mean_g[v]) * k1[v] - xm * k3[v];
      else o[v] = gm * k1[v];
    }
  }
}

template <ConvEpilogue kAct, bool kTraining, class XT>
void chunk_grad_input(const float* g, const XT* x, int64_t len, int64_t V, const float* m, const float* scale,
                      const float* shift, const float* mean_g, const float* k1, const float* k3, float* gx) {
  by_groups(V, [&](int64_t c0, int64_t w) {
    if (w == 16)
      group_grad_input<kAct, kTraining, true>(g + c0, x + c0, V, len, 16, m + c0, scale + c0, shift + c0,
                                              mean_g + c0, k1 + c0, k3 + c0, gx + c0);
    else
      group_grad_input<kAct, kTraining, false>(g + c0, x + c0, V, len, int(w), m + c0, scale + c0, shift + c0,
                                               mean_g + c0, k1 + c0, k3 + c0, gx + c0);
  });
}

// Per channel: m, scale = invstd * w and shift = b, as float (nn_norm.cpp's row loops take them so).
struct ChannelAffine {
  std::vector<float> m, scale, shift;
  ChannelAffine(const Tensor& mean, const Tensor& invstd, const Tensor& weight, const Tensor& bias, int64_t C)
      : m(C), scale(C), shift(C, 0.f) {
    const float *mp = mean.data_ptr<float>(), *ip = invstd.data_ptr<float>(), *wp = weight.data_ptr<float>();
    const float* bp = bias.defined() ? bias.data_ptr<float>() : nullptr;
    for (int64_t c = 0; c < C; ++c) {
      m[c] = mp[c];
      scale[c] = float(double(ip[c]) * double(wp[c]));
      if (bp) shift[c] = bp[c];
    }
  }
};

template <ConvEpilogue kAct, bool kResidual, class XT, class RT>
void forward_chunks(const Chunks& ch, const XT* x, const RT* r, const ChannelAffine& a,
                    AffineOut<kResidual, XT>* out) {
#pragma omp parallel for schedule(static) if (threads_pay(ch.count() * kChunk * ch.V))
  for (int64_t j = 0; j < ch.count(); ++j) {
    const int64_t o = ch.offset(j), c0 = ch.channel0(j);
    chunk_affine<kAct, kResidual>(x + o, kResidual ? r + o : nullptr, ch.pixels(j), ch.V, a.m.data() + c0,
                                  a.scale.data() + c0, a.shift.data() + c0, out + o);
  }
}

// x and a residual r (null: none) in their dtypes, float32 or bfloat16 (uint16_t); out in x's
// without a residual, float32 with one (group_affine).
template <ConvEpilogue kAct, class XT>
void forward_act(const Chunks& ch, const XT* x, const void* r, bool r_bf16, const ChannelAffine& a, void* out) {
  if (r == nullptr) forward_chunks<kAct, false>(ch, x, static_cast<const float*>(nullptr), a, static_cast<XT*>(out));
  else if (r_bf16) forward_chunks<kAct, true>(ch, x, static_cast<const uint16_t*>(r), a, static_cast<float*>(out));
  else forward_chunks<kAct, true>(ch, x, static_cast<const float*>(r), a, static_cast<float*>(out));
}

template <ConvEpilogue kAct, class XT, class RT>
void backward_act(const Chunks& ch, int64_t C, const float* g, const XT* x, const RT* r, const ChannelAffine& a,
                  const Tensor& invstd, const Tensor& weight, bool training, float* gx, float* gr, float* gwp,
                  float* gbp) {
  const int64_t V = ch.V, J = ch.count();
  std::vector<double> cs(static_cast<size_t>(J * V)), cq(static_cast<size_t>(J * V));
  // Pass 1: per chunk and channel, the two sums (and g' into gr with a residual).
#pragma omp parallel if (threads_pay(J * kChunk * V))
  {
    std::vector<float> s(static_cast<size_t>(V)), q(static_cast<size_t>(V));
#pragma omp for schedule(static)
    for (int64_t j = 0; j < J; ++j) {
      const int64_t o = ch.offset(j), c0 = ch.channel0(j);
      if (r)
        chunk_grad_sums<kAct, true>(g + o, x + o, r + o, ch.pixels(j), V, a.m.data() + c0, a.scale.data() + c0,
                                    a.shift.data() + c0, gr + o, s.data(), q.data());
      else
        chunk_grad_sums<kAct, false>(g + o, x + o, static_cast<const RT*>(nullptr), ch.pixels(j), V, a.m.data() + c0,
                                     a.scale.data() + c0, a.shift.data() + c0, nullptr, s.data(), q.data());
      for (int64_t v = 0; v < V; ++v) {
        cs[size_t(j * V + v)] = double(s[size_t(v)]);
        cq[size_t(j * V + v)] = double(q[size_t(v)]);
      }
    }
  }
  // Per channel, the chunks' sums in a fixed order (image, then chunk).
  const double M = double(ch.N * ch.S);
  const float *ip = invstd.data_ptr<float>(), *wp = weight.data_ptr<float>();
  std::vector<float> mean_g(static_cast<size_t>(C)), k1(static_cast<size_t>(C)), k3(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    const int64_t cb = c / V, v = c % V;
    double sum_g = 0.0, sum_gxm = 0.0;
    for (int64_t n = 0; n < ch.N; ++n)
      for (int64_t k = 0; k < ch.K; ++k) {
        const int64_t j = (n * ch.CB + cb) * ch.K + k;
        sum_g += cs[size_t(j * V + v)];
        sum_gxm += cq[size_t(j * V + v)];
      }
    const double is = double(ip[c]), w = double(wp[c]);
    k1[size_t(c)] = float(w * is);
    mean_g[size_t(c)] = float(sum_g / M);
    k3[size_t(c)] = float(w * is * is * is * sum_gxm / M);
    gwp[c] = float(is * sum_gxm);
    gbp[c] = float(sum_g);
  }
  // Pass 2: the input gradient; with a residual from g' (gr), unmasked.
#pragma omp parallel for schedule(static) if (threads_pay(J * kChunk * V))
  for (int64_t j = 0; j < J; ++j) {
    const int64_t o = ch.offset(j), c0 = ch.channel0(j), len = ch.pixels(j);
    const float *pm = a.m.data() + c0, *ps = a.scale.data() + c0, *pb = a.shift.data() + c0;
    const float *pg = mean_g.data() + c0, *p1 = k1.data() + c0, *p3 = k3.data() + c0;
    if (r) {
      if (training) chunk_grad_input<ConvEpilogue::None, true>(gr + o, x + o, len, V, pm, ps, pb, pg, p1, p3, gx + o);
      else chunk_grad_input<ConvEpilogue::None, false>(gr + o, x + o, len, V, pm, ps, pb, pg, p1, p3, gx + o);
    } else if (training) {
      chunk_grad_input<kAct, true>(g + o, x + o, len, V, pm, ps, pb, pg, p1, p3, gx + o);
    } else {
      chunk_grad_input<kAct, false>(g + o, x + o, len, V, pm, ps, pb, pg, p1, p3, gx + o);
    }
  }
}

// Calls f(x) with b's array as const float* or const uint16_t* (bfloat16).
template <class F>
void with_x(const ChannelBlocked& b, F&& f) {
  if (b.bf16) f(static_cast<const uint16_t*>(b.raw()));
  else f(static_cast<const float*>(b.raw()));
}

}  // namespace

bool batch_norm_stats_held(const Tensor& x, const Tensor& mean, const Tensor& var) {
  const ChannelBlocked b = channel_blocked(x);
  if (b.form == nullptr) return false;
  const Chunks ch(b);
  const int64_t V = ch.V, J = ch.count();
  std::vector<double> cm(static_cast<size_t>(J * V)), c2(static_cast<size_t>(J * V));
  with_x(b, [&](const auto* xp) {
#pragma omp parallel if (threads_pay(J * kChunk * V))
    {
#pragma omp for schedule(static)
      for (int64_t j = 0; j < J; ++j)
        chunk_moments(xp + ch.offset(j), ch.pixels(j), V, cm.data() + j * V, c2.data() + j * V);
    }
  });
  float *mp = mean.data_ptr<float>(), *vp = var.data_ptr<float>();
  for (int64_t c = 0; c < b.C; ++c) {
    const int64_t cb = c / V, v = c % V;
    Moments mo;
    for (int64_t n = 0; n < ch.N; ++n)
      for (int64_t k = 0; k < ch.K; ++k) {
        const int64_t j = (n * ch.CB + cb) * ch.K + k;
        mo.merge(double(ch.pixels(j)), cm[size_t(j * V + v)], c2[size_t(j * V + v)]);
      }
    mp[c] = float(mo.mean);
    vp[c] = float(mo.m2 / mo.count);
  }
  return true;
}

bool batch_norm_forward_held(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                             const Tensor& bias, const Tensor& residual, ConvEpilogue act, const Tensor& out) {
  if (act != ConvEpilogue::None && act != ConvEpilogue::Relu && act != ConvEpilogue::Relu6) return false;
  const ChannelBlocked b = channel_blocked(x);
  if (b.form == nullptr || !can_hold(out, b)) return false;
  // A residual in another layout, or plain (the block after a pooling), is reordered into x's (at
  // float32); a bf16 one in x's layout (the block before's output) is read as it is.
  Storage r_scratch;
  bool r_bf16 = false;
  const void* r = residual.defined() ? operand_in_layout(residual, b, r_scratch, &r_bf16) : nullptr;
  if (residual.defined() && r == nullptr) return false;
  const ChannelAffine a(mean, invstd, weight, bias, b.C);
  // x's layout; bf16 in, bf16 out -- but float32 with a residual (group_affine).
  const dnnl::memory::desc od = b.bf16 && r != nullptr ? b.f32_desc() : b.form->desc();
  Storage buffer = std::make_shared<StorageImpl>(od.get_size(), Device::cpu());
  const Chunks ch(b);
  with_x(b, [&](const auto* xp) {
    void* o = buffer->data();
    switch (act) {
      case ConvEpilogue::Relu: forward_act<ConvEpilogue::Relu>(ch, xp, r, r_bf16, a, o); break;
      case ConvEpilogue::Relu6: forward_act<ConvEpilogue::Relu6>(ch, xp, r, r_bf16, a, o); break;
      default: forward_act<ConvEpilogue::None>(ch, xp, r, r_bf16, a, o); break;
    }
  });
  hold_array(out, od, std::move(buffer));
  return true;
}

bool batch_norm_backward_held(const Tensor& grad_out, const Tensor& x, const Tensor& residual, const Tensor& mean,
                              const Tensor& invstd, const Tensor& weight, const Tensor& bias, bool training,
                              ConvEpilogue act, const Tensor& grad_x, const Tensor& grad_weight,
                              const Tensor& grad_bias, const Tensor& grad_residual) {
  if (act != ConvEpilogue::None && act != ConvEpilogue::Relu && act != ConvEpilogue::Relu6) return false;
  const ChannelBlocked b = channel_blocked(x);
  if (b.form == nullptr || !can_hold(grad_x, b) || (residual.defined() && !can_hold(grad_residual, b))) return false;
  // grad_out or the residual in another layout or plain (the gradient from a pooling, or a sum of two
  // gradients in different layouts) is reordered into x's (float32): x, held, is not read plain. The
  // gradients are float32 whatever x's dtype.
  Storage g_scratch, r_scratch;
  bool r_bf16 = false;
  const float* g = data_in_layout(grad_out, b, g_scratch);
  const void* r = residual.defined() ? operand_in_layout(residual, b, r_scratch, &r_bf16) : nullptr;
  if (g == nullptr || (residual.defined() && r == nullptr)) return false;
  const ChannelAffine a(mean, invstd, weight, bias, b.C);
  const dnnl::memory::desc gd = b.f32_desc();
  Storage gx = std::make_shared<StorageImpl>(gd.get_size(), Device::cpu());
  Storage gr = residual.defined() ? std::make_shared<StorageImpl>(gd.get_size(), Device::cpu()) : Storage();
  const Chunks ch(b);
  float* gxp = static_cast<float*>(gx->data());
  float* grp = gr ? static_cast<float*>(gr->data()) : nullptr;
  float *gwp = grad_weight.data_ptr<float>(), *gbp = grad_bias.data_ptr<float>();
  with_x(b, [&](const auto* xp) {
    auto run = [&](const auto* rp) {
      switch (act) {
        case ConvEpilogue::Relu:
          backward_act<ConvEpilogue::Relu>(ch, b.C, g, xp, rp, a, invstd, weight, training, gxp, grp, gwp, gbp);
          break;
        case ConvEpilogue::Relu6:
          backward_act<ConvEpilogue::Relu6>(ch, b.C, g, xp, rp, a, invstd, weight, training, gxp, grp, gwp, gbp);
          break;
        default:
          backward_act<ConvEpilogue::None>(ch, b.C, g, xp, rp, a, invstd, weight, training, gxp, grp, gwp, gbp);
          break;
      }
    };
    if (r_bf16) run(static_cast<const uint16_t*>(r));
    else run(static_cast<const float*>(r));
  });
  hold_array(grad_x, gd, std::move(gx));
  if (gr) hold_array(grad_residual, gd, std::move(gr));
  return true;
}

}  // namespace ember::cpu
