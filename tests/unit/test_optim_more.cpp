// Adagrad, Adadelta, RMSprop, and SGD / Adam / AdamW with maximize, against PyTorch 2.15's
// trajectories: 25 steps on the two-parameter problem of tests/golden/make_golden_nn2.py
// (optim/<case>/trajectory in golden/ops_nn2_v1.bin), on the fused kernels and on the reference
// path of in-place ops; bad settings; state_dict resume; the shared settings by name.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <functional>

#include "golden/golden_file.h"
#include "golden/golden_tensor.h"
#include "support/errors.h"
#include "support/test_data.h"

using namespace ember;
using ember::test::expect_error;

namespace {

using optim::ParamGroupSpec;

const test::GoldenFile& golden() {
  static const test::GoldenFile file(test::data_path("golden/ops_nn2_v1.bin"));
  return file;
}

// make_golden_nn2.py's quadratic_problem(): loss = sum(a p^2) + sum(b p) + 0.1 sum(p^4) over
// p1 (3) and p2 (2, 2), negated for the maximizing cases.
struct Problem {
  Tensor p1 = tensor(std::vector<double>{1.0, -2.0, 3.0}).requires_grad_();
  Tensor p2 = tensor(std::vector<double>{0.5, -1.5, 2.0, -0.25}, {2, 2}).requires_grad_();
  Tensor loss() const {
    auto term = [](const Tensor& p, const Tensor& a, const Tensor& b) {
      return add(add(sum(mul(mul(p, p), a)), sum(mul(p, b))), mul(sum(pow(p, 4.0)), 0.1));
    };
    return add(term(p1, tensor(std::vector<double>{1.0, 2.0, 3.0}), tensor(std::vector<double>{0.5, -1.0, 2.0})),
               term(p2, tensor(std::vector<double>{0.3, 1.2, 2.5, 0.7}, {2, 2}), tensor(std::vector<double>{-0.2, 0.4, 1.0, -1.5}, {2, 2})));
  }
  std::vector<ParamGroupSpec> one_group() const { return {ParamGroupSpec{.params = {p1, p2}}}; }
  std::vector<ParamGroupSpec> two_groups(double lr, double weight_decay) const {
    return {ParamGroupSpec{.params = {p1}}, ParamGroupSpec{.params = {p2}, .lr = lr, .weight_decay = weight_decay}};
  }
};

using Make = std::function<std::unique_ptr<optim::Optimizer>(const Problem&, bool fused)>;

void expect_trajectory(const std::string& name, const Make& make) {
  const Tensor want = test::to_tensor(golden().get("optim/" + name + "/trajectory"));
  const auto w = want.to_vector<double>();
  const int64_t steps = want.size(0), n = want.size(1);
  const double sign = name.find("maximize") != std::string::npos ? -1.0 : 1.0;
  for (bool fused : {true, false}) {
    Problem pr;
    auto opt = make(pr, fused);
    for (int64_t s = 0; s < steps; ++s) {
      opt->zero_grad();
      mul(pr.loss(), sign).backward();
      opt->step();
      auto got = cat({pr.p1.detach().flatten(), pr.p2.detach().flatten()}).to_vector<double>();
      for (int64_t i = 0; i < n; ++i) {
        const double e = w[size_t(s * n + i)];
        ASSERT_NEAR(got[size_t(i)], e, 1e-12 * std::max(1.0, std::abs(e)))
            << name << (fused ? " (fused)" : " (reference path)") << ", step " << s + 1 << ", element " << i;
      }
    }
  }
}

}  // namespace

TEST(OptimMore, AdagradMatchesPyTorch) {
  expect_trajectory("adagrad_default", [](const Problem& p, bool f) {
    return std::make_unique<optim::Adagrad>(p.one_group(), optim::AdagradOptions{.fused = f});
  });
  expect_trajectory("adagrad_lr_decay_wd_init_acc", [](const Problem& p, bool f) {
    return std::make_unique<optim::Adagrad>(p.two_groups(0.05, 0.0), optim::AdagradOptions{.lr = 0.1, .lr_decay = 0.01, .weight_decay = 0.02,
                                                                                           .initial_accumulator_value = 0.3, .eps = 1e-8, .fused = f});
  });
  expect_trajectory("adagrad_maximize", [](const Problem& p, bool f) {
    return std::make_unique<optim::Adagrad>(p.one_group(), optim::AdagradOptions{.lr = 0.02, .maximize = true, .fused = f});
  });
}

TEST(OptimMore, AdadeltaMatchesPyTorch) {
  expect_trajectory("adadelta_default", [](const Problem& p, bool f) {
    return std::make_unique<optim::Adadelta>(p.one_group(), optim::AdadeltaOptions{.fused = f});
  });
  expect_trajectory("adadelta_rho_eps_wd_groups", [](const Problem& p, bool f) {
    // The second group overrides lr only: it keeps the optimizer's weight decay.
    std::vector<ParamGroupSpec> g = {ParamGroupSpec{.params = {p.p1}}, ParamGroupSpec{.params = {p.p2}, .lr = 0.5}};
    return std::make_unique<optim::Adadelta>(g, optim::AdadeltaOptions{.lr = 2.0, .rho = 0.8, .eps = 1e-4, .weight_decay = 0.05, .fused = f});
  });
  expect_trajectory("adadelta_maximize", [](const Problem& p, bool f) {
    return std::make_unique<optim::Adadelta>(p.one_group(), optim::AdadeltaOptions{.lr = 0.1, .maximize = true, .fused = f});
  });
}

TEST(OptimMore, RMSpropMatchesPyTorch) {
  expect_trajectory("rmsprop_default", [](const Problem& p, bool f) {
    return std::make_unique<optim::RMSprop>(p.one_group(), optim::RMSpropOptions{.fused = f});
  });
  expect_trajectory("rmsprop_momentum", [](const Problem& p, bool f) {
    return std::make_unique<optim::RMSprop>(p.one_group(), optim::RMSpropOptions{.lr = 0.01, .alpha = 0.9, .momentum = 0.8, .fused = f});
  });
  expect_trajectory("rmsprop_centered", [](const Problem& p, bool f) {
    return std::make_unique<optim::RMSprop>(p.one_group(), optim::RMSpropOptions{.lr = 0.02, .centered = true, .fused = f});
  });
  expect_trajectory("rmsprop_centered_momentum_wd_groups", [](const Problem& p, bool f) {
    return std::make_unique<optim::RMSprop>(p.two_groups(0.003, 0.0),
                                            optim::RMSpropOptions{.lr = 0.01, .alpha = 0.95, .eps = 1e-6, .weight_decay = 0.1,
                                                                  .momentum = 0.5, .centered = true, .fused = f});
  });
  expect_trajectory("rmsprop_maximize", [](const Problem& p, bool f) {
    return std::make_unique<optim::RMSprop>(p.one_group(), optim::RMSpropOptions{.lr = 0.001, .maximize = true, .fused = f});
  });
}

TEST(OptimMore, MaximizeMatchesPyTorch) {
  expect_trajectory("sgd_momentum_maximize", [](const Problem& p, bool f) {
    return std::make_unique<optim::SGD>(p.one_group(), optim::SGDOptions{.lr = 0.01, .momentum = 0.9, .fused = f, .maximize = true});
  });
  expect_trajectory("adam_maximize", [](const Problem& p, bool f) {
    return std::make_unique<optim::Adam>(p.one_group(), optim::AdamOptions{.lr = 0.01, .fused = f, .maximize = true});
  });
  expect_trajectory("adamw_amsgrad_maximize", [](const Problem& p, bool f) {
    return std::make_unique<optim::AdamW>(p.one_group(), optim::AdamOptions{.lr = 0.01, .amsgrad = true, .fused = f, .maximize = true});
  });
}

TEST(OptimMore, BadSettings) {
  Tensor p = zeros({2}).requires_grad_();
  expect_error<ValueError>([&] { optim::Adagrad({p}, {.lr_decay = -1}); }, "Adagrad: invalid lr_decay: -1");
  expect_error<ValueError>([&] { optim::Adagrad({p}, {.initial_accumulator_value = -0.5}); }, "invalid initial_accumulator_value: -0.5");
  expect_error<ValueError>([&] { optim::Adagrad({p}, {.lr = -0.1}); }, "Adagrad: invalid lr: -0.1");
  expect_error<ValueError>([&] { optim::Adadelta({p}, {.rho = 1.5}); }, "Adadelta: invalid rho: 1.5 (must be in [0, 1])");
  expect_error<ValueError>([&] { optim::Adadelta({p}, {.eps = -1}); }, "Adadelta: invalid eps");
  expect_error<ValueError>([&] { optim::RMSprop({p}, {.alpha = -0.1}); }, "RMSprop: invalid alpha: -0.1");
  expect_error<ValueError>([&] { optim::RMSprop({p}, {.momentum = -1}); }, "RMSprop: invalid momentum");
  expect_error<ValueError>([&] { optim::RMSprop({p}, {.weight_decay = -1}); }, "RMSprop: invalid weight_decay");
}

TEST(OptimMore, StateDictResumesExactly) {
  auto run = [](optim::Optimizer& opt, Problem& pr, int steps) {
    for (int i = 0; i < steps; ++i) {
      opt.zero_grad();
      pr.loss().backward();
      opt.step();
    }
  };
  const std::vector<std::function<std::unique_ptr<optim::Optimizer>(const Problem&)>> makers = {
      [](const Problem& p) { return std::make_unique<optim::Adagrad>(p.one_group(), optim::AdagradOptions{.lr_decay = 0.1}); },
      [](const Problem& p) { return std::make_unique<optim::Adadelta>(p.one_group()); },
      [](const Problem& p) {
        return std::make_unique<optim::RMSprop>(p.one_group(), optim::RMSpropOptions{.momentum = 0.5, .centered = true});
      }};
  for (const auto& make : makers) {
    Problem a, b;
    auto oa = make(a), ob = make(b);
    run(*oa, a, 4);
    {
      NoGradGuard ng;
      b.p1.copy_(a.p1);
      b.p2.copy_(a.p2);
    }
    ob->load_state_dict(oa->state_dict());
    run(*oa, a, 3);
    run(*ob, b, 3);
    EXPECT_TRUE(allclose(a.p1, b.p1, 0, 0)) << oa->name();
    EXPECT_TRUE(allclose(a.p2, b.p2, 0, 0)) << oa->name();
  }
  // A state without its buffers is refused, naming what is missing.
  Problem c;
  optim::RMSprop centered(c.one_group(), {.centered = true});
  run(centered, c, 1);
  StateDict sd = centered.state_dict();
  StateDict broken;
  for (const auto& [k, t] : sd)
    if (k.find("grad_avg") == std::string::npos) broken.insert(k, t);
  Problem d;
  optim::RMSprop other(d.one_group(), {.centered = true});
  expect_error<ValueError>([&] { other.load_state_dict(broken); }, "grad_avg");
}

TEST(OptimMore, SettingsByName) {
  Problem pr;
  optim::SGD sgd(pr.one_group(), {.lr = 0.1, .momentum = 0.5});
  EXPECT_TRUE(sgd.has_option("momentum"));
  sgd.set_option_value("momentum", 0.9);
  EXPECT_EQ(sgd.option_values().at(0).second, 0.9);
  expect_error<ValueError>([&] { sgd.set_option_value("beta1", 0.9); }, "SGD: no setting 'beta1' (its settings: momentum, dampening, nesterov)");
  optim::Adam adam(pr.one_group());
  adam.set_option_value("beta1", 0.8);
  EXPECT_EQ(adam.option_values().at(0).second, 0.8);
  // maximize travels in the state (listed once set), and an old state without it still loads.
  optim::SGD maxi(pr.one_group(), {.lr = 0.1, .maximize = true});
  EXPECT_TRUE(maxi.state_dict().contains("options.maximize"));
  EXPECT_FALSE(sgd.state_dict().contains("options.maximize"));
  optim::SGD fresh(pr.one_group(), {.lr = 0.1});
  fresh.load_state_dict(maxi.state_dict());
  EXPECT_TRUE(fresh.state_dict().contains("options.maximize"));
  maxi.load_state_dict(sgd.state_dict());  // a state without maximize turns it off, as it was saved
  EXPECT_FALSE(maxi.options().maximize);
}
