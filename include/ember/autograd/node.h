// Reverse-mode autograd: a graph of Nodes recorded as ops run (the "tape").
//
// Every op that produces a tensor from inputs that require grad attaches a Node to its output.
// A Node maps the gradients of its outputs to the gradients of its inputs, and holds one Edge per
// input pointing at the node that produced that input (or at the leaf's gradient accumulator).
// Backward formulas are written with ember ops, so they run on whatever device the tensors live on.
// This header is the tape only (layer "tape", below ops: it knows no op); the engine that runs
// backward over it is ember/autograd/engine.h (layer "autograd", above ops). docs/architecture.md.
//
// Accumulation: backward() ADDS into the .grad of every leaf that requires grad (never
// overwrites). Nodes release their saved tensors after backward unless retain_graph is set;
// a second backward through a released graph throws AutogradError.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::autograd {

class Node;
struct Edge {
  std::shared_ptr<Node> node;  // null: that input needs no gradient
  uint32_t input_nr = 0;       // which output of `node` the input was
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  explicit Node(std::string name) : name_(std::move(name)) {}
  virtual ~Node() = default;
  // grads: one per output of the forward op (undefined when none arrived). Returns one per edge.
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  virtual void release() {}  // drop saved tensors
  const std::string& name() const { return name_; }
  std::vector<Edge>& next_edges() { return next_; }
  uint32_t num_outputs = 1;

 protected:
  std::string name_;
  std::vector<Edge> next_;
};

// A tensor saved for backward, with the storage version at save time: unpacking it after an
// in-place write throws instead of computing a wrong gradient. It keeps a detached handle (same
// storage, no grad_fn): an op that saves its own output (relu, sigmoid, exp, ...) would otherwise
// make a cycle output -> grad_fn -> saved output that leaks the output whenever backward does not
// reach the node (a forward without backward, a backward that threw out of memory).
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t)
      : t_(t.defined() ? t.detach() : t), version_(t.defined() ? t.storage()->version() : 0) {}
  Tensor unpack(const std::string& node_name) const;
  void reset() { t_ = Tensor(); }
  bool defined() const { return t_.defined(); }

 private:
  Tensor t_;
  uint64_t version_ = 0;
};

// A node whose backward is a function (most ops use this). `fn` receives the output gradients.
using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grads)>;
class FunctionNode : public Node {
 public:
  FunctionNode(std::string name, BackwardFn fn) : Node(std::move(name)), fn_(std::move(fn)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  void release() override { fn_ = nullptr; released_ = true; }

 private:
  BackwardFn fn_;
  bool released_ = false;
};

// Is grad recording on in this thread? (On by default.)
bool grad_mode_enabled();
void set_grad_mode(bool enabled);
// RAII: no graph is recorded inside its scope (like torch.no_grad()).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(grad_mode_enabled()) { set_grad_mode(false); }
  ~NoGradGuard() { set_grad_mode(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

// True when any input requires grad and grad mode is on.
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
// Records `node` as the producer of `outputs`, with one edge per input (in order).
// Use: if (any_requires_grad({&a,&b})) record(make_node("AddBackward", fn), {a, b}, {out});
void record(const std::shared_ptr<Node>& node, const std::vector<Tensor>& inputs,
            const std::vector<Tensor>& outputs);
inline std::shared_ptr<Node> make_node(std::string name, BackwardFn fn) {
  return std::make_shared<FunctionNode>(std::move(name), std::move(fn));
}
Edge gradient_edge(const Tensor& t);

}  // namespace ember::autograd

namespace ember {
using autograd::NoGradGuard;
}
