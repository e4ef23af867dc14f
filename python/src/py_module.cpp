// ember.fit(model=net): a module defined in Python trained by the library's run (ember/train/run_plan.h,
// PlanInputs::model). Its parameters and buffers are registered by the names named_parameters() and
// named_buffers() give ("fc1.weight" under a child "fc1", so state_dict() and the checkpoints use
// PyTorch's keys), each the same TensorImpl as the Python tensor: the optimizer's in-place updates,
// load_state_dict() on a resume and the final evaluation's selected weights all land in the
// object's own tensors. forward calls the object (its __call__: hooks run, as in PyTorch) under
// the GIL, which ember.fit released around the run.
//
// Devices: the run moves the model with nn::Module::to(device), which converts every registered
// tensor IN PLACE (the TensorImpl stays, its storage is re-pointed: ember/nn/module.h), so on a CUDA
// run the object's parameters and buffers are on the GPU when its forward runs, with nothing to
// re-read. Tensors the object keeps outside named_parameters()/named_buffers() do not move (as in
// PyTorch), and a parameter or buffer the object replaces by another tensor (rather than updating
// it in place, as optimizers and BatchNorm's running statistics do) is not the one the run trains.
#include "py_module.h"

#include <nanobind/stl/string.h>

#include <set>
#include <string>
#include <utility>

#include "ember/train/caller_model.h"
#include "ember/train/fit_types.h"

namespace ember::python {
namespace {

std::string class_name(nb::handle obj) { return nb::cast<std::string>(obj.type().attr("__name__")); }

// The module under `path` ("features.0"), made as a plain nn::Module named after the object's own
// submodule's class when it has get_submodule (ember.nn.Module, PyTorch's), so printing shows it.
nn::Module& child_at(nn::Module& root, nb::handle obj, const std::string& path) {
  nn::Module* m = &root;
  size_t begin = 0;
  while (begin < path.size()) {
    const size_t dot = std::min(path.find('.', begin), path.size());
    const std::string part = path.substr(begin, dot - begin);
    std::shared_ptr<nn::Module> next;
    for (const auto& [name, c] : m->named_children())
      if (name == part) next = c;
    if (!next) {
      std::string type = "Module";
      if (nb::hasattr(obj, "get_submodule")) {
        try {
          type = class_name(obj.attr("get_submodule")(path.substr(0, dot)));
        } catch (nb::python_error&) {  // only the printed name was at stake
        }
      }
      next = m->register_module(part, std::make_shared<nn::Module>(type));
    }
    m = next.get();
    begin = dot + 1;
  }
  return *m;
}

// (name, tensor) pairs from named_parameters() / named_buffers(): TypeError otherwise.
std::vector<std::pair<std::string, Tensor>> named_tensors(nb::handle obj, const char* method) {
  std::vector<std::pair<std::string, Tensor>> out;
  if (!nb::hasattr(obj, method)) return out;
  for (nb::handle item : obj.attr(method)()) {
    nb::tuple pair;
    if (!nb::try_cast(item, pair) || pair.size() != 2 || !nb::isinstance<nb::str>(pair[0]) ||
        !nb::isinstance<Tensor>(pair[1])) {
      const std::string msg = class_name(obj) + "." + method + "() must give (name, ember.Tensor) pairs, as "
                              "ember.nn.Module's does; it gave " + nb::cast<std::string>(nb::repr(item));
      PyErr_SetString(PyExc_TypeError, msg.c_str());
      throw nb::python_error();
    }
    out.emplace_back(nb::cast<std::string>(pair[0]), nb::cast<Tensor>(pair[1]));
  }
  return out;
}

}  // namespace

PythonModule::PythonModule(nb::object obj)
    : nn::Module(class_name(obj)), obj_(std::move(obj)), run_name_(train::caller_model_name("python", type_name())) {
  has_train_ = nb::hasattr(obj_, "train");  // a duck type without modes is told none
  if (nb::hasattr(obj_, "training")) told_training_ = nb::cast<bool>(obj_.attr("training"));
  std::set<const TensorImpl*> seen;  // a tensor tied under two names is trained once (PyTorch's dedup)
  auto add = [&](const std::string& name, const Tensor& t, bool parameter) {
    if (!seen.insert(&t.impl()).second) return;
    const size_t dot = name.rfind('.');
    nn::Module& owner = dot == std::string::npos ? *this : child_at(*this, obj_, name.substr(0, dot));
    const std::string leaf = dot == std::string::npos ? name : name.substr(dot + 1);
    if (parameter) owner.register_parameter(leaf, t, t.requires_grad());
    else owner.register_buffer(leaf, t);
  };
  for (const auto& [name, t] : named_tensors(obj_, "named_parameters")) add(name, t, true);
  for (const auto& [name, t] : named_tensors(obj_, "named_buffers")) add(name, t, false);
}

PythonModule::~PythonModule() {
  nb::gil_scoped_acquire gil;  // the plan may let go of it anywhere
  raised_.reset();
  obj_.reset();
}

Tensor PythonModule::forward(const Tensor& x) {
  nb::gil_scoped_acquire gil;
  try {
    if (has_train_ && is_training() != told_training_) {  // the run's mode, told before the object can see it
      obj_.attr("train")(is_training());
      told_training_ = is_training();
    }
    nb::object out = obj_(x);
    if (!nb::isinstance<Tensor>(out)) {
      const std::string msg = type_name() + "'s forward returned " + class_name(out) + ", not an ember.Tensor of logits";
      PyErr_SetString(PyExc_TypeError, msg.c_str());
      throw nb::python_error();
    }
    return nb::cast<Tensor>(out);
  } catch (nb::python_error& e) {
    const std::string type = class_name(e.value());
    const std::string what = nb::cast<std::string>(nb::str(e.value()));
    bool shape = false;
    try {
      shape = e.matches(nb::module_::import_("ember.errors").attr("ShapeError"));
    } catch (nb::python_error&) {
    }
    if (!raised_) raised_.emplace(std::move(e));
    throw train::CallerRaised(what, type, shape);
  }
}

std::optional<nb::python_error> PythonModule::take_raised() {
  std::optional<nb::python_error> e = std::move(raised_);
  raised_.reset();
  return e;
}

void PythonModule::sync_mode() {
  if (!has_train_ || is_training() == told_training_) return;
  obj_.attr("train")(is_training());
  told_training_ = is_training();
}

}  // namespace ember::python
