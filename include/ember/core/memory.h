// Memory accounting, the cache, and the memory cap.
//
// Every Storage allocation goes through its device type's allocator (storage.h). Allocators count
// live bytes per device: blocks held by tensors, rounded to the allocator's block size; cached free
// blocks are not live. A memory cap makes an allocation that would raise a device's live bytes
// above it throw OutOfMemoryError, the same error as running out of device memory, so out-of-memory
// handling (the training engine's micro-batch halving) can be exercised on a CPU. The cap applies
// to every device; 0 means none. The environment variable EMBER_MEMORY_CAP (bytes, with an
// optional K, M or G suffix meaning 1024, 1024^2, 1024^3) sets it when the first tensor is made.
// Thread-safe (atomics); the check costs the CPU path one atomic add per allocation.
#pragma once

#include <cstdint>
#include <string>

#include "ember/core/device.h"

namespace ember {

void set_memory_cap(uint64_t bytes);  // 0: no cap
uint64_t memory_cap();

struct MemoryUsage {
  uint64_t live = 0;    // bytes in blocks held by tensors now
  uint64_t peak = 0;    // max of `live` since start or reset_peak_memory()
  uint64_t cached = 0;  // bytes in free blocks the allocator keeps for reuse
};
// The allocator's counts for `device` (zeros for a device type whose allocator keeps none).
MemoryUsage memory_usage(Device device);
void reset_peak_memory(Device device);
// Returns every allocator's cached free blocks (CPU and each CUDA device) to the system.
void empty_cache();

// "4096", "64K", "512M", "2G" (K/M/G: powers of 1024, case-insensitive) -> bytes. ValueError naming
// `what` (e.g. "EMBER_MEMORY_CAP") otherwise.
uint64_t parse_byte_size(const std::string& text, const std::string& what);

}  // namespace ember
