// Fused optimizer updates on the CPU (ops/optim_kernels.h): one pass over each parameter with the
// element arithmetic of ops/optim_update.h, so the result equals the reference path's in-place ops
// bit for bit while reading and writing each buffer once instead of several times.
#include "ops/optim_kernels.h"
#include "ops/optim_update.h"

namespace ember::cpu {

namespace {

// Large parameters are split across OpenMP threads; small ones (biases) are not worth the fork.
constexpr int64_t kParallelThreshold = int64_t(1) << 15;

void sgd_step(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf, const kernels::SgdStepParams& p) {
  dispatch_floating(param.dtype(), "sgd_step", [&]<class T>() {
    const auto s = optim_math::sgd_scalars<T>(p);
    const int64_t n = param.numel();
    T* x = param.data_ptr<T>();
    const T* g = grad.data_ptr<T>();
    T* buf = s.has_momentum ? momentum_buf.data_ptr<T>() : nullptr;
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
    for (int64_t i = 0; i < n; ++i) {
      T unused = T(0);
      optim_math::sgd_update<T>(s, x[i], g[i], buf ? buf[i] : unused);
    }
  });
}

void adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
               const Tensor& max_exp_avg_sq, const kernels::AdamStepParams& p) {
  dispatch_floating(param.dtype(), "adam_step", [&]<class T>() {
    const auto s = optim_math::adam_scalars<T>(p);
    const int64_t n = param.numel();
    T* x = param.data_ptr<T>();
    const T* g = grad.data_ptr<T>();
    T* m = exp_avg.data_ptr<T>();
    T* v = exp_avg_sq.data_ptr<T>();
    T* vmax = s.amsgrad ? max_exp_avg_sq.data_ptr<T>() : nullptr;
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
    for (int64_t i = 0; i < n; ++i) {
      T unused = T(0);
      optim_math::adam_update<T>(s, x[i], g[i], m[i], v[i], vmax ? vmax[i] : unused);
    }
  });
}

}  // namespace

void register_optim_kernels() {
  kernels::sgd_step.set(DeviceType::CPU, &sgd_step);
  kernels::adam_step.set(DeviceType::CPU, &adam_step);
}

}  // namespace ember::cpu
