// Dynamic loss scaling in the training engine (ember/train/loss_scaling.h), run on the CPU: a
// gradient hook poisons chosen steps with inf, and the engine must skip exactly those updates,
// halve the scale, count them in FitResult, metrics.jsonl (step and epoch records) and the
// checkpoint, grow the scale after a run of good steps, and carry the schedule across a resume.
// The same seam serves `ember train --precision fp16` on a GPU (the CUDA half kernels are checked by
// test_cuda_half.cpp); nothing here needs one.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "ember/ember.h"
#include "ember/train/fit.h"
#include "ember/train/loss_scaling.h"
#include "ember/train/metrics.h"
#include "support/files.h"
#include "support/train_cases.h"

using namespace ember;
using namespace ember::train;
namespace fs = std::filesystem;

using ember::test::flat_weights;

namespace {

FitOptions options(int64_t epochs, const fs::path& run_dir) {
  FitOptions o = ember::test::fit_options(/*batch=*/8, /*accumulate=*/1, epochs, /*seed=*/4, /*log_every=*/2);
  o.run_dir = run_dir;
  return o;
}

// A gradient hook that makes one gradient element infinite on the listed steps (1-based, counted by
// the hook's calls) and checks that a poisoned step left the weights as they were: at the next
// step's hook (after its backward, before its update) the weights must equal those of the
// poisoned step's hook.
struct Poisoner {
  std::set<int64_t> steps;
  int64_t calls = 0;
  std::vector<float> before_poisoned;
  int64_t unchanged_checks = 0;
  void operator()(nn::Module& m, optim::Optimizer&) {
    ++calls;
    if (!before_poisoned.empty()) {
      EXPECT_EQ(flat_weights(m), before_poisoned) << "the update of poisoned step " << calls - 1 << " was not skipped";
      before_poisoned.clear();
      ++unchanged_checks;
    }
    if (!steps.count(calls)) return;
    before_poisoned = flat_weights(m);
    NoGradGuard ng;
    Tensor g = m.parameters()[0].grad();
    g.view({g.numel()}).narrow(0, 0, 1).fill_(INFINITY);
  }
};

}  // namespace

TEST(TrainLossScaling, OverflowedStepsAreSkippedBackedOffAndCounted) {
  test::TempDir dir("loss_scaling");
  const auto train = test::synthetic_dataset(64), test_set = test::synthetic_dataset(16, 3, 9);
  auto model = test::tiny_mlp(2);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  Fitter f(*model, opt, nullptr, false, train, test_set, options(2, dir.path()));  // 8 steps per epoch
  auto scaler = std::make_shared<DynamicLossScaler>();  // the constants: 2^16, x2 / 2000, x0.5
  f.step().set_loss_scaler(scaler);
  auto poison = std::make_shared<Poisoner>();
  poison->steps = {3, 6};
  f.step().add_gradient_hook([poison](nn::Module& m, optim::Optimizer& o) { (*poison)(m, o); });
  const FitResult r = f.run();
  ASSERT_EQ(r.status, FitStatus::Completed) << r.message;
  EXPECT_EQ(r.step, 16);
  EXPECT_EQ(poison->unchanged_checks, 2);
  EXPECT_EQ(r.skipped_steps, 2);
  EXPECT_EQ(r.loss_scale, 65536.0 / 4);
  EXPECT_EQ(scaler->scaler().skipped_steps(), 2);
  EXPECT_EQ(scaler->scaler().good_steps(), 14);
  EXPECT_EQ(scaler->scaler().backoffs(), 2);
  for (float w : flat_weights(*model)) ASSERT_TRUE(std::isfinite(w));
  ASSERT_EQ(r.epochs.size(), 2u);
  EXPECT_EQ(r.epochs[0].skipped_steps, 2);
  EXPECT_EQ(r.epochs[1].skipped_steps, 0);
  EXPECT_EQ(r.epochs[1].loss_scale, 16384.0);

  // metrics.jsonl: every step record of the interval says how many of its steps were skipped and
  // the scale after them; the epoch records the epoch's count.
  std::vector<std::pair<int64_t, double>> scales;
  int64_t skipped_in_steps = 0, skipped_in_epochs = 0;
  for (const MetricRecord& rec : read_metrics(dir.path() / "metrics.jsonl")) {
    if (rec.kind == "step") {
      skipped_in_steps += int64_t(rec.get("skipped_steps", -100));
      scales.emplace_back(rec.step, rec.get("loss_scale", NAN));
    } else if (rec.kind == "epoch") {
      skipped_in_epochs += int64_t(rec.get("skipped_steps", -100));
      EXPECT_EQ(rec.get("loss_scale", NAN), 16384.0) << "epoch " << rec.epoch;
    }
  }
  EXPECT_EQ(skipped_in_steps, 2);
  EXPECT_EQ(skipped_in_epochs, 2);
  ASSERT_GE(scales.size(), 4u);
  EXPECT_EQ(scales[0], std::make_pair(int64_t(2), 65536.0));
  EXPECT_EQ(scales[1], std::make_pair(int64_t(4), 32768.0));  // step 3 overflowed
  EXPECT_EQ(scales[2], std::make_pair(int64_t(6), 16384.0));  // step 6 overflowed
  EXPECT_EQ(scales[3], std::make_pair(int64_t(8), 16384.0));
}

TEST(TrainLossScaling, ScaleGrowsAfterGrowthIntervalGoodSteps) {
  const auto train = test::synthetic_dataset(64), test_set = test::synthetic_dataset(16, 3, 9);
  auto model = test::tiny_mlp(3);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  Fitter f(*model, opt, nullptr, false, train, test_set, options(1, {}));
  auto scaler = std::make_shared<DynamicLossScaler>(optim::LossScalerOptions{.growth_interval = 3});
  f.step().set_loss_scaler(scaler);
  const FitResult r = f.run();
  ASSERT_EQ(r.status, FitStatus::Completed) << r.message;
  EXPECT_EQ(r.skipped_steps, 0);
  EXPECT_EQ(r.loss_scale, 65536.0 * 4);  // 8 good steps: grown after the 3rd and the 6th
  EXPECT_EQ(scaler->scaler().growths(), 2);
  EXPECT_EQ(scaler->scaler().growth_tracker(), 2);
}

// The scaled loss with its gradients divided back gives the same update as no scaling: 2^16 and
// its inverse are powers of two, so with float32 gradients the weights are equal bit for bit.
TEST(TrainLossScaling, ScaledAndUnscaledRunsGiveTheSameWeights) {
  const auto train = test::synthetic_dataset(32), test_set = test::synthetic_dataset(16, 3, 9);
  auto run = [&](bool scaled) {
    auto model = test::tiny_mlp(4);
    optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9});
    Fitter f(*model, opt, nullptr, false, train, test_set, options(1, {}));
    if (scaled) f.step().set_loss_scaler(std::make_shared<DynamicLossScaler>());
    const FitResult r = f.run();
    EXPECT_EQ(r.status, FitStatus::Completed) << r.message;
    EXPECT_EQ(std::isnan(r.loss_scale), !scaled);
    return flat_weights(*model);
  };
  EXPECT_EQ(run(true), run(false));
}

TEST(TrainLossScaling, ResumeContinuesTheScaleAndTheCounts) {
  test::TempDir dir("loss_scaling_resume");
  const auto train = test::synthetic_dataset(64), test_set = test::synthetic_dataset(16, 3, 9);
  auto run = [&](int64_t stop_after, const Checkpoint* ck) {
    auto model = test::tiny_mlp(5);
    optim::SGD opt(model->parameters(), {.lr = 0.1});
    FitOptions o = options(2, dir.path());
    o.stop_after_steps = stop_after;
    Fitter f(*model, opt, nullptr, false, train, test_set, o);
    auto scaler = std::make_shared<DynamicLossScaler>();
    f.step().set_loss_scaler(scaler);
    auto poison = std::make_shared<Poisoner>();
    if (!ck) poison->steps = {2};
    f.step().add_gradient_hook([poison](nn::Module& m, optim::Optimizer& op) { (*poison)(m, op); });
    const FitResult r = f.run(ck);
    return std::make_pair(r, scaler->scaler().state());
  };
  const auto [cut, cut_state] = run(5, nullptr);
  ASSERT_EQ(cut.status, FitStatus::Interrupted);
  EXPECT_EQ(cut_state.scale, 32768.0);
  Checkpoint ck = load_checkpoint(dir.path() / "checkpoints" / "latest.json");
  EXPECT_EQ(ck.manifest.fit.loss_scaler.at("loss_scale"), 32768.0);
  EXPECT_EQ(ck.manifest.fit.loss_scaler.at("loss_scale_skipped"), 1.0);
  const auto [resumed, state] = run(0, &ck);
  ASSERT_EQ(resumed.status, FitStatus::Completed) << resumed.message;
  EXPECT_EQ(state.scale, 32768.0);  // not back to 2^16
  EXPECT_EQ(state.skipped, 1);
  EXPECT_EQ(state.good, 15);
  EXPECT_EQ(resumed.epochs.front().skipped_steps, 1) << "the epoch's count survives the cut";
}
