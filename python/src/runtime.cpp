// The top level's runtime answers for Python (python/ember/version.py, backends/cudnn.py,
// accelerator.py, amp.py): the CUDA runtime and cuDNN this process has (ember/cuda.h), and
// ember.autocast's scope over the C++ guard (ember/autocast.h), entered and left by the Python
// context manager.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>
#include <string>

#include "bindings.h"
#include "ember/autocast.h"
#include "ember/core/memory.h"
#include "ember/cuda.h"

namespace ember::python {

using namespace nb::literals;

namespace {

DeviceType autocast_device(const std::string& type) {
  if (type == "cpu") return DeviceType::CPU;
  if (type == "cuda") return DeviceType::CUDA;
  throw ValueError("autocast: device_type must be 'cpu' or 'cuda', got '" + type + "'",
                   "ember runs autocast on the CPU (bfloat16) and CUDA (bfloat16, float16)");
}

// One `with ember.autocast(...)` block: the C++ guard lives from enter() to exit(), on the thread
// that entered (the guard is thread-local, as PyTorch's autocast state).
class AutocastScope {
 public:
  AutocastScope(const std::string& device, DType dtype, bool enabled)
      : device_(autocast_device(device)), dtype_(dtype), enabled_(enabled) {}
  void enter() {
    EMBER_CHECK(!guard_, ValueError, "autocast: this autocast block is entered already (make a new one per with)");
    guard_.emplace(device_, dtype_, enabled_);
  }
  void exit() { guard_.reset(); }

 private:
  DeviceType device_;
  DType dtype_;
  bool enabled_;
  std::optional<autocast> guard_;
};

}  // namespace

void register_runtime(nb::module_& m) {
  m.def("_cuda_runtime_version", &cuda::cuda_version,
        "The CUDA runtime this build carries (12080 for 12.8); 0 without CUDA (ember.version.cuda).");
  m.def("_cudnn_version", &cuda::cudnn_version, nb::call_guard<nb::gil_scoped_release>(),
        "The cuDNN this process loads (91200), 0 when none (ember.backends.cudnn.version()).");
  nb::class_<AutocastScope>(m, "_AutocastScope", "One ember.autocast block (python/ember/amp.py).")
      .def("__init__", [](AutocastScope* s, const std::string& device, nb::handle dtype, bool enabled) {
             new (s) AutocastScope(device, to_dtype(dtype), enabled);
           }, "device_type"_a, "dtype"_a, "enabled"_a)
      .def("enter", &AutocastScope::enter)
      .def("exit", &AutocastScope::exit);
  m.def("_memory_reserved", [](int device) {
        const MemoryUsage u = memory_usage(Device::cuda(device));
        return u.live + u.cached;
      }, "device"_a, "Bytes the allocator holds on cuda:device: tensors' blocks and its cache (ember.cuda.memory_reserved).");
  m.def("_reset_peak_memory", [](int device) { reset_peak_memory(Device::cuda(device)); }, "device"_a);
  m.def("_bf16_supported", [](int device) { return bf16_support(Device::cuda(device)).native; }, "device"_a,
        "Whether cuda:device runs bfloat16 natively (sm_80+), as ember's autocast and --precision bf16 need.");
  m.def("_is_autocast_enabled", [](const std::string& device) { return autocast::is_enabled(autocast_device(device)); },
        "device_type"_a);
  m.def("_autocast_dtype", [](const std::string& device) { return dtype_object(autocast::dtype(autocast_device(device))); },
        "device_type"_a);
}

}  // namespace ember::python
