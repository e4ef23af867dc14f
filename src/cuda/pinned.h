// Page-locked ("pinned") host memory for the data loader's staging buffers: copies from it to the
// GPU run at full PCIe speed and can overlap compute. Not cached: allocate a few buffers once and
// reuse them. Needs a usable CUDA device (throws DeviceError otherwise, OutOfMemoryError when the
// OS refuses to lock that much memory).
#pragma once

#include <cstddef>

namespace ember::cuda {

void* pinned_allocate(size_t nbytes);
void pinned_free(void* p) noexcept;

// Owns one pinned buffer. Movable, not copyable.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t nbytes) : data_(pinned_allocate(nbytes)), size_(nbytes) {}
  ~PinnedBuffer() { pinned_free(data_); }
  PinnedBuffer(PinnedBuffer&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr, o.size_ = 0; }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      pinned_free(data_);
      data_ = o.data_, size_ = o.size_;
      o.data_ = nullptr, o.size_ = 0;
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ember::cuda
