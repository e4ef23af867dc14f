// cuBLAS, loaded on first use instead of at start-up. Loading libcublas.so.13 maps libcublasLt,
// whose relocations alone add ~150 MB to the resident set of every process that links it
// (measured: `ctypes.CDLL` of either library raises ru_maxrss by 151-154 MB; cudart 0.4 MB,
// cuDNN 1.2 MB). A CPU-only run of a CUDA build never calls cuBLAS, so it should not pay that:
// `ember --version` of the CUDA build went from 233 MB to the CPU build's figure.
//
// The library therefore does not link libcublas. This file defines the few cuBLAS entry points
// ember calls, each forwarding to the real function looked up with dlsym on the first call.
// The definitions are compiled with hidden visibility (CMakeLists.txt), so a program that also
// links cuBLAS itself keeps calling its own. The search: the usual dlopen() path (LD_LIBRARY_PATH,
// this library's RUNPATH, the ld.so cache), then the directory the CUDA runtime was loaded from.
// A missing or unusable cuBLAS is a CudaError that says what was tried and how to fix it.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "ember/core/error.h"

namespace ember::cuda {
namespace {

#define EMBER_STR2(x) #x
#define EMBER_STR(x) EMBER_STR2(x)
constexpr const char* kCublasSoname = "libcublas.so." EMBER_STR(CUBLAS_VER_MAJOR);

std::string directory_of_cudart() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

void* cublas_library() {
  static void* handle = nullptr;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    handle = dlopen(kCublasSoname, RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) return;
    error = dlerror();
    const std::string dir = directory_of_cudart();
    if (!dir.empty()) {
      const std::string beside = dir + "/" + kCublasSoname;
      handle = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) error += "; " + std::string(dlerror());
    }
  });
  if (handle == nullptr)
    throw CudaError(detail::cat("cuBLAS could not be loaded (", kCublasSoname, "): ", error,
                                ". Install the CUDA ", CUBLAS_VER_MAJOR,
                                " cuBLAS library (Debian/Ubuntu: the CUDA toolkit's libcublas, or pip "
                                "nvidia-cublas) and put its directory on LD_LIBRARY_PATH"));
  return handle;
}

void* cublas_symbol(const char* name) {
  void* lib = cublas_library();
  void* f = dlsym(lib, name);
  if (f == nullptr)
    throw CudaError(detail::cat("cuBLAS: ", kCublasSoname, " has no symbol ", name,
                                " (a cuBLAS older than the ", CUBLAS_VER_MAJOR, ".x ember was built with?)"));
  return f;
}

}  // namespace
}  // namespace ember::cuda

// Each forwarder resolves its target once (a function-local static: thread-safe initialisation).
#define EMBER_CUBLAS_FORWARD(ret, name, params, args)                                          \
  ret CUBLASWINAPI name params {                                                               \
    using Fn = ret(CUBLASWINAPI*) params;                                                      \
    static const Fn f = reinterpret_cast<Fn>(::ember::cuda::cublas_symbol(#name));             \
    return f args;                                                                             \
  }

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
}
