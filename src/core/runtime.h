// Hooks the core needs from optional backends (CUDA). Without a CUDA build they report no device.
// Applications reach them through include/ember/cuda.h (ember::cuda::device_count() and friends).
#pragma once

#include <functional>
#include <string>

#include "ember/cuda.h"  // CopyBandwidth

namespace ember {
// Number of usable CUDA devices (0 when none, no driver, or a CPU-only build).
int cuda_device_count();
// Why no CUDA device is usable ("" when one is), e.g. "no NVIDIA driver found (libcuda.so.1 missing)".
std::string cuda_unavailable_reason();
// Compute capability and name of cuda:device (e.g. 9.0, "NVIDIA H200"); all zero / empty when the
// device is not usable or the build has no CUDA. Never throws.
struct CudaDeviceArch {
  int major = 0, minor = 0;
  std::string name;
  std::string uuid;  // "GPU-8932f937-…" as `nvidia-smi -L` prints it (NVML finds the device by it)
};
CudaDeviceArch cuda_device_arch(int device);
// Milliseconds per call of fn() on cuda:device, timed with CUDA events on that device's compute
// stream over `reps` calls (after the caller's warm-up). Throws DeviceError without CUDA.
double cuda_time_ms(int device, const std::function<void()>& fn, int reps);
// Copy bandwidth of cuda:device for `bytes`-sized transfers, GB/s (10^9 bytes/s), each kind timed
// with CUDA events by time_steady_state under `plan`, as CUDA's bandwidthTest does. Throws
// DeviceError without CUDA.
CopyBandwidth cuda_copy_bandwidth(int device, size_t bytes, const TimingPlan& plan);
}  // namespace ember
