// The caching CUDA allocator (registered for DeviceType::CUDA by the backend) and its statistics.
//
// Blocks are rounded to size classes (512 B steps up to 1 MiB, then four classes per power of two,
// so at most 25 % waste) and freed blocks go back to a per-device, per-class free list; a later
// request of the same class reuses one without cudaMalloc. Blocks are never split or merged.
// Stream safety: every use of a block is ordered on the device's one stream (context.h).
// On cudaMalloc failure the device's cache is released and the call retried once; a second failure
// throws OutOfMemoryError with the requested, allocated, reserved, free and total bytes.
// Thread-safe (one mutex).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ember/core/storage.h"

namespace ember::cuda {

struct MemoryStats {
  uint64_t allocated = 0;       // bytes in blocks held by live tensors (size-class rounded)
  uint64_t reserved = 0;        // bytes obtained from cudaMalloc: allocated + cached
  uint64_t peak_allocated = 0;  // max of `allocated` since start or reset_peak_memory_stats
  uint64_t num_allocs = 0;      // allocate() calls that returned a block
  uint64_t num_cache_hits = 0;  // ... of which were served from the cache
  uint64_t num_device_mallocs = 0;
  uint64_t num_ooms = 0;        // OutOfMemoryErrors thrown
};

Allocator& caching_allocator();
MemoryStats memory_stats(int device);
void reset_peak_memory_stats(int device);
void empty_cache();  // returns every cached (unused) block of every device to the driver
size_t size_class(size_t nbytes);  // the rounded block size a request of nbytes gets
struct DeviceMemory {
  uint64_t free = 0, total = 0;  // cudaMemGetInfo
};
DeviceMemory device_memory(int device);

}  // namespace ember::cuda
