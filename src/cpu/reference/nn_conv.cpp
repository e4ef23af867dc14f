// Reference conv2d kernels (forward, input gradient, weight gradient): the direct convolution loops,
// accumulated in double, float32 and float64. The oracle of the im2col and oneDNN paths
// (src/cpu/nn_conv.cpp, nn_conv_dnnl.cpp) and their float64 path.
#include "cpu/reference/nn.h"

#include <vector>

namespace ember::cpu::reference {

using kernels::Conv2dParams;

void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                    const Tensor& out) {
  dispatch_floating(x.dtype(), "conv2d", [&]<class T>() {
    const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    const int64_t CO = weight.size(0), CG = weight.size(1), KH = weight.size(2), KW = weight.size(3);
    const int64_t OH = out.size(2), OW = out.size(3), COG = CO / p.groups;
    const T* xp = x.data_ptr<T>();
    const T* wp = weight.data_ptr<T>();
    const T* bp = bias.defined() ? bias.data_ptr<T>() : nullptr;
    T* op = out.data_ptr<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t co = 0; co < CO; ++co) {
        const int64_t g = co / COG;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            double acc = bp ? double(bp[co]) : 0.0;
            for (int64_t ci = 0; ci < CG; ++ci)
              for (int64_t i = 0; i < KH; ++i) {
                const int64_t h = oh * p.stride_h - p.pad_h + i * p.dilation_h;
                if (h < 0 || h >= H) continue;
                for (int64_t j = 0; j < KW; ++j) {
                  const int64_t w = ow * p.stride_w - p.pad_w + j * p.dilation_w;
                  if (w < 0 || w >= W) continue;
                  acc += double(xp[((n * C + g * CG + ci) * H + h) * W + w]) *
                         double(wp[((co * CG + ci) * KH + i) * KW + j]);
                }
              }
            op[((n * CO + co) * OH + oh) * OW + ow] = T(acc);
          }
      }
  });
}

void conv2d_backward_data(const Tensor& grad_out, const Tensor& weight, const Conv2dParams& p,
                          const Tensor& grad_x) {
  dispatch_floating(grad_x.dtype(), "conv2d_backward", [&]<class T>() {
    const int64_t N = grad_x.size(0), C = grad_x.size(1), H = grad_x.size(2), W = grad_x.size(3);
    const int64_t CO = weight.size(0), CG = weight.size(1), KH = weight.size(2), KW = weight.size(3);
    const int64_t OH = grad_out.size(2), OW = grad_out.size(3), COG = CO / p.groups;
    const T* gp = grad_out.data_ptr<T>();
    const T* wp = weight.data_ptr<T>();
    std::vector<double> acc(size_t(grad_x.numel()), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t co = 0; co < CO; ++co) {
        const int64_t g = co / COG;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            const double go = double(gp[((n * CO + co) * OH + oh) * OW + ow]);
            for (int64_t ci = 0; ci < CG; ++ci)
              for (int64_t i = 0; i < KH; ++i) {
                const int64_t h = oh * p.stride_h - p.pad_h + i * p.dilation_h;
                if (h < 0 || h >= H) continue;
                for (int64_t j = 0; j < KW; ++j) {
                  const int64_t w = ow * p.stride_w - p.pad_w + j * p.dilation_w;
                  if (w < 0 || w >= W) continue;
                  acc[size_t(((n * C + g * CG + ci) * H + h) * W + w)] +=
                      go * double(wp[((co * CG + ci) * KH + i) * KW + j]);
                }
              }
          }
      }
    T* xp = grad_x.data_ptr<T>();
    for (size_t k = 0; k < acc.size(); ++k) xp[k] = T(acc[k]);
  });
}

void conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, const Conv2dParams& p,
                            const Tensor& grad_weight) {
  dispatch_floating(x.dtype(), "conv2d_backward", [&]<class T>() {
    const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    const int64_t CO = grad_weight.size(0), CG = grad_weight.size(1), KH = grad_weight.size(2),
                  KW = grad_weight.size(3);
    const int64_t OH = grad_out.size(2), OW = grad_out.size(3), COG = CO / p.groups;
    const T* gp = grad_out.data_ptr<T>();
    const T* xp = x.data_ptr<T>();
    T* wp = grad_weight.data_ptr<T>();
    for (int64_t co = 0; co < CO; ++co) {
      const int64_t g = co / COG;
      for (int64_t ci = 0; ci < CG; ++ci)
        for (int64_t i = 0; i < KH; ++i)
          for (int64_t j = 0; j < KW; ++j) {
            double acc = 0.0;
            for (int64_t n = 0; n < N; ++n)
              for (int64_t oh = 0; oh < OH; ++oh) {
                const int64_t h = oh * p.stride_h - p.pad_h + i * p.dilation_h;
                if (h < 0 || h >= H) continue;
                for (int64_t ow = 0; ow < OW; ++ow) {
                  const int64_t w = ow * p.stride_w - p.pad_w + j * p.dilation_w;
                  if (w < 0 || w >= W) continue;
                  acc += double(gp[((n * CO + co) * OH + oh) * OW + ow]) *
                         double(xp[((n * C + g * CG + ci) * H + h) * W + w]);
                }
              }
            wp[((co * CG + ci) * KH + i) * KW + j] = T(acc);
          }
    }
  });
}

}  // namespace ember::cpu::reference
