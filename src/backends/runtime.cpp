// The runtime queries of backends/runtime.h and their public forms (Device::best(), ember::cuda::*
// of ember/cuda.h): the backends register first, then core's tables answer. A CPU-only build has no
// CUDA runtime to register, and says so.
#include "backends/runtime.h"

#include "backends/registry.h"
#include "ember/core/device.h"
#include "ember/core/error.h"
#include "ember/cuda.h"

namespace ember {

namespace {
// The registered CUDA runtime, or null in a build without one.
const CudaRuntime* cuda_runtime() {
  ensure_backends();
  return registered_cuda_runtime();
}
const char* const kBuiltWithoutCuda =
    "this ember was built without CUDA (rebuild with -DEMBER_CUDA=ON on a machine with the CUDA toolkit)";
}  // namespace

int cuda_runtime_version() {
  const CudaRuntime* r = cuda_runtime();
  return r ? r->runtime_version() : 0;
}
int cuda_device_count() {
  const CudaRuntime* r = cuda_runtime();
  return r ? r->device_count() : 0;
}
std::string cuda_unavailable_reason() {
  const CudaRuntime* r = cuda_runtime();
  return r ? r->unavailable_reason() : kBuiltWithoutCuda;
}
CudaDeviceArch cuda_device_arch(int device) {
  const CudaRuntime* r = cuda_runtime();
  return r ? r->device_arch(device) : CudaDeviceArch{};
}
double cuda_time_ms(int device, const std::function<void()>& fn, int reps) {
  const CudaRuntime* r = cuda_runtime();
  if (!r) throw DeviceError(std::string("no CUDA device: ") + kBuiltWithoutCuda);
  return r->time_ms(device, fn, reps);
}
CopyBandwidth cuda_copy_bandwidth(int device, size_t bytes, const TimingPlan& plan) {
  const CudaRuntime* r = cuda_runtime();
  if (!r) throw DeviceError(std::string("no CUDA device: ") + kBuiltWithoutCuda);
  return r->copy_bandwidth(device, bytes, plan);
}

void cuda_synchronize(int device) {
  const CudaRuntime* r = cuda_runtime();
  if (!r) throw DeviceError(std::string("no CUDA device: ") + kBuiltWithoutCuda);
  r->synchronize(device);
}

int cuda_cudnn_version() {
  const CudaRuntime* r = cuda_runtime();
  // Without a usable device nothing would run on cuDNN: it is not loaded just to be asked.
  return r && r->device_count() > 0 ? r->cudnn_version() : 0;
}

CpuLibraryFacts cpu_library_facts() {
  ensure_backends();
  const CpuLibraryQuery query = registered_cpu_libraries();
  EMBER_ASSERT(query != nullptr, "the CPU backend registered no library query (cpu::register_kernels)");
  return query();
}

// ---- the public forms ----------------------------------------------------------------------------
Device Device::best() { return cuda_device_count() > 0 ? Device::cuda(0) : Device::cpu(); }

namespace cuda {
int device_count() { return cuda_device_count(); }
bool is_available() { return cuda_device_count() > 0; }
std::string unavailable_reason() { return cuda_unavailable_reason(); }
std::string device_name(int device) {
  EMBER_CHECK(device >= 0 && device < cuda_device_count(), DeviceError, "cuda:", device,
              " is not a usable CUDA device (", cuda_device_count() ? "no such device" : cuda_unavailable_reason(), ")");
  return cuda_device_arch(device).name;
}
void device_synchronize(int device) { cuda_synchronize(device); }
int cuda_version() { return cuda_runtime_version(); }
int cudnn_version() { return cuda_cudnn_version(); }
double time_ms(int device, const std::function<void()>& fn, int reps) { return cuda_time_ms(device, fn, reps); }
CopyBandwidth copy_bandwidth(int device, size_t bytes, const TimingPlan& plan) {
  return cuda_copy_bandwidth(device, bytes, plan);
}
}  // namespace cuda

}  // namespace ember
