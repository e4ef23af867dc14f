// ember._core: the extension module behind the `ember` Python package (python/ember/__init__.py
// re-exports it; docs/python.md). This file: the module itself, the doctor and ember.cuda.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "bindings.h"
#include "ember/core/tensor.h"
#include "ember/cuda.h"
#include "ember/env/doctor.h"

namespace ember::python {
namespace {

// `ember doctor --json`'s text, from the same library call as the CLI (env::run_doctor), also
// auditing the interpreter this runs in (sys.executable: a venv that is not activated is not on PATH).
// Probing reads /proc, dlopen()s the NVIDIA libraries and asks each interpreter for its frameworks, so
// the GIL is released.
std::string doctor_json(bool audit_python, const std::vector<std::string>& pythons, int python_timeout) {
  const std::string running = nb::cast<std::string>(nb::module_::import_("sys").attr("executable"));
  nb::gil_scoped_release unlocked;
  const env::DoctorReport r = env::run_doctor({.audit_python = audit_python,
                                               .pythons = pythons,
                                               .running_python = running,
                                               .python_timeout_ms = python_timeout * 1000});
  return env::to_json(r.facts, r.verdict);
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "ember's C++ library from Python (the extension module behind `import ember`).";
  m.attr("__version__") = ember::version();
  // ember.float32 and the other dtype objects live as long as the interpreter on purpose (leaked, so
  // that none is released after Python is gone): not a reference-counting bug to report at exit.
  nb::set_leak_warnings(false);
  register_errors(m);
  register_tensor(m);
  register_autograd(m);
  register_fit(m);
  register_model(m);
  register_functional(m);
  register_optim(m);
  register_serialization(m);
  register_runtime(m);
  register_vision_datasets(m);
  register_vision_transforms(m);
  register_image_io(m);
  register_distributed(m);
  m.def("_doctor_json", &doctor_json, nb::arg("audit_python") = true, nb::arg("pythons") = std::vector<std::string>{},
        nb::arg("python_timeout") = 60, "`ember doctor --json`'s report (ember.doctor() parses it).");

  nb::module_ c = m.def_submodule("cuda", "The CUDA runtime as ember sees it.");
  c.def("is_available", &cuda::is_available, "Whether a CUDA device can be used (a driver, a device, a CUDA build).");
  c.def("device_count", &cuda::device_count, "The CUDA devices ember can use (0 without a usable driver).");
  c.def("unavailable_reason", &cuda::unavailable_reason,
        "Why no CUDA device can be used (\"\" when one can): the doctor's first line on it.");
  c.def("get_device_name", [](int device) { return cuda::device_name(device); }, nb::arg("device") = 0,
        "The name of cuda:device (\"NVIDIA H200\"); ember.DeviceError when it is not usable.");
  c.def("synchronize", [](int device) { cuda::device_synchronize(device); }, nb::arg("device") = 0,
        nb::call_guard<nb::gil_scoped_release>(), "Waits for the work queued on cuda:device.");
}

}  // namespace ember::python
