// softmax and log_softmax on CUDA along any dim, the twin of src/cpu/nn_softmax.cpp (kernels in
// src/cpu/reference/nn_softmax.cpp). A contiguous tensor is (outer, D, inner) around the dim; one block per
// (outer, inner) row reduces its D values (stride `inner`) with a shared-memory tree. As on the
// CPU: the row maximum is subtracted before exp(), and sums accumulate in double.
#include <cmath>

#include "cuda/block_reduce.cuh"
#include "kernels/nn_kernels.h"

namespace ember::cuda {

namespace {

using kernels::DimSplit;
using kernels::split_at;

template <class T>
__global__ void softmax_forward_kernel(const T* x, DimSplit s, bool log, T* out) {
  __shared__ double buf[kBlockSize];
  const int64_t rows = s.outer * s.inner;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = (r / s.inner) * s.d * s.inner + r % s.inner;
    double mx = -INFINITY;
    for (int64_t k = threadIdx.x; k < s.d; k += blockDim.x) {
      const double v = double(x[base + k * s.inner]);
      if (mx < v) mx = v;  // std::max(mx, v): NaN never becomes the maximum
    }
    mx = block_max(mx, buf);
    double z = 0.0;
    for (int64_t k = threadIdx.x; k < s.d; k += blockDim.x) z += exp(double(x[base + k * s.inner]) - mx);
    z = block_sum(z, buf);
    const double lz = ::log(z);
    for (int64_t k = threadIdx.x; k < s.d; k += blockDim.x) {
      const double v = double(x[base + k * s.inner]) - mx;
      out[base + k * s.inner] = T(log ? v - lz : exp(v) / z);
    }
  }
}

// log: grad_x = g - exp(y) * sum(g); softmax: grad_x = y * (g - sum(g * y)).
template <class T>
__global__ void softmax_backward_kernel(const T* grad_out, const T* out, DimSplit s, bool log, T* grad_x) {
  __shared__ double buf[kBlockSize];
  const int64_t rows = s.outer * s.inner;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = (r / s.inner) * s.d * s.inner + r % s.inner;
    double acc = 0.0;
    for (int64_t k = threadIdx.x; k < s.d; k += blockDim.x) {
      const int64_t i = base + k * s.inner;
      acc += log ? double(grad_out[i]) : double(grad_out[i]) * double(out[i]);
    }
    acc = block_sum(acc, buf);
    for (int64_t k = threadIdx.x; k < s.d; k += blockDim.x) {
      const int64_t i = base + k * s.inner;
      grad_x[i] = log ? T(double(grad_out[i]) - exp(double(out[i])) * acc)
                      : T(double(out[i]) * (double(grad_out[i]) - acc));
    }
  }
}

void softmax_forward(const Tensor& x, int64_t dim, bool log, const Tensor& out) {
  if (x.numel() == 0) return;
  const DimSplit s = split_at(x, dim);
  const int dev = x.device().index;
  DeviceGuard guard(dev);
  dispatch_floating(x.dtype(), log ? "log_softmax" : "softmax", [&]<class T>() {
    softmax_forward_kernel<T><<<grid_for_rows(s.outer * s.inner), block_for_length(s.d), 0, stream(dev)>>>(
        x.data_ptr<T>(), s, log, out.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

void softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, bool log, const Tensor& grad_x) {
  if (out.numel() == 0) return;
  const DimSplit s = split_at(out, dim);
  const int dev = out.device().index;
  DeviceGuard guard(dev);
  dispatch_floating(out.dtype(), log ? "log_softmax_backward" : "softmax_backward", [&]<class T>() {
    softmax_backward_kernel<T><<<grid_for_rows(s.outer * s.inner), block_for_length(s.d), 0, stream(dev)>>>(
        grad_out.data_ptr<T>(), out.data_ptr<T>(), s, log, grad_x.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace

void register_nn_softmax_kernels() {
  kernels::softmax_forward.set(DeviceType::CUDA, &softmax_forward);
  kernels::softmax_backward.set(DeviceType::CUDA, &softmax_backward);
}

}  // namespace ember::cuda
