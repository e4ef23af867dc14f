// CPU-only builds: no CUDA runtime, so no CUDA device, and the reason says how to get one.
#ifndef EMBER_WITH_CUDA
#include "core/runtime.h"
#include "ember/core/error.h"

namespace ember {
int cuda_device_count() { return 0; }
std::string cuda_unavailable_reason() {
  return "this ember was built without CUDA (rebuild with -DEMBER_CUDA=ON on a machine with the CUDA toolkit)";
}
CudaDeviceArch cuda_device_arch(int) { return {}; }
double cuda_time_ms(int, const std::function<void()>&, int) {
  throw DeviceError("no CUDA device: " + cuda_unavailable_reason());
}
CopyBandwidth cuda_copy_bandwidth(int, size_t, const TimingPlan&) {
  throw DeviceError("no CUDA device: " + cuda_unavailable_reason());
}
}  // namespace ember
#endif
