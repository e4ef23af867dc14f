// ember/ops_nn.h beyond the op harness (tests/harness/ops_nn2.cpp): the rules a gradient check
// cannot see (no NaN gradient from an overflowing branch, PyTorch's derivative at a kink, the padding
// row's missing gradient, the mean's divisor), and every bad input: the error type and a piece of
// the message.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>

#include "support/errors.h"

using namespace ember;
namespace F = ember::nn::functional;
using ember::test::expect_error;
using ember::test::fake_cuda_tensor;

namespace {
Tensor grad_of(const std::function<Tensor(const Tensor&)>& f, Tensor x) {
  x.requires_grad_();
  f(x).sum().backward();
  return x.grad();
}
bool all_finite(const Tensor& t) {
  for (double v : t.to_vector<double>())
    if (!std::isfinite(v)) return false;
  return true;
}
}  // namespace

TEST(NnOpsMore, ReductionNames) {
  EXPECT_EQ(F::reduction_from_string("mean"), F::Reduction::Mean);
  EXPECT_EQ(F::reduction_from_string("sum"), F::Reduction::Sum);
  EXPECT_EQ(F::reduction_from_string("none"), F::Reduction::None);
  EXPECT_EQ(F::reduction_from_string("batchmean"), F::Reduction::BatchMean);
  EXPECT_STREQ(F::reduction_name(F::Reduction::BatchMean), "batchmean");
  expect_error<ValueError>([] { F::reduction_from_string("avg"); }, "'avg' is not a valid value for reduction");
  expect_error<ValueError>([] { F::l1_loss(zeros({2}), zeros({2}), F::Reduction::BatchMean); },
                           "l1_loss: reduction 'batchmean' is only for kl_div");
}

TEST(NnOpsMore, NoNaNGradientsFromTheBranchNotTaken) {
  Tensor big = tensor(std::vector<double>{100.0, 800.0, -800.0, 0.0});
  EXPECT_TRUE(all_finite(grad_of([](const Tensor& x) { return F::elu(x); }, big.clone())));
  EXPECT_TRUE(all_finite(grad_of([](const Tensor& x) { return F::selu(x); }, big.clone())));
  EXPECT_TRUE(all_finite(grad_of([](const Tensor& x) { return F::softplus(x, 1.0, 1000.0); }, big.clone())));
  EXPECT_TRUE(all_finite(grad_of([](const Tensor& x) { return F::logsigmoid(x); }, big.clone())));
  EXPECT_TRUE(all_finite(grad_of([](const Tensor& x) { return F::binary_cross_entropy_with_logits(x, full({4}, 0.5, {.dtype = DType::Float64})); },
                                 big.clone())));
  EXPECT_TRUE(all_finite(F::binary_cross_entropy_with_logits(big, zeros({4}, {.dtype = DType::Float64}), {}, F::Reduction::None)));
}

TEST(NnOpsMore, DerivativesAtTheKinksArePyTorchs) {
  Tensor x = tensor(std::vector<double>{0.0, -1.0, 1.0});
  // leaky_relu and elu take the negative side's slope at 0; hardtanh passes nothing at its bounds.
  EXPECT_EQ(grad_of([](const Tensor& t) { return F::leaky_relu(t, 0.3); }, x.clone()).to_vector<double>()[0], 0.3);
  EXPECT_EQ(grad_of([](const Tensor& t) { return F::elu(t, 0.5); }, x.clone()).to_vector<double>()[0], 0.5);
  EXPECT_EQ(grad_of([](const Tensor& t) { return F::hardtanh(t); }, x.clone()).to_vector<double>(), (std::vector<double>{1.0, 0.0, 0.0}));
  // BCE with logits at a logit of exactly 0 (a zero-initialised head): sigmoid(0) - t.
  Tensor g = grad_of([](const Tensor& t) { return F::binary_cross_entropy_with_logits(t, ones({3}, {.dtype = DType::Float64}), {},
                                                                                      F::Reduction::Sum); },
                     zeros({3}, {.dtype = DType::Float64}));
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{-0.5, -0.5, -0.5}));
}

TEST(NnOpsMore, EmbeddingPaddingRowGetsNoGradientAndLooksUpItsValues) {
  Tensor w = arange(0.0, 8.0, 1.0, {.dtype = DType::Float64}).reshape({4, 2}).requires_grad_();
  Tensor idx = tensor(std::vector<int64_t>{1, 3, 1, 0}, {2, 2});
  Tensor out = F::embedding(idx, w, 1);
  EXPECT_EQ(out.sizes(), (Shape{2, 2, 2}));
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{2, 3, 6, 7, 2, 3, 0, 1}));
  out.sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{1, 1, 0, 0, 0, 0, 1, 1}));
  // Accumulates, as every parameter gradient.
  F::embedding(idx, w).sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{2, 2, 2, 2, 0, 0, 2, 2}));
}

TEST(NnOpsMore, LossDivisors) {
  // Weighted mean over class targets: the summed weights of the counted targets.
  Tensor logits = zeros({3, 2}, {.dtype = DType::Float64});
  Tensor target = tensor(std::vector<int64_t>{0, 1, -100});
  Tensor weight = tensor(std::vector<double>{1.0, 3.0});
  EXPECT_NEAR(F::cross_entropy(logits, target, {.weight = weight}).item<double>(), std::log(2.0), 1e-15);
  EXPECT_NEAR(F::cross_entropy(logits, target, {.reduction = F::Reduction::Sum, .weight = weight}).item<double>(), 4 * std::log(2.0),
              1e-14);
  // Probability targets: a mean over samples.
  EXPECT_NEAR(F::cross_entropy(zeros({4, 2}, {.dtype = DType::Float64}), full({4, 2}, 0.5, {.dtype = DType::Float64})).item<double>(),
              std::log(2.0), 1e-15);
  // kl_div: batchmean by the batch, mean by every element.
  Tensor lp = full({2, 4}, std::log(0.25), {.dtype = DType::Float64}), t = full({2, 4}, 0.5, {.dtype = DType::Float64});
  const double per = 0.5 * (std::log(0.5) - std::log(0.25));
  EXPECT_NEAR(F::kl_div(lp, t, F::Reduction::BatchMean).item<double>(), 4 * per, 1e-15);
  EXPECT_NEAR(F::kl_div(lp, t, F::Reduction::Mean).item<double>(), per, 1e-15);
}

TEST(NnOpsMore, ShapesOfTheOneDimensionalAndTransposedOps) {
  EXPECT_EQ(F::conv_transpose2d(zeros({1, 4, 5, 5}), zeros({4, 3, 4, 4}), {}, {.stride = {2, 2}, .padding = {1, 1}}).sizes(),
            (Shape{1, 3, 10, 10}));
  EXPECT_EQ(F::conv_transpose1d(zeros({2, 4, 5}), zeros({4, 3, 3}), {}, {.stride = 2, .output_padding = 1}).sizes(), (Shape{2, 3, 12}));
  EXPECT_EQ(F::conv1d(zeros({2, 4, 10}), zeros({6, 4, 3}), {}, {.stride = 2}).sizes(), (Shape{2, 6, 4}));
  EXPECT_EQ(F::conv2d_padding(zeros({1, 2, 7, 6}), zeros({3, 2, 4, 4}), {}, "same").sizes(), (Shape{1, 3, 7, 6}));
  EXPECT_EQ(F::max_pool1d(zeros({2, 3, 9}), {.kernel = 3, .stride = 2}).sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(F::interpolate(zeros({1, 2, 3, 5}), {.scale_factor = {2.0, 1.5}, .mode = "bilinear"}).sizes(), (Shape{1, 2, 6, 7}));
  EXPECT_EQ(F::pad(zeros({1, 3, 4}), {2, 2}, "reflect").sizes(), (Shape{1, 3, 8}));
}

TEST(NnOpsMore, ChannelDropoutZeroesWholeChannels) {
  Generator g(11);
  Tensor y = F::dropout2d(ones({8, 16, 3, 3}), 0.5, true, &g);
  auto v = y.to_vector<float>();
  int dropped = 0;
  for (int c = 0; c < 8 * 16; ++c) {
    const float first = v[size_t(c) * 9];
    for (int i = 1; i < 9; ++i) ASSERT_EQ(v[size_t(c) * 9 + size_t(i)], first) << "channel " << c;
    EXPECT_TRUE(first == 0.0f || first == 2.0f);
    dropped += first == 0.0f;
  }
  EXPECT_GT(dropped, 30);
  EXPECT_LT(dropped, 98);
  Tensor x = ones({2, 3, 2, 2});
  EXPECT_TRUE(F::dropout2d(x, 0.5, false).is_same(x));  // the identity outside training
}

// ---- bad inputs -------------------------------------------------------------------------------------
TEST(NnOpsMoreErrors, Activations) {
  expect_error<DTypeError>([] { F::leaky_relu(zeros({2}, {.dtype = DType::Int64})); }, "leaky_relu: input must be float32 or float64, got int64");
  expect_error<ValueError>([] { F::gelu(zeros({2}), "fast"); }, "gelu: approximate must be \"none\" or \"tanh\", got \"fast\"");
  expect_error<ValueError>([] { F::hardtanh(zeros({2}), 1.0, -1.0); }, "hardtanh: max_val (-1) must be >= min_val (1)");
  expect_error<ValueError>([] { F::celu(zeros({2}), 0.0); }, "celu: alpha must not be 0");
  expect_error<ValueError>([] { F::softplus(zeros({2}), 0.0); }, "softplus: beta must not be 0");
  expect_error<ShapeError>([] { F::glu(zeros({2, 5})); }, "glu: the halved dimension must be even, but dimension 1 of [2, 5] has size 5");
  expect_error<ShapeError>([] { F::prelu(zeros({2, 3, 4}), zeros({4})); }, "prelu: weight has 4 values but the input [2, 3, 4] has 3 channels");
}

TEST(NnOpsMoreErrors, Norms) {
  expect_error<ShapeError>([] { F::layer_norm(zeros({2, 3, 4}), {3}); }, "layer_norm: normalized_shape [3] must equal the input's last dims");
  expect_error<ShapeError>([] { F::layer_norm(zeros({2, 4}), {4}, zeros({3})); }, "layer_norm: weight must have shape [4], got [3]");
  expect_error<ValueError>([] { F::layer_norm(zeros({2, 4}), {}); }, "layer_norm: normalized_shape must name at least one dim");
  expect_error<ValueError>([] { F::group_norm(zeros({2, 6, 3}), 4); }, "group_norm: the input's 6 channels (shape [2, 6, 3]) must divide into num_groups=4");
  expect_error<ShapeError>([] { F::group_norm(zeros({6}), 2); }, "group_norm: input must be (N, C, *)");
  expect_error<DeviceError>([] { F::layer_norm(zeros({2, 4}), {4}, fake_cuda_tensor({4})); }, "layer_norm");
}

TEST(NnOpsMoreErrors, DistancesAndEmbedding) {
  expect_error<ShapeError>([] { F::cosine_similarity(zeros({3, 4}), zeros({2, 4})); }, "cosine_similarity");
  expect_error<DTypeError>([] { F::pairwise_distance(zeros({3}), zeros({3}, {.dtype = DType::Float64})); }, "x1 and x2 must have one dtype");
  expect_error<ValueError>([] { F::pairwise_distance(zeros({3}), zeros({3}), -1.0); }, "pairwise_distance: p must be >= 0, got -1");
  expect_error<IndexError>([] { F::embedding(tensor(std::vector<int64_t>{0, 7}), zeros({5, 2})); },
                           "embedding: index 7 (element 1 of the indices) is out of range for a weight of 5 rows");
  expect_error<DTypeError>([] { F::embedding(zeros({2}), zeros({5, 2})); }, "embedding: indices must be int64, got float32");
  expect_error<ValueError>([] { F::embedding(tensor(std::vector<int64_t>{0}), zeros({5, 2}), 5); }, "embedding: padding_idx 5 must be within [-5, 5)");
  expect_error<ShapeError>([] { F::embedding(tensor(std::vector<int64_t>{0}), zeros({5})); }, "embedding: weight must be 2-D");
}

TEST(NnOpsMoreErrors, Convolutions) {
  expect_error<ShapeError>([] { F::conv_transpose2d(zeros({1, 3, 4, 4}), zeros({4, 2, 3, 3})); },
                           "conv_transpose2d: input has 3 channels (shape [1, 3, 4, 4]) but weight [4, 2, 3, 3] expects 4");
  expect_error<ValueError>([] { F::conv_transpose2d(zeros({1, 2, 4, 4}), zeros({2, 2, 3, 3}), {}, {.stride = {2, 2}, .output_padding = {2, 0}}); },
                           "output_padding must be smaller than either stride or dilation");
  expect_error<ShapeError>([] { F::conv_transpose2d(zeros({1, 2, 4, 4}), zeros({2, 2, 3, 3}), zeros({3})); },
                           "conv_transpose2d: bias shape [3] does not match the 2 output channels");
  expect_error<ShapeError>([] { F::conv_transpose2d(zeros({1, 2, 1, 1}), zeros({2, 2, 1, 1}), {}, {.padding = {1, 1}}); },
                           "too much padding for this input");
  expect_error<ShapeError>([] { F::conv1d(zeros({1, 2, 3, 4}), zeros({2, 2, 3})); }, "conv1d: input must be 3-D (N, C_in, L) or 2-D (C_in, L)");
  expect_error<ValueError>([] { F::conv2d_padding(zeros({1, 1, 5, 5}), zeros({1, 1, 3, 3}), {}, "same", {2, 2}); },
                           "padding=\"same\" is not supported for strided convolutions");
  expect_error<ValueError>([] { F::conv2d_padding(zeros({1, 1, 5, 5}), zeros({1, 1, 3, 3}), {}, "full"); }, "conv2d: padding must be \"same\", \"valid\"");
  expect_error<ValueError>([] { F::max_pool1d(zeros({1, 2, 5}), {.kernel = 2, .padding = 2}); },
                           "max_pool1d: padding must be in [0, kernel_size / 2], got 2 for kernel_size 2");
  expect_error<ShapeError>([] { F::avg_pool1d(zeros({1, 2, 3}), {.kernel = 5}); }, "avg_pool1d: kernel_size 5 is larger than the padded input length 3");
  expect_error<ShapeError>([] { F::max_pool1d(zeros({1, 2, 3, 3}), {.kernel = 2}); }, "max_pool1d: input must be 3-D (N, C, L) or 2-D (C, L)");
}

TEST(NnOpsMoreErrors, DropoutInterpolatePad) {
  expect_error<ValueError>([] { F::dropout2d(ones({2, 3, 4, 4}), 1.5); }, "dropout2d: dropout probability has to be between 0 and 1, but got 1.5");
  expect_error<ShapeError>([] { F::dropout1d(ones({2, 3, 4, 4}), 0.5); }, "dropout1d: expected a 2-D (C, L) or 3-D (N, C, L) input");
  expect_error<ValueError>([] { F::interpolate(zeros({1, 1, 4, 4}), {}); }, "interpolate: either size or scale_factor should be defined");
  expect_error<ValueError>([] { F::interpolate(zeros({1, 1, 4, 4}), {.size = {8}, .scale_factor = {2.0}}); }, "only one of size or scale_factor");
  expect_error<NotImplementedError>([] { F::interpolate(zeros({1, 1, 4}), {.size = {8}, .mode = "bilinear"}); },
                                    "interpolate: got 3-D input, but bilinear mode needs 4-D input");
  expect_error<NotImplementedError>([] { F::interpolate(zeros({1, 1, 4, 4}), {.size = {8}, .mode = "bicubic"}); }, "mode \"bicubic\" is not implemented");
  expect_error<ValueError>([] { F::interpolate(zeros({1, 1, 4, 4}), {.size = {8}, .align_corners = true}); },
                           "align_corners can only be set with the interpolating modes");
  expect_error<ValueError>([] { F::interpolate(zeros({1, 1, 4, 4}), {.size = {8, 8, 8}}); }, "interpolate: size has 3 values for an input with 2 spatial dims");
  expect_error<ValueError>([] { F::pad(zeros({1, 3}), {3, 0}, "reflect"); }, "pad: reflect padding must be smaller than the padded dim, got (3, 0)");
  expect_error<ValueError>([] { F::pad(zeros({1, 3}), {1, 1}, "wrap"); }, "pad: mode must be \"constant\", \"reflect\", \"replicate\" or \"circular\"");
  expect_error<ShapeError>([] { F::pad(zeros({3}), {1, 1}, "replicate"); }, "pads the last 1, 2 or 3 dims of a 2-D to 5-D input");
  expect_error<ValueError>([] { F::pad(zeros({1, 3}), {1, 1}, "circular", 2.0); }, "pad: mode \"circular\" takes no value");
  expect_error<ValueError>([] { F::pad(zeros({1, 3}), {4, 0}, "circular"); }, "circular padding may wrap around at most once");
}

TEST(NnOpsMoreErrors, Losses) {
  expect_error<ShapeError>([] { F::cross_entropy(zeros({3, 4}), tensor(std::vector<int64_t>{0, 1, 2}), {.weight = ones({3})}); },
                           "cross_entropy: weight must hold one value per class (4), got shape [3]");
  expect_error<ValueError>([] { F::cross_entropy(zeros({3, 4}), zeros({3, 4}), {.ignore_index = 2}); },
                           "ignore_index (2) is not supported with class probabilities as targets");
  expect_error<ShapeError>([] { F::cross_entropy(zeros({2, 4, 3}), tensor(std::vector<int64_t>{0, 1, 2, 0, 1}, {1, 5})); },
                           "cross_entropy: target shape [1, 5] does not match logits [2, 4, 3] (expected [2, 3])");
  expect_error<DTypeError>([] { F::cross_entropy(zeros({3, 4}), zeros({3})); }, "class probabilities as targets must have the logits' shape [3, 4]");
  expect_error<ValueError>([] { F::nll_loss(zeros({3, 4}), tensor(std::vector<int64_t>{0, 1, 2}), {.label_smoothing = 0.1}); },
                           "nll_loss: label_smoothing is cross_entropy's option");
  expect_error<ShapeError>([] { F::l1_loss(zeros({2, 3}), zeros({3, 2})); }, "l1_loss");
  expect_error<ValueError>([] { F::smooth_l1_loss(zeros({2}), zeros({2}), F::Reduction::Mean, -1.0); }, "smooth_l1_loss: beta must be >= 0, got -1");
  expect_error<ValueError>([] { F::huber_loss(zeros({2}), zeros({2}), F::Reduction::Mean, 0.0); }, "huber_loss: delta must be > 0, got 0");
  expect_error<ValueError>([] { F::binary_cross_entropy(tensor({0.5f, 1.5f}), zeros({2})); },
                           "binary_cross_entropy: all elements of input should be between 0 and 1, got 1.5 at element 1");
  expect_error<ShapeError>([] { F::binary_cross_entropy(tensor({0.5f, 0.5f}), zeros({1, 2})); },
                           "binary_cross_entropy: target shape [1, 2] must be the input's [2]");
  expect_error<ShapeError>([] { F::binary_cross_entropy_with_logits(zeros({4, 3}), zeros({4, 3}), {}, F::Reduction::Mean, ones({4})); },
                           "pos_weight shape [4] does not broadcast to the input's [4, 3]");
  expect_error<DTypeError>([] { F::kl_div(zeros({2}), tensor(std::vector<int64_t>{0, 1})); }, "kl_div: target must be floating point, got int64");
  expect_error<DeviceError>([] { F::huber_loss(zeros({2}), fake_cuda_tensor({2})); }, "huber_loss");
}
