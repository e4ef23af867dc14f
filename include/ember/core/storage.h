// Storage: one reference-counted block of device memory shared by a tensor and all its views.
// Allocators are registered per device type; the CPU one keeps freed blocks of common sizes for
// reuse, so a training step after the first allocates no fresh memory. Allocators count live
// bytes and honour the memory cap (ember/core/memory.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ember/core/device.h"
#include "ember/core/memory.h"

namespace ember {

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes, Device device) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, Device device) noexcept = 0;
  // Cached free blocks back to the system (memory.h's empty_cache()).
  virtual void empty_cache() {}
  virtual MemoryUsage usage(Device) const { return {}; }
  virtual void reset_peak(Device) {}
};
// The allocator for a device type (the CPU one always exists; CUDA's is set by its backend).
Allocator* get_allocator(DeviceType type);
void set_allocator(DeviceType type, Allocator* allocator);

class StorageImpl {
 public:
  StorageImpl(size_t nbytes, Device device);  // allocates
  // Wraps memory the caller owns; `deleter` (may be empty) is called on destruction.
  StorageImpl(void* data, size_t nbytes, Device device, void (*deleter)(void*));
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  // Bumped by every in-place write; autograd compares it with the value it saved.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  void (*deleter_)(void*) = nullptr;
  bool owned_ = true;
  std::atomic<uint64_t> version_{0};
};
using Storage = std::shared_ptr<StorageImpl>;

}  // namespace ember
