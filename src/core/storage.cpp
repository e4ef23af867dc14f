// Storage and the CPU allocator. The CPU allocator is 64-byte aligned and keeps freed blocks in
// per-size free lists (capped), so the same shapes allocated every training step are reused. It
// counts live bytes with one atomic and enforces the memory cap (memory.h) with it.
#include "ember/core/storage.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "core/dispatch.h"
#include "ember/core/error.h"

namespace ember {

namespace {
std::atomic<uint64_t> g_memory_cap{0};

std::string bytes_text(uint64_t b) {
  return b >= (uint64_t(1) << 20) ? detail::cat(b / (uint64_t(1) << 20), " MiB (", b, " bytes)")
                                  : detail::cat(b, " bytes");
}

// EMBER_MEMORY_CAP, read once before the first allocation.
void read_memory_cap_env() {
  const char* v = std::getenv("EMBER_MEMORY_CAP");
  if (v != nullptr && *v != '\0') g_memory_cap.store(parse_byte_size(v, "EMBER_MEMORY_CAP"));
}

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Device) override {
    size_t rounded = round(nbytes);
    count_live(rounded, nbytes);
    try {
      return take(rounded, nbytes);
    } catch (...) {
      live_.fetch_sub(rounded, std::memory_order_relaxed);
      throw;
    }
  }
  void deallocate(void* p, size_t nbytes, Device) noexcept override {
    if (p == nullptr) return;
    size_t rounded = round(nbytes);
    live_.fetch_sub(rounded, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_bytes_ + rounded <= cache_limit()) {
      try {
        free_[rounded].push_back(p);
        cached_bytes_ += rounded;
        return;
      } catch (...) {
      }
    }
    std::free(p);
  }
  void empty_cache() override { release_cache(); }
  MemoryUsage usage(Device) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return {live_.load(), peak_.load(), cached_bytes_};
  }
  void reset_peak(Device) override { peak_.store(live_.load()); }
  ~CpuAllocator() override { release_cache(); }

 private:
  // Adds a block to the live count; over the cap, takes it back and throws as a failed malloc would.
  void count_live(size_t rounded, size_t nbytes) {
    const uint64_t now = live_.fetch_add(rounded, std::memory_order_relaxed) + rounded;
    const uint64_t cap = g_memory_cap.load(std::memory_order_relaxed);
    if (cap != 0 && now > cap) [[unlikely]] {
      live_.fetch_sub(rounded, std::memory_order_relaxed);
      throw OutOfMemoryError(detail::cat("CPU out of memory: tried to allocate ", bytes_text(nbytes), " with ",
                                         bytes_text(now - rounded), " in use, over the memory cap of ",
                                         bytes_text(cap)),
                             "reduce --batch-size, or raise the cap (EMBER_MEMORY_CAP / set_memory_cap)");
    }
    uint64_t p = peak_.load(std::memory_order_relaxed);
    while (now > p && !peak_.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
    }
  }
  void* take(size_t rounded, size_t nbytes) {
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
      throw OutOfMemoryError(detail::cat("CPU out of memory: tried to allocate ", bytes_text(nbytes)),
                             "reduce --batch-size or the model size");
    return p;
  }
  void release_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, v] : free_)
      for (void* p : v) std::free(p);
    free_.clear();
    cached_bytes_ = 0;
  }
  static size_t round(size_t n) { return n == 0 ? 64 : (n + 63) / 64 * 64; }
  // Freed blocks are kept for reuse up to the most this process has had live at once (at least
  // 512 MiB), but never more than a quarter of the machine's memory: a training step allocates the
  // same blocks every step, and with a fixed 512 MiB (and no block over 64 MiB) kept, mobilenet_v2's
  // bf16 training at 112 px, batch 32, gave the rest back to the OS each step and faulted it in
  // again: 37% of the step in the kernel, clearing pages (perf, Zen 5, 2026-12-02). glibc's malloc
  // maps and unmaps blocks that large itself, so without this cache every step paid for it.
  // A step's blocks repeat in size, so what is kept is what the next step takes. The limit is four
  // times the peak: blocks are reused by exact size, and a step whose activations come in two
  // dtypes (bf16 held forms and their float32 gradients, training under autocast) frees blocks of
  // one size while it asks for another; at twice the peak, mobilenet_v2's bf16 step at 224 px
  // (batch 32) missed 8 blocks of 25-51 MB a step and faulted 200 MB of pages in again, while the
  // cache held 1.9 GB it did not take (2026-12-03, Zen 5). The process holds about its peak
  // live and what the cache keeps beside it.
  size_t cache_limit() const {
    static const size_t quarter_of_memory = [] {
      const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
      return pages > 0 && page > 0 ? size_t(pages) * size_t(page) / 4 : size_t(512) << 20;
    }();
    const size_t peak = size_t(peak_.load(std::memory_order_relaxed));
    return std::min(std::max(4 * peak, kMinCacheLimit), std::max(quarter_of_memory, kMinCacheLimit));
  }
  static constexpr size_t kMinCacheLimit = size_t(512) << 20;
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
  std::atomic<uint64_t> live_{0}, peak_{0};
};

Allocator*& slot(DeviceType t) {
  static Allocator* table[kNumDeviceTypes] = {};
  return table[int(t)];
}
}  // namespace

Allocator* get_allocator(DeviceType type) {
  if (type == DeviceType::CPU) {
    static CpuAllocator* cpu = (read_memory_cap_env(), new CpuAllocator());  // leaked on purpose: outlives static tensors
    return cpu;
  }
  Allocator* a = slot(type);
  EMBER_CHECK(a != nullptr, DeviceError, "no allocator for device type ",
              type == DeviceType::CUDA ? "cuda" : "?", ": this ember was built without that backend");
  return a;
}
void set_allocator(DeviceType type, Allocator* allocator) { slot(type) = allocator; }

void set_memory_cap(uint64_t bytes) {
  get_allocator(DeviceType::CPU);  // the environment's cap first, so this call wins over it
  g_memory_cap.store(bytes);
}
uint64_t memory_cap() {
  get_allocator(DeviceType::CPU);
  return g_memory_cap.load();
}
MemoryUsage memory_usage(Device device) {
  const Allocator* a = device.is_cpu() ? get_allocator(DeviceType::CPU) : slot(device.type);
  return a ? a->usage(device) : MemoryUsage{};
}
void reset_peak_memory(Device device) {
  Allocator* a = device.is_cpu() ? get_allocator(DeviceType::CPU) : slot(device.type);
  if (a) a->reset_peak(device);
}
void empty_cache() {
  for (int t = 0; t < kNumDeviceTypes; ++t) {
    Allocator* a = t == int(DeviceType::CPU) ? get_allocator(DeviceType::CPU) : slot(DeviceType(t));
    if (a) a->empty_cache();
  }
}

uint64_t parse_byte_size(const std::string& text, const std::string& what) {
  size_t i = 0;
  uint64_t v = 0;
  bool overflow = false;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    overflow |= v > (UINT64_MAX - 9) / 10;
    v = v * 10 + uint64_t(text[i++] - '0');
  }
  const size_t digits = i;
  int shift = 0;
  if (i + 1 == text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[i]))) {
      case 'K': shift = 10, ++i; break;
      case 'M': shift = 20, ++i; break;
      case 'G': shift = 30, ++i; break;
      default: break;
    }
  }
  overflow |= shift > 0 && v > (UINT64_MAX >> shift);
  if (digits == 0 || i != text.size() || overflow)
    throw ValueError(detail::cat(what, " = '", text, "' is not a byte count"),
                     "give bytes as digits with an optional K, M or G suffix (e.g. 512M), or unset it");
  return v << shift;
}

StorageImpl::StorageImpl(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  // No address space holds more than int64's bytes; above it is a size computed from a wrapped
  // count (the allocators' rounding up to blocks would wrap too), never a real request.
  if (nbytes > size_t(std::numeric_limits<int64_t>::max())) [[unlikely]]
    throw ShapeError(detail::cat("allocation of ", nbytes, " bytes: more than any address space holds (",
                                 std::numeric_limits<int64_t>::max(), ")"),
                     "the byte count was computed from sizes whose product overflowed");
  data_ = get_allocator(device.type)->allocate(nbytes, device);
}
StorageImpl::StorageImpl(void* data, size_t nbytes, Device device, void (*deleter)(void*))
    : data_(data), nbytes_(nbytes), device_(device), deleter_(deleter), owned_(false) {}
StorageImpl::~StorageImpl() {
  delete form_.load(std::memory_order_relaxed);
  if (owned_) {
    if (data_ != nullptr) get_allocator(device_.type)->deallocate(data_, nbytes_, device_);
  } else if (deleter_ != nullptr) {
    deleter_(data_);
  }
}


void StorageImpl::set_form(std::unique_ptr<StorageForm> form) {
  std::lock_guard<std::mutex> lock(settle_mu_);
  delete form_.exchange(form.release(), std::memory_order_acq_rel);
  if (owned_ && data_ != nullptr && form_.load(std::memory_order_relaxed) != nullptr) {
    get_allocator(device_.type)->deallocate(data_, nbytes_, device_);
    data_ = nullptr;
  }
}

void StorageImpl::settle() const {
  std::lock_guard<std::mutex> lock(settle_mu_);
  StorageForm* form = form_.load(std::memory_order_acquire);
  if (form == nullptr) return;  // another thread settled it meanwhile
  // The form stays readable until the plain bytes are written: write_plain may take a while, and a
  // caller that peeked form() on this thread is the one waiting here.
  if (data_ == nullptr) data_ = get_allocator(device_.type)->allocate(nbytes_, device_);
  form->write_plain(data_);
  form_.store(nullptr, std::memory_order_release);
  delete form;
}

}  // namespace ember
