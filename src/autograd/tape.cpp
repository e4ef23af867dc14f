// The tape: grad mode, recording nodes onto outputs, saved tensors, function nodes and the leaves'
// gradient sinks. It knows no op and calls none; the engine that walks the tape, sums gradients and
// adds them into the leaves (engine.cpp) is above ops.
#include "autograd/accumulate_grad.h"
#include "ember/autograd/node.h"

namespace ember::autograd {

namespace {
thread_local bool g_grad_enabled = true;
}  // namespace

bool grad_mode_enabled() { return g_grad_enabled; }
void set_grad_mode(bool enabled) { g_grad_enabled = enabled; }

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor* t : inputs)
    if (t != nullptr && t->defined() && t->requires_grad()) return true;
  return false;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  if (t.grad_fn()) return {t.grad_fn(), t.impl().output_nr};
  std::shared_ptr<Node> acc = t.impl().grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<detail::AccumulateGrad>(t.impl_ptr());
    t.impl().grad_accumulator = acc;
  }
  return {acc, 0};
}

void record(const std::shared_ptr<Node>& node, const std::vector<Tensor>& inputs,
            const std::vector<Tensor>& outputs) {
  auto& edges = node->next_edges();
  edges.clear();
  for (const Tensor& in : inputs) edges.push_back(gradient_edge(in));
  node->num_outputs = uint32_t(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    TensorImpl& o = outputs[i].impl();
    o.grad_fn = node;
    o.output_nr = uint32_t(i);
    o.requires_grad = true;
  }
}

Tensor SavedTensor::unpack(const std::string& node_name) const {
  EMBER_CHECK(!t_.defined() || t_.storage()->version() == version_, AutogradError,
              "one of the tensors needed for gradient computation by ", node_name,
              " has been modified by an in-place operation (version ", t_.storage()->version(),
              ", expected ", version_, ")");
  return t_;
}

std::vector<Tensor> detail::AccumulateGrad::apply(std::vector<Tensor>&&) {
  EMBER_ASSERT(false, "AccumulateGrad::apply: the engine adds a leaf's gradient itself (engine.cpp); "
                      "nothing may run a leaf's sink as a node");
  return {};
}

std::vector<Tensor> FunctionNode::apply(std::vector<Tensor>&& grads) {
  EMBER_CHECK(!released_, AutogradError, "trying to backward through the graph a second time (",
              name_, " has already freed its saved tensors); pass retain_graph=true to the first "
              "backward() if you need to backward twice");
  // Missing output gradients are zeros to the formula; most ops have one output anyway.
  std::vector<Tensor> out = fn_(grads);
  EMBER_ASSERT(out.size() == next_.size(), name_, " returned ", out.size(), " gradients for ",
               next_.size(), " inputs");
  return out;
}

}  // namespace ember::autograd
