// The pieces of ember._core (the Python package's extension module, docs/python.md), each
// registered by its own file into the module.
#pragma once

#include <nanobind/nanobind.h>

namespace ember::python {

namespace nb = nanobind;

void register_errors(nb::module_& m);  // errors.cpp: C++ exceptions -> ember.errors classes
void register_tensor(nb::module_& m);  // tensor.cpp: ember.Tensor, NumPy and DLPack
void register_fit(nb::module_& m);     // fit.cpp: ember.fit
void register_model(nb::module_& m);   // model.cpp: ember.load, predict, export

}  // namespace ember::python
