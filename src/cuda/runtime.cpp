// CUDA runtime probing: how many devices are usable, and if none, exactly why; event timing and copy
// bandwidth. Registered with core (core/runtime.h) by cuda::register_kernels(). Every call's return
// code is checked: with no driver, cudaGetDeviceCount returns cudaErrorInsufficientDriver (35) and
// leaves the count untouched.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdlib>
#include <vector>
#include <string>

#include "cuda/runtime.h"

#include "core/visible_devices.h"
#include "ember/core/error.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/pinned.h"

namespace ember::cuda {

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

int runtime_version() {
  int v = 0;
  return cudaRuntimeGetVersion(&v) == cudaSuccess && v > 0 ? v : 0;
}
int runtime_device_count() { return probe().count; }
std::string runtime_unavailable_reason() { return probe().reason; }

CudaDeviceArch runtime_device_arch(int device) {
  if (device < 0 || device >= probe().count) return {};
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  // cudaDeviceProp::uuid is the 16 bytes nvidia-smi prints as GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
  std::string uuid = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) uuid += '-';
    uuid += fmt::format("{:02x}", static_cast<unsigned char>(prop.uuid.bytes[i]));
  }
  return {prop.major, prop.minor, prop.name, uuid};
}

double runtime_time_ms(int device, const std::function<void()>& fn, int reps) {
  check_device(Device::cuda(device));
  DeviceGuard guard(device);
  cudaEvent_t start, stop;
  EMBER_CUDA_CHECK(cudaEventCreate(&start));
  EMBER_CUDA_CHECK(cudaEventCreate(&stop));
  float ms = 0;
  try {
    EMBER_CUDA_CHECK(cudaEventRecord(start, stream(device)));
    for (int i = 0; i < reps; ++i) fn();
    EMBER_CUDA_CHECK(cudaEventRecord(stop, stream(device)));
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

void runtime_synchronize(int device) {
  check_device(Device::cuda(device));
  DeviceGuard guard(device);
  EMBER_CUDA_CHECK(cudaDeviceSynchronize());
}

CopyBandwidth runtime_copy_bandwidth(int device, size_t bytes, const TimingPlan& plan) {
  check_device(Device::cuda(device));
  DeviceGuard guard(device);
  cudaStream_t st = stream(device);
  std::vector<unsigned char> pageable(bytes, 1);
  PinnedBuffer pinned(bytes);
  void *d0 = nullptr, *d1 = nullptr;
  EMBER_CUDA_CHECK(cudaMalloc(&d0, bytes));
  if (cudaMalloc(&d1, bytes) != cudaSuccess) {
    cudaFree(d0);
    throw OutOfMemoryError("bench bandwidth: cannot allocate two device buffers of " + std::to_string(bytes) + " bytes");
  }
  // Each kind: time_steady_state's warm-up and repeats, every batch of copies timed with events.
  auto rate = [&](void* dst, const void* src, cudaMemcpyKind kind, double moved) {
    auto copy = [&] { EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, st)); };
    CopyRate r;
    r.bytes_moved = moved;
    r.timing = time_steady_state([&](int64_t n) { return runtime_time_ms(device, copy, int(n)) * double(n) * 1e-3; }, plan);
    r.gbps = r.gbps_at(r.timing.median());
    return r;
  };
  CopyBandwidth r;
  try {
    const double b = double(bytes);
    r.h2d_pageable = rate(d0, pageable.data(), cudaMemcpyHostToDevice, b);
    r.d2h_pageable = rate(pageable.data(), d0, cudaMemcpyDeviceToHost, b);
    r.h2d_pinned = rate(d0, pinned.data(), cudaMemcpyHostToDevice, b);
    r.d2h_pinned = rate(pinned.data(), d0, cudaMemcpyDeviceToHost, b);
    // A device-to-device copy reads and writes every byte: count both, as bandwidthTest does.
    r.d2d = rate(d1, d0, cudaMemcpyDeviceToDevice, 2 * b);
  } catch (...) {
    cudaFree(d0);
    cudaFree(d1);
    throw;
  }
  cudaFree(d0);
  cudaFree(d1);
  return r;
}

}  // namespace ember::cuda
