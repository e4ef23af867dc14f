// The group updates of ember/optim/functional.h (what the Python package's optimizers call): one call
// over a group's lists equals the optimizer classes' step bit for bit (the classes call the same
// functions), a group whose parameters carry different settings per call works, SGD's missing momentum
// buffers are created and handed back, and lists of the wrong length or missing buffers are refused
// with ValueError naming the list. Also the schedules' free closed forms against the classes.
#include <gtest/gtest.h>

#include <ember/ember.h>
#include <ember/optim/functional.h>
#include <ember/optim/lr_scheduler.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace ember;

namespace {

std::vector<Tensor> two_params() {
  Tensor a = tensor(std::vector<float>{0.5f, -1.25f, 2.0f, 1.5f}, Shape{2, 2});
  Tensor b = tensor(std::vector<float>{0.3f, -0.6f, 0.9f}, Shape{3});
  a.requires_grad_();
  b.requires_grad_();
  return {a, b};
}

Tensor grad_for(const Tensor& p, int step) {
  std::vector<float> g(size_t(p.numel()));
  for (size_t i = 0; i < g.size(); ++i) g[i] = float(std::sin(0.7 * double(i) + 1.3 * step)) * (1.0f + 0.25f * float(step));
  return tensor(g, p.sizes());
}

bool same_bits(const Tensor& a, const Tensor& b) {
  const auto x = a.contiguous().to_vector<float>(), y = b.contiguous().to_vector<float>();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

}  // namespace

TEST(OptimFunctional, SgdStepEqualsTheClassAndHandsBackNewMomentumBuffers) {
  auto a = two_params(), b = two_params();
  optim::SGD sgd(a, {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
  std::vector<Tensor> bufs(2);
  for (int k = 0; k < 4; ++k) {
    for (size_t i = 0; i < 2; ++i) {
      a[i].set_grad(grad_for(a[i], k + int(i)));
      b[i].set_grad(grad_for(b[i], k + int(i)));
    }
    sgd.step();
    NoGradGuard ng;
    optim::sgd_step(b, {b[0].grad(), b[1].grad()}, bufs,
                    {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
    ASSERT_TRUE(bufs[0].defined() && bufs[1].defined());
  }
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(same_bits(a[i], b[i])) << i;
  const StateDict sd = sgd.state_dict();
  EXPECT_TRUE(same_bits(sd.at("state.0.momentum_buffer"), bufs[0]));
}

TEST(OptimFunctional, AdamStepEqualsTheClassAndReadsItsSettingsPerCall) {
  auto a = two_params(), b = two_params();
  optim::AdamW adamw(a, {.lr = 0.01, .amsgrad = true});
  std::vector<Tensor> m, v, vmax;
  for (const Tensor& p : b) {
    m.push_back(zeros_like(p.detach()));
    v.push_back(zeros_like(p.detach()));
    vmax.push_back(zeros_like(p.detach()));
  }
  for (int k = 0; k < 4; ++k) {
    for (size_t i = 0; i < 2; ++i) {
      a[i].set_grad(grad_for(a[i], k));
      b[i].set_grad(grad_for(b[i], k));
    }
    adamw.step();
    NoGradGuard ng;
    optim::adam_step(b, {b[0].grad(), b[1].grad()}, m, v, vmax, {k + 1, k + 1},
                     {.lr = 0.01, .weight_decay = 1e-2, .amsgrad = true, .decoupled = true});
  }
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(same_bits(a[i], b[i])) << i;
  // The reference path (fused = false) takes the same numbers.
  auto c = two_params();
  std::vector<Tensor> m2{zeros_like(c[0].detach()), zeros_like(c[1].detach())}, v2 = {zeros_like(c[0].detach()), zeros_like(c[1].detach())};
  auto d = two_params();
  std::vector<Tensor> m3{zeros_like(d[0].detach()), zeros_like(d[1].detach())}, v3 = {zeros_like(d[0].detach()), zeros_like(d[1].detach())};
  NoGradGuard ng;
  optim::adam_step(c, {grad_for(c[0], 0), grad_for(c[1], 0)}, m2, v2, {}, {1, 1}, {.lr = 0.1, .weight_decay = 0.1});
  optim::adam_step(d, {grad_for(d[0], 0), grad_for(d[1], 0)}, m3, v3, {}, {1, 1}, {.lr = 0.1, .weight_decay = 0.1, .fused = false});
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(same_bits(c[i], d[i])) << i;
}

TEST(OptimFunctional, ListsOfTheWrongLengthOrMissingBuffersAreValueErrors) {
  auto p = two_params();
  NoGradGuard ng;
  std::vector<Tensor> grads = {grad_for(p[0], 0), grad_for(p[1], 0)};
  std::vector<Tensor> one_buf(1);
  try {
    optim::sgd_step(p, grads, one_buf, {.lr = 0.1, .momentum = 0.9});
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("sgd_step: 2 params but 1 momentum_buffers"), std::string::npos) << e.what();
  }
  std::vector<Tensor> none;
  EXPECT_NO_THROW(optim::sgd_step(p, grads, none, {.lr = 0.1}));  // no momentum: no buffers needed
  std::vector<Tensor> z = {zeros_like(p[0].detach()), zeros_like(p[1].detach())};
  EXPECT_THROW(optim::adam_step(p, grads, z, z, {}, {0, 1}, {}), ValueError);          // a step count of 0
  EXPECT_THROW(optim::adam_step(p, grads, z, z, {}, {1, 1}, {.amsgrad = true}), ValueError);  // no max_exp_avg_sqs
  EXPECT_THROW(optim::adagrad_step(p, grads, {Tensor(), z[1]}, {1, 1}, {}), ValueError);
  EXPECT_THROW(optim::adadelta_step(p, grads, z, {z[0]}, {}), ValueError);
  EXPECT_THROW(optim::rmsprop_step(p, grads, z, {}, {}, {.momentum = 0.9}), ValueError);
  EXPECT_NO_THROW(optim::rmsprop_step(p, grads, z, {}, {}, {}));
}

TEST(OptimFunctional, FreeClosedFormsAreTheSchedulersNumbers) {
  auto p = two_params();
  optim::SGD sgd(p, {.lr = 0.1, .momentum = 0.9});
  optim::OneCycleLR one(sgd, 0.5, 20, {.cycle_momentum = true});
  const auto phases = optim::schedule::one_cycle_phases(20, 0.3, false);
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0].end_step, 0.3 * 20.0 - 1.0);
  for (int64_t s = 0; s <= 20; ++s) {
    EXPECT_EQ(one.lr_at(s, 0.5 / 25.0), optim::schedule::one_cycle(s, 20, phases, "cos", {0.02, 0.5, 0.02 / 1e4})) << s;
    EXPECT_EQ(one.momentum_at(s), optim::schedule::one_cycle(s, 20, phases, "cos", {0.95, 0.85, 0.95})) << s;
  }
  EXPECT_THROW(optim::schedule::one_cycle(21, 20, phases, "cos", {0.02, 0.5, 0.0}), ValueError);
  EXPECT_THROW(optim::schedule::one_cycle(1, 20, phases, "cosine", {0.02, 0.5, 0.0}), ValueError);
  EXPECT_EQ(optim::schedule::cosine_annealing_lr(5.0, 10.0, 0.1, 0.0), 0.1 * (1.0 + std::cos(3.141592653589793 / 2.0)) / 2.0);
  EXPECT_EQ(optim::schedule::multistep_lr(8, 1.0, {3, 8, 8}, 0.5), 0.125);
  EXPECT_EQ(optim::schedule::step_lr(7, 1.0, 3, 0.5), 0.25);
}
