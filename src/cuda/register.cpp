// CUDA backend registration: kernels into the dispatch table and the caching allocator for
// DeviceType::CUDA. Always registered in a CUDA build, GPU or not: with no usable device the
// allocator refuses to create CUDA tensors with a DeviceError that says why.
#include "cuda/allocator.h"

namespace ember::cuda {
void register_elementwise_kernels();
void register_reduce_kernels();
void register_gemm_kernels();
void register_copy_kernels();

void register_kernels() {
  register_elementwise_kernels();
  register_reduce_kernels();
  register_gemm_kernels();
  register_copy_kernels();
  set_allocator(DeviceType::CUDA, &caching_allocator());
}
}  // namespace ember::cuda
