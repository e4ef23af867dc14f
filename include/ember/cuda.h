// What the CUDA runtime can do here, for applications: whether a GPU is usable, how many, and why
// not. A CPU-only build or a machine without a driver answers "none" with the reason; nothing here
// throws except the timing helpers, which need a device. No vendor header is included.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace ember {

// Copy bandwidth of one device, GB/s (10^9 bytes/s), as CUDA's bandwidthTest measures it.
struct CopyBandwidth {
  double h2d_pageable = 0, d2h_pageable = 0, h2d_pinned = 0, d2h_pinned = 0, d2d = 0;
};

namespace cuda {
// Number of usable CUDA devices (0 when none, no driver, or a CPU-only build).
int device_count();
// device_count() > 0.
bool is_available();
// Why no CUDA device is usable ("" when one is), e.g. "no NVIDIA driver found (libcuda.so.1 missing)".
std::string unavailable_reason();
// Milliseconds per call of fn() on cuda:device, timed with CUDA events on that device's compute
// stream over `reps` calls (after the caller's warm-up). Throws DeviceError without CUDA.
double time_ms(int device, const std::function<void()>& fn, int reps);
// Host<->device and device<->device copy bandwidth for `bytes`-sized transfers over `reps` copies
// each. Throws DeviceError without CUDA.
CopyBandwidth copy_bandwidth(int device, size_t bytes, int reps);
}  // namespace cuda

}  // namespace ember
