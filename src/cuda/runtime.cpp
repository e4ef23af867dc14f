// CUDA runtime probing: how many devices are usable, and if none, exactly why. Every call's
// return code is checked: with no driver, cudaGetDeviceCount returns cudaErrorInsufficientDriver
// (35) and leaves the count untouched.
#include <cuda_runtime_api.h>

#include <string>

#include "core/runtime.h"

namespace ember {

namespace {
struct Probe {
  int count = 0;
  std::string reason;
};
const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err == cudaErrorInsufficientDriver) {
      int drv = 0;
      cudaDriverGetVersion(&drv);
      r.reason = drv == 0 ? "no NVIDIA driver found (libcuda.so.1 missing or not loadable)"
                          : "the NVIDIA driver is too old for this CUDA runtime (driver supports CUDA " +
                                std::to_string(drv / 1000) + "." + std::to_string(drv % 1000 / 10) + ")";
    } else if (err == cudaErrorNoDevice) {
      r.reason = "no CUDA device found (check CUDA_VISIBLE_DEVICES and nvidia-smi)";
    } else if (err != cudaSuccess) {
      r.reason = std::string("CUDA initialisation failed: ") + cudaGetErrorName(err) + " (" +
                 cudaGetErrorString(err) + ")";
    } else if (n == 0) {
      r.reason = "no CUDA device found (check CUDA_VISIBLE_DEVICES and nvidia-smi)";
    } else {
      r.count = n;
    }
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return r;
  }();
  return p;
}
}  // namespace

int cuda_device_count() { return probe().count; }
std::string cuda_unavailable_reason() { return probe().reason; }

}  // namespace ember
