// Caching device allocator: size-class free lists per device, statistics, flush-and-retry on OOM.
#include "cuda/allocator.h"

#include <cuda_runtime_api.h>

#include <limits>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/runtime.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "ember/core/error.h"

namespace ember::cuda {

namespace {
std::string bytes_str(uint64_t b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(b);
  int u = 0;
  while (v >= 1024.0 && u < 6) v /= 1024.0, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, unit[u]);
  return buf;
}

class CachingAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Device device) override {
    check_device(device);
    const int d = device.index;
    EMBER_CHECK(nbytes <= (size_t(1) << 62), OutOfMemoryError, "CUDA out of memory on ", device.str(),
                ": the requested size (", nbytes, " bytes) overflows any device");
    const size_t size = size_class(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    Dev& dv = dev(d);
    if (const uint64_t cap = memory_cap(); cap != 0 && dv.stats.allocated + size > cap) {
      ++dv.stats.num_ooms;
      throw OutOfMemoryError(
          ::ember::detail::cat("CUDA out of memory on ", device.str(), ": tried to allocate ", bytes_str(nbytes),
                               " with ", bytes_str(dv.stats.allocated), " allocated, over the memory cap of ",
                               bytes_str(cap)),
          "reduce the batch size (--batch-size), or raise the cap (EMBER_MEMORY_CAP / set_memory_cap)");
    }
    auto it = dv.free.find(size);
    if (it != dv.free.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      dv.cached -= size;
      ++dv.stats.num_cache_hits;
      return note_alloc(dv, p, size);
    }
    DeviceGuard g(d);
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, size);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_cached(d, dv);  // flush this device's cache and retry once
      err = cudaMalloc(&p, size);
    }
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      ++dv.stats.num_ooms;
      size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      cudaGetLastError();
      throw OutOfMemoryError(
          ::ember::detail::cat("CUDA out of memory on ", device.str(), ": tried to allocate ", bytes_str(nbytes),
                               " (requested ", nbytes, " bytes); ember has ", bytes_str(dv.stats.allocated),
                               " allocated and ", bytes_str(dv.stats.reserved), " reserved; the device has ",
                               bytes_str(free_b), " free of ", bytes_str(total_b), " total"),
          "reduce the batch size (--batch-size) or the model size");
    }
    EMBER_CUDA_CHECK(err);
    ++dv.stats.num_device_mallocs;
    dv.stats.reserved += size;
    return note_alloc(dv, p, size);
  }

  void deallocate(void* p, size_t, Device device) noexcept override {
    if (p == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    Dev& dv = dev(device.index);
    auto it = dv.live.find(p);
    if (it == dv.live.end()) return;  // not ours: never happens, and never worth a crash
    size_t size = it->second;
    dv.live.erase(it);
    dv.stats.allocated -= size;
    try {
      dv.free[size].push_back(p);
      dv.cached += size;
    } catch (...) {
      DeviceGuard g(device.index);
      cudaFree(p);
      dv.stats.reserved -= size;
    }
  }

  MemoryStats stats(int d) {
    check_device(Device::cuda(d));
    std::lock_guard<std::mutex> lock(mu_);
    return dev(d).stats;
  }
  void reset_peak(int d) {
    check_device(Device::cuda(d));
    std::lock_guard<std::mutex> lock(mu_);
    dev(d).stats.peak_allocated = dev(d).stats.allocated;
  }
  // The core's view (ember/core/memory.h).
  MemoryUsage usage(Device device) const override {
    std::lock_guard<std::mutex> lock(mu_);
    if (size_t(device.index) >= devs_.size()) return {};
    const Dev& dv = devs_[size_t(device.index)];
    return {dv.stats.allocated, dv.stats.peak_allocated, dv.cached};
  }
  void reset_peak(Device device) override { reset_peak(device.index); }
  void empty_cache() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t d = 0; d < devs_.size(); ++d) release_cached(int(d), devs_[d]);
  }

 private:
  struct Dev {
    std::unordered_map<size_t, std::vector<void*>> free;  // size class -> cached blocks
    std::unordered_map<void*, size_t> live;               // block -> size class
    uint64_t cached = 0;
    MemoryStats stats;
  };
  Dev& dev(int d) {
    if (devs_.size() <= size_t(d)) devs_.resize(size_t(d) + 1);
    return devs_[size_t(d)];
  }
  void* note_alloc(Dev& dv, void* p, size_t size) {
    dv.live.emplace(p, size);
    dv.stats.allocated += size;
    ++dv.stats.num_allocs;
    if (dv.stats.allocated > dv.stats.peak_allocated) dv.stats.peak_allocated = dv.stats.allocated;
    return p;
  }
  // cudaFree synchronises the device, so blocks still used by queued kernels are safe to free.
  void release_cached(int d, Dev& dv) {
    if (dv.cached == 0) return;
    DeviceGuard g(d);
    for (auto& [size, blocks] : dv.free) {
      for (void* p : blocks) {
        cudaFree(p);
        dv.stats.reserved -= size;
      }
      blocks.clear();
    }
    dv.free.clear();
    dv.cached = 0;
    cudaGetLastError();
  }

  mutable std::mutex mu_;
  std::vector<Dev> devs_;
};

CachingAllocator& instance() {
  static auto* a = new CachingAllocator();  // leaked on purpose: outlives static tensors
  return *a;
}
}  // namespace

size_t size_class(size_t n) {
  constexpr size_t kSmall = size_t(1) << 20;
  if (n == 0) return 512;
  if (n <= kSmall) return (n + 511) / 512 * 512;
  // four classes per power of two: 1, 1.25, 1.5, 1.75 x 2^k
  size_t p = kSmall;
  while (p * 2 < n) p *= 2;
  size_t step = p / 4;
  return (n + step - 1) / step * step;
}

Allocator& caching_allocator() { return instance(); }
MemoryStats memory_stats(int device) { return instance().stats(device); }
void reset_peak_memory_stats(int device) { instance().reset_peak(device); }
void empty_cache() { instance().empty_cache(); }
DeviceMemory device_memory(int device) {
  check_device(Device::cuda(device));
  DeviceGuard g(device);
  size_t f = 0, t = 0;
  EMBER_CUDA_CHECK(cudaMemGetInfo(&f, &t));
  return {f, t};
}

}  // namespace ember::cuda
