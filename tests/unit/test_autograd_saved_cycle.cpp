// A graph that is dropped without backward frees its tensors: ops that save their own output
// (relu, sigmoid, exp) must not form an output -> grad_fn -> saved output cycle. Found by the
// engine's out-of-memory test, where a backward that threw leaked one activation per attempt.
#include <gtest/gtest.h>

#include "ember/core/memory.h"
#include "ember/ember.h"

using namespace ember;

TEST(AutogradSavedTensors, ADroppedGraphFreesOpOutputs) {
  Tensor x = randn({64, 256});
  Tensor w = randn({256}).requires_grad_();
  const uint64_t base = memory_usage(Device::cpu()).live;
  { Tensor h = relu(mul(x, w)); }
  { Tensor h = sigmoid(mul(x, w)); }
  { Tensor h = exp(tanh(mul(x, w))); }
  EXPECT_EQ(memory_usage(Device::cpu()).live, base);
  {
    Tensor h = sum(relu(mul(x, w)));
    h.backward();  // and the normal path still works
  }
  EXPECT_TRUE(w.grad().defined());
}
