// Batch norm on CUDA, twin of src/cpu/nn_norm.cpp (src/cpu/reference/nn_norm.cpp): statistics,
// forward and backward over x (N, C, S), float32 and float64. Our own kernels: the slots split
// the work differently from cuDNN's batch-norm calls (statistics, forward and backward are
// separate, with invstd computed by the front-end).
//
// Per-channel sums use one block per channel with a shared-memory tree in double, as the CPU sums
// in double (in another order, so results agree to the final rounding, not bit for bit). The
// statistics take two passes, like the CPU: no cancellation in E[x^2] - E[x]^2.
#include "core/tensor_raw.h"
#include "cuda/block_reduce.cuh"
#include "kernels/nn_kernels.h"

namespace ember::cuda {

namespace {

// Element j of channel c, for j in [0, N*S): x[(n*C + c)*S + k] with n = j / S, k = j % S.
__device__ __forceinline__ int64_t channel_offset(int64_t j, int64_t c, int64_t C, int64_t S) {
  return ((j / S) * C + c) * S + j % S;
}

template <class T>
__global__ void batch_norm_stats_kernel(const T* x, int64_t N, int64_t C, int64_t S, T* mean, T* var) {
  __shared__ double buf[kBlockSize];
  const int64_t M = N * S;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double s = 0.0;
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) s += double(x[channel_offset(j, c, C, S)]);
    const double m = block_sum(s, buf) / double(M);
    double q = 0.0;
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
      const double d = double(x[channel_offset(j, c, C, S)]) - m;
      q += d * d;
    }
    q = block_sum(q, buf);
    if (threadIdx.x == 0) {
      mean[c] = T(m);
      var[c] = T(q / double(M));
    }
  }
}

// out = (x - mean[c]) * invstd[c] * weight[c] + bias[c], rounded like the CPU's (no FMA).
template <class T>
__global__ void batch_norm_forward_kernel(const T* x, const T* mean, const T* invstd, const T* weight, const T* bias,
                                          int64_t n, int64_t C, int64_t S, T* out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i / S) % C;
    const double scaled = __dmul_rn(__dmul_rn(double(x[i]) - double(mean[c]), double(invstd[c])), double(weight[c]));
    out[i] = T(__dadd_rn(scaled, double(bias[c])));
  }
}

// Per channel: sum(g) and sum(g * x_hat), written to grad_bias / grad_weight and to the double
// scratch `sums` (2 per channel) for the input-gradient pass.
template <class T>
__global__ void batch_norm_backward_sums_kernel(const T* grad_out, const T* x, const T* mean, const T* invstd,
                                                int64_t N, int64_t C, int64_t S, double* sums, T* grad_weight,
                                                T* grad_bias) {
  __shared__ double buf[kBlockSize];
  const int64_t M = N * S;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    const double m = double(mean[c]), is = double(invstd[c]);
    double sg = 0.0, sgx = 0.0;
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
      const int64_t i = channel_offset(j, c, C, S);
      const double g = double(grad_out[i]);
      sg += g;
      sgx += g * (double(x[i]) - m) * is;
    }
    sg = block_sum(sg, buf);
    sgx = block_sum(sgx, buf);
    if (threadIdx.x == 0) {
      sums[2 * c] = sg;
      sums[2 * c + 1] = sgx;
      grad_weight[c] = T(sgx);
      grad_bias[c] = T(sg);
    }
  }
}

// grad_x = weight * invstd * (g - [training] (sum_g / M + x_hat * sum_gxhat / M)).
template <class T>
__global__ void batch_norm_backward_input_kernel(const T* grad_out, const T* x, const T* mean, const T* invstd,
                                                 const T* weight, const double* sums, bool training, int64_t n,
                                                 int64_t C, int64_t S, T* grad_x) {
  const double M = double(n / C);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i / S) % C;
    const double is = double(invstd[c]);
    double g = double(grad_out[i]);
    if (training) g -= sums[2 * c] / M + (double(x[i]) - double(mean[c])) * is * sums[2 * c + 1] / M;
    grad_x[i] = T(double(weight[c]) * is * g);
  }
}

void batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var) {
  const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
  if (C == 0) return;
  const int dev = x.device().index;
  DeviceGuard guard(dev);
  dispatch_floating(x.dtype(), "batch_norm", [&]<class T>() {
    batch_norm_stats_kernel<T><<<grid_for_rows(C), block_for_length(N * S), 0, stream(dev)>>>(
        x.data_ptr<T>(), N, C, S, mean.data_ptr<T>(), var.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

void batch_norm_forward(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                        const Tensor& bias, const Tensor& out) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const int dev = x.device().index;
  DeviceGuard guard(dev);
  dispatch_floating(x.dtype(), "batch_norm", [&]<class T>() {
    batch_norm_forward_kernel<T><<<grid_for(n), kBlockSize, 0, stream(dev)>>>(
        x.data_ptr<T>(), mean.data_ptr<T>(), invstd.data_ptr<T>(), weight.data_ptr<T>(), bias.data_ptr<T>(), n,
        x.size(1), x.size(2), out.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

void batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& invstd,
                         const Tensor& weight, bool training, const Tensor& grad_x, const Tensor& grad_weight,
                         const Tensor& grad_bias) {
  const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
  if (C == 0) return;
  const int dev = x.device().index;
  DeviceGuard guard(dev);
  // Scratch from the caching allocator; freeing it after the launches is safe (one stream).
  Tensor sums = core::empty({2 * C}, DType::Float64, x.device());
  dispatch_floating(x.dtype(), "batch_norm_backward", [&]<class T>() {
    batch_norm_backward_sums_kernel<T><<<grid_for_rows(C), block_for_length(N * S), 0, stream(dev)>>>(
        grad_out.data_ptr<T>(), x.data_ptr<T>(), mean.data_ptr<T>(), invstd.data_ptr<T>(), N, C, S,
        sums.data_ptr<double>(), grad_weight.data_ptr<T>(), grad_bias.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
    const int64_t n = x.numel();
    if (n == 0) return;
    batch_norm_backward_input_kernel<T><<<grid_for(n), kBlockSize, 0, stream(dev)>>>(
        grad_out.data_ptr<T>(), x.data_ptr<T>(), mean.data_ptr<T>(), invstd.data_ptr<T>(), weight.data_ptr<T>(),
        sums.data_ptr<double>(), training, n, C, S, grad_x.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace

void register_nn_norm_kernels() {
  constexpr DeviceType kCuda = DeviceType::CUDA;
  kernels::batch_norm_stats.set(kCuda, &batch_norm_stats);
  kernels::batch_norm_forward.set(kCuda, &batch_norm_forward);
  kernels::batch_norm_backward.set(kCuda, &batch_norm_backward);
}

}  // namespace ember::cuda
