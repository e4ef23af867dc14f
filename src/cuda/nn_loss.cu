// cross_entropy's nll_loss kernels on CUDA, twin of src/cpu/nn_loss.cpp (cpu/reference/nn_loss.cpp):
// per-sample losses (the front-end reduces them) and their gradient. Ignored rows give 0. The
// front-end does not read the targets back from the GPU (a sync per step), so a target outside
// [0, C) gives a NaN loss and a zero gradient row here instead of an out-of-bounds read.
#include "cuda/loops.cuh"
#include "kernels/nn_kernels.h"

namespace ember::cuda {

namespace {

template <class T>
__global__ void nll_loss_forward_kernel(const T* log_probs, const int64_t* target, int64_t ignore_index, int64_t N,
                                        int64_t C, T* out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < N; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = target[i];
    out[i] = t == ignore_index ? T(0) : (t < 0 || t >= C) ? T(NAN) : -log_probs[i * C + t];
  }
}

// One thread per element of (N, C), so the zeros need no separate fill.
template <class T>
__global__ void nll_loss_backward_kernel(const T* grad_out, const int64_t* target, int64_t ignore_index, int64_t N,
                                         int64_t C, T* grad_log_probs) {
  const int64_t n = N * C;
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = k / C, t = target[i];
    grad_log_probs[k] = (t != ignore_index && k % C == t) ? -grad_out[i] : T(0);  // t outside [0, C): 0
  }
}

void nll_loss_forward(const Tensor& log_probs, const Tensor& target, int64_t ignore_index, const Tensor& out) {
  const int64_t N = log_probs.size(0), C = log_probs.size(1);
  if (N == 0) return;
  const int dev = log_probs.device().index;
  DeviceGuard guard(dev);
  dispatch_floating(log_probs.dtype(), "nll_loss", [&]<class T>() {
    nll_loss_forward_kernel<T><<<grid_for(N), kBlockSize, 0, stream(dev)>>>(
        log_probs.data_ptr<T>(), target.data_ptr<int64_t>(), ignore_index, N, C, out.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

void nll_loss_backward(const Tensor& grad_out, const Tensor& target, int64_t ignore_index,
                       const Tensor& grad_log_probs) {
  const int64_t N = grad_log_probs.size(0), C = grad_log_probs.size(1);
  if (N * C == 0) return;
  const int dev = grad_log_probs.device().index;
  DeviceGuard guard(dev);
  dispatch_floating(grad_log_probs.dtype(), "nll_loss_backward", [&]<class T>() {
    nll_loss_backward_kernel<T><<<grid_for(N * C), kBlockSize, 0, stream(dev)>>>(
        grad_out.data_ptr<T>(), target.data_ptr<int64_t>(), ignore_index, N, C, grad_log_probs.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace

void register_nn_loss_kernels() {
  kernels::nll_loss_forward.set(DeviceType::CUDA, &nll_loss_forward);
  kernels::nll_loss_backward.set(DeviceType::CUDA, &nll_loss_backward);
}

}  // namespace ember::cuda
