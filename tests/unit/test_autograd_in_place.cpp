// In place on a tensor with history (ops.h in_place_with_history, PyTorch's rule for a non-leaf):
// gradients flow through the change and match the out-of-place program; a leaf and a tensor whose
// memory a view shares are refused. And autograd::grad's inputs no gradient reaches: zeros, or
// undefined when asked (Python's allow_unused=True).
#include <gtest/gtest.h>

#include <string>

#include "ember/autograd/engine.h"
#include "ember/core/error.h"
#include "ember/ops.h"

using namespace ember;

namespace {
Tensor leaf(std::vector<float> v) { return from_blob_copy(v.data(), {int64_t(v.size())}, DType::Float32).requires_grad_(); }
}  // namespace

TEST(AutogradInPlace, ANonLeafChangedInPlaceDifferentiatesLikeTheOutOfPlaceProgram) {
  Tensor x = leaf({-1.0f, 0.5f, 2.0f});
  Tensor y = mul(x, 2.0);
  in_place_with_history(y, [&](const Tensor& v) { return mul(v, x); }, "mul_");  // y = 2x * x
  in_place_with_history(y, [](const Tensor& v) { return add(v, 1.0); }, "add_");
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3.0f, 1.5f, 9.0f}));
  EXPECT_FALSE(y.is_leaf());
  sum(y).backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{-4.0f, 2.0f, 8.0f}));  // d(2x^2)/dx = 4x
}

TEST(AutogradInPlace, ALeafAndSharedMemoryAreRefused) {
  Tensor x = leaf({1.0f, 2.0f});
  try {
    in_place_with_history(x, [](const Tensor& v) { return add(v, 1.0); }, "add_");
    ADD_FAILURE() << "a leaf was changed";
  } catch (const AutogradError& e) {
    EXPECT_EQ(std::string(e.what()), "a leaf Variable that requires grad is being used in an in-place operation.");
  }
  Tensor y = mul(x, 2.0);
  Tensor first = y.select(0, 0);
  EXPECT_THROW(in_place_with_history(first, [](const Tensor& v) { return add(v, 1.0); }, "add_"), AutogradError);
  EXPECT_THROW(in_place_with_history(y, [](const Tensor& v) { return add(v, 1.0); }, "add_"), AutogradError);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2.0f, 4.0f})) << "refused before anything was written";
}

TEST(AutogradInPlace, GradOfAnUnusedInputIsZerosOrUndefinedWhenAsked) {
  Tensor x = leaf({1.0f, 2.0f}), unused = leaf({3.0f});
  Tensor z = sum(mul(x, 3.0));
  auto g = autograd::grad({z}, {x, unused}, {}, /*retain_graph=*/true);
  EXPECT_EQ(g[1].to_vector<float>(), (std::vector<float>{0.0f}));
  g = autograd::grad({z}, {x, unused}, {}, false, /*unused_undefined=*/true);
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{3.0f, 3.0f}));
  EXPECT_FALSE(g[1].defined());
}
