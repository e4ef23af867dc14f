// Storage and the CPU allocator. The CPU allocator is 64-byte aligned and keeps freed blocks in
// per-size free lists (capped), so the same shapes allocated every training step are reused.
#include "ember/core/storage.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "core/dispatch.h"
#include "ember/core/error.h"

namespace ember {

namespace {
class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Device) override {
    size_t rounded = round(nbytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(rounded);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= rounded;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, rounded);
    if (p == nullptr) {
      release_cache();
      p = std::aligned_alloc(64, rounded);
    }
    if (p == nullptr)
      throw OutOfMemoryError(detail::cat("CPU out of memory: tried to allocate ", nbytes, " bytes"),
                             "reduce --batch-size or the model size");
    return p;
  }
  void deallocate(void* p, size_t nbytes, Device) noexcept override {
    if (p == nullptr) return;
    size_t rounded = round(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    if (rounded <= kMaxCachedBlock && cached_bytes_ + rounded <= kMaxCachedTotal) {
      try {
        free_[rounded].push_back(p);
        cached_bytes_ += rounded;
        return;
      } catch (...) {
      }
    }
    std::free(p);
  }
  void release_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, v] : free_)
      for (void* p : v) std::free(p);
    free_.clear();
    cached_bytes_ = 0;
  }
  ~CpuAllocator() override { release_cache(); }

 private:
  static size_t round(size_t n) { return n == 0 ? 64 : (n + 63) / 64 * 64; }
  static constexpr size_t kMaxCachedBlock = size_t(64) << 20;
  static constexpr size_t kMaxCachedTotal = size_t(512) << 20;
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
};

Allocator*& slot(DeviceType t) {
  static Allocator* table[kNumDeviceTypes] = {};
  return table[int(t)];
}
}  // namespace

Allocator* get_allocator(DeviceType type) {
  if (type == DeviceType::CPU) {
    static CpuAllocator* cpu = new CpuAllocator();  // leaked on purpose: outlives static tensors
    return cpu;
  }
  Allocator* a = slot(type);
  EMBER_CHECK(a != nullptr, DeviceError, "no allocator for device type ",
              type == DeviceType::CUDA ? "cuda" : "?", ": this ember was built without that backend");
  return a;
}
void set_allocator(DeviceType type, Allocator* allocator) { slot(type) = allocator; }

StorageImpl::StorageImpl(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  data_ = get_allocator(device.type)->allocate(nbytes, device);
}
StorageImpl::StorageImpl(void* data, size_t nbytes, Device device, void (*deleter)(void*))
    : data_(data), nbytes_(nbytes), device_(device), deleter_(deleter), owned_(false) {}
StorageImpl::~StorageImpl() {
  if (owned_) {
    get_allocator(device_.type)->deallocate(data_, nbytes_, device_);
  } else if (deleter_ != nullptr) {
    deleter_(data_);
  }
}

}  // namespace ember
