// The backward engine: counts dependencies from the roots, then runs nodes in topological order
// (Kahn), summing the gradients that reach each node's outputs before running it. It sits above
// the ops layer and sums with ops; the tape it walks (tape.cpp) sits below and knows no op.
#include "ember/autograd/engine.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "autograd/accumulate_grad.h"
#include "ember/autograd/grad_hook.h"
#include "ember/ops.h"

namespace ember::autograd {

namespace {
thread_local GradAccumulatedHook* t_grad_hook = nullptr;
}  // namespace

struct GradAccumulatedHookAccess {
  static void call(const Tensor& leaf) {
    if (t_grad_hook) t_grad_hook->fn_(leaf);
  }
};

GradAccumulatedHook::GradAccumulatedHook(std::function<void(const Tensor&)> fn)
    : fn_(std::move(fn)), previous_(t_grad_hook) {
  t_grad_hook = this;
}
GradAccumulatedHook::~GradAccumulatedHook() { t_grad_hook = previous_; }

namespace {
// What backward does at a leaf's sink (the tape's AccumulateGrad, which records but cannot add):
// adds the incoming gradient into the leaf's .grad, never overwriting it.
void accumulate_into_leaf(detail::AccumulateGrad& sink, std::vector<Tensor>&& grads) {
  Tensor g = std::move(grads[0]);
  if (!g.defined()) return;
  const std::shared_ptr<TensorImpl>& leaf = sink.var_ptr();
  Tensor v(leaf);
  if (g.dtype() != v.dtype()) g = g.to(v.dtype());
  if (!leaf->grad) {
    // .grad must be a fresh, contiguous tensor that nothing else aliases, so that a later add_
    // into it is safe. When the sink holds the only handle on the only view of its storage
    // (the usual case: a kernel's output), the gradient is taken as it is instead of cloned.
    const bool sole_owner = g.impl_ptr().use_count() == 1 && g.storage().use_count() == 1 &&
                            g.is_contiguous() && g.storage_offset() == 0 && !g.grad_fn();
    if (sole_owner) leaf->grad = g.impl_ptr();
    else leaf->grad = g.contiguous().is_same(g) ? g.clone().impl_ptr() : g.contiguous().impl_ptr();
  } else {
    Tensor(leaf->grad).add_(g);
  }
  GradAccumulatedHookAccess::call(v);
}

// Runs the graph below `roots`. With `capture` non-empty, gradients flowing into those
// (node, slot) pairs are returned instead of accumulated into leaves' .grad.
void run_backward(const std::vector<Edge>& roots, const std::vector<Tensor>& root_grads,
                  bool retain_graph, const std::vector<Edge>* capture,
                  std::vector<Tensor>* captured) {
  NoGradGuard no_grad;  // backward formulas never record a graph (no double backward)
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, std::shared_ptr<Node>> keep;
  std::vector<Node*> stack;
  for (const Edge& e : roots) {
    if (!e.node) continue;
    if (keep.emplace(e.node.get(), e.node).second) stack.push_back(e.node.get());
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (Edge& e : n->next_edges()) {
      if (!e.node) continue;
      deps[e.node.get()]++;
      if (keep.emplace(e.node.get(), e.node).second) stack.push_back(e.node.get());
    }
  }
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto add_to = [&](Node* n, uint32_t slot, const Tensor& g) {
    auto& buf = buffers[n];
    if (buf.size() < n->num_outputs) buf.resize(std::max<uint32_t>(n->num_outputs, slot + 1));
    if (!g.defined()) return;
    buf[slot] = buf[slot].defined() ? add(buf[slot], g) : g;
  };
  for (size_t i = 0; i < roots.size(); ++i)
    if (roots[i].node) add_to(roots[i].node.get(), roots[i].input_nr, root_grads[i]);

  std::vector<Node*> ready;
  for (const Edge& e : roots)
    if (e.node && deps[e.node.get()] == 0 &&
        std::find(ready.begin(), ready.end(), e.node.get()) == ready.end())
      ready.push_back(e.node.get());

  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    std::vector<Tensor> in = std::move(buffers[n]);
    buffers.erase(n);
    in.resize(n->num_outputs);
    if (capture) {
      for (size_t i = 0; i < capture->size(); ++i)
        if ((*capture)[i].node.get() == n) {
          uint32_t slot = (*capture)[i].input_nr;
          if (slot < in.size() && in[slot].defined())
            (*captured)[i] = (*captured)[i].defined() ? add((*captured)[i], in[slot]) : in[slot];
        }
    }
    auto* sink = dynamic_cast<detail::AccumulateGrad*>(n);
    if (capture && sink != nullptr) continue;
    bool any = std::any_of(in.begin(), in.end(), [](const Tensor& t) { return t.defined(); });
    std::vector<Tensor> out;
    if (any) {
      if (sink != nullptr) accumulate_into_leaf(*sink, std::move(in));  // a leaf: no edges onward
      else out = n->apply(std::move(in));
    } else {
      out.resize(n->next_edges().size());
    }
    if (!retain_graph) n->release();
    auto& edges = n->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      Node* next = edges[i].node.get();
      if (!next) continue;
      if (i < out.size()) add_to(next, edges[i].input_nr, out[i]);
      if (--deps[next] == 0) ready.push_back(next);
    }
  }
}
}  // namespace

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph) {
  std::vector<Edge> edges;
  for (const Tensor& r : roots) edges.push_back(gradient_edge(r));
  run_backward(edges, grads, retain_graph, nullptr, nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph, bool unused_undefined) {
  std::vector<Edge> roots;
  std::vector<Tensor> seeds;
  for (size_t i = 0; i < outputs.size(); ++i) {
    EMBER_CHECK(outputs[i].requires_grad(), AutogradError,
                "grad: output ", i, " does not require grad");
    roots.push_back(gradient_edge(outputs[i]));
    if (i < grad_outputs.size() && grad_outputs[i].defined()) {
      seeds.push_back(grad_outputs[i]);
    } else {
      EMBER_CHECK(outputs[i].numel() == 1, AutogradError,
                  "grad: grad can be implicitly created only for scalar outputs");
      seeds.push_back(ones_like(outputs[i]));
    }
  }
  std::vector<Edge> capture;
  for (const Tensor& in : inputs) {
    EMBER_CHECK(in.requires_grad(), AutogradError, "grad: an input does not require grad");
    capture.push_back(gradient_edge(in));
  }
  std::vector<Tensor> result(inputs.size());
  run_backward(roots, seeds, retain_graph, &capture, &result);
  if (!unused_undefined)
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!result[i].defined()) result[i] = zeros_like(inputs[i]);
  return result;
}

}  // namespace ember::autograd

namespace ember {
// Declared with Tensor in include/ember/core/tensor.h; defined here, where the engine is.
void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  EMBER_CHECK(requires_grad(), AutogradError,
              "backward: this tensor does not require grad and has no grad_fn (did you create it "
              "under NoGradGuard, or forget requires_grad_() on the inputs?)");
  Tensor g = gradient;
  if (!g.defined()) {
    EMBER_CHECK(numel() == 1, AutogradError, "backward: grad can be implicitly created only for "
                "scalar outputs; this tensor has shape ", shape_str(sizes()),
                ": pass a gradient of that shape, or reduce it first (e.g. .sum())");
    g = ones_like(*this);
  } else {
    EMBER_CHECK(g.sizes() == sizes(), ShapeError, "backward: gradient shape ", shape_str(g.sizes()),
                " does not match the tensor's shape ", shape_str(sizes()));
  }
  autograd::backward({*this}, {g}, retain_graph);
}
}  // namespace ember
