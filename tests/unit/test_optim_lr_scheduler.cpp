// LR schedulers against the lr sequences of torch.optim.lr_scheduler.
//
// Expected values: /usr/bin/python3 (torch 1.13.1) built SGD([p], lr=0.1, momentum=0.9), the
// scheduler below, recorded param_groups[0]['lr'] after construction and after each of n
// opt.step(); sched.step() pairs, and printed repr() of every value:
//   StepLR(opt, step_size=3, gamma=0.5), n = 10
//   MultiStepLR(opt, milestones=[2, 5, 6], gamma=0.1), n = 8
//   CosineAnnealingLR(opt, T_max=6, eta_min=0.001), n = 12
//   SequentialLR(opt, [LinearLR(opt, start_factor=0.25, total_iters=4),
//                      CosineAnnealingLR(opt, T_max=6)], milestones=[4]), n = 10
//   OneCycleLR(opt, max_lr=1.0, total_steps=10, cycle_momentum=False), n = 10
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>

using namespace ember;

namespace {
struct Fixture {
  Tensor p = zeros({1}).requires_grad_();
  optim::SGD opt{std::vector<Tensor>{p}, optim::SGDOptions{.lr = 0.1, .momentum = 0.9}};
};

void expect_sequence(optim::LRScheduler& s, const std::vector<double>& expected, const char* what) {
  for (size_t i = 0; i < expected.size(); ++i) {
    if (i > 0) s.step();
    EXPECT_NEAR(s.get_lr()[0], expected[i], 1e-12 * std::max(1.0, std::abs(expected[i])))
        << what << " at epoch " << i;
  }
}
}  // namespace

TEST(LRScheduler, StepLR) {
  Fixture f;
  optim::StepLR s(f.opt, 3, 0.5);
  expect_sequence(s, {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125}, "StepLR");
}

TEST(LRScheduler, MultiStepLR) {
  Fixture f;
  optim::MultiStepLR s(f.opt, {2, 5, 6}, 0.1);
  expect_sequence(s, {0.1, 0.1, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002,
                      0.0010000000000000002, 0.00010000000000000003, 0.00010000000000000003,
                      0.00010000000000000003},
                  "MultiStepLR");
}

TEST(LRScheduler, CosineAnnealingLR) {
  Fixture f;
  optim::CosineAnnealingLR s(f.opt, 6, 0.001);
  expect_sequence(s, {0.1, 0.09336825748732973, 0.07525000000000001, 0.0505, 0.025750000000000012,
                      0.007631742512670284, 0.001, 0.007631742512670284, 0.025750000000000002,
                      0.05050000000000004, 0.07525000000000008, 0.0933682574873298, 0.1000000000000001},
                  "CosineAnnealingLR");
}

TEST(LRScheduler, LinearWarmupThenCosine) {
  Fixture f;
  auto cosine = std::make_unique<optim::CosineAnnealingLR>(f.opt, 6);
  optim::LinearWarmup s(f.opt, 4, 0.25, std::move(cosine));
  expect_sequence(s, {0.025, 0.043750000000000004, 0.06250000000000001, 0.08125000000000002, 0.1,
                      0.09330127018922195, 0.07500000000000001, 0.05, 0.025000000000000012,
                      0.006698729810778065, 0.0},
                  "LinearWarmup + CosineAnnealingLR");
  Fixture g;
  optim::LinearWarmup plain(g.opt, 2, 0.5);  // constant after the warm-up
  expect_sequence(plain, {0.05, 0.075, 0.1, 0.1}, "LinearWarmup alone");
}

TEST(LRScheduler, OneCycleLR) {
  Fixture f;
  optim::OneCycleLR s(f.opt, 1.0, 10);
  expect_sequence(s, {0.040000000000000036, 0.52, 1.0, 0.9504846320134737, 0.8117456539497631,
                      0.6112620219362893, 0.38874197806371075, 0.18825834605023697,
                      0.049519367986526286, 4e-06, 0.04951936798652623},
                  "OneCycleLR");
  EXPECT_THROW(s.step(), ValueError);  // step 11 of 10
}

TEST(LRScheduler, StateDictResumes) {
  Fixture a;
  optim::CosineAnnealingLR s(a.opt, 10, 0.0);
  for (int i = 0; i < 4; ++i) s.step();
  StateDict sd = s.state_dict();
  EXPECT_EQ(sd.integer("last_epoch"), 4);

  Fixture b;
  optim::CosineAnnealingLR r(b.opt, 10, 0.0);
  r.load_state_dict(sd);
  EXPECT_EQ(r.get_lr(), s.get_lr());
  for (int i = 0; i < 3; ++i) {
    s.step();
    r.step();
    EXPECT_EQ(r.get_lr(), s.get_lr());
  }
  // The optimizer records initial_lr, and its state carries it.
  EXPECT_EQ(a.opt.state_dict().scalar("param_groups.0.initial_lr"), 0.1);
}

TEST(LRScheduler, BadSettings) {
  Fixture f;
  EXPECT_THROW(optim::StepLR(f.opt, 0), ValueError);
  EXPECT_THROW(optim::MultiStepLR(f.opt, {5, 2}), ValueError);
  EXPECT_THROW(optim::CosineAnnealingLR(f.opt, 0), ValueError);
  EXPECT_THROW(optim::OneCycleLR(f.opt, 1.0, 0), ValueError);
  EXPECT_THROW(optim::LinearWarmup(f.opt, 0), ValueError);
}
