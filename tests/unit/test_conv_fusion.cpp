// nn::functional::conv2d_activation (the activation fused into the convolution through oneDNN
// post-ops on the CPU) against conv2d followed by the activation: forward and backward, float32 and
// bf16 autocast, the geometries of the zoo's models; that the fused kernel really ran; that the
// result a user sees is a plain contiguous NCHW float32 tensor; mnistnet / lenet5 (which fuse) give
// the values of their layers run unfused; Sequential's Conv2d [BatchNorm2d] activation pattern pass;
// nn::FoldBatchNorm (folded evaluation within float32 rounding of the unfolded ops, never in
// training, kept folded weights that follow changed parameters). The op harness
// (tests/harness/ops_nn.cpp, Conv2dActivation) checks the same op against the reference kernels and
// by finite differences.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cpu/nn_conv.h"
#include "kernels/nn_kernels.h"
#include "backends/registry.h"
#include "support/compare.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

struct Geometry {
  std::string label;
  Shape x, w;
  F::Conv2dOptions opt;
};
// mnistnet's two layers (3x3, 1 -> 32 and 32 -> 64), lenet5's padded 5x5, a strided MobileNet stem,
// a depthwise 3x3 and a pointwise 1x1 (MobileNet's blocks), at small batches.
const std::vector<Geometry> kGeometries = {
    {"mnistnet_conv1", {4, 1, 28, 28}, {32, 1, 3, 3}, {}},
    {"mnistnet_conv2", {4, 32, 26, 26}, {64, 32, 3, 3}, {}},
    {"lenet5_conv1", {3, 1, 28, 28}, {6, 1, 5, 5}, {.padding = {2, 2}}},
    {"stem_stride2", {2, 3, 32, 32}, {16, 3, 3, 3}, {.stride = {2, 2}, .padding = {1, 1}}},
    {"depthwise", {2, 32, 14, 14}, {32, 1, 3, 3}, {.padding = {1, 1}, .groups = 32}},
    {"pointwise", {2, 32, 14, 14}, {48, 32, 1, 1}, {}},
};

struct Act {
  const char* name;
  F::ConvActivation act;
  Tensor (*unfused)(const Tensor&);
};
const std::vector<Act> kActs = {{"relu", F::ConvActivation::Relu, &relu},
                                {"relu6", F::ConvActivation::Relu6, &relu6},
                                {"silu", F::ConvActivation::Silu, &silu},
                                {"hardswish", F::ConvActivation::Hardswish, &hardswish}};

// Inputs whose convolutions land on both sides of every kink (0 for ReLU, 6 for ReLU6, +-3 for
// Hardswish): values in [-3, 3).
struct Operands {
  Tensor x, w, b;
};
Operands operands(const Geometry& g, uint64_t seed, bool grad) {
  Generator gen(seed);
  Operands o{add(mul(rand(g.x, {}, &gen), 6.0), -3.0), add(rand(g.w, {}, &gen), -0.5),
             add(mul(rand({g.w[0]}, {}, &gen), 2.0), -1.0)};
  o.x.requires_grad_(grad);
  o.w.requires_grad_(grad);
  o.b.requires_grad_(grad);
  return o;
}

struct Outcome {
  Tensor out, gx, gw, gb;
};
// One forward (and, with `grad`, a backward seeded with a fixed gradient) of `f`.
template <class Fn>
Outcome run_op(const Operands& o, bool grad, Fn f) {
  Outcome r;
  r.out = f(o.x, o.w, o.b);
  if (!grad) return r;
  Generator gen(99);
  Tensor seed = add(rand(r.out.sizes(), {}, &gen), -0.5);
  auto g = autograd::grad({r.out}, {o.x, o.w, o.b}, {seed});
  r.gx = g[0], r.gw = g[1], r.gb = g[2];
  return r;
}

}  // namespace

// ReLU and ReLU6 in float32: the post-op applies max(x, 0) / clip(x, 0, 6) to the convolution's
// float32 result in registers, the same values the separate pass computes; the backward takes the
// mask from the output, which is the mask of the input. So forward and every gradient are equal.
TEST(Conv2dFusion, ReluAndRelu6EqualTheUnfusedOpsExactlyForwardAndBackward) {
  for (const Geometry& g : kGeometries)
    for (const Act& a : kActs) {
      if (a.act != F::ConvActivation::Relu && a.act != F::ConvActivation::Relu6) continue;
      SCOPED_TRACE(g.label + " " + a.name);
      const Operands o = operands(g, 7, true);
      Outcome fused = run_op(o, true, [&](auto& x, auto& w, auto& b) { return F::conv2d_activation(x, w, b, g.opt, a.act); });
      Outcome unfused = run_op(o, true, [&](auto& x, auto& w, auto& b) { return a.unfused(F::conv2d(x, w, b, g.opt)); });
      EXPECT_TRUE(test::close(unfused.out, fused.out, 0.0));
      EXPECT_TRUE(test::close(unfused.gx, fused.gx, 0.0));
      EXPECT_TRUE(test::close(unfused.gw, fused.gw, 0.0));
      EXPECT_TRUE(test::close(unfused.gb, fused.gb, 0.0));
    }
}

// SiLU and Hardswish come from oneDNN's own formulas (swish: x * logistic(x) with its exp
// polynomial; hardswish: x * relu6(x + 3) / 6 with the division as a multiplication): a few float32
// ulps from ember's kernels, relative to the layer's largest output.
TEST(Conv2dFusion, SiluAndHardswishInferenceWithinFloat32RoundingOfTheUnfusedOps) {
  NoGradGuard ng;
  for (const Geometry& g : kGeometries)
    for (const Act& a : kActs) {
      if (a.act != F::ConvActivation::Silu && a.act != F::ConvActivation::Hardswish) continue;
      SCOPED_TRACE(g.label + " " + a.name);
      const Operands o = operands(g, 11, false);
      Tensor fused = F::conv2d_activation(o.x, o.w, o.b, g.opt, a.act);
      Tensor unfused = a.unfused(F::conv2d(o.x, o.w, o.b, g.opt));
      EXPECT_TRUE(test::close(unfused, fused, 1e-6));
    }
}

// With gradients recorded, SiLU and Hardswish need their input in backward: the op runs conv2d and
// the activation, so values and gradients are those of the two ops exactly.
TEST(Conv2dFusion, SiluAndHardswishTrainingRunUnfusedWithTheSameGradients) {
  const Geometry& g = kGeometries[1];
  for (const Act& a : kActs) {
    if (a.act != F::ConvActivation::Silu && a.act != F::ConvActivation::Hardswish) continue;
    SCOPED_TRACE(a.name);
    const Operands o = operands(g, 13, true);
    Outcome fused = run_op(o, true, [&](auto& x, auto& w, auto& b) { return F::conv2d_activation(x, w, b, g.opt, a.act); });
    Outcome unfused = run_op(o, true, [&](auto& x, auto& w, auto& b) { return a.unfused(F::conv2d(x, w, b, g.opt)); });
    EXPECT_TRUE(test::close(unfused.out, fused.out, 0.0));
    EXPECT_TRUE(test::close(unfused.gx, fused.gx, 0.0));
    EXPECT_TRUE(test::close(unfused.gw, fused.gw, 0.0));
  }
}

// Under bf16 autocast the convolution multiplies in bf16 and writes float32; the post-op works on
// that float32 result, so ReLU / ReLU6 again equal the unfused ops exactly, gradients included.
TEST(Conv2dFusion, ReluUnderBf16AutocastEqualsTheUnfusedOps) {
  for (const Geometry& g : kGeometries) {
    SCOPED_TRACE(g.label);
    const Operands o = operands(g, 17, true);
    autocast ac;
    Outcome fused = run_op(o, true, [&](auto& x, auto& w, auto& b) {
      return F::conv2d_activation(x, w, b, g.opt, F::ConvActivation::Relu);
    });
    Outcome unfused = run_op(o, true, [&](auto& x, auto& w, auto& b) { return relu(F::conv2d(x, w, b, g.opt)); });
    EXPECT_TRUE(test::close(unfused.out, fused.out, 0.0));
    EXPECT_TRUE(test::close(unfused.gx, fused.gx, 0.0));
    EXPECT_TRUE(test::close(unfused.gw, fused.gw, 0.0));
    EXPECT_TRUE(test::close(unfused.gb, fused.gb, 0.0));
  }
}

// The fused path really runs (the slot is filled and oneDNN builds every geometry above with each
// post-op); float64 is declined (the front-end then runs the two ops on the reference kernels).
TEST(Conv2dFusion, TheCpuFusedKernelRunsEveryActivationAndDeclinesFloat64) {
  ember::ensure_backends();  // the slots fill on the first allocation; this test may run alone (ctest)
  ASSERT_TRUE(kernels::conv2d_forward_fused.has(DeviceType::CPU));
  NoGradGuard ng;
  for (const Geometry& g : kGeometries)
    for (const Act& a : kActs) {
      SCOPED_TRACE(g.label + " " + a.name);
      const Operands o = operands(g, 19, false);
      const int64_t oh = (g.x[2] + 2 * g.opt.padding[0] - g.w[2]) / g.opt.stride[0] + 1;
      const int64_t ow = (g.x[3] + 2 * g.opt.padding[1] - g.w[3]) / g.opt.stride[1] + 1;
      const kernels::Conv2dParams p{g.opt.stride[0], g.opt.stride[1], g.opt.padding[0], g.opt.padding[1], 1, 1,
                                    g.opt.groups};
      Tensor out = full({g.x[0], g.w[0], oh, ow}, std::nan(""));
      EXPECT_TRUE(cpu::conv2d_forward_fused_dnnl(o.x, o.w, o.b, p, kernels::ConvEpilogue(a.act), out));
      EXPECT_TRUE(test::close(a.unfused(F::conv2d(o.x, o.w, o.b, g.opt)), out, 1e-6));
      Tensor out64 = empty(out.sizes(), {.dtype = DType::Float64});
      EXPECT_FALSE(cpu::conv2d_forward_fused_dnnl(o.x.to(DType::Float64), o.w.to(DType::Float64),
                                                  o.b.to(DType::Float64), p, kernels::ConvEpilogue(a.act), out64));
    }
}

// Whatever layout the kernel worked in, what the caller gets is a plain, contiguous (N, C, H, W)
// float32 tensor, under autocast too.
TEST(Conv2dFusion, TheUserVisibleOutputIsAlwaysPlainNchwFloat32) {
  const Geometry& g = kGeometries[1];
  const Operands o = operands(g, 23, false);
  for (bool half : {false, true}) {
    std::optional<autocast> ac;
    if (half) ac.emplace();
    Tensor y = F::conv2d_activation(o.x, o.w, o.b, g.opt, F::ConvActivation::Relu);
    EXPECT_EQ(y.dtype(), DType::Float32);
    EXPECT_TRUE(y.is_contiguous());
    EXPECT_EQ(y.sizes(), (Shape{4, 64, 24, 24}));
    EXPECT_EQ(y.strides(), (std::vector<int64_t>{64 * 24 * 24, 24 * 24, 24, 1}));
    // Reading it through .data() gives the values of the unfused ops in NCHW order.
    Tensor want = relu(F::conv2d(o.x, o.w, o.b, g.opt));
    EXPECT_EQ(y.to_vector<float>(), want.to_vector<float>());
  }
}

// The zoo models that fuse (mnistnet, lenet5) give, in training mode with gradients and in
// inference, exactly what their layers give run one op at a time.
TEST(Conv2dFusion, MnistnetForwardEqualsItsLayersRunUnfused) {
  Generator gen(5);
  auto model = models::mnistnet(10, 1, 28, &gen);
  auto child = [&](const std::string& name) {
    for (const auto& [n, m] : model->named_children())
      if (n == name) return m;
    return std::shared_ptr<nn::Module>();
  };
  model->eval();  // dropout off, so the two forwards see the same function
  Tensor x = rand({3, 1, 28, 28}, {}, &gen);
  Tensor y = relu((*child("conv1"))(x));
  y = relu((*child("conv2"))(y));
  y = F::max_pool2d(y, {.kernel = {2, 2}});
  y = relu((*child("fc1"))(flatten(y, 1)));
  y = (*child("fc2"))(y);
  EXPECT_TRUE(test::close(y, (*model)(x), 0.0));
}

namespace {
// Batch norms with statistics and affine parameters far from the identity, so that folding them
// changes every weight.
void randomise_batch_norms(nn::Module& model, uint64_t seed) {
  NoGradGuard ng;
  Generator gen(seed);
  for (auto& [name, m] : model.named_modules())
    if (auto* bn = dynamic_cast<nn::BatchNorm2d*>(m.get())) {
      const Shape c{bn->num_features};
      bn->running_mean.copy_(add(rand(c, {}, &gen), -0.5));
      bn->running_var.copy_(add(rand(c, {}, &gen), 0.5));
      bn->weight.copy_(add(rand(c, {}, &gen), 0.5));
      bn->bias.copy_(add(rand(c, {}, &gen), -0.5));
    }
}
}  // namespace

// Folding changes the arithmetic (w * s instead of (conv - mean) * s): the outputs agree within
// float32 rounding, relative to the largest logit. Outside a FoldBatchNorm scope, and in training
// inside one, the model runs unfolded, to the bit.
TEST(FoldBatchNorm, FoldedEvaluationAgreesWithTheUnfoldedOps) {
  struct M {
    const char* name;
    std::shared_ptr<nn::Module> model;
    Shape x;
  };
  Generator gen(3);
  // bncnn (the models' own conv_bn_activation), resnet_small (ResidualBlock and its downsample
  // Sequential), mobilenet_v2 (Sequential's Conv2d, BatchNorm2d, ReLU6 pattern): small, for CI's ASan.
  const std::vector<M> zoo = {{"bncnn48_fc128", models::bncnn48_fc128(10, 1, 28, &gen), {2, 1, 28, 28}},
                              {"resnet_small", models::resnet_small(10, 3, 32, &gen), {2, 3, 32, 32}},
                              {"mobilenet_v2", models::mobilenet_v2(10, 3, 32, &gen), {2, 3, 32, 32}}};
  for (const M& m : zoo) {
    SCOPED_TRACE(m.name);
    randomise_batch_norms(*m.model, 7);
    m.model->eval();
    NoGradGuard ng;
    Tensor x = rand(m.x, {}, &gen);
    Tensor unfolded = (*m.model)(x);
    Tensor folded;
    {
      nn::FoldBatchNorm fold;
      EXPECT_TRUE(nn::FoldBatchNorm::active());
      folded = (*m.model)(x);
    }
    EXPECT_FALSE(nn::FoldBatchNorm::active());
    EXPECT_TRUE(test::close(unfolded, folded, 1e-4));
    EXPECT_FALSE(test::close(unfolded, folded, 0.0)) << "folding changed nothing: was it applied?";
    EXPECT_TRUE(test::close(unfolded, (*m.model)(x), 0.0));
  }
}

TEST(FoldBatchNorm, TrainingModeNeverFolds) {
  Generator gen(4);
  auto a = models::bncnn48_fc128(10, 1, 28, &gen);
  Generator gen2(4);
  auto b = models::bncnn48_fc128(10, 1, 28, &gen2);
  Tensor x = rand({4, 1, 28, 28}, {}, &gen);
  Tensor plain = (*a)(x);
  nn::FoldBatchNorm fold;
  EXPECT_TRUE(test::close(plain, (*b)(x), 0.0));
}

// Sequential's pattern pass: Conv2d [BatchNorm2d] activation runs fused, with the values and
// gradients of the children run one by one, and summary() still lists every child.
TEST(Conv2dFusion, SequentialPatternPassEqualsItsChildrenOneByOne) {
  Generator gen(8);
  auto seq = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(3, 16, 3, nn::Conv2dOptions{.padding = {1, 1}}, &gen), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Conv2d>(16, 16, 3, nn::Conv2dOptions{.padding = {1, 1}, .bias = false}, &gen),
      std::make_shared<nn::BatchNorm2d>(16), std::make_shared<nn::ReLU6>(),
      std::make_shared<nn::Conv2d>(16, 8, 1, nn::Conv2dOptions{}, &gen), std::make_shared<nn::SiLU>()});
  Tensor x = rand({2, 3, 12, 12}, {}, &gen);
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "eval");
    seq->train(training);
    auto by_hand = [&] {
      Tensor y = x;
      for (auto& [name, m] : seq->named_children()) y = m->forward(y);
      return y;
    };
    Tensor want = by_hand();
    Tensor got = (*seq)(x);
    EXPECT_TRUE(test::close(want, got, training ? 0.0 : 1e-6));
    if (training) {
      auto params = seq->parameters();
      auto g1 = autograd::grad({sum(want)}, params);
      auto g2 = autograd::grad({sum(got)}, params);
      for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(test::close(g1[i], g2[i], 0.0)) << "parameter " << i;
    }
  }
  const std::string s = seq->summary({1, 3, 12, 12});
  for (const char* layer : {"Conv2d", "ReLU", "BatchNorm2d", "ReLU6", "SiLU"})
    EXPECT_NE(s.find(layer), std::string::npos) << layer << " missing from\n" << s;
}

// The folded weights are kept between forwards; a change to any source (load_state_dict, an
// optimizer step, a copy_ into a running statistic) is seen by the next folded forward.
TEST(FoldBatchNorm, KeptFoldedWeightsFollowChangedParametersAndStatistics) {
  Generator gen(6);
  auto model = models::bncnn48_fc128(10, 1, 28, &gen);
  model->eval();
  NoGradGuard ng;
  Tensor x = rand({2, 1, 28, 28}, {}, &gen);
  nn::FoldBatchNorm fold;
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    randomise_batch_norms(*model, seed);
    if (seed == 3)
      for (auto& [name, m] : model->named_modules())
        if (auto* c = dynamic_cast<nn::Conv2d*>(m.get())) c->weight.mul_(0.5);
    Tensor folded = (*model)(x);
    Tensor again = (*model)(x);
    EXPECT_TRUE(test::close(folded, again, 0.0));
    // Unfolded reference: the same model outside any FoldBatchNorm scope (it is per thread).
    Tensor unfolded;
    std::thread([&] {
      NoGradGuard ng2;
      unfolded = (*model)(x);
    }).join();
    EXPECT_TRUE(test::close(unfolded, folded, 1e-4));
  }
}
