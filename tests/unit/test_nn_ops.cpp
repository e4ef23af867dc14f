// nn::functional: finite-difference gradient checks (float64) for every op, including
// non-contiguous inputs, batch 1 and non-square kernels; behaviour of batch_norm's running stats
// and dropout; and bad inputs (error type plus a piece of the message).
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <string>

#include "gradcheck.h"

using namespace ember;
namespace F = ember::nn::functional;
using ember::test::gradcheck;
using ember::test::rand_leaf;

namespace {
// A float64 leaf whose values are a shuffled 0.1 * (0..n-1): distinct and far apart compared with
// gradcheck's eps, so max-pool never sits on a tie.
Tensor distinct_leaf(Shape shape, uint64_t seed) {
  Generator g(seed);
  Tensor perm = randperm(shape_numel(shape), &g).to(DType::Float64);
  return mul(perm, 0.1).reshape(shape).detach().requires_grad_(true);
}

// A tensor whose storage claims to live on cuda:0 (host memory, never read): enough to reach the
// device checks of a front-end in a CPU-only build.
Tensor fake_cuda_tensor(Shape shape) {
  static float buffer[1024];
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<StorageImpl>(buffer, sizeof buffer, Device{DeviceType::CUDA, 0}, nullptr);
  impl->sizes = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = DType::Float32;
  return Tensor(impl);
}

template <class E, class F>
void expect_error(F&& f, const std::string& piece) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << piece << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << "message: " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error type; message: " << e.what();
  }
}
}  // namespace

// ---- gradient checks -----------------------------------------------------------------------------
TEST(NnGradcheck, Conv2dStridePadDilationBias) {
  // Input stored as (N, H, W, C) and permuted: a non-contiguous (2, 3, 7, 6) view.
  Tensor x = rand_leaf({2, 7, 6, 3}, 1), w = rand_leaf({4, 3, 3, 2}, 2), b = rand_leaf({4}, 3);
  F::Conv2dOptions opt{.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}};
  EXPECT_TRUE(gradcheck([opt](auto& v) { return F::conv2d(v[0].permute({0, 3, 1, 2}), v[1], v[2], opt); }, {x, w, b}));
}

TEST(NnGradcheck, Conv2dGroupsBatchOneNoBias) {
  Tensor x = rand_leaf({1, 4, 5, 6}, 4), w = rand_leaf({6, 2, 2, 3}, 5);
  F::Conv2dOptions opt{.padding = {1, 1}, .groups = 2};
  EXPECT_TRUE(gradcheck([opt](auto& v) { return F::conv2d(v[0], v[1], {}, opt); }, {x, w}));
  // Depthwise, weight given as a transposed (non-contiguous) view of a (4, 1, 1, 3) leaf.
  EXPECT_TRUE(gradcheck([](auto& v) {
    return F::conv2d(v[0], v[1].transpose(2, 3), {}, {.stride = {1, 2}, .groups = 4});
  }, {rand_leaf({2, 4, 5, 5}, 7), rand_leaf({4, 1, 1, 3}, 8)}));
}

TEST(NnGradcheck, Pooling) {
  Tensor x = distinct_leaf({2, 3, 7, 6}, 9);
  F::Pool2dOptions mp{.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}, .ceil_mode = true};
  EXPECT_TRUE(gradcheck([mp](auto& v) { return F::max_pool2d(v[0], mp); }, {x}));
  EXPECT_TRUE(gradcheck([](auto& v) { return F::max_pool2d(v[0].transpose(2, 3), {.kernel = {2, 2}}); }, {x}));
  Tensor y = rand_leaf({1, 2, 7, 5}, 10);
  for (bool include : {true, false})
    for (bool ceil : {true, false}) {
      F::Pool2dOptions ap{.kernel = {3, 2}, .stride = {2, 2}, .padding = {1, 1}, .ceil_mode = ceil,
                          .count_include_pad = include};
      EXPECT_TRUE(gradcheck([ap](auto& v) { return F::avg_pool2d(v[0], ap); }, {y})) << include << ceil;
    }
  EXPECT_TRUE(gradcheck([](auto& v) { return F::avg_pool2d(v[0].transpose(2, 3), {.kernel = {2, 3}, .stride = {1, 1}}); }, {y}));
  Tensor z = rand_leaf({2, 3, 5, 7}, 11);
  EXPECT_TRUE(gradcheck([](auto& v) { return F::adaptive_avg_pool2d(v[0], {2, 3}); }, {z}));
  EXPECT_TRUE(gradcheck([](auto& v) { return F::adaptive_avg_pool2d(v[0].transpose(2, 3), {4, 3}); }, {z}));
  EXPECT_TRUE(gradcheck([](auto& v) { return F::max_pool2d(v[0].select(0, 1), {.kernel = {2, 3}}); }, {x}));  // 3-D input
}

TEST(NnGradcheck, BatchNorm) {
  Tensor x = rand_leaf({3, 4, 2, 3}, 12), w = rand_leaf({4}, 13), b = rand_leaf({4}, 14);
  Tensor rm = zeros({4}, {.dtype = DType::Float64}), rv = ones({4}, {.dtype = DType::Float64});
  EXPECT_TRUE(gradcheck([=](auto& v) { return F::batch_norm(v[0], rm, rv, v[1], v[2], true); }, {x, w, b}));
  EXPECT_TRUE(gradcheck([=](auto& v) { return F::batch_norm(v[0], rm, rv, v[1], v[2], false); }, {x, w, b}));
  // 2-D (N, C) input as a transposed view, weight and bias undefined.
  Tensor x2 = rand_leaf({5, 4}, 15);
  Tensor rm2 = zeros({5}, {.dtype = DType::Float64}), rv2 = ones({5}, {.dtype = DType::Float64});
  EXPECT_TRUE(gradcheck([=](auto& v) { return F::batch_norm(v[0].t(), rm2, rv2, {}, {}, true); }, {x2}));
  EXPECT_TRUE(gradcheck([=](auto& v) { return F::batch_norm(v[0], {}, {}, {}, v[1], true, 0.1, 1e-3); }, {x, b}));
}

TEST(NnGradcheck, SoftmaxAnyDim) {
  Tensor x = rand_leaf({3, 4, 5}, 16);
  for (int64_t dim : {0, 1, 2, -1}) {
    EXPECT_TRUE(gradcheck([dim](auto& v) { return F::softmax(v[0], dim); }, {x})) << dim;
    EXPECT_TRUE(gradcheck([dim](auto& v) { return F::log_softmax(v[0].transpose(0, 2), dim); }, {x})) << dim;
  }
}

TEST(NnGradcheck, Losses) {
  Tensor logits = rand_leaf({6, 4}, 17);
  Tensor target = tensor<int64_t>({0, 3, -100, 1, 2, 3});
  for (auto r : {F::Reduction::Mean, F::Reduction::Sum, F::Reduction::None})
    for (double ls : {0.0, 0.2}) {
      F::CrossEntropyOptions opt{.reduction = r, .label_smoothing = ls};
      EXPECT_TRUE(gradcheck([=](auto& v) { return F::cross_entropy(v[0], target, opt); }, {logits}));
      EXPECT_TRUE(gradcheck([=](auto& v) { return F::cross_entropy(v[0].t().t(), target, opt); }, {logits}));
      EXPECT_TRUE(gradcheck([=](auto& v) { return F::nll_loss(v[0], target, opt); }, {logits}));
    }
  Tensor lt = rand_leaf({4, 6}, 18);  // transposed below: non-contiguous logits
  Tensor target3 = tensor<int64_t>({0, 3, 2, 1, 3, 3});
  EXPECT_TRUE(gradcheck([=](auto& v) { return F::cross_entropy(v[0].t(), target3, {.ignore_index = 3}); }, {lt}));
  Tensor a = rand_leaf({3, 5}, 19), b = rand_leaf({5, 3}, 20);
  for (auto r : {F::Reduction::Mean, F::Reduction::Sum, F::Reduction::None})
    EXPECT_TRUE(gradcheck([r](auto& v) { return F::mse_loss(v[0], v[1].t(), r); }, {a, b}));
}

TEST(NnGradcheck, Dropout) {
  Tensor x = rand_leaf({4, 5}, 21);
  // A fresh generator per call: the same mask every time f runs.
  EXPECT_TRUE(gradcheck([](auto& v) { Generator g(5); return F::dropout(v[0], 0.3, true, &g); }, {x}));
  EXPECT_TRUE(gradcheck([](auto& v) { return F::dropout(v[0], 1.0, true); }, {x}));
}

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
  expect_error<ShapeError>([] { F::conv2d(zeros({3, 28, 28}), zeros({1, 3, 3, 3})); }, "conv2d: input must be 4-D");
  expect_error<DTypeError>([] { F::conv2d(zeros({1, 1, 4, 4}), zeros({1, 1, 3, 3}, {.dtype = DType::Float64})); },
                           "same dtype");
}
