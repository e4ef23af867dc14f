// CUDA backend registration: kernels into the dispatch table, the caching allocator for
// DeviceType::CUDA and the runtime's queries (core/runtime.h). Always registered in a CUDA build,
// GPU or not: with no usable device the allocator refuses to create CUDA tensors with a
// DeviceError that says why, and the queries say why too.
#include "cuda/register.h"

#include "core/runtime.h"
#include "cuda/allocator.h"
#include "cuda/runtime.h"

namespace ember::cuda {
void register_elementwise_kernels();
void register_activation_kernels();   // activation.cu
void register_reduce_kernels();
void register_gemm_kernels();
void register_linear_half_kernels();  // linear_half.cpp (autocast: cuBLAS half GEMMs)
void register_copy_kernels();
void register_nn_conv_kernels();     // nn_conv.cpp (cuDNN)
void register_nn_pool_kernels();     // nn_pool.cu
void register_nn_norm_kernels();     // nn_norm.cu
void register_nn_softmax_kernels();  // nn_softmax.cu
void register_nn_loss_kernels();     // nn_loss.cu
void register_optim_kernels();       // optim.cu
void register_math_kernels();        // math.cu
void register_scan_kernels();        // scan.cu
void register_index_kernels();       // index.cu
void register_data_hooks();          // stager.cpp, data.cu: the loader's stager and resident kernel

void register_kernels() {
  register_elementwise_kernels();
  register_activation_kernels();
  register_reduce_kernels();
  register_gemm_kernels();
  register_linear_half_kernels();
  register_copy_kernels();
  register_nn_conv_kernels();
  register_nn_pool_kernels();
  register_nn_norm_kernels();
  register_nn_softmax_kernels();
  register_nn_loss_kernels();
  register_optim_kernels();
  register_math_kernels();
  register_scan_kernels();
  register_index_kernels();
  register_data_hooks();
  set_allocator(DeviceType::CUDA, &caching_allocator());
  register_cuda_runtime({.runtime_version = runtime_version,
                         .device_count = runtime_device_count,
                         .unavailable_reason = runtime_unavailable_reason,
                         .device_arch = runtime_device_arch,
                         .time_ms = runtime_time_ms,
                         .copy_bandwidth = runtime_copy_bandwidth,
                         .synchronize = runtime_synchronize,
                         .cudnn_version = runtime_cudnn_version});
}
}  // namespace ember::cuda
