// Reference softmax / log_softmax kernels along one dim, forward and backward: max-subtracted
// loops accumulated in double, float32 and float64. The CPU kernels (registered by
// src/cpu/nn_softmax.cpp) and the oracle of the CUDA twin (src/cuda/nn_softmax.cu).
#include "cpu/reference/nn.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ember::cpu::reference {

namespace {
using kernels::DimSplit;
using kernels::split_at;
}  // namespace

void softmax_forward(const Tensor& x, int64_t dim, bool log, const Tensor& out) {
  dispatch_floating(x.dtype(), log ? "log_softmax" : "softmax", [&]<class T>() {
    const DimSplit s = split_at(x, dim);
    const T* xp = x.data_ptr<T>();
    T* op = out.data_ptr<T>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t in = 0; in < s.inner; ++in) {
        const int64_t base = o * s.d * s.inner + in;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < s.d; ++k) mx = std::max(mx, double(xp[base + k * s.inner]));
        double z = 0.0;  // subtracting the max keeps exp() from overflowing
        for (int64_t k = 0; k < s.d; ++k) z += std::exp(double(xp[base + k * s.inner]) - mx);
        const double lz = std::log(z);
        for (int64_t k = 0; k < s.d; ++k) {
          const double v = double(xp[base + k * s.inner]) - mx;
          op[base + k * s.inner] = T(log ? v - lz : std::exp(v) / z);
        }
      }
  });
}

void softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, bool log, const Tensor& grad_x) {
  dispatch_floating(out.dtype(), log ? "log_softmax_backward" : "softmax_backward", [&]<class T>() {
    const DimSplit s = split_at(out, dim);
    const T *gp = grad_out.data_ptr<T>(), *yp = out.data_ptr<T>();
    T* gxp = grad_x.data_ptr<T>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t in = 0; in < s.inner; ++in) {
        const int64_t base = o * s.d * s.inner + in;
        double acc = 0.0;  // log: sum(g); softmax: sum(g * y)
        for (int64_t k = 0; k < s.d; ++k) {
          const int64_t i = base + k * s.inner;
          acc += log ? double(gp[i]) : double(gp[i]) * double(yp[i]);
        }
        for (int64_t k = 0; k < s.d; ++k) {
          const int64_t i = base + k * s.inner;
          gxp[i] = log ? T(double(gp[i]) - std::exp(double(yp[i])) * acc)
                       : T(double(yp[i]) * (double(gp[i]) - acc));
        }
      }
  });
}

}  // namespace ember::cpu::reference
