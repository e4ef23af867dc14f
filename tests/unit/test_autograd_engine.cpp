// The autograd engine (src/autograd): chains and accumulation into .grad, autograd::grad leaving
// .grad alone, unused inputs, the errors for non-scalar outputs, a second backward, in-place
// changes to saved tensors and to leaves, and NoGradGuard/detach.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include "support/gradcheck.h"

using namespace ember;
using ember::test::rand_leaf;

TEST(Autograd, SimpleChainAndAccumulation) {
  Tensor x = tensor({1.f, 2.f, 3.f}).requires_grad_();
  Tensor y = (x * x).sum();
  y.backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2, 4, 6}));
  // Gradients accumulate: a second backward adds.
  (x * 3.0).sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{5, 7, 9}));
}

TEST(Autograd, GradAccumulatesAndUnusedInputsGetNone) {
  Tensor a = rand_leaf({3}, 20), b = rand_leaf({3}, 21);
  (a * 2.0).sum().backward();
  EXPECT_FALSE(b.grad().defined());
  Tensor g1 = a.grad().clone();
  (a * 2.0).sum().backward();
  EXPECT_TRUE(allclose(a.grad(), g1 * 2.0));
  // autograd::grad does not touch .grad
  auto g = autograd::grad({(a * b).sum()}, {a, b});
  EXPECT_TRUE(allclose(g[0], b.detach()));
  EXPECT_TRUE(allclose(a.grad(), g1 * 2.0));
}

TEST(Autograd, Errors) {
  Tensor x = tensor({1.f, 2.f}).requires_grad_();
  Tensor y = x * x;
  try {
    y.backward();
    FAIL();
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("scalar outputs"), std::string::npos);
  }
  Tensor s = (x * x).sum();
  s.backward();
  try {
    s.backward();
    FAIL();
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("second time"), std::string::npos);
  }
  Tensor r = (x * x).sum();
  r.backward({}, true);
  r.backward();  // retain_graph allowed the second
  EXPECT_THROW(tensor({1.f}).backward(), AutogradError);
  {
    NoGradGuard g;
    EXPECT_FALSE((x * 2.0).requires_grad());
  }
  EXPECT_FALSE((x * 2.0).detach().requires_grad());
}

TEST(Autograd, InPlaceAfterSaveIsDetected) {
  Tensor a = rand_leaf({3}, 22);
  Tensor h = a * 1.0;  // non-leaf without grad requirement after detach
  Tensor d = h.detach();
  Tensor y = mul(a, d);  // saves d
  d.add_(1.0);           // modifies saved tensor's storage
  EXPECT_THROW(y.sum().backward(), AutogradError);
}

TEST(Autograd, InPlaceOnLeafRequiringGrad) {
  Tensor w = ones({3}).requires_grad_();
  EXPECT_THROW(w.add_(1.0), AutogradError);
  NoGradGuard g;
  w.add_(1.0);  // allowed for parameter updates
  EXPECT_EQ(w.sum().item<float>(), 6.0f);
}
