// conv2d on the CPU as im2col + OpenBLAS sgemm (float32): each image's receptive fields are
// unrolled into a (C_in/g * kH * kW, OH * OW) matrix so every conv step is one GEMM per group.
// Images are spread over OpenMP threads, each with its own column buffer and serial OpenBLAS
// calls (src/cpu/gemm.h: OpenBLAS never runs threads of its own); a single image's GEMM is tiled
// over the threads instead. float64 goes to the reference kernels.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "cpu/convert_bf16.h"
#include "cpu/gemm.h"
#include "cpu/nn_conv.h"
#include "ember/core/settings.h"
#include "cpu/reference/nn.h"

namespace ember::cpu {

using kernels::Conv2dParams;

namespace {

struct ConvGeometry {
  int64_t N, C, H, W, CO, CG, KH, KW, OH, OW, G, COG, K, P;
  // A 1x1 kernel with unit stride and no padding reads the input as it is: no unrolling needed.
  bool pointwise;
};
ConvGeometry geometry(const Shape& x, const Shape& w, const Shape& out, const Conv2dParams& p) {
  ConvGeometry g{x[0], x[1], x[2], x[3], w[0], w[1], w[2], w[3], out[2], out[3], p.groups,
                 w[0] / p.groups, w[1] * w[2] * w[3], out[2] * out[3], false};
  g.pointwise = g.KH == 1 && g.KW == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 &&
                p.pad_w == 0;
  return g;
}

// col (CG*KH*KW, OH*OW) from one group of one image x (CG, H, W); zeros where the window is in
// the padding.
void im2col(const float* x, const ConvGeometry& g, const Conv2dParams& p, float* col) {
  for (int64_t c = 0; c < g.CG; ++c)
    for (int64_t i = 0; i < g.KH; ++i)
      for (int64_t j = 0; j < g.KW; ++j) {
        float* dst = col + ((c * g.KH + i) * g.KW + j) * g.P;
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const int64_t h = oh * p.stride_h - p.pad_h + i * p.dilation_h;
          float* row = dst + oh * g.OW;
          if (h < 0 || h >= g.H) {
            std::fill(row, row + g.OW, 0.0f);
            continue;
          }
          const float* src = x + (c * g.H + h) * g.W;
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            const int64_t w = ow * p.stride_w - p.pad_w + j * p.dilation_w;
            row[ow] = (w >= 0 && w < g.W) ? src[w] : 0.0f;
          }
        }
      }
}

// The adjoint of im2col: adds each column entry back to the input position it was read from.
void col2im(const float* col, const ConvGeometry& g, const Conv2dParams& p, float* x) {
  for (int64_t c = 0; c < g.CG; ++c)
    for (int64_t i = 0; i < g.KH; ++i)
      for (int64_t j = 0; j < g.KW; ++j) {
        const float* src = col + ((c * g.KH + i) * g.KW + j) * g.P;
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const int64_t h = oh * p.stride_h - p.pad_h + i * p.dilation_h;
          if (h < 0 || h >= g.H) continue;
          float* dst = x + (c * g.H + h) * g.W;
          const float* row = src + oh * g.OW;
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            const int64_t w = ow * p.stride_w - p.pad_w + j * p.dilation_w;
            if (w >= 0 && w < g.W) dst[w] += row[ow];
          }
        }
      }
}

// Threads for a loop over n images: one per image at most; with a single image the loop runs
// serially and its GEMMs are tiled over the threads instead (gemm_for below).
int image_threads(int64_t n) {
  if (!blas_calls_may_overlap()) return 1;  // the serial OpenBLAS build: one call at a time (gemm.h)
  return int(std::max<int64_t>(1, std::min<int64_t>(n, omp_get_max_threads())));
}

// C = op(A) @ op(B) (overwriting C) for a loop over images run by `image_team` threads: serial
// inside a team of several, tiled over the threads when the images run one at a time.
void gemm_for(int image_team, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* a, int64_t lda,
              const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (image_team == 1) sgemm_threads(ta, tb, M, N, K, a, lda, b, ldb, c, ldc);
  else sgemm_serial(ta, tb, M, N, K, a, lda, b, ldb, 0.0f, c, ldc);
}

}  // namespace

void conv2d_forward_im2col(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const Conv2dParams& p, const Tensor& out) {
  if (p.compute == DType::BFloat16) {
    conv2d_forward_im2col(bf16_rounded(x), bf16_rounded(weight), bias, as_f32(p), out);
    if (p.keep_layout && out.dtype() == DType::Float32)  // training: rounded, as nn_conv_dnnl.cpp's round_output
      round_to_bf16_in_place(out.data_ptr<float>(), out.numel());
    return;
  }
  if (x.dtype() != DType::Float32) return reference::conv2d_forward(x, weight, bias, p, out);
  const ConvGeometry g = geometry(x.sizes(), weight.sizes(), out.sizes(), p);
  const float* xp = x.data_ptr<float>();
  const float* wp = weight.data_ptr<float>();
  const float* bp = bias.defined() ? bias.data_ptr<float>() : nullptr;
  float* op = out.data_ptr<float>();
  const int team = image_threads(g.N);
#pragma omp parallel num_threads(team)
  {
    std::vector<float> col(g.pointwise ? 0 : size_t(g.K * g.P));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < g.N; ++n) {
      for (int64_t grp = 0; grp < g.G; ++grp) {
        const float* xg = xp + (n * g.C + grp * g.CG) * g.H * g.W;
        if (!g.pointwise) im2col(xg, g, p, col.data());
        float* og = op + (n * g.CO + grp * g.COG) * g.P;
        gemm_for(team, false, false, g.COG, g.P, g.K, wp + grp * g.COG * g.K, g.K, g.pointwise ? xg : col.data(), g.P,
                 og, g.P);
      }
      if (bp)
        for (int64_t co = 0; co < g.CO; ++co) {
          float* row = op + (n * g.CO + co) * g.P;
          for (int64_t k = 0; k < g.P; ++k) row[k] += bp[co];
        }
    }
  }
}

void conv2d_backward_data_im2col(const Tensor& grad_out, const Tensor& weight, const Conv2dParams& p,
                                 const Tensor& grad_x) {
  if (p.compute == DType::BFloat16)
    return conv2d_backward_data_im2col(bf16_rounded(grad_out), bf16_rounded(weight), as_f32(p), grad_x);
  if (grad_x.dtype() != DType::Float32) return reference::conv2d_backward_data(grad_out, weight, p, grad_x);
  const ConvGeometry g = geometry(grad_x.sizes(), weight.sizes(), grad_out.sizes(), p);
  const float* gp = grad_out.data_ptr<float>();
  const float* wp = weight.data_ptr<float>();
  float* xp = grad_x.data_ptr<float>();
  const int team = image_threads(g.N);
#pragma omp parallel num_threads(team)
  {
    std::vector<float> col(g.pointwise ? 0 : size_t(g.K * g.P));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t grp = 0; grp < g.G; ++grp) {
        float* xg = xp + (n * g.C + grp * g.CG) * g.H * g.W;
        // col = W_g^T (K, COG) @ grad_out_g (COG, P); a pointwise conv writes it straight to x.
        gemm_for(team, true, false, g.K, g.P, g.COG, wp + grp * g.COG * g.K, g.K, gp + (n * g.CO + grp * g.COG) * g.P,
                 g.P, g.pointwise ? xg : col.data(), g.P);
        if (!g.pointwise) {
          std::fill(xg, xg + g.CG * g.H * g.W, 0.0f);
          col2im(col.data(), g, p, xg);
        }
      }
  }
}

void conv2d_backward_weight_im2col(const Tensor& grad_out, const Tensor& x, const Conv2dParams& p,
                                   const Tensor& grad_weight) {
  if (p.compute == DType::BFloat16)
    return conv2d_backward_weight_im2col(bf16_rounded(grad_out), bf16_rounded(x), as_f32(p), grad_weight);
  if (x.dtype() != DType::Float32) return reference::conv2d_backward_weight(grad_out, x, p, grad_weight);
  const ConvGeometry g = geometry(x.sizes(), grad_weight.sizes(), grad_out.sizes(), p);
  const float* gp = grad_out.data_ptr<float>();
  const float* xp = x.data_ptr<float>();
  const int nt = image_threads(g.N);
  // One private gradient per thread, summed at the end: no atomics, and the sum order is fixed
  // for a given thread count. Under ember::deterministic() one per fixed group of images instead
  // (kDeterministicImages), summed in group order: the same bits whatever the thread count.
  const bool det = deterministic();
  constexpr int64_t kDeterministicImages = 8;
  const int64_t parts = det ? (g.N + kDeterministicImages - 1) / kDeterministicImages : nt;
  std::vector<std::vector<float>> partial(size_t(parts), std::vector<float>(size_t(g.CO * g.K), 0.0f));
  // gW_g (COG, K) += grad_out_g (COG, P) @ col^T (P, K), for image n into gw
  auto add_image = [&](int64_t n, std::vector<float>& gw, std::vector<float>& col) {
    for (int64_t grp = 0; grp < g.G; ++grp) {
      const float* xg = xp + (n * g.C + grp * g.CG) * g.H * g.W;
      if (!g.pointwise) im2col(xg, g, p, col.data());
      sgemm_serial(false, true, g.COG, g.K, g.P, gp + (n * g.CO + grp * g.COG) * g.P, g.P,
                   g.pointwise ? xg : col.data(), g.P, 1.0f, gw.data() + grp * g.COG * g.K, g.K);
    }
  };
#pragma omp parallel num_threads(nt)
  {
    std::vector<float> col(g.pointwise ? 0 : size_t(g.K * g.P));
    if (det) {
#pragma omp for schedule(static)
      for (int64_t q = 0; q < parts; ++q)
        for (int64_t n = q * kDeterministicImages; n < std::min(g.N, (q + 1) * kDeterministicImages); ++n)
          add_image(n, partial[size_t(q)], col);
    } else {
      std::vector<float>& gw = partial[size_t(omp_get_thread_num())];
#pragma omp for schedule(static)
      for (int64_t n = 0; n < g.N; ++n) add_image(n, gw, col);
    }
  }
  float* out = grad_weight.data_ptr<float>();
  std::copy(partial[0].begin(), partial[0].end(), out);
  for (size_t t = 1; t < partial.size(); ++t)
    for (size_t k = 0; k < partial[t].size(); ++k) out[k] += partial[t][k];
}

}  // namespace ember::cpu
