// Reference pooling kernels (max, average, adaptive average; forward and backward): plain window
// loops, accumulated in double, float32 and float64. The oracle of the fast max-pool path; the CPU
// kernels of the others (registered by src/cpu/nn_pool.cpp).
#include "cpu/reference/nn.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ember::cpu::reference {

using kernels::Pool2dParams;

void max_pool2d_forward(const Tensor& x, const Pool2dParams& p, const Tensor& out, const Tensor& indices) {
  dispatch_floating(x.dtype(), "max_pool2d", [&]<class T>() {
    const int64_t NC = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
    const int64_t OH = out.size(2), OW = out.size(3);
    const T* xp = x.data_ptr<T>();
    T* op = out.data_ptr<T>();
    int64_t* ip = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;  // undefined: values only
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          T best = -std::numeric_limits<T>::infinity();
          int64_t arg = -1;
          for (int64_t i = 0; i < p.kernel_h && !(arg >= 0 && std::isnan(best)); ++i) {
            const int64_t h = oh * p.stride_h - p.pad_h + i;
            if (h < 0 || h >= H) continue;
            for (int64_t j = 0; j < p.kernel_w; ++j) {
              const int64_t w = ow * p.stride_w - p.pad_w + j;
              if (w < 0 || w >= W) continue;
              const T v = xp[(nc * H + h) * W + w];
              if (arg < 0 || v > best || std::isnan(v)) {  // NaN propagates, as PyTorch
                best = v;
                arg = h * W + w;
                if (std::isnan(v)) break;
              }
            }
          }
          op[(nc * OH + oh) * OW + ow] = best;
          if (ip != nullptr) ip[(nc * OH + oh) * OW + ow] = arg;
        }
  });
}

void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_x) {
  dispatch_floating(grad_x.dtype(), "max_pool2d_backward", [&]<class T>() {
    const int64_t NC = grad_x.size(0) * grad_x.size(1), HW = grad_x.size(2) * grad_x.size(3);
    const int64_t OHW = grad_out.size(2) * grad_out.size(3);
    const T* gp = grad_out.data_ptr<T>();
    const int64_t* ip = indices.data_ptr<int64_t>();
    T* xp = grad_x.data_ptr<T>();
    std::fill(xp, xp + grad_x.numel(), T(0));
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t k = 0; k < OHW; ++k)
        if (ip[nc * OHW + k] >= 0) xp[nc * HW + ip[nc * OHW + k]] += gp[nc * OHW + k];
  });
}

namespace {
// PyTorch's avg-pool window: clipped to the padded input for the divisor, to the input for the sum.
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  double divisor;
};
AvgWindow avg_window(const Pool2dParams& p, int64_t oh, int64_t ow, int64_t H, int64_t W) {
  int64_t h0 = oh * p.stride_h - p.pad_h, w0 = ow * p.stride_w - p.pad_w;
  int64_t h1 = std::min(h0 + p.kernel_h, H + p.pad_h), w1 = std::min(w0 + p.kernel_w, W + p.pad_w);
  const int64_t pool_size = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, H);
  w1 = std::min(w1, W);
  const int64_t inside = (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, double(p.count_include_pad ? pool_size : inside)};
}
}  // namespace

void avg_pool2d_forward(const Tensor& x, const Pool2dParams& p, const Tensor& out) {
  dispatch_floating(x.dtype(), "avg_pool2d", [&]<class T>() {
    const int64_t NC = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
    const int64_t OH = out.size(2), OW = out.size(3);
    const T* xp = x.data_ptr<T>();
    T* op = out.data_ptr<T>();
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          AvgWindow win = avg_window(p, oh, ow, H, W);
          double acc = 0.0;
          for (int64_t h = win.h0; h < win.h1; ++h)
            for (int64_t w = win.w0; w < win.w1; ++w) acc += double(xp[(nc * H + h) * W + w]);
          op[(nc * OH + oh) * OW + ow] = T(acc / win.divisor);
        }
  });
}

void avg_pool2d_backward(const Tensor& grad_out, const Pool2dParams& p, const Tensor& grad_x) {
  dispatch_floating(grad_x.dtype(), "avg_pool2d_backward", [&]<class T>() {
    const int64_t NC = grad_x.size(0) * grad_x.size(1), H = grad_x.size(2), W = grad_x.size(3);
    const int64_t OH = grad_out.size(2), OW = grad_out.size(3);
    const T* gp = grad_out.data_ptr<T>();
    T* xp = grad_x.data_ptr<T>();
    std::fill(xp, xp + grad_x.numel(), T(0));
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          AvgWindow win = avg_window(p, oh, ow, H, W);
          const T g = T(double(gp[(nc * OH + oh) * OW + ow]) / win.divisor);
          for (int64_t h = win.h0; h < win.h1; ++h)
            for (int64_t w = win.w0; w < win.w1; ++w) xp[(nc * H + h) * W + w] += g;
        }
  });
}

namespace {
int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }
}  // namespace

void adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out) {
  dispatch_floating(x.dtype(), "adaptive_avg_pool2d", [&]<class T>() {
    const int64_t NC = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
    const int64_t OH = out.size(2), OW = out.size(3);
    const T* xp = x.data_ptr<T>();
    T* op = out.data_ptr<T>();
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t h0 = adaptive_start(oh, H, OH), h1 = adaptive_end(oh, H, OH);
          const int64_t w0 = adaptive_start(ow, W, OW), w1 = adaptive_end(ow, W, OW);
          double acc = 0.0;
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) acc += double(xp[(nc * H + h) * W + w]);
          op[(nc * OH + oh) * OW + ow] = T(acc / double((h1 - h0) * (w1 - w0)));
        }
  });
}

void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x) {
  dispatch_floating(grad_x.dtype(), "adaptive_avg_pool2d_backward", [&]<class T>() {
    const int64_t NC = grad_x.size(0) * grad_x.size(1), H = grad_x.size(2), W = grad_x.size(3);
    const int64_t OH = grad_out.size(2), OW = grad_out.size(3);
    const T* gp = grad_out.data_ptr<T>();
    T* xp = grad_x.data_ptr<T>();
    std::fill(xp, xp + grad_x.numel(), T(0));
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t h0 = adaptive_start(oh, H, OH), h1 = adaptive_end(oh, H, OH);
          const int64_t w0 = adaptive_start(ow, W, OW), w1 = adaptive_end(ow, W, OW);
          const T g = T(double(gp[(nc * OH + oh) * OW + ow]) / double((h1 - h0) * (w1 - w0)));
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) xp[(nc * H + h) * W + w] += g;
        }
  });
}

}  // namespace ember::cpu::reference
