// optim::LossScaler: scaling the loss, unscaling the gradients, overflow -> skipped step and
// backoff, growth after growth_interval good steps, the counters, and the disabled (bf16) mode.
// update(finite) takes what unscale_and_check returned: true a good step, false an overflow.
#include <gtest/gtest.h>

#include <ember/ember.h>
#include <ember/train/loss_scaling.h>

#include <limits>

using namespace ember;

namespace {
Tensor param_with_grad(std::vector<float> g) {
  Tensor p = zeros({int64_t(g.size())}).requires_grad_();
  p.set_grad(tensor(g, {int64_t(g.size())}));
  return p;
}
}  // namespace

TEST(LossScaler, StartsAt2To16AndScalesTheLossDifferentiably) {
  optim::LossScaler s;
  EXPECT_EQ(s.current_scale(), 65536.0);
  Tensor w = full({}, 3.0).requires_grad_();
  s.scale(mul(w, 2.0)).backward();
  EXPECT_EQ(w.grad().item<float>(), 2.0f * 65536.0f);
}

TEST(LossScaler, UnscalesGradientsInPlaceAndReportsFinite) {
  optim::LossScaler s({.init_scale = 8.0});
  Tensor p = param_with_grad({8.0f, -16.0f}), q = zeros({2}).requires_grad_();  // q has no grad
  EXPECT_TRUE(s.unscale_and_check({p, q}));
  EXPECT_EQ(p.grad().to(DType::Float64).sum().item<double>(), -1.0);
}

TEST(LossScaler, OverflowSkipsTheStepAndBacksOff) {
  optim::LossScaler s;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (float bad : {inf, -inf, nan}) {
    Tensor p = param_with_grad({1.0f, bad});
    EXPECT_FALSE(s.unscale_and_check({param_with_grad({1.0f}), p})) << bad;
    s.update(false);
  }
  EXPECT_EQ(s.skipped_steps(), 3);
  EXPECT_EQ(s.backoffs(), 3);
  EXPECT_EQ(s.good_steps(), 0);
  EXPECT_EQ(s.current_scale(), 65536.0 / 8);
}

TEST(LossScaler, GrowsAfterGrowthIntervalGoodStepsInARow) {
  optim::LossScaler s({.init_scale = 4.0, .growth_interval = 3});
  s.update(true);
  s.update(true);
  EXPECT_EQ(s.current_scale(), 4.0);
  s.update(false);  // an overflow resets the run of good steps
  EXPECT_EQ(s.current_scale(), 2.0);
  s.update(true);
  s.update(true);
  EXPECT_EQ(s.current_scale(), 2.0);
  s.update(true);
  EXPECT_EQ(s.current_scale(), 4.0);
  EXPECT_EQ(s.growth_tracker(), 0);
  EXPECT_EQ(s.growths(), 1);
  EXPECT_EQ(s.good_steps(), 5);
  EXPECT_EQ(s.skipped_steps(), 1);
}

TEST(LossScaler, DefaultScheduleDoublesAfter2000GoodSteps) {
  optim::LossScaler s;
  for (int i = 0; i < 1999; ++i) s.update(true);
  EXPECT_EQ(s.current_scale(), 65536.0);
  s.update(true);
  EXPECT_EQ(s.current_scale(), 131072.0);
}

TEST(LossScaler, DisabledIsTheIdentityButStillSeesOverflow) {
  optim::LossScaler s({.enabled = false});
  Tensor loss = full({}, 1.5);
  EXPECT_TRUE(s.scale(loss).is_same(loss));
  Tensor p = param_with_grad({3.0f});
  EXPECT_TRUE(s.unscale_and_check({p}));
  EXPECT_EQ(p.grad().item<float>(), 3.0f);
  EXPECT_FALSE(s.unscale_and_check({param_with_grad({std::numeric_limits<float>::infinity()})}));
  s.update(false);
  EXPECT_EQ(s.current_scale(), 1.0);
  EXPECT_EQ(s.skipped_steps(), 1);
}

TEST(LossScaler, StateRoundTripsAndBadOptionsAreRefused) {
  optim::LossScaler a({.growth_interval = 2});
  a.update(true);
  a.update(false);
  a.update(true);
  optim::LossScaler b({.growth_interval = 2});
  b.load_state(a.state());
  b.update(true);
  a.update(true);
  EXPECT_EQ(b.current_scale(), a.current_scale());
  EXPECT_EQ(b.good_steps(), 3);
  EXPECT_THROW(optim::LossScaler({.init_scale = 0}), ValueError);
  EXPECT_THROW(optim::LossScaler({.backoff_factor = 1.0}), ValueError);
  EXPECT_THROW(b.load_state({.scale = std::numeric_limits<double>::infinity()}), ValueError);
}

// The training step's seam (train::LossScalePolicy, behind it DynamicLossScaler) and the scaler
// take one boolean with one meaning: update(unscale_and_check(...)) — true a good step.
TEST(LossScaler, TheTrainingSeamTakesTheSameBooleanAsTheScaler) {
  optim::LossScaler direct({.init_scale = 4.0, .growth_interval = 2});
  train::DynamicLossScaler seam({.init_scale = 4.0, .growth_interval = 2});
  for (bool finite : {true, false, true, true}) {
    direct.update(finite);
    seam.update(finite);
  }
  EXPECT_EQ(direct.skipped_steps(), 1);
  EXPECT_EQ(direct.good_steps(), 3);
  EXPECT_EQ(seam.scaler().skipped_steps(), direct.skipped_steps());
  EXPECT_EQ(seam.scaler().good_steps(), direct.good_steps());
  EXPECT_EQ(seam.current_scale(), direct.current_scale());
  EXPECT_EQ(direct.current_scale(), 4.0);  // 4 -> 2 (overflow) -> 4 (two good steps)
}
