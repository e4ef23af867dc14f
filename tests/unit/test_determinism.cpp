// What ember::set_deterministic (the CLI's --deterministic) guarantees on the CPU: the same bits
// with 1 and 2 threads, for the long-K matmul that is split along K and for an MLP layer's shapes
// (src/cpu/gemm.cpp tiles every GEMM by its shape alone, so these hold in the default mode too:
// tests/unit/test_cpu_gemm.cpp; and under either OpenBLAS build: scripts/blas-builds.sh), for the
// conv weight gradient and batch norm. Whole runs: Cli.DeterministicRunsAreBitIdentical.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "ember/ember.h"
#include "support/threads.h"

using namespace ember;

namespace {
// mnistnet's fc1 shape: long K, small output, the split-K case of src/cpu/gemm.cpp.
std::vector<float> product(int threads) {
  set_num_threads(threads);
  manual_seed(7);
  Tensor a = randn({64, 9216}), b = randn({9216, 128});
  return matmul(a, b).to_vector<float>();
}
}  // namespace

TEST(Determinism, SplitKMatmulIsThreadCountIndependentWhenDeterministic) {
  test::ThreadsAndMode restore;
  set_deterministic(true);
  std::vector<float> one = product(1), two = product(2);
  ASSERT_EQ(one.size(), two.size());
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0)
      << "under set_deterministic(true) a matmul must not depend on the thread count";
}

TEST(Determinism, MlpLayerMatmulsAreThreadCountIndependentWhenDeterministic) {
  test::ThreadsAndMode restore;
  set_deterministic(true);
  auto run = [](int threads) {
    set_num_threads(threads);
    manual_seed(11);
    Tensor x = randn({64, 784}), w = randn({256, 784}), g = randn({64, 256});
    std::vector<float> out = matmul(x, w.t()).to_vector<float>();  // forward: x @ w^T
    std::vector<float> gw = matmul(g.t(), x).to_vector<float>();   // weight gradient: g^T @ x
    out.insert(out.end(), gw.begin(), gw.end());
    return out;
  };
  std::vector<float> one = run(1), two = run(2);
  ASSERT_EQ(one.size(), two.size());
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);
}

// The conv weight gradient: oneDNN's reduction is partitioned by thread; deterministic mode sums
// fixed groups of 8 images (src/cpu/nn_conv.cpp). Same bits for 1 and 2 threads, and the same
// gradient as the default path up to float rounding. N = 20: groups that do not divide evenly.
TEST(Determinism, ConvWeightGradientIsThreadCountIndependentWhenDeterministic) {
  test::ThreadsAndMode restore;
  auto grad = [](bool det, int threads) {
    set_deterministic(det);
    set_num_threads(threads);
    manual_seed(13);
    Tensor x = randn({20, 3, 12, 12}), w = randn({6, 3, 5, 5});
    w.requires_grad_();
    Tensor y = nn::functional::conv2d(x, w, {}, {.padding = {2, 2}});
    (y * y).sum().backward();
    return w.grad().to_vector<float>();
  };
  std::vector<float> one = grad(true, 1), two = grad(true, 2), dflt = grad(false, 2);
  ASSERT_EQ(one.size(), two.size());
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_NEAR(one[i], dflt[i], 1e-3 * (1 + std::abs(dflt[i]))) << i;
}

TEST(Determinism, FlagIsOffByDefaultAndReadBack) {
  test::ThreadsAndMode restore;
  set_deterministic(false);
  EXPECT_FALSE(deterministic());
  set_deterministic(true);
  EXPECT_TRUE(deterministic());
}

// Batch norm's CPU float32 kernels (src/cpu/nn_norm.cpp) split channels across threads: at a size
// past the parallel grain (bncnn's bn2 at batch 64: 64 x 32 x 196), forward, input and parameter
// gradients are the same bits with 1 and 2 threads, and within float32 rounding of float64.
TEST(Determinism, BatchNormIsThreadCountIndependentAndMatchesFloat64) {
  test::ThreadsAndMode restore;
  auto run = [](int threads, DType dtype) {
    set_num_threads(threads);
    manual_seed(11);
    Tensor x = (randn({64, 32, 14, 14}) * 3.0 + 5.0).to(dtype).detach().requires_grad_(true);
    Tensor w = (rand({32}) + 0.5).to(dtype).detach().requires_grad_(true);
    Tensor b = randn({32}).to(dtype).detach().requires_grad_(true);
    Tensor g = randn({64, 32, 14, 14}).to(dtype);
    Tensor y = nn::functional::batch_norm(x, {}, {}, w, b, true);
    sum(mul(y, g)).backward();
    return std::vector<Tensor>{y.detach(), x.grad(), w.grad(), b.grad()};
  };
  const auto one = run(1, DType::Float32), two = run(2, DType::Float32), ref = run(1, DType::Float64);
  const char* names[] = {"output", "input gradient", "weight gradient", "bias gradient"};
  for (size_t i = 0; i < one.size(); ++i) {
    const auto a = one[i].to_vector<float>(), c = two[i].to_vector<float>();
    ASSERT_EQ(a.size(), c.size());
    EXPECT_EQ(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)), 0) << names[i] << " differs with 2 threads";
    EXPECT_TRUE(allclose(one[i].to(DType::Float64), ref[i], 1e-4, 1e-3)) << names[i] << " is not float64's";
  }
}
