// The LR schedulers PyTorch has, against PyTorch 2.15's lr sequences (sched/<case>/ in
// golden/ops_nn2_v1.bin, written by tests/golden/make_golden_nn2.py: SGD with two groups, lr 0.1 and
// 0.05, momentum 0.9, 30 steps), OneCycleLR's momentum cycling, ReduceLROnPlateau, and bad settings.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>

#include "golden/golden_file.h"
#include "golden/golden_tensor.h"
#include "support/errors.h"
#include "support/test_data.h"

using namespace ember;
using ember::test::expect_error;
using optim::ParamGroupSpec;

namespace {

const test::GoldenFile& golden() {
  static const test::GoldenFile file(test::data_path("golden/ops_nn2_v1.bin"));
  return file;
}
std::vector<double> gold(const std::string& name) {
  return test::to_tensor(golden().get(name)).to(DType::Float64).to_vector<double>();
}

// make_golden_nn2.py's two_group_sgd().
struct TwoGroups {
  Tensor p1 = zeros({1}).requires_grad_(), p2 = zeros({1}).requires_grad_();
  optim::SGD opt{std::vector<ParamGroupSpec>{ParamGroupSpec{.params = {p1}}, ParamGroupSpec{.params = {p2}, .lr = 0.05}},
                 optim::SGDOptions{.lr = 0.1, .momentum = 0.9}};
};

void expect_near(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-12 * std::max(1.0, std::abs(want))) << what;
}

// Compares the lrs after construction and after each step with sched/<name>/lrs, for the first
// `steps` steps (all when negative); `step` advances the schedule one step.
void expect_lrs(const std::string& name, optim::Optimizer& opt, const std::function<void(int64_t)>& step,
                int64_t steps = -1, const std::function<double()>& momentum = nullptr) {
  const auto want = gold("sched/" + name + "/lrs");
  const size_t groups = opt.param_groups().size();
  const int64_t rows = int64_t(want.size() / groups);
  const auto moms = momentum ? gold("sched/" + name + "/momentum") : std::vector<double>{};
  for (int64_t r = 0; r < (steps < 0 ? rows : steps + 1); ++r) {
    if (r > 0) step(r - 1);
    for (size_t g = 0; g < groups; ++g)
      expect_near(opt.param_groups()[g].lr, want[size_t(r) * groups + g], name + " lr, step " + std::to_string(r) + ", group " + std::to_string(g));
    if (momentum) expect_near(momentum(), moms[size_t(r)], name + " momentum, step " + std::to_string(r));
  }
}

template <class S>
void expect_schedule(const std::string& name, const std::function<std::unique_ptr<S>(optim::Optimizer&)>& make) {
  TwoGroups f;
  auto s = make(f.opt);
  expect_lrs(name, f.opt, [&](int64_t) { s->step(); });
}

}  // namespace

TEST(LRSchedulerMore, ClosedFormsMatchPyTorch) {
  using optim::LRScheduler;
  using Make = std::function<std::unique_ptr<LRScheduler>(optim::Optimizer&)>;
  const std::vector<std::pair<std::string, Make>> cases = {
      {"step_lr", [](auto& o) { return std::make_unique<optim::StepLR>(o, 4, 0.5); }},
      {"multi_step_lr", [](auto& o) { return std::make_unique<optim::MultiStepLR>(o, std::vector<int64_t>{3, 7, 7, 20}, 0.3); }},
      {"exponential_lr", [](auto& o) { return std::make_unique<optim::ExponentialLR>(o, 0.9); }},
      {"cosine_annealing_lr", [](auto& o) { return std::make_unique<optim::CosineAnnealingLR>(o, 10, 0.001); }},
      {"linear_lr", [](auto& o) { return std::make_unique<optim::LinearLR>(o, 0.2, 0.9, 8); }},
      {"constant_lr", [](auto& o) { return std::make_unique<optim::ConstantLR>(o, 0.25, 6); }},
      {"lambda_lr",
       [](auto& o) { return std::make_unique<optim::LambdaLR>(o, [](int64_t e) { return std::pow(0.95, double(e)) / double(1 + e % 3); }); }},
      {"multiplicative_lr", [](auto& o) { return std::make_unique<optim::MultiplicativeLR>(o, [](int64_t e) { return e % 2 ? 0.9 : 1.05; }); }},
      {"polynomial_lr", [](auto& o) { return std::make_unique<optim::PolynomialLR>(o, 12, 2.0); }},
      {"cosine_warm_restarts", [](auto& o) { return std::make_unique<optim::CosineAnnealingWarmRestarts>(o, 3, 2, 0.01); }},
      {"cosine_warm_restarts_tmult1", [](auto& o) { return std::make_unique<optim::CosineAnnealingWarmRestarts>(o, 4); }},
      {"sequential_linear_exponential",
       [](auto& o) {
         std::vector<std::unique_ptr<LRScheduler>> parts;
         parts.push_back(std::make_unique<optim::LinearLR>(o, 0.1, 1.0, 5));
         parts.push_back(std::make_unique<optim::ExponentialLR>(o, 0.8));
         return std::make_unique<optim::SequentialLR>(o, std::move(parts), std::vector<int64_t>{5});
       }},
      {"sequential_constant_cosine_step",
       [](auto& o) {
         std::vector<std::unique_ptr<LRScheduler>> parts;
         parts.push_back(std::make_unique<optim::ConstantLR>(o, 0.5, 3));
         parts.push_back(std::make_unique<optim::CosineAnnealingLR>(o, 6));
         parts.push_back(std::make_unique<optim::StepLR>(o, 2, 0.5));
         return std::make_unique<optim::SequentialLR>(o, std::move(parts), std::vector<int64_t>{4, 12});
       }},
      {"chained_exponential_step", [](auto& o) {
         std::vector<std::unique_ptr<LRScheduler>> parts;
         parts.push_back(std::make_unique<optim::ExponentialLR>(o, 0.95));
         parts.push_back(std::make_unique<optim::StepLR>(o, 5, 0.5));
         return std::make_unique<optim::ChainedScheduler>(o, std::move(parts));
       }}};
  for (const auto& [name, make] : cases) expect_schedule<LRScheduler>(name, make);
}

TEST(LRSchedulerMore, ChainedIsTheProductOfFactors) {
  // PyTorch's two schedulers stepped on one optimizer multiply, as ChainedScheduler's product, up to
  // the cosine's T_max (past it PyTorch's recursive cosine adds steps of the base lr: no product).
  TwoGroups f;
  std::vector<std::unique_ptr<optim::LRScheduler>> parts;
  parts.push_back(std::make_unique<optim::StepLR>(f.opt, 7, 0.5));
  parts.push_back(std::make_unique<optim::CosineAnnealingLR>(f.opt, 12));
  optim::ChainedScheduler chained(f.opt, std::move(parts));
  expect_lrs("two_schedulers_step_cosine", f.opt, [&](int64_t) { chained.step(); }, 12);
}

TEST(LRSchedulerMore, OneCycleMatchesPyTorch) {
  {
    TwoGroups f;
    optim::OneCycleLR s(f.opt, std::vector<double>{1.0, 0.4}, 30, {.cycle_momentum = true});
    expect_lrs("one_cycle_cos", f.opt, [&](int64_t) { s.step(); }, -1, [&] { return f.opt.options().momentum; });
  }
  {
    TwoGroups f;
    const double momentum_before = f.opt.options().momentum;
    optim::OneCycleLR s(f.opt, 0.5, 30,
                        {.pct_start = 0.25, .div_factor = 10.0, .final_div_factor = 100.0, .anneal_strategy = "linear",
                         .three_phase = true});
    expect_lrs("one_cycle_linear_three_phase_no_momentum", f.opt, [&](int64_t) { s.step(); });
    EXPECT_EQ(f.opt.options().momentum, momentum_before);
  }
  {
    Tensor p = zeros({1}).requires_grad_();
    optim::Adam adam(std::vector<Tensor>{p}, {.lr = 0.001});
    optim::OneCycleLR s(adam, 0.01, 30, {.cycle_momentum = true, .base_momentum = 0.8, .max_momentum = 0.9});
    expect_lrs("one_cycle_adam_betas", adam, [&](int64_t) { s.step(); }, -1, [&] { return adam.options().betas[0]; });
    EXPECT_EQ(adam.options().betas[1], 0.999);
  }
  // Stepping past the plan, and an optimizer without momentum to cycle.
  TwoGroups f;
  optim::OneCycleLR s(f.opt, 1.0, 2);
  s.step();
  s.step();
  expect_error<ValueError>([&] { s.step(); }, "OneCycleLR: tried to step 3 times, more than total_steps = 2");
  Tensor p = zeros({1}).requires_grad_();
  optim::Adagrad adagrad(std::vector<Tensor>{p});
  expect_error<ValueError>([&] { optim::OneCycleLR(adagrad, 1.0, 10, {.cycle_momentum = true}); },
                           "OneCycleLR: cycle_momentum needs an optimizer with momentum or beta1; Adagrad has neither");
}

TEST(LRSchedulerMore, ReduceLROnPlateauMatchesPyTorch) {
  {
    TwoGroups f;
    optim::ReduceLROnPlateau s(f.opt, {.factor = 0.5, .patience = 2, .threshold = 0.01, .min_lrs = {0.01, 0.002}});
    const auto metrics = gold("sched/plateau_min_rel/metrics");
    expect_lrs("plateau_min_rel", f.opt, [&](int64_t i) { s.step(metrics[size_t(i)]); });
  }
  TwoGroups f;
  optim::ReduceLROnPlateau s(f.opt, {.mode = "max", .factor = 0.3, .patience = 1, .threshold = 0.02, .threshold_mode = "abs",
                                     .cooldown = 2, .min_lrs = {0.004}, .eps = 1e-3});
  const auto metrics = gold("sched/plateau_max_abs_cooldown/metrics");
  expect_lrs("plateau_max_abs_cooldown", f.opt, [&](int64_t i) { s.step(metrics[size_t(i)]); });
}

TEST(LRSchedulerMore, StateDictResumes) {
  // A plateau scheduler restored mid-run continues as the one that ran on.
  TwoGroups a, b;
  optim::ReduceLROnPlateau sa(a.opt, {.patience = 1}), sb(b.opt, {.patience = 1});
  for (double m : {1.0, 0.9, 0.95, 0.96}) sa.step(m);
  sb.load_state_dict(sa.state_dict());
  b.opt.load_state_dict(a.opt.state_dict());
  for (double m : {0.97, 0.8, 0.85, 0.9}) {
    sa.step(m);
    sb.step(m);
    EXPECT_EQ(sa.get_lr(), sb.get_lr());
    EXPECT_EQ(sa.num_bad_epochs(), sb.num_bad_epochs());
  }
  EXPECT_EQ(sb.best(), 0.8);
  // A multiplicative schedule restored at epoch 7 gives the lr of 7 steps.
  TwoGroups c, d;
  auto f = [](int64_t e) { return e % 2 ? 0.9 : 1.05; };
  optim::MultiplicativeLR mc(c.opt, f), md(d.opt, f);
  for (int i = 0; i < 7; ++i) mc.step();
  md.load_state_dict(mc.state_dict());
  EXPECT_EQ(mc.get_lr(), md.get_lr());
}

TEST(LRSchedulerMore, BadSettings) {
  TwoGroups f;
  expect_error<ValueError>([&] { optim::ExponentialLR(f.opt, -0.5); }, "ExponentialLR: gamma must be >= 0, got -0.5");
  expect_error<ValueError>([&] { optim::ConstantLR(f.opt, 1.5); }, "ConstantLR: factor must be in [0, 1], got 1.5");
  expect_error<ValueError>([&] { optim::LinearLR(f.opt, 0.0); }, "LinearLR: start_factor must be in (0, 1], got 0");
  expect_error<ValueError>([&] { optim::LinearLR(f.opt, 0.5, 2.0); }, "LinearLR: end_factor must be in [0, 1], got 2");
  expect_error<ValueError>([&] { optim::LinearLR(f.opt, 0.5, 1.0, 0); }, "LinearLR: total_iters must be >= 1, got 0");
  expect_error<ValueError>([&] { optim::PolynomialLR(f.opt, 0); }, "PolynomialLR: total_iters must be >= 1");
  expect_error<ValueError>([&] { optim::CosineAnnealingWarmRestarts(f.opt, 0); }, "CosineAnnealingWarmRestarts: T_0 must be >= 1");
  expect_error<ValueError>([&] { optim::CosineAnnealingWarmRestarts(f.opt, 3, 0); }, "T_mult must be >= 1, got 0");
  expect_error<ValueError>([&] { optim::LambdaLR(f.opt, std::vector<optim::LrLambda>{[](int64_t) { return 1.0; }}); },
                           "LambdaLR: 1 lr functions for an optimizer with 2 parameter groups");
  expect_error<ValueError>([&] { optim::LambdaLR(f.opt, optim::LrLambda{}); }, "LambdaLR: an lr function is empty");
  expect_error<ValueError>([&] { optim::OneCycleLR(f.opt, 1.0, 10, {.anneal_strategy = "cosine"}); },
                           "OneCycleLR: anneal_strategy must be \"cos\" or \"linear\", got \"cosine\"");
  {
    std::vector<std::unique_ptr<optim::LRScheduler>> parts;
    parts.push_back(std::make_unique<optim::ExponentialLR>(f.opt, 0.9));
    parts.push_back(std::make_unique<optim::ExponentialLR>(f.opt, 0.8));
    expect_error<ValueError>([&] { optim::SequentialLR(f.opt, std::move(parts), {}); }, "SequentialLR: 2 schedulers need 1 milestones, got 0");
  }
  {
    TwoGroups other;
    std::vector<std::unique_ptr<optim::LRScheduler>> parts;
    parts.push_back(std::make_unique<optim::ExponentialLR>(other.opt, 0.9));
    expect_error<ValueError>([&] { optim::ChainedScheduler(f.opt, std::move(parts)); },
                             "ChainedScheduler: scheduler 0 drives another optimizer");
  }
  expect_error<ValueError>([&] { optim::ReduceLROnPlateau(f.opt, {.mode = "minimum"}); },
                           "ReduceLROnPlateau: mode must be \"min\" or \"max\", got \"minimum\"");
  expect_error<ValueError>([&] { optim::ReduceLROnPlateau(f.opt, {.threshold_mode = "relative"}); }, "threshold_mode must be");
  expect_error<ValueError>([&] { optim::ReduceLROnPlateau(f.opt, {.factor = 1.0}); }, "ReduceLROnPlateau: factor must be in [0, 1), got 1");
  expect_error<ValueError>([&] { optim::ReduceLROnPlateau(f.opt, {.min_lrs = {0.1, 0.2, 0.3}}); },
                           "ReduceLROnPlateau: 3 min_lrs for an optimizer with 2 parameter groups");
  optim::ReduceLROnPlateau plateau(f.opt);
  expect_error<ValueError>([&] { plateau.step(std::nan("")); }, "ReduceLROnPlateau.step: the metric is NaN");
}
