// The input gradient of training's 2x2 / stride-2 max pooling over a held activation, written by
// whoever reads it, in the layout it wants (pool_grad.h).
#include "cpu/pool_grad.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>

#include "core/tensor_raw.h"
#include "cpu/avx512_transpose.h"
#include "cpu/bf16_avx512.h"
#include "cpu/dnnl_form.h"
#include "cpu/dnnl_util.h"
#include "core/isa.h"
#include "cpu/max_pool_rule.h"
#include "ember/core/dtype.h"

namespace ember::cpu {

namespace {

template <PooledGradOut kOut>
constexpr bool kBf16Out = kOut == PooledGradOut::Bf16Relu || kOut == PooledGradOut::Bf16Relu6;
template <PooledGradOut kOut>
using OutElem = std::conditional_t<kBf16Out<kOut>, uint16_t, float>;

// One tap's value: the window's gradient where the tap holds the window's maximum `best` (added to
// the zero fill, as the scatter did), masked by the activation at that maximum, in kOut's type.
template <PooledGradOut kOut>
inline OutElem<kOut> tap_value(bool at_max, float g, float best) {
  bool keep = at_max;
  if constexpr (kOut == PooledGradOut::F32Relu || kOut == PooledGradOut::Bf16Relu) keep = keep && best > 0.f;
  if constexpr (kOut == PooledGradOut::Bf16Relu6) keep = keep && best > 0.f && best < 6.f;
  const float v = keep ? 0.f + g : 0.f;
  if constexpr (kBf16Out<kOut>) return float_to_bf16(v);
  else return v;
}

// w lanes (channels) of the pooling's input: lane v's pixel s at x[s * xs + v * xl], its gradient
// out at d[s * ds + v * dl], its pooled gradient plane at g + v * OHW. The four taps of each window
// in row-major order with the forward's rule (max_pool_rule.h), so the forward's choice; the rows
// and columns no window covers get 0.
template <PooledGradOut kOut, class XT>
void lanes_scalar(const XT* x, int64_t xs, int64_t xl, int64_t w, const float* g, int64_t OHW, int64_t H, int64_t W,
                  int64_t OH, int64_t OW, OutElem<kOut>* d, int64_t ds, int64_t dl) {
  for (int64_t oh = 0; oh < OH; ++oh)
    for (int64_t ow = 0; ow < OW; ++ow) {
      const int64_t s0 = 2 * oh * W + 2 * ow;
      const int64_t taps[4] = {s0, s0 + 1, s0 + W, s0 + W + 1};
      for (int64_t v = 0; v < w; ++v) {
        float best = widen_elem(x[s0 * xs + v * xl]);
        int arg = 0;
        for (int k = 1; k < 4; ++k) {
          const float t = widen_elem(x[taps[k] * xs + v * xl]);
          if (max_pool_takes(t, best)) {
            best = t;
            arg = k;
          }
        }
        const float gv = g[v * OHW + oh * OW + ow];
        for (int k = 0; k < 4; ++k) d[taps[k] * ds + v * dl] = tap_value<kOut>(k == arg, gv, best);
      }
    }
  const OutElem<kOut> zero = tap_value<kOut>(false, 0.f, 0.f);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t c = h < 2 * OH ? 2 * OW : 0; c < W; ++c)
      for (int64_t v = 0; v < w; ++v) d[(h * W + c) * ds + v * dl] = zero;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

template <PooledGradOut kOut>
__attribute__((target("avx512f"), always_inline)) inline void store16(OutElem<kOut>* p, __m512 v) {
  if constexpr (kBf16Out<kOut>)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), f32x16_to_bf16(_mm512_castps_si512(v)));
  else
    _mm512_storeu_ps(p, v);
}

// A whole group of 16 channels held channel-blocked (pixels V elements apart in x, DV in d): 16
// outputs of a row at a time, their pooled gradients transposed from the 16 planes in registers.
template <bool kBf16In, PooledGradOut kOut>
__attribute__((target("avx512f"))) void group16_avx512(const void* xv, int64_t V, const float* g, int64_t OHW,
                                                       int64_t H, int64_t W, int64_t OH, int64_t OW,
                                                       OutElem<kOut>* d, int64_t DV) {
  using XT = std::conditional_t<kBf16In, uint16_t, float>;
  const XT* x = static_cast<const XT*>(xv);
  for (int64_t oh = 0; oh < OH; ++oh)
    for (int64_t ow0 = 0; ow0 < OW; ow0 += 16) {
      const int64_t n = std::min<int64_t>(16, OW - ow0);
      const __mmask16 m = __mmask16(n == 16 ? 0xFFFF : (1u << n) - 1);
      __m512 r[16];
      for (int v = 0; v < 16; ++v) r[v] = _mm512_maskz_loadu_ps(m, g + v * OHW + oh * OW + ow0);
      transpose16(r);  // r[i]: output ow0 + i's 16 channels
      for (int64_t i = 0; i < n; ++i) {
        const int64_t s0 = 2 * oh * W + 2 * (ow0 + i);
        const int64_t taps[4] = {s0, s0 + 1, s0 + W, s0 + W + 1};
        __m512 best = load16<kBf16In>(x + s0 * V);
        __mmask16 took[4] = {0, 0, 0, 0};
        for (int k = 1; k < 4; ++k) {
          const __m512 t = load16<kBf16In>(x + taps[k] * V);
          took[k] = take_mask(best, t);
          best = _mm512_mask_blend_ps(took[k], best, t);
        }
        // The tap each lane's maximum came from: the last one taken.
        __mmask16 at[4];
        at[3] = took[3];
        at[2] = took[2] & ~took[3];
        at[1] = took[1] & ~(took[2] | took[3]);
        at[0] = __mmask16(~(took[1] | took[2] | took[3]));
        __mmask16 pass = 0xFFFF;
        if constexpr (kOut != PooledGradOut::F32) pass = _mm512_cmp_ps_mask(best, _mm512_setzero_ps(), _CMP_GT_OQ);
        if constexpr (kOut == PooledGradOut::Bf16Relu6)
          pass &= _mm512_cmp_ps_mask(best, _mm512_set1_ps(6.f), _CMP_LT_OQ);
        const __m512 gv = _mm512_add_ps(_mm512_setzero_ps(), r[i]);  // 0 + g, as the scatter added it
        for (int k = 0; k < 4; ++k)
          store16<kOut>(d + taps[k] * DV, _mm512_maskz_mov_ps(__mmask16(at[k] & pass), gv));
      }
    }
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t h = 0; h < H; ++h)
    for (int64_t c = h < 2 * OH ? 2 * OW : 0; c < W; ++c) store16<kOut>(d + (h * W + c) * DV, zero);
}

#pragma GCC diagnostic pop

// The gradient into dst, channel-blocked as `layout` (NHWC or nChw16c, float32 or kOut's bf16):
// x's layout (undef), or the other one (a batch norm under the pooling whose input its convolution left
// in another layout). Each group of 16 channels is 16 contiguous lanes in both.
template <PooledGradOut kOut>
bool write_blocked(const PooledGradForm& f, void* dst, dnnl::memory::format_tag layout) {
  using tag = dnnl::memory::format_tag;
  const Tensor& x = f.input();
  const ChannelBlocked b = channel_blocked(x);
  if (b.form == nullptr || x.dim() != 4) return false;
  if (layout == tag::undef) layout = b.layout;
  const Tensor& go = f.grad_out();
  const int64_t N = b.N, C = b.C, V = b.V, CB = C / V, H = x.size(2), W = x.size(3), S = H * W;
  if ((layout != tag::nhwc && layout != tag::nChw16c) || (layout == tag::nChw16c && C % 16 != 0)) return false;
  const int64_t DV = layout == tag::nhwc ? C : 16;  // dst: pixels DV apart
  const int64_t OH = go.size(2), OW = go.size(3), OHW = OH * OW, G = (V + 15) / 16;
  const float* g = go.data_ptr<float>();
  const bool avx512 = have_avx512();
  const size_t in_elem = b.bf16 ? sizeof(uint16_t) : sizeof(float);
  const char* xp = static_cast<const char*>(b.raw());
  auto* dp = static_cast<OutElem<kOut>*>(dst);
#pragma omp parallel for schedule(static) collapse(2) if (N * C * S > 32768)
  for (int64_t nb = 0; nb < N * CB; ++nb)
    for (int64_t q = 0; q < G; ++q) {
      const int64_t n = nb / CB, c0 = (nb % CB) * V + q * 16, w = std::min<int64_t>(16, V - q * 16);
      const void* xg = xp + size_t(nb * S * V + q * 16) * in_elem;  // the group's first pixel in x
      const float* gp = g + (n * C + c0) * OHW;
      OutElem<kOut>* dg = dp + (layout == tag::nhwc ? n * S * C + c0 : (n * C + c0) * S);  // c0 % 16 == 0
      if (w == 16 && avx512 && b.bf16) group16_avx512<true, kOut>(xg, V, gp, OHW, H, W, OH, OW, dg, DV);
      else if (w == 16 && avx512) group16_avx512<false, kOut>(xg, V, gp, OHW, H, W, OH, OW, dg, DV);
      else if (b.bf16)
        lanes_scalar<kOut>(static_cast<const uint16_t*>(xg), V, 1, w, gp, OHW, H, W, OH, OW, dg, DV, 1);
      else
        lanes_scalar<kOut>(static_cast<const float*>(xg), V, 1, w, gp, OHW, H, W, OH, OW, dg, DV, 1);
    }
  return true;
}

}  // namespace

bool PooledGradForm::pooled(const Tensor& t) const {
  return t.defined() && t.storage() == x_.storage() && t.storage_offset() == 0 && x_.storage_offset() == 0 &&
         t.is_contiguous() && t.sizes() == x_.sizes();
}

// Plain NCHW (an unexpected consumer: the zoo's read it in a layout above): from a held input,
// written in its layout at float32 and transposed by the reorder a held activation settles with;
// from a plain input, plane by plane.
void PooledGradForm::write_plain(void* plain) const {
  float* d = static_cast<float*>(plain);
  const int64_t N = x_.size(0), C = x_.size(1), H = x_.size(2), W = x_.size(3), S = H * W;
  const int64_t OH = grad_out_.size(2), OW = grad_out_.size(3), OHW = OH * OW;
  const ChannelBlocked b = channel_blocked(x_);
  if (b.form != nullptr) {
    const dnnl::memory::desc held = b.f32_desc();
    Storage scratch = std::make_shared<StorageImpl>(held.get_size(), Device::cpu());
    write_blocked<PooledGradOut::F32>(*this, scratch->data(), b.layout);
    dnnl_call("reorder (a pooled gradient to NCHW)", [&] {
      dnnl::stream s(dnnl_cpu_engine());
      const dnnl::memory::desc nchw(dnnl::memory::dims{N, C, H, W}, dnnl::memory::data_type::f32,
                                    dnnl::memory::format_tag::nchw);
      reorder_into(dnnl::memory(held, dnnl_cpu_engine(), scratch->data()), dnnl::memory(nchw, dnnl_cpu_engine(), d), s);
      s.wait();
    });
    return;
  }
  const float* g = grad_out_.data_ptr<float>();
  const Tensor xc = core::contiguous(x_);
  const float* xp = xc.data_ptr<float>();
#pragma omp parallel for schedule(static) if (N * C * S > 32768)
  for (int64_t nc = 0; nc < N * C; ++nc)
    lanes_scalar<PooledGradOut::F32>(xp + nc * S, 1, 0, 1, g + nc * OHW, OHW, H, W, OH, OW, d + nc * S, 1, 0);
}

const PooledGradForm* pooled_grad_form(const Tensor& t) {
  if (!t.defined() || t.dtype() != DType::Float32 || t.dim() < 2 || t.storage_offset() != 0 || !t.is_contiguous())
    return nullptr;
  const auto* f = dynamic_cast<const PooledGradForm*>(t.storage()->form());
  if (f == nullptr) return nullptr;
  const Tensor& x = f->input();
  if (t.size(0) != x.size(0) || t.size(1) != x.size(1) || t.numel() != x.numel()) return nullptr;
  return f;
}

bool write_pooled_grad(const PooledGradForm& f, PooledGradOut out, void* dst, dnnl::memory::format_tag layout) {
  switch (out) {
    case PooledGradOut::F32: return write_blocked<PooledGradOut::F32>(f, dst, layout);
    case PooledGradOut::F32Relu: return write_blocked<PooledGradOut::F32Relu>(f, dst, layout);
    case PooledGradOut::Bf16Relu: return write_blocked<PooledGradOut::Bf16Relu>(f, dst, layout);
    case PooledGradOut::Bf16Relu6: return write_blocked<PooledGradOut::Bf16Relu6>(f, dst, layout);
  }
  return false;
}

void max_pool2d_backward_from_input(const Tensor& grad_out, const Tensor& x, const kernels::Pool2dParams& p,
                                    const Tensor& grad_x) {
  EMBER_ASSERT(p.kernel_h == 2 && p.kernel_w == 2 && p.stride_h == 2 && p.stride_w == 2 && p.pad_h == 0 &&
               p.pad_w == 0 && grad_x.sizes() == x.sizes() && grad_x.storage()->form() == nullptr);
  grad_x.storage()->set_form(std::make_unique<PooledGradForm>(core::contiguous(grad_out), x));
}

}  // namespace ember::cpu
