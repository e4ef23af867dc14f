// Per-device state of the CUDA backend: the one stream every ember kernel, copy, cuBLAS and cuDNN
// call on a device is ordered on, the cuBLAS and cuDNN handles, and a guard that makes a device
// current.
//
// Ordering contract: all work for cuda:N goes to stream(N), so the caching allocator may hand a
// freed block to the next tensor without waiting. The one exception is copy_stream(N): only the
// loader's stager uses it, on memory it owns, synchronised with stream(N) by events. Host reads go through device_copy, which
// synchronises. Thread safety: stream(), cublas_handle() and cudnn_handle() create lazily under a mutex; using
// one device from several host threads at once is not supported yet.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#ifdef EMBER_WITH_CUDNN  // defined only for the files that use cuDNN (see CMakeLists.txt)
#include <cudnn.h>
#endif

#include "ember/core/device.h"

namespace ember::cuda {

// Throws DeviceError unless `d` names a usable CUDA device:
//   "cuda:0 is not available: <runtime_unavailable_reason()>" or "... this process sees 1 CUDA device".
void check_device(Device d);

// Makes `index` the current device for its lifetime and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
};

cudaStream_t stream(int device);           // created on first use (non-blocking)
// A second stream per device for host-to-device batch uploads (the data loader's stager), so the
// copy of the next batch overlaps the kernels of this one. Work on it is ordered against stream()
// only by explicit events (cudaStreamWaitEvent), never implicitly.
cudaStream_t copy_stream(int device);      // created on first use (non-blocking)
cublasHandle_t cublas_handle(int device);  // created on first use, bound to stream(device)
#ifdef EMBER_WITH_CUDNN
cudnnHandle_t cudnn_handle(int device);    // created on first use, bound to stream(device)
#endif
void synchronize(int device);              // waits for stream(device)

}  // namespace ember::cuda
