// nn::functional::batch_norm_activation (ReLU / ReLU6 inside the CPU batch norm's own passes)
// against batch_norm followed by the activation: forward, running statistics and every gradient
// equal in float32 and float64, training and evaluation, on planes shorter and longer than the
// kernel's summation block; the fused kernels really run (the backward node's name); the other
// activations compose; nn::conv_bn_activation in training (where resnet, mobilenet and bncnn call
// it) equals conv, batch norm and activation run one by one, model output and gradients included.
// The op harness (tests/harness/ops_nn.cpp, BatchNormActivation) checks the op against the reference
// kernels and by finite differences.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "support/compare.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

struct BnCase {
  Shape x;
  bool training;
};
// One element per plane, a plane longer than the 4096-element summation block, resnet's first
// block, a batch large enough for OpenMP over channels.
const std::vector<Shape> kShapes = {{5, 3, 1, 1}, {2, 3, 70, 70}, {4, 64, 14, 14}, {16, 8, 7, 7}};

struct Operands {
  Tensor x, rm, rv, w, b;
};
// x in [-4, 8) with a per-channel offset: outputs on both sides of 0 and of 6.
Operands operands(const Shape& s, DType dt, uint64_t seed) {
  Generator gen(seed);
  const TensorOptions o{.dtype = dt};
  Operands r{add(mul(rand(s, o, &gen), 12.0), -4.0), add(mul(rand({s[1]}, o, &gen), 2.0), -1.0),
             add(rand({s[1]}, o, &gen), 0.5), add(mul(rand({s[1]}, o, &gen), 3.0), 1.0),
             add(mul(rand({s[1]}, o, &gen), 4.0), -1.0)};
  r.x.requires_grad_(true);
  r.w.requires_grad_(true);
  r.b.requires_grad_(true);
  return r;
}

struct Outcome {
  Tensor out, rm, rv, gx, gw, gb;
  std::string node;
};
template <class Fn>
Outcome run(const Shape& s, DType dt, bool training, Fn f) {
  Operands o = operands(s, dt, 11);
  Outcome r;
  r.out = f(o, training);
  r.node = r.out.grad_fn() ? r.out.grad_fn()->name() : "";
  r.rm = o.rm, r.rv = o.rv;
  Generator gen(5);
  Tensor seed = add(rand(r.out.sizes(), {.dtype = dt}, &gen), -0.5);
  auto g = autograd::grad({r.out}, {o.x, o.w, o.b}, {seed});
  r.gx = g[0], r.gw = g[1], r.gb = g[2];
  return r;
}

}  // namespace

// The fused passes compute each element with the unfused kernels' expressions (the affine map, then
// max(t, 0) / clip(t, 0, 6); the gradient masked where the output is at a bound), so every value is
// equal, not merely close.
TEST(BatchNormActivation, ReluAndRelu6EqualBatchNormThenTheActivationExactly) {
  const std::pair<F::ConvActivation, Tensor (*)(const Tensor&)> acts[] = {{F::ConvActivation::Relu, &relu},
                                                                          {F::ConvActivation::Relu6, &relu6}};
  double at_six = 0.0;
  for (DType dt : {DType::Float32, DType::Float64})
    for (const auto& [act, unfused_act] : acts)
      for (bool training : {true, false})
        for (const Shape& s : kShapes) {
          SCOPED_TRACE(std::string(dtype_name(dt)) + (act == F::ConvActivation::Relu ? " relu " : " relu6 ") +
                       (training ? "training " : "eval ") + shape_str(s));
          Outcome fused = run(s, dt, training, [&](Operands& o, bool t) {
            return F::batch_norm_activation(o.x, o.rm, o.rv, o.w, o.b, t, 0.1, 1e-5, act);
          });
          Outcome unfused = run(s, dt, training, [&](Operands& o, bool t) {
            return unfused_act(F::batch_norm(o.x, o.rm, o.rv, o.w, o.b, t, 0.1, 1e-5));
          });
          EXPECT_EQ(fused.node, act == F::ConvActivation::Relu ? "BatchNormReluBackward" : "BatchNormRelu6Backward");
          EXPECT_TRUE(test::close(unfused.out, fused.out, 0.0));
          EXPECT_TRUE(test::close(unfused.rm, fused.rm, 0.0));
          EXPECT_TRUE(test::close(unfused.rv, fused.rv, 0.0));
          EXPECT_TRUE(test::close(unfused.gx, fused.gx, 0.0));
          EXPECT_TRUE(test::close(unfused.gw, fused.gw, 0.0));
          EXPECT_TRUE(test::close(unfused.gb, fused.gb, 0.0));
          // Both sides of each kink were met.
          EXPECT_GT(sum(eq(fused.out, 0.0).to(DType::Float64)).item<double>(), 0.0);
          EXPECT_GT(sum(gt(fused.out, 0.0).to(DType::Float64)).item<double>(), 0.0);
          if (act == F::ConvActivation::Relu6) at_six += sum(eq(fused.out, 6.0).to(DType::Float64)).item<double>();
        }
  EXPECT_GT(at_six, 0.0);  // ReLU6's upper kink was met too
}

TEST(BatchNormActivation, NanInputsFollowTheActivationsRules) {
  // ReLU maps NaN to 0 (x > 0 is false), ReLU6 keeps it; the fused op does the same.
  Operands o = operands({2, 3, 4, 4}, DType::Float32, 3);
  Tensor x = o.x.detach().clone();
  x.data_ptr<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  for (auto [act, unfused] : {std::pair{F::ConvActivation::Relu, &relu}, std::pair{F::ConvActivation::Relu6, &relu6}}) {
    Tensor a = F::batch_norm_activation(x, {}, {}, o.w.detach(), o.b.detach(), true, 0.1, 1e-5, act);
    Tensor b = unfused(F::batch_norm(x, {}, {}, o.w.detach(), o.b.detach(), true, 0.1, 1e-5));
    EXPECT_TRUE(test::close(b, a, 0.0));
  }
}

TEST(BatchNormActivation, OtherActivationsComposeTheTwoOps) {
  for (auto [act, unfused] : {std::pair{F::ConvActivation::Silu, &silu}, std::pair{F::ConvActivation::Hardswish, &hardswish},
                              std::pair{F::ConvActivation::None, +[](const Tensor& t) { return t; }}}) {
    Outcome fused = run({4, 8, 5, 5}, DType::Float32, true, [&](Operands& o, bool t) {
      return F::batch_norm_activation(o.x, o.rm, o.rv, o.w, o.b, t, 0.1, 1e-5, act);
    });
    Outcome unfused_run = run({4, 8, 5, 5}, DType::Float32, true, [&](Operands& o, bool t) {
      return unfused(F::batch_norm(o.x, o.rm, o.rv, o.w, o.b, t, 0.1, 1e-5));
    });
    EXPECT_TRUE(test::close(unfused_run.out, fused.out, 0.0));
    EXPECT_TRUE(test::close(unfused_run.gx, fused.gx, 0.0));
    EXPECT_TRUE(test::close(unfused_run.gw, fused.gw, 0.0));
  }
}

// conv_bn_activation in training now runs the batch norm and its ReLU as one op: a small net of
// two such layers (the second ReLU6) gives the output, running statistics and parameter gradients
// of its layers called one by one, in float32 and under bf16 autocast.
TEST(BatchNormActivation, ConvBnActivationTrainingEqualsItsLayersOneByOne) {
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16 autocast" : "float32");
    auto build = [] {
      Generator gen(21);
      auto c1 = std::make_shared<nn::Conv2d>(3, 16, 3, nn::Conv2dOptions{.padding = {1, 1}, .bias = false}, &gen);
      auto b1 = std::make_shared<nn::BatchNorm2d>(16);
      auto c2 = std::make_shared<nn::Conv2d>(16, 16, 3, nn::Conv2dOptions{.stride = {2, 2}, .padding = {1, 1}}, &gen);
      auto b2 = std::make_shared<nn::BatchNorm2d>(16);
      return std::tuple{c1, b1, c2, b2};
    };
    Generator gen(8);
    Tensor x = add(rand({4, 3, 12, 12}, {}, &gen), -0.5);
    auto [c1, b1, c2, b2] = build();
    auto [d1, e1, d2, e2] = build();
    Tensor fused, plain;
    {
      std::optional<autocast> ac;
      if (bf16) ac.emplace();
      Tensor y = nn::conv_bn_activation(*c1, *b1, x, F::ConvActivation::Relu);
      fused = nn::conv_bn_activation(*c2, *b2, y, F::ConvActivation::Relu6);
      Tensor z = relu((*e1)((*d1)(x)));
      plain = relu6((*e2)((*d2)(z)));
    }
    EXPECT_EQ(fused.grad_fn()->name(), "BatchNormRelu6Backward");
    EXPECT_TRUE(test::close(plain, fused, 0.0));
    fused.sum().backward();
    plain.sum().backward();
    EXPECT_TRUE(test::close(d1->weight.grad(), c1->weight.grad(), 0.0));
    EXPECT_TRUE(test::close(d2->weight.grad(), c2->weight.grad(), 0.0));
    EXPECT_TRUE(test::close(d2->bias.grad(), c2->bias.grad(), 0.0));
    EXPECT_TRUE(test::close(e1->weight.grad(), b1->weight.grad(), 0.0));
    EXPECT_TRUE(test::close(e2->bias.grad(), b2->bias.grad(), 0.0));
    EXPECT_TRUE(test::close(e1->running_var, b1->running_var, 0.0));
    EXPECT_EQ(b1->num_batches_tracked.item<int64_t>(), 1);
  }
}

// act(bn(x) + r): the batch norm rounded, the add, the activation, as the three ops compute them,
// and the residual's gradient the activation's masked gradient, all equal to the unfused ops'.
TEST(BatchNormAddActivation, EqualsBatchNormAddThenTheActivationExactly) {
  const std::pair<F::ConvActivation, Tensor (*)(const Tensor&)> acts[] = {{F::ConvActivation::Relu, &relu},
                                                                          {F::ConvActivation::Relu6, &relu6}};
  for (DType dt : {DType::Float32, DType::Float64})
    for (const auto& [act, unfused_act] : acts)
      for (bool training : {true, false})
        for (const Shape& s : kShapes) {
          SCOPED_TRACE(std::string(dtype_name(dt)) + (act == F::ConvActivation::Relu ? " relu " : " relu6 ") +
                       (training ? "training " : "eval ") + shape_str(s));
          auto go = [&](bool fused) {
            Operands o = operands(s, dt, 11);
            Generator gen(31);
            Tensor r = add(mul(rand(s, {.dtype = dt}, &gen), 6.0), -3.0);
            r.requires_grad_(true);
            Tensor out = fused ? F::batch_norm_add_activation(o.x, o.rm, o.rv, o.w, o.b, training, 0.1, 1e-5, r, act)
                               : unfused_act(add(F::batch_norm(o.x, o.rm, o.rv, o.w, o.b, training, 0.1, 1e-5), r));
            Generator sg(5);
            Tensor seed = add(rand(out.sizes(), {.dtype = dt}, &sg), -0.5);
            auto g = autograd::grad({out}, {o.x, o.w, o.b, r}, {seed});
            return std::tuple{out, o.rm, o.rv, g, out.grad_fn()->name()};
          };
          auto [fo, frm, frv, fg, fname] = go(true);
          auto [uo, urm, urv, ug, uname] = go(false);
          EXPECT_EQ(fname, act == F::ConvActivation::Relu ? "BatchNormAddReluBackward" : "BatchNormAddRelu6Backward");
          EXPECT_TRUE(test::close(uo, fo, 0.0));
          EXPECT_TRUE(test::close(urm, frm, 0.0));
          EXPECT_TRUE(test::close(urv, frv, 0.0));
          for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(test::close(ug[i], fg[i], 0.0)) << "gradient " << i;
        }
}

TEST(BatchNormAddActivation, ABroadcastResidualOrAnotherActivationComposesTheOps) {
  Operands o = operands({4, 8, 5, 5}, DType::Float32, 2);
  Tensor r = rand({8, 1, 1});  // broadcast over (N, ., H, W)
  Tensor a = F::batch_norm_add_activation(o.x, {}, {}, o.w, o.b, true, 0.1, 1e-5, r, F::ConvActivation::Relu);
  Tensor b = relu(add(F::batch_norm(o.x, {}, {}, o.w, o.b, true, 0.1, 1e-5), r));
  EXPECT_TRUE(test::close(b, a, 0.0));
  Tensor r2 = rand({4, 8, 5, 5});
  Tensor c = F::batch_norm_add_activation(o.x, {}, {}, o.w, o.b, true, 0.1, 1e-5, r2, F::ConvActivation::Silu);
  Tensor d = silu(add(F::batch_norm(o.x, {}, {}, o.w, o.b, true, 0.1, 1e-5), r2));
  EXPECT_TRUE(test::close(d, c, 0.0));
  EXPECT_THROW(F::batch_norm_add_activation(o.x, {}, {}, o.w, o.b, true, 0.1, 1e-5, rand({3, 8, 5, 5}),
                                            F::ConvActivation::Relu),
               ShapeError);
  EXPECT_THROW(F::batch_norm_add_activation(o.x, {}, {}, o.w, o.b, true, 0.1, 1e-5, Tensor(), F::ConvActivation::Relu),
               ValueError);
}

// ResidualBlock / Bottleneck (torchvision's BasicBlock / Bottleneck) in training run their tail as
// one op; output, every parameter gradient, the input's gradient and the running statistics equal
// the same blocks' layers called one by one, in float32 and under bf16 autocast.
TEST(BatchNormAddActivation, ResidualBlocksEqualTheirLayersOneByOne) {
  for (bool bf16 : {false, true})
    for (int kind = 0; kind < 3; ++kind) {
      SCOPED_TRACE(std::string(bf16 ? "bf16 " : "float32 ") + std::to_string(kind));
      auto build = [&]() -> std::shared_ptr<nn::Module> {
        Generator gen(3);
        if (kind == 0) return std::make_shared<nn::ResidualBlock>(16, 16, 1, &gen);
        if (kind == 1) return std::make_shared<nn::ResidualBlock>(16, 32, 2, &gen);
        return std::make_shared<nn::Bottleneck>(16, 8, 2, &gen);
      };
      auto fused_m = build(), plain_m = build();
      auto unfused = [&](nn::Module& m, const Tensor& x) {
        if (auto* b = dynamic_cast<nn::ResidualBlock*>(&m)) {
          Tensor y = relu((*b->bn1)((*b->conv1)(x)));
          y = (*b->bn2)((*b->conv2)(y));
          return relu(add(y, b->downsample ? (*b->downsample)(x) : x));
        }
        auto* b = dynamic_cast<nn::Bottleneck*>(&m);
        Tensor y = relu((*b->bn1)((*b->conv1)(x)));
        y = relu((*b->bn2)((*b->conv2)(y)));
        y = (*b->bn3)((*b->conv3)(y));
        return relu(add(y, b->downsample ? (*b->downsample)(x) : x));
      };
      Generator gen(8);
      Tensor x1 = add(rand({4, 16, 10, 10}, {}, &gen), -0.5), x2 = x1.clone();
      x1.requires_grad_(true);
      x2.requires_grad_(true);
      Tensor fused, plain;
      {
        std::optional<autocast> ac;
        if (bf16) ac.emplace();
        fused = (*fused_m)(x1);
        plain = unfused(*plain_m, x2);
      }
      EXPECT_EQ(fused.grad_fn()->name(), "BatchNormAddReluBackward");
      EXPECT_TRUE(test::close(plain, fused, 0.0));
      fused.sum().backward();
      plain.sum().backward();
      EXPECT_TRUE(test::close(x2.grad(), x1.grad(), 0.0));
      auto fp = fused_m->named_parameters(), pp = plain_m->named_parameters();
      ASSERT_EQ(fp.size(), pp.size());
      for (size_t i = 0; i < fp.size(); ++i) EXPECT_TRUE(test::close(pp[i].second.grad(), fp[i].second.grad(), 0.0)) << fp[i].first;
      auto fb = fused_m->named_buffers(), pb = plain_m->named_buffers();
      for (size_t i = 0; i < fb.size(); ++i) EXPECT_TRUE(test::close(pb[i].second, fb[i].second, 0.0, true)) << fb[i].first;
    }
}

// summary() lists a block's layers in the order of their own forwards (PyTorch's hooks order:
// conv2, bn2, then the downsample), so under it the tail runs unfused.
TEST(BatchNormAddActivation, SummaryListsTheBlocksLayersInTheirForwardOrder) {
  nn::ResidualBlock b(8, 16, 2);
  const std::string s = b.summary({2, 8, 12, 12});
  const auto bn2 = s.find("bn2"), down = s.find("downsample");
  ASSERT_NE(bn2, std::string::npos) << s;
  ASSERT_NE(down, std::string::npos) << s;
  EXPECT_LT(bn2, down) << s;
}
