// One checking macro family for every CUDA runtime, cuBLAS and cuDNN call, and a launch check for
// every kernel launch. A failure throws ember::CudaError naming the statement, file, line and device.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#ifdef EMBER_WITH_CUDNN  // defined only for the files that use cuDNN (see CMakeLists.txt)
#include <cudnn.h>
#endif

namespace ember::cuda::detail {
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* stmt, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* stmt, const char* file, int line);
#ifdef EMBER_WITH_CUDNN
[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* stmt, const char* file, int line);
#endif
}  // namespace ember::cuda::detail

#define EMBER_CUDA_CHECK(stmt)                                                         \
  do {                                                                                 \
    cudaError_t ember_cuda_err_ = (stmt);                                              \
    if (ember_cuda_err_ != cudaSuccess)                                                \
      ::ember::cuda::detail::throw_cuda_error(ember_cuda_err_, #stmt, __FILE__, __LINE__); \
  } while (0)

#define EMBER_CUBLAS_CHECK(stmt)                                                           \
  do {                                                                                     \
    cublasStatus_t ember_cublas_st_ = (stmt);                                              \
    if (ember_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                         \
      ::ember::cuda::detail::throw_cublas_error(ember_cublas_st_, #stmt, __FILE__, __LINE__); \
  } while (0)

#define EMBER_CUDNN_CHECK(stmt)                                                          \
  do {                                                                                   \
    cudnnStatus_t ember_cudnn_st_ = (stmt);                                              \
    if (ember_cudnn_st_ != CUDNN_STATUS_SUCCESS)                                         \
      ::ember::cuda::detail::throw_cudnn_error(ember_cudnn_st_, #stmt, __FILE__, __LINE__); \
  } while (0)

namespace ember::cuda {
// Whether the work before `ev` has finished, without waiting. A not-yet-finished event makes
// cudaEventQuery return cudaErrorNotReady AND leave it as the runtime's last error, so the next
// EMBER_CUDA_LAUNCH_CHECK() would blame an unrelated kernel for it: this clears it. Any other
// error throws CudaError (through EMBER_CUDA_CHECK). Call every event poll through it.
bool event_done(cudaEvent_t ev);
}  // namespace ember::cuda

// Right after every <<<...>>>: catches bad launch configurations (and earlier sticky errors).
#define EMBER_CUDA_LAUNCH_CHECK() EMBER_CUDA_CHECK(cudaGetLastError())
