// The bfloat16 weight gradient of a convolution with small output planes as one GEMM:
//   grad_w (C_out, KH*KW*C_in) = grad_out^T (C_out, P) @ col (P, KH*KW*C_in),   P = N * OH * OW,
// col the im2col matrix of x (channels-last, so each tap of an output pixel is one contiguous
// run of C_in values), both operands rounded to bf16 and the products summed in float32 by oneDNN's
// matmul (brgemm: AVX512-BF16 / AMX). oneDNN 2.6's direct backward-weights kernel is slow on such
// planes: on resnet18's 512-channel 3x3 convolutions at 4x4 it took 6x the forward's time (15 ms
// against 2.4 ms per convolution, batch 32, Zen 5, 2 threads, ONEDNN_VERBOSE, 2026-12-02), half
// of the bf16 training step; the matmul runs the same products at the forward's rate.
//
// The same products as the direct kernel (x and grad_out rounded to bf16 once), summed in float32
// in another order: within float32 rounding of it. Not under ember::deterministic() (the caller
// takes the im2col path there).
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "cpu/convert_bf16.h"
#include "cpu/dnnl_form.h"
#include "cpu/layout_nhwc.h"
#include "cpu/linear_matmul.h"
#include "cpu/nn_conv.h"
#include "ember/core/dtype.h"
#include "ember/core/storage.h"

namespace ember::cpu {

namespace {
// Output planes up to this many pixels take the GEMM (resnet18 at 112 px: 7x7 and 4x4; at 224 px:
// 7x7): measured faster there; at 14x14 (128 channels) the matmul alone took as long as the
// direct kernel (2.9-4.1 ms against 3.7 ms per convolution), before the col buffer is written.
constexpr int64_t kMaxPlane = 64;
// Channel counts below these leave the GEMM too thin to beat the direct kernel.
constexpr int64_t kMinChannels = 64;

// t (N, C, H, W) float32 as NHWC bfloat16 in dst. Held in training's layouts (dnnl_form.h) it is read
// where it is: NHWC f32 is one conversion of the array, nChw16c f32 a gather of 16-channel blocks;
// otherwise (plain) the NCHW transposition. The same rounding (to nearest even) every way.
void to_nhwc_bf16(const Tensor& t, uint16_t* dst) {
  const int64_t N = t.size(0), C = t.size(1), S = t.size(2) * t.size(3);
  const ChannelBlocked b = channel_blocked(t);
  if (b.form != nullptr && b.bf16) {  // a bf16 activation (training under autocast): its bits as they are
    const auto* src = static_cast<const uint16_t*>(b.raw());
    if (b.V == C) {
      std::memcpy(dst, src, size_t(N * S * C) * sizeof(uint16_t));
      return;
    }
    const int64_t V = b.V, CB = C / V;
#pragma omp parallel for schedule(static) collapse(2) if (N * S * C > 32768)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t cb = 0; cb < CB; ++cb)
          std::memcpy(dst + (n * S + s) * C + cb * V, src + ((n * CB + cb) * S + s) * V, size_t(V) * sizeof(uint16_t));
    return;
  }
  if (b.form != nullptr && b.V == C) return f32_to_bf16_array(b.data(), dst, N * S * C);
  if (b.form != nullptr) {
    const int64_t V = b.V, CB = C / V;
    const float* src = b.data();
#pragma omp parallel for schedule(static) collapse(2) if (N * S * C > 32768)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s) {
        uint16_t* d = dst + (n * S + s) * C;
        for (int64_t cb = 0; cb < CB; ++cb) {
          const float* row = src + ((n * CB + cb) * S + s) * V;
          for (int64_t v = 0; v < V; ++v) d[cb * V + v] = float_to_bf16(row[v]);
        }
      }
    return;
  }
  nchw_f32_to_nhwc_bf16(t.data_ptr<float>(), dst, N, C, S);
}

}  // namespace

bool conv2d_backward_weight_gemm_bf16(const Tensor& grad_out, const Tensor& x, const kernels::Conv2dParams& p,
                                      const Tensor& grad_weight) {
  if (p.compute != DType::BFloat16 || p.groups != 1) return false;
  if (x.dtype() != DType::Float32 || grad_out.dtype() != DType::Float32 || grad_weight.dtype() != DType::Float32)
    return false;
  if (!x.is_contiguous() || !grad_out.is_contiguous() || !grad_weight.is_contiguous()) return false;
  const int64_t N = x.size(0), CI = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t CO = grad_out.size(1), OH = grad_out.size(2), OW = grad_out.size(3);
  const int64_t KH = grad_weight.size(2), KW = grad_weight.size(3);
  if (OH * OW > kMaxPlane || CI < kMinChannels || CO < kMinChannels || N == 0) return false;
  const int64_t P = N * OH * OW, K = KH * KW * CI;

  // grad_out as (P, C_out) and x as (N, H, W, C_in), both bf16.
  Storage go_buf = std::make_shared<StorageImpl>(size_t(P * CO) * 2, Device::cpu());
  Storage x_buf = std::make_shared<StorageImpl>(size_t(N * H * W * CI) * 2, Device::cpu());
  Storage col_buf = std::make_shared<StorageImpl>(size_t(P * K) * 2, Device::cpu());
  Storage gw_buf = std::make_shared<StorageImpl>(size_t(CO * K) * 4, Device::cpu());
  auto* go_h = static_cast<uint16_t*>(go_buf->data());
  auto* x_h = static_cast<uint16_t*>(x_buf->data());
  auto* col = static_cast<uint16_t*>(col_buf->data());
  auto* gw_t = static_cast<float*>(gw_buf->data());
  to_nhwc_bf16(grad_out, go_h);
  to_nhwc_bf16(x, x_h);

  // col row (n, oh, ow): the KH*KW taps' C_in values in (kh, kw, c) order, zeros in the padding.
#pragma omp parallel for schedule(static) collapse(2)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        uint16_t* row = col + ((n * OH + oh) * OW + ow) * K;
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t ih = oh * p.stride_h - p.pad_h + kh * p.dilation_h;
          for (int64_t kw = 0; kw < KW; ++kw) {
            const int64_t iw = ow * p.stride_w - p.pad_w + kw * p.dilation_w;
            uint16_t* dst = row + (kh * KW + kw) * CI;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W)
              std::memset(dst, 0, size_t(CI) * 2);
            else
              std::memcpy(dst, x_h + ((n * H + ih) * W + iw) * CI, size_t(CI) * 2);
          }
        }
      }

  if (!matmul_at_b_bf16(go_h, col, gw_t, CO, P, K)) return false;

  // (C_out, KH, KW, C_in) -> (C_out, C_in, KH, KW).
  float* gw = grad_weight.data_ptr<float>();
#pragma omp parallel for schedule(static)
  for (int64_t co = 0; co < CO; ++co)
    for (int64_t t = 0; t < KH * KW; ++t) {
      const float* src = gw_t + (co * KH * KW + t) * CI;
      float* dst = gw + co * CI * KH * KW + t;
      for (int64_t c = 0; c < CI; ++c) dst[c * KH * KW] = src[c];
    }
  return true;
}

}  // namespace ember::cpu
