// CUDA runtime probing: how many devices are usable, and if none, exactly why. Every call's
// return code is checked: with no driver, cudaGetDeviceCount returns cudaErrorInsufficientDriver
// (35) and leaves the count untouched.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string>

#include "core/runtime.h"
#include "core/visible_devices.h"
#include "cuda/check.h"
#include "cuda/context.h"

namespace ember {

namespace {
// " (CUDA_VISIBLE_DEVICES='-1' hides every device)" and the like; "" when the variable is unset.
std::string visible_devices_note() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  if (v == nullptr) return "";
  VisibleDevices vis = parse_visible_devices(std::string(v));
  std::string note = std::string("; CUDA_VISIBLE_DEVICES='") + v + "'";
  if (vis.count() == 0) note += " hides every device";
  if (!vis.stopped_at.empty()) note += " (the list stops at the invalid entry '" + vis.stopped_at + "')";
  return note;
}

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
      r.reason = "no CUDA device found (check CUDA_VISIBLE_DEVICES and nvidia-smi)" + visible_devices_note();
    } else if (err != cudaSuccess) {
      r.reason = std::string("CUDA initialisation failed: ") + cudaGetErrorName(err) + " (" +
                 cudaGetErrorString(err) + ")";
    } else if (n == 0) {
      r.reason = "no CUDA device found (check CUDA_VISIBLE_DEVICES and nvidia-smi)" + visible_devices_note();
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

double cuda_time_ms(int device, const std::function<void()>& fn, int reps) {
  cuda::check_device(Device::cuda(device));
  cuda::DeviceGuard guard(device);
  cudaEvent_t start, stop;
  EMBER_CUDA_CHECK(cudaEventCreate(&start));
  EMBER_CUDA_CHECK(cudaEventCreate(&stop));
  float ms = 0;
  try {
    EMBER_CUDA_CHECK(cudaEventRecord(start, cuda::stream(device)));
    for (int i = 0; i < reps; ++i) fn();
    EMBER_CUDA_CHECK(cudaEventRecord(stop, cuda::stream(device)));
    EMBER_CUDA_CHECK(cudaEventSynchronize(stop));
    EMBER_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return double(ms) / std::max(reps, 1);
}

}  // namespace ember
