// ember.autograd from Python: backward and grad through the C++ engine (the GIL released while it
// runs), grad mode, tensors saved for backward with their version, and autograd.Function: a C++
// Node on the tape that calls the Python backward (ember/autograd/function.py) under the GIL.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "ember/autograd/engine.h"
#include "ember/autograd/node.h"

namespace ember::python {

using namespace nb::literals;

namespace {

const char* const kFreedGraph =
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward.";

struct OutputMeta {
  Shape sizes;
  DType dtype;
  Device device;
};

// One application of a Python autograd.Function. `ctx` is the Function's context object:
// ctx._run_backward(grads) returns one gradient (a Tensor or None) per tensor input, in order.
// Gradients that did not reach an output arrive as zeros (PyTorch materialises them too).
class PythonFunctionNode : public autograd::Node {
 public:
  PythonFunctionNode(std::string name, nb::object ctx, std::vector<OutputMeta> outputs)
      : Node(std::move(name)), ctx_(std::move(ctx)), outputs_(std::move(outputs)) {}

  ~PythonFunctionNode() override {
    if (!Py_IsInitialized()) {  // the interpreter is gone: nothing to release the context into
      ctx_.release();
      return;
    }
    nb::gil_scoped_acquire gil;
    ctx_.reset();
  }

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    nb::gil_scoped_acquire gil;
    EMBER_CHECK(!released_, AutogradError, kFreedGraph);
    nb::list gs;
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const OutputMeta& o = outputs_[i];
      Tensor g = i < grads.size() ? grads[i] : Tensor();
      if (!g.defined()) g = zeros(o.sizes, {.dtype = o.dtype, .device = o.device});
      gs.append(nb::cast(std::move(g)));
    }
    nb::object r = ctx_.attr("_run_backward")(nb::tuple(gs));
    std::vector<Tensor> out;
    for (nb::handle h : r) out.push_back(h.is_none() ? Tensor() : nb::cast<Tensor>(h));
    EMBER_CHECK(out.size() == next_.size(), InternalError, name_, ": ", out.size(), " gradients for ", next_.size(),
                " tensor inputs");
    return out;
  }

  void release() override {
    nb::gil_scoped_acquire gil;
    released_ = true;
    ctx_.attr("_release")();
  }

 private:
  nb::object ctx_;
  std::vector<OutputMeta> outputs_;
  bool released_ = false;
};

std::vector<Tensor> tensors(const std::vector<std::optional<Tensor>>& v) {
  std::vector<Tensor> out;
  for (auto& t : v) out.push_back(t.value_or(Tensor()));
  return out;
}

}  // namespace

void register_autograd(nb::module_& m) {
  nb::module_ a = m.def_submodule("_autograd", "ember.autograd's C++ half (python/ember/autograd/).");
  a.def("is_grad_enabled", &autograd::grad_mode_enabled, "Whether ops record a graph on this thread.");
  a.def("set_grad_enabled", &autograd::set_grad_mode, "mode"_a);
  a.def("backward", [](const Tensor& t, std::optional<Tensor> gradient, bool retain_graph) {
        run_backward_with_reducers([&] { t.backward(gradient.value_or(Tensor()), retain_graph); });
      }, "tensor"_a, "gradient"_a = nb::none(), "retain_graph"_a = false, nb::call_guard<nb::gil_scoped_release>());
  a.def("backward_many", [](const std::vector<Tensor>& roots, const std::vector<std::optional<Tensor>>& grads,
                            bool retain_graph) {
        std::vector<Tensor> seeds = tensors(grads);
        for (size_t i = 0; i < roots.size(); ++i) {
          EMBER_CHECK(roots[i].requires_grad(), AutogradError, "element ", i,
                      " of tensors does not require grad and does not have a grad_fn");
          if (!seeds[i].defined()) {
            EMBER_CHECK(roots[i].numel() == 1, AutogradError, "grad can be implicitly created only for scalar outputs");
            seeds[i] = ones_like(roots[i]);
          }
        }
        run_backward_with_reducers([&] { autograd::backward(roots, seeds, retain_graph); });
      }, "tensors"_a, "grad_tensors"_a, "retain_graph"_a, nb::call_guard<nb::gil_scoped_release>());
  // An input no gradient reached comes back as None (the Python side decides allow_unused's error).
  a.def("grad", [](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                   const std::vector<std::optional<Tensor>>& grad_outputs, bool retain_graph) {
        std::vector<std::optional<Tensor>> out;
        for (Tensor& g : autograd::grad(outputs, inputs, tensors(grad_outputs), retain_graph, true))
          out.push_back(g.defined() ? std::optional<Tensor>(std::move(g)) : std::nullopt);
        return out;
      }, "outputs"_a, "inputs"_a, "grad_outputs"_a, "retain_graph"_a, nb::call_guard<nb::gil_scoped_release>());
  a.def("record_function", [](nb::object ctx, const std::string& name, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& outputs) {
        std::vector<OutputMeta> meta;
        for (const Tensor& o : outputs) meta.push_back({o.sizes(), o.dtype(), o.device()});
        autograd::record(std::make_shared<PythonFunctionNode>(name, std::move(ctx), std::move(meta)), inputs, outputs);
      }, "ctx"_a, "name"_a, "inputs"_a, "outputs"_a,
        "Records a Python Function's application: outputs get a node whose backward calls ctx._run_backward.");
  a.def("grad_fn_name", [](const Tensor& t) -> std::optional<std::string> {
        if (!t.grad_fn()) return std::nullopt;
        return t.grad_fn()->name();
      });

  // A tensor saved for backward with its version: unpacking it after an in-place change raises.
  nb::class_<autograd::SavedTensor>(a, "SavedTensor")
      .def(nb::init<const Tensor&>(), "tensor"_a)
      .def("unpack", [](const autograd::SavedTensor& s, const std::string& node) { return s.unpack(node); }, "node"_a);
}

}  // namespace ember::python
