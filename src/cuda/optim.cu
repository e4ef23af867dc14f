// Fused optimizer updates on CUDA, the twin of src/cpu/optim.cpp: one launch per parameter tensor,
// one thread per element running kernels/optim_update.h's arithmetic (explicitly rounded, no FMA), so
// each buffer is read and written once and the result equals the CPU's bit for bit.
#include "cuda/loops.cuh"
#include "kernels/optim_kernels.h"
#include "kernels/optim_update.h"

namespace ember::cuda {

namespace {

template <class T>
__global__ void sgd_step_kernel(optim_math::SgdScalars<T> s, int64_t n, T* x, const T* g, T* buf) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    T unused = T(0);
    optim_math::sgd_update<T>(s, x[i], g[i], buf ? buf[i] : unused);
  }
}

template <class T>
__global__ void adam_step_kernel(optim_math::AdamScalars<T> s, int64_t n, T* x, const T* g, T* m, T* v, T* vmax) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    T unused = T(0);
    optim_math::adam_update<T>(s, x[i], g[i], m[i], v[i], vmax ? vmax[i] : unused);
  }
}

void sgd_step(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf, const kernels::SgdStepParams& p) {
  const int64_t n = param.numel();
  if (n == 0) return;
  const int dev = param.device().index;
  DeviceGuard guard(dev);
  dispatch_floating(param.dtype(), "sgd_step", [&]<class T>() {
    const auto s = optim_math::sgd_scalars<T>(p);
    sgd_step_kernel<T><<<grid_for(n), kBlockSize, 0, stream(dev)>>>(
        s, n, param.data_ptr<T>(), grad.data_ptr<T>(), s.has_momentum ? momentum_buf.data_ptr<T>() : nullptr);
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

void adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
               const Tensor& max_exp_avg_sq, const kernels::AdamStepParams& p) {
  const int64_t n = param.numel();
  if (n == 0) return;
  const int dev = param.device().index;
  DeviceGuard guard(dev);
  dispatch_floating(param.dtype(), "adam_step", [&]<class T>() {
    const auto s = optim_math::adam_scalars<T>(p);
    adam_step_kernel<T><<<grid_for(n), kBlockSize, 0, stream(dev)>>>(
        s, n, param.data_ptr<T>(), grad.data_ptr<T>(), exp_avg.data_ptr<T>(), exp_avg_sq.data_ptr<T>(),
        s.amsgrad ? max_exp_avg_sq.data_ptr<T>() : nullptr);
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace

void register_optim_kernels() {
  kernels::sgd_step.set(DeviceType::CUDA, &sgd_step);
  kernels::adam_step.set(DeviceType::CUDA, &adam_step);
}

}  // namespace ember::cuda
