// How a run stops (issue 22): the inf/NaN probe between metric reads stops a diverging run at the
// step it diverged, a signal during an epoch's evaluation stops it there and the resumed run is
// the straight one, a removed run directory stops it without re-creating the directory, and the
// learning rate logged is the one each step used.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <csignal>

#include "ember/ember.h"
#include "ember/train/fit.h"
#include "ember/train/metrics.h"
#include "support/files.h"
#include "support/train_cases.h"

using namespace ember;
using namespace ember::train;
namespace fs = std::filesystem;

namespace {

// Calls `fn(ctx)` after each optimizer step, or at the reads (on_sync).
struct StepFunction : Callback {
  std::function<void(FitContext&)> step, sync;
  void on_step_end(FitContext& c) override {
    if (step) step(c);
  }
  void on_sync(FitContext& c, const IntervalStats&) override {
    if (sync) sync(c);
  }
};

// Collects the metric records of a run.
struct Records : MetricsSink {
  std::vector<MetricRecord> all;
  void write(const MetricRecord& r) override { all.push_back(r); }
};

}  // namespace

// A run whose log interval is the whole epoch (log_every 100, 16 steps) diverges at step 3: the
// probe finds it there and the guard stops the run at step 3, not at the epoch's end.
TEST(TrainStops, TheFiniteProbeStopsADivergingRunAtTheStepItDiverged) {
  const auto train = test::synthetic_dataset(128), test_set = test::synthetic_dataset(16, 3, 9);
  for (const bool poison_loss : {false, true}) {
    auto model = test::tiny_mlp(4);
    optim::SGD opt(model->parameters(), {.lr = 0.1});
    FitOptions o = test::fit_options(8, 1, 2);  // 16 steps per epoch
    o.log_every = 100;
    o.finite_check_seconds = 1e-9;  // a probe after every step (the default: about once a second)
    Fitter f(*model, opt, nullptr, false, train, test_set, o);
    int64_t steps = 0;
    f.step().add_gradient_hook([&](nn::Module& m, optim::Optimizer&) {
      if (++steps != 3) return;
      if (poison_loss) {
        m.parameters()[0].grad().fill_(NAN);  // weights NaN after step 3, the loss of step 4 too
      } else {
        m.parameters()[0].grad().fill_(INFINITY);
      }
    });
    FitResult r = f.run();
    EXPECT_EQ(r.status, FitStatus::NonFiniteLoss) << r.message;
    EXPECT_EQ(r.step, 3) << r.message;
    EXPECT_NE(r.message.find("the weights became inf/NaN at step 3 (epoch 1, step 3 of 16)"), std::string::npos)
        << r.message;
    EXPECT_TRUE(r.epochs.empty());
  }
  // Without the probe, the same run is found only at the epoch's read.
  auto model = test::tiny_mlp(4);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  FitOptions o = test::fit_options(8, 1, 2);
  o.log_every = 100;
  o.finite_check_seconds = 0;
  Fitter f(*model, opt, nullptr, false, train, test_set, o);
  int64_t steps = 0;
  f.step().add_gradient_hook([&](nn::Module& m, optim::Optimizer&) {
    if (++steps == 3) m.parameters()[0].grad().fill_(INFINITY);
  });
  FitResult r = f.run();
  EXPECT_EQ(r.status, FitStatus::NonFiniteLoss);
  EXPECT_EQ(r.step, 16) << r.message;
}

TEST(TrainStops, TheNanGuardNamesALossThatBecameNonFinite) {
  const FitOptions o;
  auto model = test::tiny_mlp(1);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  FitContext ctx(o, *model, opt);
  ctx.epoch = 1, ctx.step_in_epoch = 5, ctx.steps_per_epoch = 8;
  IntervalStats s;
  s.first_step = 12, s.last_step = 13, s.loss = NAN, s.loss_finite = false, s.lr = 2.5;
  NanGuard().on_sync(ctx, s);
  EXPECT_EQ(ctx.status, FitStatus::NonFiniteLoss);
  EXPECT_NE(ctx.message.find("the loss became inf/NaN at step 13 (epoch 2, step 5 of 8: mean loss nan)"),
            std::string::npos) << ctx.message;
  EXPECT_NE(ctx.message.find("lr = 2.5; try a tenth of it"), std::string::npos) << ctx.message;
}

TEST(TrainStops, EvaluationStopsBeforeTheNextBatchOnASignal) {
  const auto test_set = test::synthetic_dataset(64, 3, 9);
  auto model = test::tiny_mlp(2);
  std::atomic<int> sig{SIGTERM};
  EvalOptions eo;
  eo.batch_size = 8, eo.workers = 0, eo.stop_signal = &sig;
  const uint64_t before = host_read_count();
  EvalResult r = evaluate(*model, test_set, eo);
  EXPECT_EQ(r.interrupted, SIGTERM);
  EXPECT_TRUE(std::isnan(r.loss));
  EXPECT_TRUE(r.confusion.empty());
  EXPECT_EQ(host_read_count(), before);  // no batch was evaluated
  EXPECT_TRUE(model->is_training());     // its mode restored
  sig = 0;
  r = evaluate(*model, test_set, eo);
  EXPECT_EQ(r.interrupted, 0);
  EXPECT_EQ(r.samples, 64);
  EXPECT_FALSE(std::isnan(r.loss));
}

// SIGTERM arrives while epoch 2 is being evaluated: the run stops there, with epoch 2 not yet
// counted, and its checkpoint sits at the end of epoch 2's data, before the per-epoch schedule
// steps. The resumed run evaluates epoch 2 and ends bitwise where the straight run ends, with the
// same epoch records and learning rates.
TEST(TrainStops, ASignalDuringEvaluationCheckpointsAndTheResumeIsTheStraightRun) {
  test::TempDir dir("stops_eval");
  const auto train = test::synthetic_dataset(96), test_set = test::synthetic_dataset(32, 3, 9);
  struct Out {
    FitResult r;
    std::vector<float> w;
    std::vector<MetricRecord> epochs;
  };
  auto run = [&](const fs::path& run_dir, bool interrupt, const Checkpoint* ck) {
    auto model = test::tiny_mlp(5, 32, 3, /*dropout=*/0.25);
    optim::SGD opt(model->parameters(), {.lr = 0.3});
    optim::StepLR sched(opt, 1, 0.5);  // per epoch
    FitOptions o = test::fit_options(16, 1, 3, 3, /*log_every=*/2);  // 6 steps per epoch
    o.run_dir = run_dir;
    std::atomic<int> sig{0};
    o.stop_signal = &sig;
    Fitter f(*model, opt, &sched, false, train, test_set, o);
    auto cb = std::make_shared<StepFunction>();
    // The epoch's last read happens right before its evaluation: a signal then is seen by it.
    cb->sync = [&](FitContext& c) {
      if (interrupt && c.epoch == 1 && c.step == 12) sig = SIGTERM;
    };
    f.add_callback(cb);
    auto recs = std::make_shared<Records>();
    f.add_sink(recs);
    if (ck) f.resume_from(*ck);
    Out out{f.run(), test::flat_weights(*model), {}};
    for (const auto& m : recs->all)
      if (m.kind == "epoch") out.epochs.push_back(m);
    return out;
  };
  const Out straight = run(dir.path() / "straight", false, nullptr);
  ASSERT_EQ(straight.r.status, FitStatus::Completed) << straight.r.message;
  const Out cut = run(dir.path() / "cut", true, nullptr);
  ASSERT_EQ(cut.r.status, FitStatus::Interrupted) << cut.r.message;
  EXPECT_EQ(cut.r.signal, SIGTERM);
  EXPECT_EQ(cut.r.step, 12);
  EXPECT_EQ(cut.r.epochs.size(), 1u);  // epoch 2 was not finished
  const Checkpoint ck = load_checkpoint(dir.path() / "cut" / "checkpoints" / "latest.json");
  EXPECT_EQ(ck.manifest.epoch, 1);
  EXPECT_EQ(ck.manifest.step, 12);
  EXPECT_EQ(ck.manifest.batch_in_epoch, 6);  // all of epoch 2's data
  const Out resumed = run(dir.path() / "cut", false, &ck);
  ASSERT_EQ(resumed.r.status, FitStatus::Completed) << resumed.r.message;
  EXPECT_EQ(resumed.r.step, 18);
  EXPECT_EQ(resumed.w, straight.w);  // bitwise
  ASSERT_EQ(resumed.epochs.size(), 2u);
  ASSERT_EQ(straight.epochs.size(), 3u);
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(resumed.epochs[e].epoch, straight.epochs[e + 1].epoch);
    for (const char* k : {"train_loss", "test_loss", "test_acc", "lr"})
      EXPECT_EQ(resumed.epochs[e].get(k), straight.epochs[e + 1].get(k)) << "epoch " << e + 2 << " " << k;
  }
}

// metrics.jsonl, TensorBoard and the epoch records carry the learning rate each step used: with a
// per-step schedule, step k's record holds lr_at(k - 1), not the next step's; with a per-epoch
// one, epoch e's record holds epoch e's lr.
TEST(TrainStops, TheLoggedLearningRateIsTheOneTheStepUsed) {
  const auto train = test::synthetic_dataset(64), test_set = test::synthetic_dataset(16, 3, 9);
  {
    auto model = test::tiny_mlp(3);
    optim::SGD opt(model->parameters(), {.lr = 0.1});
    optim::OneCycleLR sched(opt, 0.1, 16);
    FitOptions o = test::fit_options(16, 1, 4, 3, /*log_every=*/1);  // 4 steps per epoch, 16 in all
    Fitter f(*model, opt, &sched, /*sched_per_step=*/true, train, test_set, o);
    auto recs = std::make_shared<Records>();
    f.add_sink(recs);
    ASSERT_EQ(f.run().status, FitStatus::Completed);
    int steps = 0;
    for (const auto& r : recs->all) {
      if (r.kind == "step") {
        ++steps;
        EXPECT_DOUBLE_EQ(r.get("lr"), sched.lr_at(r.step - 1, 0)) << "step " << r.step;
      } else if (r.kind == "epoch") {
        EXPECT_DOUBLE_EQ(r.get("lr"), sched.lr_at(r.step - 1, 0)) << "epoch " << r.epoch;  // its last step's
      }
    }
    EXPECT_EQ(steps, 16);
  }
  {
    auto model = test::tiny_mlp(3);
    optim::SGD opt(model->parameters(), {.lr = 0.1});
    optim::StepLR sched(opt, 1, 0.5);
    FitOptions o = test::fit_options(16, 1, 3, 3, /*log_every=*/4);
    Fitter f(*model, opt, &sched, false, train, test_set, o);
    auto recs = std::make_shared<Records>();
    f.add_sink(recs);
    ASSERT_EQ(f.run().status, FitStatus::Completed);
    for (const auto& r : recs->all)
      if (r.kind == "step" || r.kind == "epoch")
        EXPECT_DOUBLE_EQ(r.get("lr"), 0.1 * std::pow(0.5, double(r.epoch - 1))) << r.kind << " " << r.epoch;
  }
}

// `rm -rf RUN_DIR` at step 5: the run stops at its next read with RunDirLost, naming the
// directory, and never re-creates it (no lone checkpoints/ in a new directory).
TEST(TrainStops, ARemovedRunDirectoryStopsTheRunAndIsNotRecreated) {
  test::TempDir dir("stops_rundir");
  const auto train = test::synthetic_dataset(96), test_set = test::synthetic_dataset(16, 3, 9);
  for (const bool replace : {false, true}) {
    const fs::path run_dir = dir.path() / (replace ? "replaced" : "removed");
    auto model = test::tiny_mlp(4);
    optim::SGD opt(model->parameters(), {.lr = 0.1});
    FitOptions o = test::fit_options(16, 1, 3, 3, /*log_every=*/2);
    o.run_dir = run_dir;
    Fitter f(*model, opt, nullptr, false, train, test_set, o);
    auto cb = std::make_shared<StepFunction>();
    cb->step = [&](FitContext& c) {
      if (c.step != 5) return;
      fs::remove_all(run_dir);
      if (replace) fs::create_directories(run_dir);  // another directory under the same name
    };
    f.add_callback(cb);
    FitResult r = f.run();
    EXPECT_EQ(r.status, FitStatus::RunDirLost) << r.message;
    EXPECT_EQ(r.step, 6);  // the next read
    EXPECT_NE(r.message.find("the run directory " + run_dir.string() +
                             (replace ? " was replaced by another directory" : " was removed")),
              std::string::npos) << r.message;
    EXPECT_EQ(fs::exists(run_dir), replace);
    EXPECT_FALSE(fs::exists(run_dir / "checkpoints"));
  }
}

// Removed during an epoch's evaluation, after the last read: the epoch's checkpoint is refused
// with an IOError naming the directory, instead of re-creating it around a lone checkpoint.
TEST(TrainStops, ACheckpointIsNeverWrittenIntoARecreatedRunDirectory) {
  test::TempDir dir("stops_ckpt");
  const auto train = test::synthetic_dataset(32), test_set = test::synthetic_dataset(16, 3, 9);
  const fs::path run_dir = dir.path() / "run";
  auto model = test::tiny_mlp(4);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  FitOptions o = test::fit_options(16, 1, 2, 3, /*log_every=*/100);
  o.run_dir = run_dir;
  Fitter f(*model, opt, nullptr, false, train, test_set, o);
  auto cb = std::make_shared<StepFunction>();
  cb->sync = [&](FitContext&) { fs::remove_all(run_dir); };  // after the read's own check
  f.add_callback(cb);
  try {
    f.run();
    ADD_FAILURE() << "no error";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("the run directory " + run_dir.string() + " was removed"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("no checkpoint was written"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(run_dir));
}

// A diverged or stalled run's progress line: an ETA past any sense prints "?", and a loss of 1e38
// prints as a number, without a width or a count taken from it.
TEST(TrainStops, TheProgressLineOfADivergedRunStaysOneBoundedLine) {
  EXPECT_EQ(ProgressBar::format_duration(1e30), "?");
  EXPECT_EQ(ProgressBar::format_duration(NAN), "?");
  EXPECT_EQ(ProgressBar::format_duration(3725), "1:02:05");
  ProgressBar bar(100, /*interactive=*/false);
  bar.set_position({1, 3, 1e300});
  const std::string line = bar.render(1, {{"loss", 1e38}, {"acc", NAN}}, 1e-300, 1e-300, 80);
  EXPECT_LE(line.size(), 79u) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
}
