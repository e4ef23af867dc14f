// A schedule kept to its plan when a run is extended (issue 22): HoldAfterPlan follows the inner
// schedule up to the plan's end and holds its last lr after it; make_schedule builds the plan, not
// the new length, and wraps it only when the run is longer than planned.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "ember/ember.h"
#include "ember/optim/registry.h"

using namespace ember;
using namespace ember::optim;

namespace {
std::vector<Tensor> one_param() { return {zeros({2}, {.requires_grad = true})}; }
}  // namespace

TEST(SchedulePlan, HoldAfterPlanFollowsThePlanThenHoldsItsLastLr) {
  auto params = one_param();
  SGD opt(params, {.lr = 0.1});
  auto inner = std::make_unique<OneCycleLR>(opt, 0.1, 30);
  SGD other(one_param(), {.lr = 0.1});
  const OneCycleLR reference(other, 0.1, 30);
  HoldAfterPlan held(opt, std::move(inner), 30);
  for (int64_t e = 0; e < 30; ++e) {
    EXPECT_DOUBLE_EQ(opt.lr(), reference.lr_at(e, 0)) << e;
    held.step();
  }
  for (int64_t e = 30; e < 60; ++e) {  // OneCycleLR alone would throw past 30
    EXPECT_DOUBLE_EQ(opt.lr(), reference.lr_at(29, 0)) << e;
    held.step();
  }
  // Its state is the inner schedule's: restored at step 45, it holds the same lr.
  auto params2 = one_param();
  SGD opt2(params2, {.lr = 0.1});
  HoldAfterPlan again(opt2, std::make_unique<OneCycleLR>(opt2, 0.1, 30), 30);
  StateDict d = held.state_dict();
  again.load_state_dict(d);
  EXPECT_EQ(again.last_epoch(), 60);
  EXPECT_DOUBLE_EQ(opt2.lr(), reference.lr_at(29, 0));
}

TEST(SchedulePlan, MakeScheduleKeepsThePlanOfTheRunsFirstEpochs) {
  const ScheduleEntry& cosine = find_schedule("cosine");
  const ScheduleEntry& onecycle = find_schedule("onecycle");
  auto params = one_param();
  SGD opt(params, {.lr = 0.1});
  // Planned for 3 epochs, extended to 6: epochs 0-2 as the 3-epoch cosine, then its epoch-2 lr.
  auto sched = make_schedule(cosine, opt, {.lr = 0.1, .epochs = 6, .steps_per_epoch = 10, .planned_epochs = 3});
  ASSERT_NE(dynamic_cast<HoldAfterPlan*>(sched.get()), nullptr);
  const double third = 0.1 * (1 + std::cos(std::numbers::pi * 2 / 3)) / 2;  // lr_at(2) of T_max 3
  for (int64_t e = 0; e < 6; ++e) {
    if (e >= 2) EXPECT_NEAR(opt.lr(), third, 1e-12) << e;
    sched->step();
  }
  // Not extended: the plain schedule (bitwise the run that was never resumed).
  auto params2 = one_param();
  SGD opt2(params2, {.lr = 0.1});
  auto plain = make_schedule(cosine, opt2, {.lr = 0.1, .epochs = 3, .steps_per_epoch = 10, .planned_epochs = 3});
  EXPECT_NE(dynamic_cast<CosineAnnealingLR*>(plain.get()), nullptr);
  // Shortened: still the 3-epoch plan (no jump down).
  auto params3 = one_param();
  SGD opt3(params3, {.lr = 0.1});
  auto shorter = make_schedule(cosine, opt3, {.lr = 0.1, .epochs = 2, .steps_per_epoch = 10, .planned_epochs = 3});
  shorter->step();
  EXPECT_NEAR(opt3.lr(), 0.1 * (1 + std::cos(std::numbers::pi / 3)) / 2, 1e-12);
  // A per-step schedule is planned in steps: 3 epochs x 10 steps, then held.
  auto params4 = one_param();
  SGD opt4(params4, {.lr = 0.1});
  auto cycle = make_schedule(onecycle, opt4, {.lr = 0.1, .epochs = 6, .steps_per_epoch = 10, .planned_epochs = 3});
  auto* hold = dynamic_cast<HoldAfterPlan*>(cycle.get());
  ASSERT_NE(hold, nullptr);
  EXPECT_EQ(hold->planned_steps(), 30);
  for (int i = 0; i < 45; ++i) cycle->step();
  EXPECT_DOUBLE_EQ(opt4.lr(), cycle->lr_at(29, cycle->base_lrs()[0]));
  EXPECT_LT(opt4.lr(), 1e-6);  // the annealed end, not 2.8e-3 of a 6-epoch cycle's middle
  EXPECT_EQ(make_schedule(find_schedule("none"), opt4, {.epochs = 6, .planned_epochs = 3}), nullptr);
}
