// Hooks the core needs from optional backends (CUDA). Without a CUDA build they report no device.
#pragma once

#include <functional>
#include <string>

namespace ember {
// Number of usable CUDA devices (0 when none, no driver, or a CPU-only build).
int cuda_device_count();
// Why no CUDA device is usable ("" when one is), e.g. "no NVIDIA driver found (libcuda.so.1 missing)".
std::string cuda_unavailable_reason();
// Milliseconds per call of fn() on cuda:device, timed with CUDA events on that device's compute
// stream over `reps` calls (after the caller's warm-up). Throws DeviceError without CUDA.
double cuda_time_ms(int device, const std::function<void()>& fn, int reps);
}  // namespace ember
