// The public CUDA queries (include/ember/cuda.h), answered by the runtime hooks of core/runtime.h
// that the CUDA backend defines (src/cuda/runtime.cpp) or a CPU-only build stubs
// (src/core/runtime_cpu_only.cpp).
#include "ember/cuda.h"

#include "core/runtime.h"

namespace ember::cuda {
int device_count() { return cuda_device_count(); }
bool is_available() { return cuda_device_count() > 0; }
std::string unavailable_reason() { return cuda_unavailable_reason(); }
double time_ms(int device, const std::function<void()>& fn, int reps) { return cuda_time_ms(device, fn, reps); }
CopyBandwidth copy_bandwidth(int device, size_t bytes, const TimingPlan& plan) {
  return cuda_copy_bandwidth(device, bytes, plan);
}
}  // namespace ember::cuda
