// The backends' runtime queries for the layers above them (ops, env, train): each call registers
// the backends first (ensure_backends), then answers from what they registered with core
// (core/runtime.h). Include this, never a backend's header or its vendor's, for these answers.
// The public forms (Device::best(), ember::cuda::*) are defined with these (runtime.cpp).
#pragma once

#include <functional>
#include <string>

#include "core/runtime.h"

namespace ember {
// The version of the CUDA runtime this build carries (cudaRuntimeGetVersion: 12080 for 12.8), 0 in a
// build without CUDA or when the runtime cannot say. Needs no driver.
int cuda_runtime_version();
// Number of usable CUDA devices (0 when none, no driver, or a CPU-only build).
int cuda_device_count();
// Why no CUDA device is usable ("" when one is), e.g. "no NVIDIA driver found (libcuda.so.1 missing)".
std::string cuda_unavailable_reason();
// Compute capability, name and UUID of cuda:device; all zero / empty when the device is not usable
// or the build has no CUDA. Never throws.
CudaDeviceArch cuda_device_arch(int device);
// Milliseconds per call of fn() on cuda:device, timed with CUDA events on that device's compute
// stream over `reps` calls (after the caller's warm-up). Throws DeviceError without CUDA.
double cuda_time_ms(int device, const std::function<void()>& fn, int reps);
// Copy bandwidth of cuda:device for `bytes`-sized transfers, GB/s (10^9 bytes/s), each kind timed
// with CUDA events by time_steady_state under `plan`, as CUDA's bandwidthTest does. Throws
// DeviceError without CUDA.
CopyBandwidth cuda_copy_bandwidth(int device, size_t bytes, const TimingPlan& plan);
// Waits for the work queued on cuda:device. Throws DeviceError without CUDA or that device.
void cuda_synchronize(int device);
// The cuDNN version this process loads (91200 for 9.12.0), loading it on first ask; 0 without a
// usable CUDA device, in a build without cuDNN, or when none loads. Never throws.
int cuda_cudnn_version();
// What the CPU backend's libraries report (oneDNN's effective ISA and version, OpenBLAS's build).
CpuLibraryFacts cpu_library_facts();
}  // namespace ember
