// The leaf gradient sink of the tape: record() makes one per leaf that requires grad. Declared here
// for the tape (src/autograd/tape.cpp); its apply(), which adds gradients with ops, is defined in
// the engine (src/autograd/engine.cpp), the layer above ops.
#pragma once

#include <memory>
#include <vector>

#include "ember/autograd/node.h"

namespace ember::autograd::detail {

// Adds the incoming gradient into the leaf's .grad (never overwrites).
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> var)
      : Node("AccumulateGrad"), var_(std::move(var)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;  // engine.cpp: adds with ops
  TensorImpl* var() const { return var_.get(); }

 private:
  std::shared_ptr<TensorImpl> var_;
};

}  // namespace ember::autograd::detail
