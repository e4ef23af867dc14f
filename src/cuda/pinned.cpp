// Pinned host allocations through cudaMallocHost, with the same error types as device memory.
#include "cuda/pinned.h"

#include <cuda_runtime_api.h>

#include "cuda/check.h"
#include "cuda/context.h"
#include "ember/core/error.h"

namespace ember::cuda {

void* pinned_allocate(size_t nbytes) {
  check_device(Device::cuda(0));
  void* p = nullptr;
  cudaError_t err = cudaMallocHost(&p, nbytes == 0 ? 1 : nbytes);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw OutOfMemoryError(::ember::detail::cat("could not allocate ", nbytes, " bytes of pinned host memory"),
                           "use fewer or smaller loader buffers, or raise the locked-memory limit (ulimit -l)");
  }
  EMBER_CUDA_CHECK(err);
  return p;
}

void pinned_free(void* p) noexcept {
  if (p != nullptr) cudaFreeHost(p);
}

}  // namespace ember::cuda
