// The throwing half of check.h: formats the failed CUDA / cuBLAS / cuDNN call with its location and the current device.
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

#ifdef EMBER_WITH_CUDNN
void throw_cudnn_error(cudnnStatus_t status, const char* stmt, const char* file, int line) {
  std::string msg = ::ember::detail::cat("cuDNN error ", cudnnGetErrorString(status), " (status ", int(status), ")",
                                         where(stmt, file, line));
  if (status == CUDNN_STATUS_NOT_INITIALIZED || status == CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED ||
      status == CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH || status == CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE)
    throw CudaError(msg, "cuDNN could not start: check that libcudnn*.so.9 (all of its parts, e.g. libcudnn_cnn) "
                         "are on the library path and match the CUDA runtime; `ember doctor` shows the versions");
  throw CudaError(msg);
}
#endif

}  // namespace ember::cuda::detail

namespace ember::cuda {

bool event_done(cudaEvent_t ev) {
  const cudaError_t q = cudaEventQuery(ev);
  if (q == cudaSuccess) return true;
  if (q == cudaErrorNotReady) {
    cudaGetLastError();  // not an error: the runtime records it as one all the same
    return false;
  }
  EMBER_CUDA_CHECK(q);
  return false;  // not reached: EMBER_CUDA_CHECK throws
}

}  // namespace ember::cuda
