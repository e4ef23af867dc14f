// Initialisation: PyTorch's default bounds for Linear/Conv2d (kaiming_uniform_(a=sqrt(5)) and the
// bias rule), BatchNorm's constants, the fan computation and the init:: functions' statistics.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>

using namespace ember;

namespace {
void expect_uniform(const Tensor& t, double bound, const char* what) {
  auto v = t.to(DType::Float64).to_vector<double>();
  double lo = 1e9, hi = -1e9, mean = 0, sq = 0;
  for (double x : v) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    mean += x;
    sq += x * x;
  }
  mean /= double(v.size());
  double var = sq / double(v.size()) - mean * mean;
  EXPECT_GE(lo, -bound) << what;
  EXPECT_LT(hi, bound) << what;
  // The draws fill the range and have U(-b, b)'s moments. Tolerances scale with n: the extremes
  // lie beyond (1 - 10/n) b unless a 1-in-e^5 event; mean and variance within 4 standard errors
  // (sd of the mean b/sqrt(3n), relative sd of the variance sqrt(0.8/n)).
  const double n = double(v.size());
  EXPECT_LT(lo, -(1.0 - 10.0 / n) * bound) << what;
  EXPECT_GT(hi, (1.0 - 10.0 / n) * bound) << what;
  EXPECT_NEAR(mean, 0.0, 4.0 * bound / std::sqrt(3.0 * n)) << what;
  EXPECT_NEAR(var, bound * bound / 3.0, 4.0 * std::sqrt(0.8 / n) * bound * bound / 3.0) << what;
}
}  // namespace

TEST(NNInit, FanInFanOut) {
  auto [fi, fo] = nn::init::calculate_fan_in_and_fan_out(empty({32, 16, 3, 3}));
  EXPECT_EQ(fi, 16 * 9);
  EXPECT_EQ(fo, 32 * 9);
  EXPECT_THROW(nn::init::calculate_fan_in_and_fan_out(empty({5})), ValueError);
  EXPECT_NEAR(nn::init::calculate_gain("leaky_relu", std::sqrt(5.0)), std::sqrt(1.0 / 3.0), 1e-15);
  EXPECT_NEAR(nn::init::calculate_gain("relu"), std::sqrt(2.0), 1e-15);
  EXPECT_THROW(nn::init::calculate_gain("swish"), ValueError);
}

TEST(NNInit, LinearDefaultBounds) {
  Generator gen(11);
  nn::Linear fc(400, 3000, true, &gen);
  expect_uniform(fc.weight, 1.0 / std::sqrt(400.0), "Linear.weight");
  expect_uniform(fc.bias, 1.0 / std::sqrt(400.0), "Linear.bias");
}

TEST(NNInit, Conv2dDefaultBounds) {
  Generator gen(12);
  nn::Conv2d conv(16, 64, 3, {}, &gen);  // fan_in = 16 * 9
  expect_uniform(conv.weight, 1.0 / 12.0, "Conv2d.weight");
  nn::Conv2d wide(64, 4096, 1, {}, &gen);  // enough biases for the statistics
  expect_uniform(wide.bias, 1.0 / 8.0, "Conv2d.bias");
  nn::Conv2d grouped(8, 8, 3, {.groups = 4}, &gen);
  EXPECT_EQ(grouped.weight.sizes(), (Shape{8, 2, 3, 3}));
}

TEST(NNInit, BatchNormConstants) {
  nn::BatchNorm2d bn(5);
  EXPECT_EQ(bn.weight.to_vector<float>(), std::vector<float>(5, 1.0f));
  EXPECT_EQ(bn.bias.to_vector<float>(), std::vector<float>(5, 0.0f));
  EXPECT_EQ(bn.running_mean.to_vector<float>(), std::vector<float>(5, 0.0f));
  EXPECT_EQ(bn.running_var.to_vector<float>(), std::vector<float>(5, 1.0f));
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 0);
  EXPECT_EQ(bn.momentum, 0.1);
  EXPECT_EQ(bn.eps, 1e-5);
}

TEST(NNInit, KaimingNormalAndXavier) {
  Generator gen(13);
  Tensor w = empty({256, 512});
  nn::init::kaiming_normal_(w, 0.0, "fan_in", "relu", &gen);
  double sd = ember::std(w).item<float>();
  EXPECT_NEAR(sd, std::sqrt(2.0 / 512.0), 0.02 * std::sqrt(2.0 / 512.0));
  nn::init::xavier_uniform_(w, 1.0, &gen);
  expect_uniform(w, std::sqrt(6.0 / (256.0 + 512.0)), "xavier");
  EXPECT_THROW(nn::init::kaiming_uniform_(w, 0.0, "fan_sideways"), ValueError);
}

// One seed, the same parameters; another seed, different ones (so initialisation cannot have
// ignored the seed: a constant or unseeded init fails one half or the other).
TEST(NNInit, SeedReproducible) {
  auto params_for = [](uint64_t seed) {
    manual_seed(seed);
    return models::mlp()->parameters();
  };
  const auto a = params_for(99), b = params_for(99), c = params_for(100);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), c.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(allclose(a[i], b[i], 0, 0)) << "parameter " << i << ", same seed";
  // Every weight matrix is drawn from the generator: each must change with the seed.
  size_t weights = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].dim() < 2) continue;
    ++weights;
    EXPECT_FALSE(allclose(a[i], c[i], 0, 0)) << "parameter " << i << " is the same for seeds 99 and 100";
  }
  EXPECT_GT(weights, 0u);
}
