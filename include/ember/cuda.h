// What the CUDA runtime can do here, for applications: whether a GPU is usable, how many, and why
// not. A CPU-only build or a machine without a driver answers "none" with the reason; nothing here
// throws except the timing helpers, which need a device. No vendor header is included.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "ember/core/timing.h"

namespace ember {

// One kind of copy: GB/s (10^9 bytes/s) of its median repeat, and the timing behind it.
struct CopyRate {
  double gbps = 0;
  double bytes_moved = 0;  // per copy: the transfer size (twice it device-to-device: read and write)
  Timing timing;           // seconds per copy: warm-up, repeats
  // GB/s of a repeat that took `seconds_per_copy` (its min() is the fastest repeat's GB/s).
  double gbps_at(double seconds_per_copy) const { return bytes_moved / seconds_per_copy / 1e9; }
};

// Copy bandwidth of one device, as CUDA's bandwidthTest measures it.
struct CopyBandwidth {
  CopyRate h2d_pageable, d2h_pageable, h2d_pinned, d2h_pinned, d2d;
};

namespace cuda {
// Number of usable CUDA devices (0 when none, no driver, or a CPU-only build).
int device_count();
// device_count() > 0.
bool is_available();
// Why no CUDA device is usable ("" when one is), e.g. "no NVIDIA driver found (libcuda.so.1 missing)".
std::string unavailable_reason();
// The name of cuda:device ("NVIDIA H200"); DeviceError when it is not a usable device.
std::string device_name(int device);
// Waits until the work queued on cuda:device has finished; DeviceError without that device.
void device_synchronize(int device);
// The CUDA runtime this build carries (12080 for 12.8: the toolkit it was compiled with, linked
// statically); 0 in a build without CUDA. Needs no driver.
int cuda_version();
// The cuDNN this process loads (91200 for 9.12.0), loading it on first ask as the first convolution
// on a GPU would; 0 without a usable CUDA device, in a build without cuDNN, or when none loads.
int cudnn_version();
// Milliseconds per call of fn() on cuda:device, timed with CUDA events on that device's compute
// stream over `reps` calls (after the caller's warm-up). Throws DeviceError without CUDA.
double time_ms(int device, const std::function<void()>& fn, int reps);
// Host<->device and device<->device copy bandwidth for `bytes`-sized transfers, each kind timed
// with CUDA events by time_steady_state (ember/core/timing.h: warm-up until settled, then the
// median of plan.repeats repeats of at least plan.min_seconds and plan.min_calls copies). Throws
// DeviceError without CUDA.
CopyBandwidth copy_bandwidth(int device, size_t bytes, const TimingPlan& plan);
}  // namespace cuda

}  // namespace ember
