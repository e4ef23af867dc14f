// nn::functional (src/ops/nn_*.cpp) beyond per-op numerics (those are in the op harness,
// tests/harness/ops_nn.cpp): batch_norm's running stats, dropout's mask and edge cases, softmax's
// stability, cross-entropy's mean over non-ignored rows; and bad inputs (error type plus message).
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <string>

#include "support/errors.h"
#include "support/gradcheck.h"

using namespace ember;
namespace F = ember::nn::functional;
using ember::test::rand_leaf;

using ember::test::expect_error;
using ember::test::fake_cuda_tensor;

// ---- behaviour -----------------------------------------------------------------------------------
TEST(NnOps, BatchNormRunningStats) {
  Tensor x = rand_leaf({4, 2, 3}, 22).detach();
  Tensor rm = zeros({2}, {.dtype = DType::Float64}), rv = ones({2}, {.dtype = DType::Float64});
  F::batch_norm(x, rm, rv, {}, {}, true, 0.25);
  Tensor m = mean(x, {0, 2}), v = var(x, {0, 2}, 1);
  EXPECT_TRUE(allclose(rm, m * 0.25, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(rv, v * 0.25 + 0.75, 1e-12, 1e-12));
  // Eval uses (and keeps) the running stats.
  Tensor rm0 = rm.clone(), rv0 = rv.clone();
  Tensor y = F::batch_norm(x, rm, rv, {}, {}, false);
  EXPECT_TRUE(allclose(rm, rm0, 0, 0));
  EXPECT_TRUE(allclose(y, (x - rm0.view({1, 2, 1})) / sqrt(rv0.view({1, 2, 1}) + 1e-5), 1e-12, 1e-12));
}

TEST(NnOps, DropoutMaskAndEdgeCases) {
  Tensor x = ones({1000});
  Generator g1(42), g2(42);
  Tensor a = F::dropout(x, 0.25, true, &g1), b = F::dropout(x, 0.25, true, &g2);
  EXPECT_TRUE(allclose(a, b, 0, 0));  // same seed, same mask
  auto v = a.to_vector<float>();
  int kept = 0;
  for (float e : v) {
    EXPECT_TRUE(e == 0.0f || std::abs(e - 1.0f / 0.75f) < 1e-6f) << e;
    kept += e != 0.0f;
  }
  EXPECT_GT(kept, 680);
  EXPECT_LT(kept, 820);
  EXPECT_EQ(g1.offset(), 250u);  // ceil(1000 / 4) counter blocks consumed
  EXPECT_TRUE(F::dropout(x, 0.5, false).is_same(x));  // eval: identity
  EXPECT_TRUE(allclose(F::dropout(x, 0.0, true), x, 0, 0));
  EXPECT_EQ(F::dropout(x, 1.0, true).sum().item<float>(), 0.0f);
}

TEST(NnOps, SoftmaxIsStableForLargeLogits) {
  Tensor x = tensor({1000.0f, 1001.0f, 1002.0f}).view({1, 3});
  Tensor s = F::softmax(x, 1), l = F::log_softmax(x, 1);
  EXPECT_NEAR(s.sum().item<float>(), 1.0f, 1e-6);
  EXPECT_NEAR(l.at<float>({0, 2}), -0.40760596f, 1e-5);
}

TEST(NnOps, CrossEntropyMeanDividesByNonIgnored) {
  Tensor logits = zeros({4, 5});
  Tensor target = tensor<int64_t>({1, -100, 2, -100});
  // Every non-ignored row costs log(5); mean over the 2 counted rows, not 4.
  EXPECT_NEAR(F::cross_entropy(logits, target).item<float>(), std::log(5.0f), 1e-6);
  EXPECT_NEAR(F::cross_entropy(logits, target, {.reduction = F::Reduction::Sum}).item<float>(), 2 * std::log(5.0f), 1e-5);
}

// ---- bad inputs ----------------------------------------------------------------------------------
TEST(NnErrors, Conv2dChannelMismatch) {
  expect_error<ShapeError>([] { F::conv2d(zeros({8, 3, 28, 28}), zeros({32, 1, 3, 3})); },
                           "conv2d: input has 3 channels (shape [8, 3, 28, 28]) but weight [32, 1, 3, 3] with groups=1 expects 1");
}

TEST(NnErrors, StrideZeroAndKernelTooLarge) {
  expect_error<ValueError>([] { F::conv2d(zeros({1, 1, 5, 5}), zeros({1, 1, 3, 3}), {}, {.stride = {0, 1}}); },
                           "conv2d: stride must be >= 1");
  expect_error<ValueError>([] { F::max_pool2d(zeros({1, 1, 5, 5}), {.kernel = {2, 2}, .stride = {-1, 1}}); },
                           "max_pool2d: stride must be >= 1");
  expect_error<ShapeError>([] { F::conv2d(zeros({1, 1, 2, 2}), zeros({1, 1, 3, 3})); },
                           "is larger than the padded input 2x2");
  expect_error<ShapeError>([] { F::max_pool2d(zeros({1, 1, 3, 3}), {.kernel = {5, 5}}); },
                           "max_pool2d: kernel [5, 5] is larger than the padded input 3x3");
  expect_error<ValueError>([] { F::avg_pool2d(zeros({1, 1, 6, 6}), {.kernel = {2, 2}, .padding = {2, 0}}); },
                           "half the kernel size");
}

TEST(NnErrors, CrossEntropyLabels) {
  Tensor logits = zeros({3, 10});
  expect_error<DTypeError>([&] { F::cross_entropy(logits, zeros({3})); }, "target must hold int64 class indices, got float32");
  expect_error<ValueError>([&] { F::cross_entropy(logits, tensor<int64_t>({0, 10, 2})); },
                           "cross_entropy: target[1] = 10 is out of range for 10 classes");
  expect_error<ValueError>([&] { F::nll_loss(logits, tensor<int64_t>({0, 1, -1})); },
                           "nll_loss: target[2] = -1 is out of range");
  expect_error<ShapeError>([&] { F::cross_entropy(logits, tensor<int64_t>({0, 1})); }, "target shape [2]");
}

TEST(NnErrors, MixedDevices) {
  Tensor gpu_w = fake_cuda_tensor({4, 3, 3, 3});
  expect_error<DeviceError>([&] { F::conv2d(zeros({1, 3, 8, 8}), gpu_w); }, "cpu and cuda:0");
  expect_error<DeviceError>([&] { F::cross_entropy(zeros({2, 3}), fake_cuda_tensor({2})); }, "cross_entropy");
  expect_error<DeviceError>([&] {
    F::batch_norm(zeros({2, 4}), zeros({4}), ones({4}), fake_cuda_tensor({4}), {}, true);
  }, "batch_norm");
  expect_error<DeviceError>([&] { F::mse_loss(zeros({2}), fake_cuda_tensor({2})); }, "mse_loss");
}

TEST(NnErrors, OtherArguments) {
  expect_error<ValueError>([] { F::dropout(ones({3}), 1.5, true); }, "dropout: probability p must be in [0, 1], got 1.5");
  expect_error<ShapeError>([] { F::batch_norm(zeros({2, 3}), zeros({4}), ones({4}), {}, {}, true); },
                           "batch_norm: running_mean has shape [4] but the input [2, 3] has 3 channels");
  expect_error<ValueError>([] { F::batch_norm(zeros({1, 3}), zeros({3}), ones({3}), {}, {}, true); },
                           "more than one value per channel");
  expect_error<ShapeError>([] { F::mse_loss(zeros({2, 3}), zeros({3, 2})); }, "mse_loss: input shape [2, 3]");
  expect_error<IndexError>([] { F::softmax(zeros({2, 3}), 2); }, "softmax: dimension 2 out of range");
  // A 3-D input is an unbatched (C, H, W) image, as in PyTorch; a 2-D one is refused.
  expect_error<ShapeError>([] { F::conv2d(zeros({28, 28}), zeros({1, 3, 3, 3})); }, "conv2d: input must be 4-D");
  EXPECT_EQ(F::conv2d(zeros({3, 28, 28}), zeros({1, 3, 3, 3})).sizes(), (Shape{1, 26, 26}));
  expect_error<DTypeError>([] { F::conv2d(zeros({1, 1, 4, 4}), zeros({1, 1, 3, 3}, {.dtype = DType::Float64})); },
                           "same dtype");
}
