// A module defined in Python (ember.nn.Module, or any object with named_parameters(),
// named_buffers(), train(mode) and __call__) as the C++ nn::Module a run trains: ember.fit(model=net)
// hands it to the run's plan (ember/train/run_plan.h: PlanInputs::model). py_module.cpp.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <optional>
#include <string>

#include "ember/nn/module.h"

namespace ember::python {

namespace nb = nanobind;

class PythonModule : public nn::Module {
 public:
  // Registers the object's parameters and buffers, the same tensors (not copies). The GIL is held.
  // ValueError for a parameter that is not a leaf or not floating point, TypeError (Python's) for
  // named_parameters() items that are not (str, ember.Tensor) pairs.
  explicit PythonModule(nb::object obj);
  ~PythonModule() override;

  // Calls the object under the GIL. What it raises is kept (raised()) and the run is stopped with
  // train::CallerRaised (ember/train/fit_types.h); a result that is not an ember.Tensor is a TypeError.
  Tensor forward(const Tensor& x) override;

  // What the run records: "python:<class name>" (ember/train/caller_model.h).
  const std::string& run_name() const { return run_name_; }
  // The first exception the object's forward raised, handed over once (GIL not needed).
  std::optional<nb::python_error> take_raised();
  // Tells the object the training mode the run left this module in (GIL held).
  void sync_mode();

 private:
  nb::object obj_;
  std::string run_name_;
  bool has_train_ = false;
  bool told_training_ = true;  // the mode last given to the object's train(mode)
  std::optional<nb::python_error> raised_;
};

}  // namespace ember::python
