// Storage: one reference-counted block of device memory shared by a tensor and all its views.
// Allocators are registered per device type; the CPU one keeps freed blocks of common sizes for
// reuse, so a training step after the first allocates no fresh memory. Allocators count live
// bytes and honour the memory cap (ember/core/memory.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

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

// A storage's values held in a backend's own layout instead of its plain bytes (issue 24: a CPU
// convolution's output left in oneDNN's blocked layout for the next convolution or pooling to read
// as it is). While a storage holds one, its plain bytes are stale; StorageImpl::data() writes them
// from the form first and drops it, so whoever reads or writes through data() -- a user's
// .data(), a reduction, the loss, a checkpoint, an in-place op -- sees the plain layout. Kernels that
// understand a form read it through StorageImpl::form() instead, without settling it.
class StorageForm {
 public:
  virtual ~StorageForm() = default;
  // Writes the values into `plain` (the storage's own block, its nbytes) in the plain layout.
  virtual void write_plain(void* plain) const = 0;
};

class StorageImpl {
 public:
  StorageImpl(size_t nbytes, Device device);  // allocates
  // Wraps memory the caller owns; `deleter` (may be empty) is called on destruction.
  StorageImpl(void* data, size_t nbytes, Device device, void (*deleter)(void*));
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  // The plain bytes, written from the form first if the storage holds one (and the form dropped).
  void* data() const {
    if (form_.load(std::memory_order_acquire) != nullptr) [[unlikely]] settle();
    return data_;
  }
  // The form the values are held in, or null when the plain bytes are current. For the kernels of
  // the thread that runs the ops (a data() call from another thread drops the form).
  const StorageForm* form() const { return form_.load(std::memory_order_acquire); }
  // Holds the values in `form` from now on; the plain bytes are stale until data() is called. An
  // owned block goes back to the allocator meanwhile (a training step holds most of its
  // activations: keeping both blocks doubled their memory) and is allocated again to settle.
  void set_form(std::unique_ptr<StorageForm> form);
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  // Bumped by every in-place write; autograd compares it with the value it saved.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  mutable void* data_ = nullptr;  // null while an owned storage holds a form
  size_t nbytes_ = 0;
  Device device_;
  void (*deleter_)(void*) = nullptr;
  bool owned_ = true;
  std::atomic<uint64_t> version_{0};
  mutable std::atomic<StorageForm*> form_{nullptr};
  mutable std::mutex settle_mu_;
  void settle() const;
};
using Storage = std::shared_ptr<StorageImpl>;

}  // namespace ember
