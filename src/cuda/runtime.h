// The CUDA runtime's answers (src/cuda/runtime.cpp), registered with core as its CudaRuntime table
// (core/runtime.h) by cuda::register_kernels(); the backend's own code (context.cpp) calls them
// directly, everything above reads them through src/backends/runtime.h.
#pragma once

#include <functional>
#include <string>

#include "core/runtime.h"

namespace ember::cuda {
int runtime_version();                    // cudaRuntimeGetVersion (12080 for 12.8); 0 when it fails
int runtime_device_count();               // usable devices (0 when none or no driver)
std::string runtime_unavailable_reason();  // "" when a device is usable
CudaDeviceArch runtime_device_arch(int device);
double runtime_time_ms(int device, const std::function<void()>& fn, int reps);
CopyBandwidth runtime_copy_bandwidth(int device, size_t bytes, const TimingPlan& plan);
// Waits for all the work queued on cuda:device (cudaDeviceSynchronize).
void runtime_synchronize(int device);
// The cuDNN this process loads (cudnnGetVersion: 91200 for 9.12.0), loading it on first ask; 0 when
// none loads or the build has no cuDNN (cudnn_lazy.cpp).
int runtime_cudnn_version();
}  // namespace ember::cuda
