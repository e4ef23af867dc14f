// ember's C++ exceptions raised as the classes of ember.errors (python/ember/errors.py), with
// their hint, most derived type first.
#include <nanobind/stl/string.h>

#include <string>

#include "bindings.h"
#include "ember/core/threads.h"
#include "ember/dist/error.h"
#include "ember/io/pth.h"
#include "ember/io/run_dir.h"
#include "ember/nn/spec.h"
#include "ember/train/settings.h"

namespace ember::python {
namespace {

void raise(const char* name, const char* what, const std::string& hint, const char* attr = nullptr,
           const std::string& value = {}) {
  try {
    nb::object cls = nb::module_::import_("ember.errors").attr(name);
    nb::object exc = cls(what, hint);
    if (attr) exc.attr(attr) = value;
    PyErr_SetObject(cls.ptr(), exc.ptr());
  } catch (const nb::python_error& e) {  // ember.errors cannot be imported: still say what happened
    PyErr_SetString(PyExc_RuntimeError, what);
  }
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const train::SettingError& e) {
    raise("SettingError", e.what(), e.hint());
  } catch (const nn::SpecError& e) {
    raise("SpecError", e.what(), e.hint());
  } catch (const io::RunDirInUse& e) {
    raise("RunDirInUse", e.what(), e.hint());
  } catch (const ResourceError& e) {
    raise("ResourceError", e.what(), e.hint());
  } catch (const dist::PeerFailureError& e) {
    raise("PeerFailureError", e.what(), e.hint());
  } catch (const dist::DistTimeoutError& e) {
    raise("DistTimeoutError", e.what(), e.hint());
  } catch (const dist::DistError& e) {
    raise("DistError", e.what(), e.hint());
  } catch (const io::PthForbiddenGlobalError& e) {
    raise("ForbiddenGlobalError", e.what(), e.hint(), "global_name", e.global());
  } catch (const io::PthError& e) {
    raise("UnpicklingError", e.what(), e.hint());
  } catch (const ShapeError& e) {
    raise("ShapeError", e.what(), e.hint());
  } catch (const DTypeError& e) {
    raise("DTypeError", e.what(), e.hint());
  } catch (const DeviceError& e) {
    raise("DeviceError", e.what(), e.hint());
  } catch (const ValueError& e) {
    raise("ValueError", e.what(), e.hint());
  } catch (const IndexError& e) {
    raise("IndexError", e.what(), e.hint());
  } catch (const AutogradError& e) {
    raise("AutogradError", e.what(), e.hint());
  } catch (const DataError& e) {
    raise("DataError", e.what(), e.hint());
  } catch (const IOError& e) {
    raise("IOError", e.what(), e.hint());
  } catch (const FormatError& e) {
    raise("FormatError", e.what(), e.hint());
  } catch (const CudaError& e) {
    raise("CudaError", e.what(), e.hint());
  } catch (const OutOfMemoryError& e) {
    raise("OutOfMemoryError", e.what(), e.hint());
  } catch (const NotImplementedError& e) {
    raise("NotImplementedError", e.what(), e.hint());
  } catch (const InternalError& e) {
    raise("InternalError", e.what(), e.hint());
  } catch (const Error& e) {
    raise("Error", e.what(), e.hint());
  }
}

}  // namespace

void register_errors(nb::module_&) { nb::register_exception_translator(translate); }

}  // namespace ember::python
