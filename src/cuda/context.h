// Per-device state of the CUDA backend: the one stream every ember kernel, copy and cuBLAS call on
// a device is ordered on, the cuBLAS handle, and a guard that makes a device current.
//
// Ordering contract: all work for cuda:N goes to stream(N), so the caching allocator may hand a
// freed block to the next tensor without waiting. Host reads go through device_copy, which
// synchronises. Thread safety: stream() and cublas_handle() create lazily under a mutex; using
// one device from several host threads at once is not supported yet.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "ember/core/device.h"

namespace ember::cuda {

// Throws DeviceError unless `d` names a usable CUDA device:
//   "cuda:0 is not available: <cuda_unavailable_reason()>" or "... this process sees 1 CUDA device".
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
cublasHandle_t cublas_handle(int device);  // created on first use, bound to stream(device)
void synchronize(int device);              // waits for stream(device)

}  // namespace ember::cuda
