// The pieces of ember._core (the Python package's extension module, docs/python.md), each
// registered by its own file into the module.
#pragma once

#include <nanobind/nanobind.h>

#include <functional>
#include <optional>
#include <string>

#include "ember/core/tensor.h"
#include "ember/train/wording.h"

namespace ember::python {

namespace nb = nanobind;

void register_errors(nb::module_& m);  // errors.cpp: C++ exceptions -> ember.errors classes
void register_tensor(nb::module_& m);  // tensor.cpp: ember.Tensor, NumPy and DLPack
// tensor_api.cpp: dtypes, creation, operators, methods (PyTorch's names) on the class tensor.cpp made
void register_tensor_api(nb::module_& m, nb::class_<Tensor>& cls);
void register_autograd(nb::module_& m);  // autograd.cpp: backward, grad, grad mode, Python Functions

// ember.dtype's objects (ember.float32 ...): one per DType.
struct PyDType {
  DType value;
};
extern DType g_default_dtype;  // what Python floats become (ember.set_default_dtype)
nb::object dtype_object(DType t);
// An ember.dtype, a name ("float32", "torch.float32"), Python's float/int/bool or a NumPy dtype;
// TypeError otherwise.
DType to_dtype(nb::handle h);
// An ember.device, "cpu" / "cuda" / "cuda:N", or a CUDA index; TypeError otherwise.
Device to_device(nb::handle h);
// DeviceError (a RuntimeError) naming ember.cuda.unavailable_reason() for a CUDA device not usable here.
void check_device_usable(Device d);
// t on device and/or in dtype (the tensor itself when nothing changes), the GIL released.
Tensor convert(const Tensor& t, std::optional<Device> device, std::optional<DType> dtype);
void register_fit(nb::module_& m);     // fit.cpp: ember.fit
void register_model(nb::module_& m);   // model.cpp: ember.load, predict, export
// functional.cpp: ember._core._nn, the ops of ember.nn.functional, ember.nn.init and ember.nn.utils
void register_functional(nb::module_& m);
void register_optim(nb::module_& m);   // optim.cpp: ember._core.optim, the updates and schedules of ember.optim
void register_serialization(nb::module_& m);  // serialization.cpp: ember.save / ember.load (torch.save files)
void register_runtime(nb::module_& m);  // runtime.cpp: ember.version.cuda, cudnn.version(), ember.autocast
// vision_datasets.cpp: ember._core._vision_datasets, the readers behind ember.vision.datasets
void register_vision_datasets(nb::module_& m);
// vision_transforms.cpp: ember._core._vision, the fused per-sample pass of ember.vision.transforms.batch_plan
void register_vision_transforms(nb::module_& m);
void register_image_io(nb::module_& m);  // image_io.cpp: ember._core._image, PNG encoding for vision.utils
// distributed.cpp: ember._core._dist, ember.distributed's process group and DistributedDataParallel's reducer
void register_distributed(nb::module_& m);
// Runs a backward (autograd.cpp) feeding the DistributedDataParallel reducers a forward armed: each
// leaf's gradient goes to its bucket as it is ready; after backward they average (GIL released).
void run_backward_with_reducers(const std::function<void()>& backward);

// The library's warnings (train::warn: a setting ignored, a device fallen back to the CPU) as
// Python's warnings.warn(UserWarning) while it lives: ember.fit and ember.load both, so a user's
// filters and pytest.warns see every one of them, never a raw "ember: warning:" line on stderr.
class WarningsToPython {
 public:
  WarningsToPython()
      : previous_(train::set_warning_sink([](const std::string& msg) {
          nb::gil_scoped_acquire gil;
          try {
            nb::module_::import_("warnings").attr("warn")(msg, nb::handle(PyExc_UserWarning), 2);
          } catch (nb::python_error& e) {  // a filter turned it into an error: say it, keep going
            e.discard_as_unraisable("ember warning");
          }
        })) {}
  ~WarningsToPython() { train::set_warning_sink(std::move(previous_)); }
  WarningsToPython(const WarningsToPython&) = delete;
  WarningsToPython& operator=(const WarningsToPython&) = delete;

 private:
  train::WarningSink previous_;
};

}  // namespace ember::python
