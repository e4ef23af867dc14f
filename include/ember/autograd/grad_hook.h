// The "gradient ready" signal of the backward engine (engine.h): a scoped hook called right after
// backward adds into a leaf's .grad. Data-parallel training launches its all-reduce buckets on it
// while backward goes on (src/train/data_parallel.cpp).
#pragma once

#include <functional>

#include "ember/core/tensor.h"

namespace ember::autograd {

// While alive, fn(leaf) is called on this thread right after backward has added into a leaf's
// .grad. The engine sums every path into a leaf before its accumulator runs, so each leaf is
// reported once per backward, with its gradient final for that backward. A leaf that receives no
// gradient is not reported. Scopes nest (the innermost one is called). grad() does not call it
// (it leaves .grad alone).
class GradAccumulatedHook {
 public:
  explicit GradAccumulatedHook(std::function<void(const Tensor& leaf)> fn);
  ~GradAccumulatedHook();
  GradAccumulatedHook(const GradAccumulatedHook&) = delete;
  GradAccumulatedHook& operator=(const GradAccumulatedHook&) = delete;

 private:
  std::function<void(const Tensor&)> fn_;
  GradAccumulatedHook* previous_;
  friend struct GradAccumulatedHookAccess;
};

}  // namespace ember::autograd
