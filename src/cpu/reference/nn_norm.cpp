// Reference batch-norm kernels (batch statistics, normalise + affine forward, backward): plain
// loops accumulated in double, float32 and float64. The CPU kernels (registered by
// src/cpu/nn_norm.cpp) and the oracle of the CUDA twin (src/cuda/nn_norm.cu).
#include "cpu/reference/nn.h"

namespace ember::cpu::reference {

void batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var) {
  dispatch_floating(x.dtype(), "batch_norm", [&]<class T>() {
    const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
    const T* xp = x.data_ptr<T>();
    for (int64_t c = 0; c < C; ++c) {
      double s = 0.0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < S; ++k) s += double(xp[(n * C + c) * S + k]);
      const double m = s / double(N * S);
      double q = 0.0;  // two passes: no cancellation in E[x^2] - E[x]^2
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < S; ++k) {
          const double d = double(xp[(n * C + c) * S + k]) - m;
          q += d * d;
        }
      mean.data_ptr<T>()[c] = T(m);
      var.data_ptr<T>()[c] = T(q / double(N * S));
    }
  });
}

void batch_norm_forward(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                        const Tensor& bias, const Tensor& out) {
  dispatch_floating(x.dtype(), "batch_norm", [&]<class T>() {
    const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
    const T *xp = x.data_ptr<T>(), *mp = mean.data_ptr<T>(), *ip = invstd.data_ptr<T>();
    const T *wp = weight.data_ptr<T>(), *bp = bias.data_ptr<T>();
    T* op = out.data_ptr<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t k = 0; k < S; ++k) {
          const int64_t i = (n * C + c) * S + k;
          op[i] = T((double(xp[i]) - double(mp[c])) * double(ip[c]) * double(wp[c]) + double(bp[c]));
        }
  });
}

void batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& invstd,
                         const Tensor& weight, bool training, const Tensor& grad_x,
                         const Tensor& grad_weight, const Tensor& grad_bias) {
  dispatch_floating(x.dtype(), "batch_norm_backward", [&]<class T>() {
    const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
    const double M = double(N * S);
    const T *gp = grad_out.data_ptr<T>(), *xp = x.data_ptr<T>(), *mp = mean.data_ptr<T>();
    const T *ip = invstd.data_ptr<T>(), *wp = weight.data_ptr<T>();
    T *gxp = grad_x.data_ptr<T>(), *gwp = grad_weight.data_ptr<T>(), *gbp = grad_bias.data_ptr<T>();
    for (int64_t c = 0; c < C; ++c) {
      const double m = double(mp[c]), is = double(ip[c]), w = double(wp[c]);
      double sum_g = 0.0, sum_gxhat = 0.0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < S; ++k) {
          const int64_t i = (n * C + c) * S + k;
          sum_g += double(gp[i]);
          sum_gxhat += double(gp[i]) * (double(xp[i]) - m) * is;
        }
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < S; ++k) {
          const int64_t i = (n * C + c) * S + k;
          double g = double(gp[i]);
          if (training) g -= sum_g / M + (double(xp[i]) - m) * is * sum_gxhat / M;
          gxp[i] = T(w * is * g);
        }
      gwp[c] = T(sum_gxhat);
      gbp[c] = T(sum_g);
    }
  });
}

}  // namespace ember::cpu::reference
