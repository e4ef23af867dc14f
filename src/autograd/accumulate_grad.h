// The leaf gradient sink of the tape: record() makes one per leaf that requires grad, as the edge its
// consumers' gradients flow into. The tape only records it; adding a gradient into the leaf's .grad
// needs ops (to, clone, add_), so the engine, the layer above ops, does that itself when backward
// reaches a sink (src/autograd/engine.cpp, accumulate_into_leaf). Nothing else runs a node.
#pragma once

#include <memory>
#include <vector>

#include "ember/autograd/node.h"

namespace ember::autograd::detail {

// Where the gradient of `var` ends up: the engine adds into its .grad (never overwrites).
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> var)
      : Node("AccumulateGrad"), var_(std::move(var)) {}
  // The engine never calls this (it accumulates into var() itself); calling it is our bug.
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  TensorImpl* var() const { return var_.get(); }
  const std::shared_ptr<TensorImpl>& var_ptr() const { return var_; }

 private:
  std::shared_ptr<TensorImpl> var_;
};

}  // namespace ember::autograd::detail
