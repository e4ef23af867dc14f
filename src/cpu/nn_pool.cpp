// Max pooling on the CPU, float32 and float64: one (n, c) plane per OpenMP task, window bounds
// clipped once per output row/column instead of tested per tap, and a branch-free path for 2x2/2. Same results as the reference,
// including the first-maximum rule on ties and NaN propagation.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/nn_reference.h"

namespace ember::cpu {

using kernels::Pool2dParams;

namespace {

// The 2x2, stride-2, unpadded window every zoo model uses: the four taps of a window are
// compared with selects instead of a loop with early exits, so the row loop vectorises. Same rule
// as the general loop: the first NaN in row-major order wins, else the first maximum.
// Built for AVX-512, AVX2 and the baseline (function multiversioning picks one at load time), so
// the selects vectorise on the machines that have the wide units; the library itself is compiled
// without -march flags.
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
      const bool take = v > best || (v != v && best == best);
      best = take ? v : best;
      arg = take ? offs[k] : arg;
    }
    o[ow] = best;
    id[ow] = base + 2 * ow + arg;
  }
}
__attribute__((target_clones("avx512f", "avx2", "default")))
void max_pool2d_2x2_plane_f32(const float* plane, int64_t W, int64_t OH, int64_t OW, float* o, int64_t* id) {
  for (int64_t oh = 0; oh < OH; ++oh)
    max_pool2d_2x2_rows(plane + 2 * oh * W, plane + (2 * oh + 1) * W, 2 * oh * W, W, OW, o + oh * OW, id + oh * OW);
}
template <class T>
void max_pool2d_2x2_plane(const T* plane, int64_t W, int64_t OH, int64_t OW, T* o, int64_t* id) {
  if constexpr (std::is_same_v<T, float>) {
    max_pool2d_2x2_plane_f32(plane, W, OH, OW, o, id);
  } else {
    for (int64_t oh = 0; oh < OH; ++oh)
      max_pool2d_2x2_rows(plane + 2 * oh * W, plane + (2 * oh + 1) * W, 2 * oh * W, W, OW, o + oh * OW, id + oh * OW);
  }
}

void max_pool2d_forward_planes(const Tensor& x, const Pool2dParams& p, const Tensor& out,
                               const Tensor& indices) {
  const bool window_2x2 = p.kernel_h == 2 && p.kernel_w == 2 && p.stride_h == 2 && p.stride_w == 2 &&
                          p.pad_h == 0 && p.pad_w == 0;
  dispatch_floating(x.dtype(), "max_pool2d", [&]<class T>() {
    const int64_t NC = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
    const int64_t OH = out.size(2), OW = out.size(3);
    const T* xp = x.data_ptr<T>();
    T* op = out.data_ptr<T>();
    int64_t* ip = indices.data_ptr<int64_t>();
#pragma omp parallel for schedule(static) if (NC * OH * OW > 4096)
    for (int64_t nc = 0; nc < NC; ++nc) {
      const T* plane = xp + nc * H * W;
      T* o = op + nc * OH * OW;
      int64_t* id = ip + nc * OH * OW;
      if (window_2x2 && 2 * OH <= H && 2 * OW <= W) {
        max_pool2d_2x2_plane(plane, W, OH, OW, o, id);
        continue;
      }
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t h0 = std::max<int64_t>(oh * p.stride_h - p.pad_h, 0);
        const int64_t h1 = std::min<int64_t>(oh * p.stride_h - p.pad_h + p.kernel_h, H);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t w0 = std::max<int64_t>(ow * p.stride_w - p.pad_w, 0);
          const int64_t w1 = std::min<int64_t>(ow * p.stride_w - p.pad_w + p.kernel_w, W);
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
          o[oh * OW + ow] = best;
          id[oh * OW + ow] = arg;
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

void register_nn_pool_kernels() {
  kernels::max_pool2d_forward.set(DeviceType::CPU, &max_pool2d_forward_planes);
  kernels::max_pool2d_backward.set(DeviceType::CPU, &max_pool2d_backward_planes);
}

}  // namespace ember::cpu
