// Per-device streams and cuBLAS / cuDNN handles, created lazily; device checks with an actionable message.
#include "cuda/context.h"

#include <mutex>
#include <vector>

#include "cuda/check.h"
#include "cuda/runtime.h"
#include "ember/core/error.h"

namespace ember::cuda {

namespace {
struct PerDevice {
  cudaStream_t stream = nullptr;
  cudaStream_t copy_stream = nullptr;
  cublasHandle_t cublas = nullptr;
#ifdef EMBER_WITH_CUDNN
  cudnnHandle_t cudnn = nullptr;
#endif
};
std::mutex& mu() {
  static std::mutex m;
  return m;
}
// Leaked on purpose: streams and handles must outlive static tensors freed at exit.
std::vector<PerDevice>& devices() {
  static auto* v = new std::vector<PerDevice>(size_t(runtime_device_count()));
  return *v;
}
}  // namespace

void check_device(Device d) {
  EMBER_ASSERT(d.is_cuda());
  const int n = runtime_device_count();
  if (n == 0)
    throw DeviceError(::ember::detail::cat(d.str(), " is not available: ", runtime_unavailable_reason()),
                      "use ember::Device::best() (or --device cpu) to run on the CPU");
  if (d.index < 0 || d.index >= n)
    throw DeviceError(::ember::detail::cat(d.str(), " is not available: this process sees ", n,
                                           " CUDA device", n == 1 ? "" : "s", " (cuda:0",
                                           n > 1 ? ::ember::detail::cat("..cuda:", n - 1) : "", ")"),
                      "pick an index below the device count; CUDA_VISIBLE_DEVICES renumbers devices from 0");
}

DeviceGuard::DeviceGuard(int index) {
  EMBER_CUDA_CHECK(cudaGetDevice(&prev_));
  if (prev_ != index) EMBER_CUDA_CHECK(cudaSetDevice(index));
}
DeviceGuard::~DeviceGuard() {
  int cur = -1;
  if (cudaGetDevice(&cur) == cudaSuccess && cur != prev_ && prev_ >= 0) cudaSetDevice(prev_);
}

cudaStream_t stream(int device) {
  std::lock_guard<std::mutex> lock(mu());
  PerDevice& p = devices().at(size_t(device));
  if (p.stream == nullptr) {
    DeviceGuard g(device);
    EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&p.stream, cudaStreamNonBlocking));
  }
  return p.stream;
}

cudaStream_t copy_stream(int device) {
  std::lock_guard<std::mutex> lock(mu());
  PerDevice& p = devices().at(size_t(device));
  if (p.copy_stream == nullptr) {
    DeviceGuard g(device);
    EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&p.copy_stream, cudaStreamNonBlocking));
  }
  return p.copy_stream;
}

cublasHandle_t cublas_handle(int device) {
  cudaStream_t s = stream(device);
  std::lock_guard<std::mutex> lock(mu());
  PerDevice& p = devices().at(size_t(device));
  if (p.cublas == nullptr) {
    DeviceGuard g(device);
    cublasHandle_t h = nullptr;
    EMBER_CUBLAS_CHECK(cublasCreate(&h));
    EMBER_CUBLAS_CHECK(cublasSetStream(h, s));
    p.cublas = h;
  }
  return p.cublas;
}

#ifdef EMBER_WITH_CUDNN
cudnnHandle_t cudnn_handle(int device) {
  cudaStream_t s = stream(device);
  std::lock_guard<std::mutex> lock(mu());
  PerDevice& p = devices().at(size_t(device));
  if (p.cudnn == nullptr) {
    DeviceGuard g(device);
    cudnnHandle_t h = nullptr;
    EMBER_CUDNN_CHECK(cudnnCreate(&h));  // loads cuDNN's sub-libraries; fails if they are missing
    EMBER_CUDNN_CHECK(cudnnSetStream(h, s));
    p.cudnn = h;
  }
  return p.cudnn;
}
#endif

void synchronize(int device) {
  DeviceGuard g(device);
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream(device)));
}

}  // namespace ember::cuda
