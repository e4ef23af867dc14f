// Reference conv2d kernels (forward, input gradient, weight gradient): the direct convolution loops,
// accumulated in double, float32 and float64. The oracle of the im2col and oneDNN paths
// (src/cpu/nn_conv.cpp, nn_conv_dnnl.cpp) and their float64 path. With p.compute == BFloat16 every
// multiplicand is rounded to bfloat16 as it is read (a bfloat16 weight is read as is) and the
// float32 output is what exact products of the rounded values sum to: the mixed-precision oracle;
// in training (p.keep_layout) that output rounded to bfloat16, as autocast returns it.
#include "cpu/reference/nn.h"

#include <type_traits>
#include <vector>

namespace ember::cpu::reference {

using kernels::Conv2dParams;

namespace {
// Element i of a contiguous float tensor of any floating dtype, as double; rounded to bfloat16 first
// when `round`.
struct Reader {
  const Tensor& t;
  bool round;
  double operator[](int64_t i) const {
    float f;
    switch (t.dtype()) {
      case DType::Float64: {
        const double d = static_cast<const double*>(t.raw_data())[i];
        if (!round) return d;
        f = float(d);
        break;
      }
      case DType::BFloat16: return bf16_to_float(static_cast<const uint16_t*>(t.raw_data())[i]);
      case DType::Float16: f = half_to_float(static_cast<const uint16_t*>(t.raw_data())[i]); break;
      default: f = static_cast<const float*>(t.raw_data())[i]; break;
    }
    return round ? double(bf16_to_float(float_to_bf16(f))) : double(f);
  }
};
bool rounds(const Conv2dParams& p) { return p.compute == DType::BFloat16; }
}  // namespace

void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                    const Tensor& out) {
  dispatch_floating(out.dtype(), "conv2d", [&]<class T>() {
    const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    const int64_t CO = weight.size(0), CG = weight.size(1), KH = weight.size(2), KW = weight.size(3);
    const int64_t OH = out.size(2), OW = out.size(3), COG = CO / p.groups;
    const Reader xp{x, rounds(p)}, wp{weight, rounds(p)};
    // In training (autograd recording) the output of a bf16 product is rounded to bf16, as the
    // oneDNN kernel writes it (nn_conv_dnnl.cpp, round_output).
    const bool round_out = rounds(p) && p.keep_layout;
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
                  acc += xp[((n * C + g * CG + ci) * H + h) * W + w] * wp[((co * CG + ci) * KH + i) * KW + j];
                }
              }
            T v = T(acc);
            if constexpr (std::is_same_v<T, float>)
              if (round_out) v = bf16_to_float(float_to_bf16(v));
            op[((n * CO + co) * OH + oh) * OW + ow] = v;
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
    const Reader gp{grad_out, rounds(p)}, wp{weight, rounds(p)};
    std::vector<double> acc(size_t(grad_x.numel()), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t co = 0; co < CO; ++co) {
        const int64_t g = co / COG;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            const double go = gp[((n * CO + co) * OH + oh) * OW + ow];
            for (int64_t ci = 0; ci < CG; ++ci)
              for (int64_t i = 0; i < KH; ++i) {
                const int64_t h = oh * p.stride_h - p.pad_h + i * p.dilation_h;
                if (h < 0 || h >= H) continue;
                for (int64_t j = 0; j < KW; ++j) {
                  const int64_t w = ow * p.stride_w - p.pad_w + j * p.dilation_w;
                  if (w < 0 || w >= W) continue;
                  acc[size_t(((n * C + g * CG + ci) * H + h) * W + w)] +=
                      go * wp[((co * CG + ci) * KH + i) * KW + j];
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
  dispatch_floating(grad_weight.dtype(), "conv2d_backward", [&]<class T>() {
    const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    const int64_t CO = grad_weight.size(0), CG = grad_weight.size(1), KH = grad_weight.size(2),
                  KW = grad_weight.size(3);
    const int64_t OH = grad_out.size(2), OW = grad_out.size(3), COG = CO / p.groups;
    const Reader gp{grad_out, rounds(p)}, xp{x, rounds(p)};
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
                  acc += gp[((n * CO + co) * OH + oh) * OW + ow] * xp[((n * C + g * CG + ci) * H + h) * W + w];
                }
              }
            wp[((co * CG + ci) * KH + i) * KW + j] = T(acc);
          }
    }
  });
}

}  // namespace ember::cpu::reference
