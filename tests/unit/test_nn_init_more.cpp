// torch.nn.init's remaining fills (xavier_normal_, trunc_normal_, orthogonal_, eye_), the gains,
// and the layers' default initialisation the Python layers call (reset_weight_and_bias_,
// reset_embedding_). Philox draws differ from PyTorch's Mersenne Twister, so the checks are the
// distributions' properties (bounds, moments, orthogonality), not PyTorch's numbers.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>

#include "support/errors.h"

using namespace ember;
namespace init = ember::nn::init;
using ember::test::expect_error;

namespace {
struct Moments {
  double lo = 1e300, hi = -1e300, mean = 0, var = 0;
  size_t n = 0;
};
Moments moments(const Tensor& t) {
  Moments m;
  auto v = t.to(DType::Float64).to_vector<double>();
  m.n = v.size();
  for (double x : v) {
    m.lo = std::min(m.lo, x);
    m.hi = std::max(m.hi, x);
    m.mean += x;
  }
  m.mean /= double(m.n);
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= double(m.n);
  return m;
}
}  // namespace

TEST(NNInitMore, Gains) {
  // torch.nn.init.calculate_gain's table.
  EXPECT_EQ(init::calculate_gain("selu"), 0.75);
  EXPECT_EQ(init::calculate_gain("conv_transpose2d"), 1.0);
  EXPECT_EQ(init::calculate_gain("conv3d"), 1.0);
  EXPECT_NEAR(init::calculate_gain("tanh"), 5.0 / 3.0, 1e-15);
  EXPECT_NEAR(init::calculate_gain("leaky_relu"), std::sqrt(2.0 / (1.0 + 0.0001)), 1e-15);
  expect_error<ValueError>([] { init::calculate_gain("gelu"); }, "init: unsupported nonlinearity 'gelu'");
}

TEST(NNInitMore, XavierNormal) {
  Generator g(1);
  Tensor w = empty({300, 500});
  init::xavier_normal_(w, 2.0, &g);
  Moments m = moments(w);
  const double sd = 2.0 * std::sqrt(2.0 / 800.0);
  EXPECT_NEAR(m.mean, 0.0, 4 * sd / std::sqrt(double(m.n)));
  EXPECT_NEAR(std::sqrt(m.var), sd, 0.01 * sd);
}

TEST(NNInitMore, TruncNormalStaysInItsBoundsWithTheTruncatedMoments) {
  Generator g(2);
  Tensor w = empty({200, 500}, {.dtype = DType::Float64});
  init::trunc_normal_(w, 0.0, 1.0, -2.0, 2.0, &g);
  Moments m = moments(w);
  EXPECT_GE(m.lo, -2.0);
  EXPECT_LE(m.hi, 2.0);
  EXPECT_LT(m.lo, -1.99);
  EXPECT_GT(m.hi, 1.99);
  // Var of N(0, 1) truncated to [-2, 2]: 1 - 2 * 2 phi(2) / (Phi(2) - Phi(-2)).
  const double phi2 = std::exp(-2.0) / std::sqrt(2.0 * M_PI), mass = std::erf(2.0 / std::sqrt(2.0));
  EXPECT_NEAR(m.var, 1.0 - 4.0 * phi2 / mass, 0.01);
  EXPECT_NEAR(m.mean, 0.0, 0.01);
  // Shifted and scaled, one-sided: timm's trunc_normal_(std=.02) keeps within 2 std.
  Tensor v = empty({100000});
  init::trunc_normal_(v, 1.0, 0.02, 0.96, 1.04, &g);
  Moments mv = moments(v);
  EXPECT_GE(mv.lo, 0.96);
  EXPECT_LE(mv.hi, 1.04);
  EXPECT_NEAR(mv.mean, 1.0, 1e-3);
  // A truncation far out in the tail still lands inside [a, b] (the inverse erf near +-1).
  Tensor tail = empty({1000}, {.dtype = DType::Float64});
  init::trunc_normal_(tail, 0.0, 1.0, 5.0, 6.0, &g);
  Moments mt = moments(tail);
  EXPECT_GE(mt.lo, 5.0);
  EXPECT_LE(mt.hi, 6.0);
  EXPECT_LT(mt.mean, 5.3);  // the mass sits near a
  expect_error<ValueError>([&] { init::trunc_normal_(v, 0.0, 1.0, 1.0, -1.0); }, "trunc_normal_: the bounds must satisfy a < b");
  expect_error<ValueError>([&] { init::trunc_normal_(v, 0.0, 0.0); }, "trunc_normal_: std must be > 0");
}

TEST(NNInitMore, OrthogonalGivesOrthonormalRowsOrColumns) {
  Generator g(3);
  for (Shape s : std::vector<Shape>{{6, 4}, {4, 6}, {5, 5}, {8, 2, 3, 3}}) {
    Tensor w = empty(s, {.dtype = DType::Float64});
    init::orthogonal_(w, 1.5, &g);
    Tensor m = w.reshape({s[0], -1});
    // tall: Q^T Q = gain^2 I; wide: Q Q^T = gain^2 I.
    Tensor gram = m.size(0) >= m.size(1) ? matmul(m.t(), m) : matmul(m, m.t());
    Tensor identity = empty(gram.sizes(), {.dtype = DType::Float64});
    init::eye_(identity);
    EXPECT_TRUE(allclose(gram, mul(identity, 2.25), 0, 1e-12)) << shape_str(s);
  }
  Tensor f = empty({64, 32});
  init::orthogonal_(f, 1.0, &g);
  Tensor identity = empty({32, 32});
  init::eye_(identity);
  EXPECT_TRUE(allclose(matmul(f.t(), f), identity, 0, 1e-5));
  Tensor v = empty({5});
  expect_error<ValueError>([&] { init::orthogonal_(v); }, "orthogonal_: only tensors with 2 or more dimensions are supported");
  expect_error<ValueError>([&] { init::eye_(v); }, "eye_: only 2-D tensors are supported");
}

TEST(NNInitMore, EyeOfARectangle) {
  Tensor w = full({2, 3}, 7.0);
  init::eye_(w);
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{1, 0, 0, 0, 1, 0}));
}

TEST(NNInitMore, LayerDefaults) {
  Generator g(4);
  // A transposed convolution's weight (C_in, C_out/groups, k, k): fan_in = C_out/groups * k * k.
  Tensor w = empty({4096, 8, 3, 3}), b = empty({8});
  init::reset_weight_and_bias_(w, b, &g);
  Moments mw = moments(w);
  const double bound = 1.0 / std::sqrt(72.0);
  EXPECT_GE(mw.lo, -bound);
  EXPECT_LT(mw.hi, bound);
  EXPECT_GT(mw.hi, 0.99 * bound);
  Moments mb = moments(b);
  EXPECT_GE(mb.lo, -bound);
  EXPECT_LT(mb.hi, bound);
  Tensor none;
  init::reset_weight_and_bias_(w, none, &g);  // no bias: weight only
  EXPECT_FALSE(none.defined());

  Tensor emb = empty({1000, 64}).requires_grad_();
  init::reset_embedding_(emb, -2, &g);
  EXPECT_EQ(emb.select(0, 998).abs().sum().item<float>(), 0.0f);
  Moments me = moments(emb);
  EXPECT_NEAR(me.var, 1.0, 0.03);
  EXPECT_FALSE(emb.grad_fn());  // still a leaf
  expect_error<ValueError>([&] { init::reset_embedding_(emb, 1000); }, "reset_embedding_: padding_idx 1000 must be within [-1000, 1000)");
}

TEST(NNInitMore, EmptyTensorsAreLeftAlone) {
  Tensor e = empty({0, 3});
  EXPECT_NO_THROW(init::kaiming_uniform_(e));
  EXPECT_NO_THROW(init::xavier_normal_(e));
  EXPECT_NO_THROW(init::trunc_normal_(e));
}
