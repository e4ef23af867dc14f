// The CUDA backend beyond per-op numerics (those run in the op harness, Ops/*.Parity_CUDA): bit
// reproducibility in deterministic mode (conv2d's backward, max-pool's scatter), and whole models
// (mnistnet, resnet_small): same seed, same weights, same logits, loss, gradients and SGD
// trajectory as the CPU. Every test is named *_CUDA and skips, saying why, without a usable GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "support/compare.h"
#include "support/gpu.h"

using namespace ember;
using ember::test::close;
namespace F = ember::nn::functional;

namespace {

const Device kCpu = Device::cpu();
const Device kGpu = Device::cuda(0);

// Restores ember::deterministic() at scope exit, so a failing test cannot leak the setting.
struct DeterministicScope {
  bool prev = deterministic();
  explicit DeterministicScope(bool on) { set_deterministic(on); }
  ~DeterministicScope() { set_deterministic(prev); }
};

Tensor randn_on(Shape s, DType dt, uint64_t seed, Device d = kCpu) {
  Generator g(seed);
  return randn(std::move(s), {.dtype = DType::Float64}, &g).to(dt).to(d);
}

}  // namespace

// Repeated backward passes of one conv2d in deterministic mode give identical bits, and the
// weight gradient matches the CPU's.
TEST(CudaDeterminism, Conv2dBackwardIsBitReproducible_CUDA) {
  EMBER_REQUIRE_GPU();
  DeterministicScope det(true);
  Tensor x = randn_on({8, 16, 12, 12}, DType::Float32, 1), w = randn_on({32, 16, 3, 3}, DType::Float32, 2);
  Tensor go = randn_on({8, 32, 12, 12}, DType::Float32, 3);
  std::vector<float> first_gw, first_gx;
  for (int rep = 0; rep < 3; ++rep) {
    Tensor xg = x.to(kGpu).requires_grad_(), wg = w.to(kGpu).requires_grad_();
    F::conv2d(xg, wg, {}, {.padding = {1, 1}}).backward(go.to(kGpu));
    if (rep == 0) {
      first_gw = wg.grad().to_vector<float>();
      first_gx = xg.grad().to_vector<float>();
      Tensor xc = x.detach().requires_grad_(), wc = w.detach().requires_grad_();
      F::conv2d(xc, wc, {}, {.padding = {1, 1}}).backward(go);
      EXPECT_TRUE(close(wc.grad(), wg.grad(), 2e-5));
    } else {
      EXPECT_EQ(wg.grad().to_vector<float>(), first_gw) << "repetition " << rep;
      EXPECT_EQ(xg.grad().to_vector<float>(), first_gx) << "repetition " << rep;
    }
  }
}

// Overlapping max-pool windows scatter several gradients into one input: in deterministic mode
// the GPU adds them in the CPU's order, so the input gradient is equal bit for bit.
TEST(CudaDeterminism, MaxPool2dBackwardWithOverlapEqualsTheCpu_CUDA) {
  EMBER_REQUIRE_GPU();
  DeterministicScope det(true);
  for (DType dt : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dt));
    const F::Pool2dOptions opt{.kernel = {3, 3}, .stride = {1, 1}, .padding = {1, 1}};
    Tensor x = randn_on({2, 3, 9, 8}, dt, 5);
    Tensor xc = x.detach().requires_grad_(), xg = x.to(kGpu).requires_grad_();
    Tensor yc = F::max_pool2d(xc, opt);
    Tensor go = randn_on(yc.sizes(), dt, 6);
    yc.backward(go);
    F::max_pool2d(xg, opt).backward(go.to(kGpu));
    EXPECT_TRUE(close(xc.grad(), xg.grad(), 0.0));
  }
}

namespace {
// Gradients of every parameter of two copies of a model, by name, CPU against GPU.
void expect_same_gradients(nn::Module& cpu, nn::Module& gpu, double tol) {
  auto pc = cpu.named_parameters(), pg = gpu.named_parameters();
  ASSERT_EQ(pc.size(), pg.size());
  for (size_t i = 0; i < pc.size(); ++i) {
    SCOPED_TRACE(pc[i].first);
    ASSERT_EQ(pc[i].first, pg[i].first);
    ASSERT_TRUE(pc[i].second.grad().defined() && pg[i].second.grad().defined());
    EXPECT_TRUE(close(pc[i].second.grad(), pg[i].second.grad(), tol)) << "gradient of " << pc[i].first;
  }
}
}  // namespace

TEST(CudaNnModels, MnistnetMatchesTheCpuForOneBatchAndTwentySgdSteps_CUDA) {
  EMBER_REQUIRE_GPU();
  Generator gc(42), gg(42);
  auto cpu = models::mnistnet(10, 1, 28, &gc);
  auto gpu = models::mnistnet(10, 1, 28, &gg);
  gpu->to(kGpu);
  // Dropout off on both sides: this compares the deterministic part of the network.
  cpu->eval();
  gpu->eval();
  {
    auto pc = cpu->named_parameters(), pg = gpu->named_parameters();
    ASSERT_EQ(pc.size(), pg.size());
    for (size_t i = 0; i < pc.size(); ++i) {
      EXPECT_TRUE(pg[i].second.is_cuda()) << pg[i].first;
      EXPECT_TRUE(close(pc[i].second, pg[i].second, 0.0)) << "initial " << pc[i].first;
    }
  }
  const int64_t B = 16;
  Tensor x = randn_on({B, 1, 28, 28}, DType::Float32, 7);
  Generator gt(8);
  Tensor y = randint(0, 10, {B}, {.dtype = DType::Int64}, &gt);
  Tensor xg = x.to(kGpu), yg = y.to(kGpu);

  Tensor logits_c = cpu->forward(x), logits_g = gpu->forward(xg);
  EXPECT_TRUE(close(logits_c, logits_g, 1e-4)) << "logits";
  Tensor loss_c = F::cross_entropy(logits_c, y), loss_g = F::cross_entropy(logits_g, yg);
  EXPECT_NEAR(loss_c.item<double>(), loss_g.item<double>(), 1e-4 * std::max(1.0, std::abs(loss_c.item<double>())));
  loss_c.backward();
  loss_g.backward();
  expect_same_gradients(*cpu, *gpu, 1e-4);

  optim::SGD opt_c(cpu->parameters(), {.lr = 0.01, .momentum = 0.9});
  optim::SGD opt_g(gpu->parameters(), {.lr = 0.01, .momentum = 0.9});
  std::vector<double> losses_c, losses_g;
  for (int step = 0; step < 20; ++step) {
    // A fixed set of 4 batches, so the loss goes down and the trajectories stay comparable.
    Tensor xb = randn_on({B, 1, 28, 28}, DType::Float32, 100 + step % 4);
    Generator gy(200 + step % 4);
    Tensor yb = randint(0, 10, {B}, {.dtype = DType::Int64}, &gy);
    opt_c.zero_grad();
    opt_g.zero_grad();
    Tensor lc = F::cross_entropy(cpu->forward(xb), yb);
    Tensor lg = F::cross_entropy(gpu->forward(xb.to(kGpu)), yb.to(kGpu));
    lc.backward();
    lg.backward();
    opt_c.step();
    opt_g.step();
    losses_c.push_back(lc.item<double>());
    losses_g.push_back(lg.item<double>());
  }
  for (size_t i = 0; i < losses_c.size(); ++i)
    EXPECT_NEAR(losses_c[i], losses_g[i], 2e-3 * std::max(1.0, std::abs(losses_c[i]))) << "step " << i;
  // The last pass over the 4 batches against the first.
  double first = 0, last = 0;
  for (size_t i = 0; i < 4; ++i) {
    first += losses_g[i];
    last += losses_g[losses_g.size() - 4 + i];
  }
  EXPECT_LT(last, first) << "the GPU model did not learn";
}

TEST(CudaNnModels, ResnetSmallTrainModeStepMatchesTheCpu_CUDA) {
  EMBER_REQUIRE_GPU();
  // Batch norm in training mode (batch statistics, running-stat updates) and the adaptive
  // average pool head, which mnistnet does not use.
  Generator gc(5), gg(5);
  auto cpu = models::resnet_small(10, 1, 28, &gc);
  auto gpu = models::resnet_small(10, 1, 28, &gg);
  gpu->to(kGpu);
  cpu->train();
  gpu->train();
  const int64_t B = 8;
  Tensor x = randn_on({B, 1, 28, 28}, DType::Float32, 11);
  Generator gt(12);
  Tensor y = randint(0, 10, {B}, {.dtype = DType::Int64}, &gt);
  Tensor logits_c = cpu->forward(x), logits_g = gpu->forward(x.to(kGpu));
  EXPECT_TRUE(close(logits_c, logits_g, 1e-4)) << "logits";
  Tensor lc = F::cross_entropy(logits_c, y), lg = F::cross_entropy(logits_g, y.to(kGpu));
  EXPECT_NEAR(lc.item<double>(), lg.item<double>(), 1e-4 * std::max(1.0, std::abs(lc.item<double>())));
  lc.backward();
  lg.backward();
  // Batch norm's input gradient subtracts nearly equal terms layer after layer: a looser bound.
  expect_same_gradients(*cpu, *gpu, 1e-3);
  auto bc = cpu->named_buffers(), bg = gpu->named_buffers();
  ASSERT_EQ(bc.size(), bg.size());
  for (size_t i = 0; i < bc.size(); ++i)
    if (is_floating(bc[i].second.dtype())) {
      EXPECT_TRUE(close(bc[i].second, bg[i].second, 1e-5, true)) << bc[i].first;
    }
}
