// Optimizers against PyTorch: three steps of SGD (plain, momentum + dampening + weight decay,
// Nesterov), Adam (L2 decay, AMSGrad) and AdamW on a fixed float64 quadratic; bad settings;
// zero_grad; parameter groups; state_dict resume.
//
// Expected values: /usr/bin/python3 (torch 1.13.1, float64) ran, for each optimizer,
//   p = torch.tensor([1., -2., 3.], requires_grad=True); opt = <optimizer>([p], ...)
//   3 x { opt.zero_grad(); loss = (p*p*[1,2,3]).sum() + (p*[0.5,-1,2]).sum(); loss.backward();
//         opt.step(); record p }
// and printed repr() of every value.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <functional>

#include "support/errors.h"

using namespace ember;
using ember::test::message_of;
using Rows = std::vector<std::vector<double>>;

namespace {
Tensor quadratic_loss(const Tensor& p) {
  Tensor a = tensor(std::vector<double>{1.0, 2.0, 3.0});
  Tensor b = tensor(std::vector<double>{0.5, -1.0, 2.0});
  return add(sum(mul(mul(p, p), a)), sum(mul(p, b)));
}

void expect_trajectory(const std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>& make,
                       const Rows& expected, const char* what) {
  Tensor p = tensor(std::vector<double>{1.0, -2.0, 3.0}).requires_grad_();
  auto opt = make({p});
  for (size_t step = 0; step < expected.size(); ++step) {
    opt->zero_grad();
    quadratic_loss(p).backward();
    opt->step();
    auto got = p.to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], expected[step][i], 1e-12 * (1.0 + std::abs(expected[step][i])))
          << what << " step " << step << " element " << i;
  }
}

}  // namespace

TEST(Optim, SGDMatchesPyTorch) {
  expect_trajectory([](auto ps) { return std::make_unique<optim::SGD>(ps, optim::SGDOptions{.lr = 0.1}); },
                    {{0.75, -1.0999999999999999, 0.9999999999999999},
                     {0.55, -0.5599999999999999, 0.19999999999999984},
                     {0.39, -0.2359999999999999, -0.1200000000000001}},
                    "sgd");
  expect_trajectory(
      [](auto ps) {
        return std::make_unique<optim::SGD>(
            ps, optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01});
      },
      {{0.8745, -1.549, 1.9985},
       {0.6599514750000001, -0.8185829499999999, 0.4666556749999997},
       {0.38466519158625, 0.031505688327500184, -1.1282112448037505}},
      "sgd momentum");
  expect_trajectory(
      [](auto ps) {
        return std::make_unique<optim::SGD>(
            ps, optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
      },
      {{0.7615500000000001, -1.1431, 1.0971499999999998},
       {0.46697702750000003, -0.24732605499999996, -0.5304827925000003},
       {0.156574286348875, 0.49681696115225005, -1.4957489378721254}},
      "sgd nesterov");
}

TEST(Optim, AdamMatchesPyTorch) {
  expect_trajectory(
      [](auto ps) { return std::make_unique<optim::Adam>(ps, optim::AdamOptions{.lr = 0.1, .weight_decay = 0.01}); },
      {{0.9000000003984063, -1.9000000001108648, 2.9000000000499253},
       {0.8003041317293539, -1.800144316493531, 2.800090990043111},
       {0.7011570400708149, -1.700538909620911, 2.7003374876002817}},
      "adam");
  expect_trajectory(
      [](auto ps) {
        return std::make_unique<optim::Adam>(
            ps, optim::AdamOptions{.lr = 0.1, .betas = {0.8, 0.9}, .amsgrad = true});
      },
      {{0.9000000003999999, -1.900000000111111, 2.90000000005},
       {0.8003308218033343, -1.8001588397202664, 2.80010069601483},
       {0.7012571642834866, -1.7005915685966175, 2.7003722820653784}},
      "adam amsgrad");
  expect_trajectory(
      [](auto ps) { return std::make_unique<optim::AdamW>(ps, optim::AdamOptions{.lr = 0.1, .weight_decay = 0.1}); },
      {{0.8900000003999999, -1.880000000111111, 2.8700000000499997},
       {0.7814454399518929, -1.7613802845613644, 2.741423429219954},
       {0.6745989829657223, -1.6442593340086016, 2.614343502393424}},
      "adamw");
}

TEST(Optim, Defaults) {
  Tensor p = zeros({2}).requires_grad_();
  EXPECT_EQ(*optim::Adam({p}).options().weight_decay, 0.0);
  EXPECT_EQ(*optim::AdamW({p}).options().weight_decay, 1e-2);
  EXPECT_EQ(*optim::AdamW({p}, {.lr = 3e-4}).options().weight_decay, 1e-2);
  EXPECT_EQ(optim::AdamW({p}).lr(), 1e-3);
}

TEST(Optim, BadSettings) {
  Tensor p = zeros({2}).requires_grad_();
  auto expect_msg = [](const std::string& msg, const std::string& name, const std::string& value) {
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
    EXPECT_NE(msg.find(value), std::string::npos) << msg;
  };
  expect_msg(message_of<ValueError>([&] { optim::SGD({p}, {.lr = -0.1}); }), "lr", "-0.1");
  expect_msg(message_of<ValueError>([&] { optim::SGD({p}, {.momentum = -0.5}); }), "momentum", "-0.5");
  expect_msg(message_of<ValueError>([&] { optim::SGD({p}, {.weight_decay = -1}); }), "weight_decay", "-1");
  expect_msg(message_of<ValueError>([&] { optim::SGD({p}, {.nesterov = true}); }), "nesterov", "momentum 0");
  expect_msg(message_of<ValueError>([&] { optim::SGD({p}, {.momentum = 0.9, .dampening = 0.1, .nesterov = true}); }),
             "nesterov", "dampening 0.1");
  expect_msg(message_of<ValueError>([&] { optim::Adam({p}, {.betas = {1.0, 0.999}}); }), "beta1", "1");
  expect_msg(message_of<ValueError>([&] { optim::AdamW({p}, {.betas = {0.9, -0.1}}); }), "beta2", "-0.1");
  expect_msg(message_of<ValueError>([&] { optim::Adam({p}, {.lr = -1e-3}); }), "lr", "-0.001");
  expect_msg(message_of<ValueError>([&] { optim::Adam({p}, {.eps = -1}); }), "eps", "-1");
  EXPECT_THROW(optim::SGD(std::vector<Tensor>{zeros({2}, {.dtype = DType::Int64})}), DTypeError);
  EXPECT_THROW(optim::SGD(std::vector<optim::ParamGroupSpec>{}), ValueError);
}

TEST(Optim, ZeroGradAndSkipsParamsWithoutGrad) {
  Tensor a = ones({2}).requires_grad_(), b = ones({2}).requires_grad_();
  optim::SGD opt({a, b}, {.lr = 0.5});
  sum(mul(a, 3.0)).backward();
  opt.step();  // b has no grad: unchanged
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{-0.5f, -0.5f}));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1.0f, 1.0f}));
  opt.zero_grad(false);
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{0.0f, 0.0f}));
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(Optim, ParamGroups) {
  Tensor w = ones({2}).requires_grad_(), bias = ones({1}).requires_grad_();
  optim::SGD opt(std::vector<optim::ParamGroupSpec>{{.params = {w}},
                                                    {.params = {bias}, .lr = 0.1, .weight_decay = 0.0}},
                 {.lr = 1.0, .weight_decay = 0.5});
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.param_groups()[1].lr, 0.1);
  add(sum(w), sum(bias)).backward();
  opt.step();
  EXPECT_FLOAT_EQ(w.to_vector<float>()[0], 1.0f - 1.0f * (1.0f + 0.5f));
  EXPECT_FLOAT_EQ(bias.to_vector<float>()[0], 1.0f - 0.1f);
  opt.set_lr(0.01);
  EXPECT_EQ(opt.param_groups()[1].lr, 0.01);
}

TEST(Optim, WorksWithModulesAndAccumulation) {
  // backward() adds into .grad: two backward passes without zero_grad give a step of twice the
  // size of one pass.
  Generator gen(5);
  auto run = [&](bool twice) {
    gen.manual_seed(5);
    nn::Linear fc(3, 2, true, &gen);
    Tensor x = randn({4, 3}, {}, &gen);
    optim::SGD opt(fc.parameters(), {.lr = 0.1});
    opt.zero_grad();
    fc(x).sum().backward();
    if (twice) fc(x).sum().backward();
    opt.step();
    return fc.weight.clone();
  };
  gen.manual_seed(5);
  nn::Linear ref(3, 2, true, &gen);
  Tensor w0 = ref.weight.clone();
  Tensor once = run(false), twice = run(true);
  EXPECT_TRUE(allclose(sub(twice, w0), mul(sub(once, w0), 2.0), 1e-5, 1e-6));
}

// Resuming from state_dict() continues exactly as an uninterrupted run.
TEST(Optim, StateDictResumesExactly) {
  for (int kind = 0; kind < 3; ++kind) {
    auto make = [kind](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> {
      if (kind == 0) return std::make_unique<optim::SGD>(ps, optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .nesterov = true});
      if (kind == 1) return std::make_unique<optim::Adam>(ps, optim::AdamOptions{.lr = 0.1, .amsgrad = true});
      return std::make_unique<optim::AdamW>(ps, optim::AdamOptions{.lr = 0.1});
    };
    Tensor p = tensor(std::vector<double>{1.0, -2.0, 3.0}).requires_grad_();
    auto opt = make({p});
    auto train = [](optim::Optimizer& o, Tensor& q, int steps) {
      for (int i = 0; i < steps; ++i) {
        o.zero_grad();
        quadratic_loss(q).backward();
        o.step();
      }
    };
    train(*opt, p, 2);
    StateDict saved = opt->state_dict();
    StateDict snapshot;
    for (auto& [k, t] : saved) snapshot.insert(k, t.clone());
    Tensor p_saved = p.detach().clone();
    train(*opt, p, 3);

    Tensor q = p_saved.clone().requires_grad_();
    auto resumed = make({q});
    resumed->load_state_dict(snapshot);
    train(*resumed, q, 3);
    EXPECT_TRUE(allclose(p, q, 0, 0)) << "kind " << kind << ": " << p << " vs " << q;
    EXPECT_EQ(resumed->state_dict().integer("state.0.step"), 5);
  }
}

TEST(Optim, LoadStateDictErrors) {
  Tensor p = zeros({3}).requires_grad_(), r = zeros({2}).requires_grad_();
  optim::Adam adam({p}, {.lr = 0.1});
  sum(p).backward();
  adam.step();
  StateDict sd = adam.state_dict();
  optim::Adam other_shape({r});
  EXPECT_THROW(other_shape.load_state_dict(sd), ShapeError);
  optim::Adam two({p, r});
  EXPECT_THROW(two.load_state_dict(sd), ValueError);
  optim::SGD sgd({p});
  EXPECT_THROW(sgd.load_state_dict(sd), ValueError);  // Adam's state into SGD
  EXPECT_EQ(sd.scalar("param_groups.0.lr"), 0.1);
  EXPECT_EQ(sd.at("state.0.exp_avg").sizes(), (Shape{3}));
}
