// The throwing half of check.h: formats the failed call with its location and the current device.
#include "cuda/check.h"

#include <string>

#include "ember/core/error.h"

namespace ember::cuda::detail {

namespace {
std::string where(const char* stmt, const char* file, int line) {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) dev = -1;
  return ::ember::detail::cat(" in `", stmt, "` at ", file, ":", line, " on ",
                     dev >= 0 ? "cuda:" + std::to_string(dev) : std::string("an unknown device"));
}
}  // namespace

void throw_cuda_error(cudaError_t err, const char* stmt, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  std::string msg = ::ember::detail::cat("CUDA error ", cudaGetErrorName(err), " (", cudaGetErrorString(err),
                                         ")", where(stmt, file, line));
  if (err == cudaErrorMemoryAllocation)
    throw OutOfMemoryError(msg, "reduce the batch size, or free cached blocks with ember::cuda::empty_cache()");
  throw CudaError(msg, err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice
                           ? "run `ember doctor` to see why no GPU is usable"
                           : "");
}

void throw_cublas_error(cublasStatus_t status, const char* stmt, const char* file, int line) {
  throw CudaError(::ember::detail::cat("cuBLAS error ", cublasGetStatusName(status), " (",
                                       cublasGetStatusString(status), ")", where(stmt, file, line)));
}

}  // namespace ember::cuda::detail
