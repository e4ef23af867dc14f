// cuBLAS, loaded on first use instead of at start-up. Loading libcublas.so.13 maps libcublasLt,
// whose relocations alone add ~150 MB to the resident set of every process that links it
// (measured: `ctypes.CDLL` of either library raises ru_maxrss by 151-154 MB; cudart 0.4 MB,
// cuDNN 1.2 MB). A CPU-only run of a CUDA build never calls cuBLAS, so it should not pay that:
// `ember --version` of the CUDA build went from 233 MB to the CPU build's figure.
//
// The library therefore does not link libcublas. This file defines the few cuBLAS entry points
// ember calls, each forwarding to the real function looked up with dlsym on the first call
// (LazyLibrary: cuda/lazy_library.h, which also gives the search order). The definitions are
// compiled with hidden visibility (CMakeLists.txt), so a program that also links cuBLAS itself
// keeps calling its own. A missing or unusable cuBLAS is a CudaError that says what was tried and
// how to fix it.
#include <cublas_v2.h>

#include "cuda/lazy_library.h"

namespace ember::cuda {
namespace {
#define EMBER_STR2(x) #x
#define EMBER_STR(x) EMBER_STR2(x)
LazyLibrary& cublas() {
  static LazyLibrary lib("libcublas.so." EMBER_STR(CUBLAS_VER_MAJOR), "cuBLAS",
                         "install the CUDA " EMBER_STR(CUBLAS_VER_MAJOR) " cuBLAS library (the CUDA toolkit's "
                         "libcublas, or pip nvidia-cublas)");
  return lib;
}
}  // namespace
}  // namespace ember::cuda

#define EMBER_CUBLAS_FORWARD(ret, name, params, args) \
  EMBER_LAZY_FORWARD(::ember::cuda::cublas(), ret CUBLASWINAPI, name, params, args)

extern "C" {
EMBER_CUBLAS_FORWARD(cublasStatus_t, cublasCreate_v2, (cublasHandle_t * handle), (handle))
EMBER_CUBLAS_FORWARD(cublasStatus_t, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream),
                     (handle, stream))
EMBER_CUBLAS_FORWARD(cublasStatus_t, cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode))
EMBER_CUBLAS_FORWARD(const char*, cublasGetStatusName, (cublasStatus_t status), (status))
EMBER_CUBLAS_FORWARD(const char*, cublasGetStatusString, (cublasStatus_t status), (status))
EMBER_CUBLAS_FORWARD(cublasStatus_t, cublasSgemmStridedBatched,
                     (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                      const float* alpha, const float* A, int lda, long long int strideA, const float* B, int ldb,
                      long long int strideB, const float* beta, float* C, int ldc, long long int strideC,
                      int batchCount),
                     (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
                      batchCount))
EMBER_CUBLAS_FORWARD(cublasStatus_t, cublasDgemmStridedBatched,
                     (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                      const double* alpha, const double* A, int lda, long long int strideA, const double* B, int ldb,
                      long long int strideB, const double* beta, double* C, int ldc, long long int strideC,
                      int batchCount),
                     (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
                      batchCount))
// Half-precision products (gemm.cpp, linear_half.cpp): bfloat16 / float16 operands, float32
// accumulation (CUBLAS_COMPUTE_32F) on the tensor cores.
EMBER_CUBLAS_FORWARD(cublasStatus_t, cublasGemmStridedBatchedEx,
                     (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                      const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA,
                      const void* B, cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C,
                      cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
                      cublasComputeType_t computeType, cublasGemmAlgo_t algo),
                     (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C,
                      Ctype, ldc, strideC, batchCount, computeType, algo))
}
