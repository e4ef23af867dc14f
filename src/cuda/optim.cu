// Fused optimizer updates on CUDA (SGD, Adam/AdamW, Adagrad, Adadelta, RMSprop), the twin of
// src/cpu/optim.cpp: one launch per parameter tensor,
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

template <class T>
__global__ void adagrad_step_kernel(optim_math::AdagradScalars<T> s, int64_t n, T* x, const T* g, T* sum) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    optim_math::adagrad_update<T>(s, x[i], g[i], sum[i]);
}

template <class T>
__global__ void adadelta_step_kernel(optim_math::AdadeltaScalars<T> s, int64_t n, T* x, const T* g, T* sq, T* acc) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    optim_math::adadelta_update<T>(s, x[i], g[i], sq[i], acc[i]);
}

template <class T>
__global__ void rmsprop_step_kernel(optim_math::RmspropScalars<T> s, int64_t n, T* x, const T* g, T* sq, T* ga, T* buf) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    T ga_unused = T(0), buf_unused = T(0);
    optim_math::rmsprop_update<T>(s, x[i], g[i], sq[i], ga ? ga[i] : ga_unused, buf ? buf[i] : buf_unused);
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

void adagrad_step(const Tensor& param, const Tensor& grad, const Tensor& sum, const kernels::AdagradStepParams& p) {
  const int64_t n = param.numel();
  if (n == 0) return;
  const int dev = param.device().index;
  DeviceGuard guard(dev);
  dispatch_floating(param.dtype(), "adagrad_step", [&]<class T>() {
    adagrad_step_kernel<T><<<grid_for(n), kBlockSize, 0, stream(dev)>>>(
        optim_math::adagrad_scalars<T>(p), n, param.data_ptr<T>(), grad.data_ptr<T>(), sum.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

void adadelta_step(const Tensor& param, const Tensor& grad, const Tensor& square_avg, const Tensor& acc_delta,
                   const kernels::AdadeltaStepParams& p) {
  const int64_t n = param.numel();
  if (n == 0) return;
  const int dev = param.device().index;
  DeviceGuard guard(dev);
  dispatch_floating(param.dtype(), "adadelta_step", [&]<class T>() {
    adadelta_step_kernel<T><<<grid_for(n), kBlockSize, 0, stream(dev)>>>(
        optim_math::adadelta_scalars<T>(p), n, param.data_ptr<T>(), grad.data_ptr<T>(), square_avg.data_ptr<T>(),
        acc_delta.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

void rmsprop_step(const Tensor& param, const Tensor& grad, const Tensor& square_avg, const Tensor& grad_avg,
                  const Tensor& momentum_buf, const kernels::RmspropStepParams& p) {
  const int64_t n = param.numel();
  if (n == 0) return;
  const int dev = param.device().index;
  DeviceGuard guard(dev);
  dispatch_floating(param.dtype(), "rmsprop_step", [&]<class T>() {
    const auto s = optim_math::rmsprop_scalars<T>(p);
    rmsprop_step_kernel<T><<<grid_for(n), kBlockSize, 0, stream(dev)>>>(
        s, n, param.data_ptr<T>(), grad.data_ptr<T>(), square_avg.data_ptr<T>(),
        s.centered ? grad_avg.data_ptr<T>() : nullptr, s.has_momentum ? momentum_buf.data_ptr<T>() : nullptr);
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace

void register_optim_kernels() {
  kernels::sgd_step.set(DeviceType::CUDA, &sgd_step);
  kernels::adam_step.set(DeviceType::CUDA, &adam_step);
  kernels::adagrad_step.set(DeviceType::CUDA, &adagrad_step);
  kernels::adadelta_step.set(DeviceType::CUDA, &adadelta_step);
  kernels::rmsprop_step.set(DeviceType::CUDA, &rmsprop_step);
}

}  // namespace ember::cuda
