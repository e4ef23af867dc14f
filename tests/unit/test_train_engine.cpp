// The training engine without the CLI: stage order and callbacks, gradient accumulation equal to
// the big batch, exact resume at an optimizer-step boundary, a bounded number of device->host
// reads, the NaN guard (poisoned weights are never checkpointed), early stopping and selection on
// the validation set.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "ember/train/fit.h"
#include "ember/train/metrics.h"
#include "ember/train/validation.h"
#include "support/files.h"
#include "support/train_cases.h"

using namespace ember;
using namespace ember::train;
namespace fs = std::filesystem;

using ember::test::flat_weights;

namespace {

FitOptions base_options(int64_t batch, int64_t accumulate = 1, int64_t epochs = 1) {
  return ember::test::fit_options(batch, accumulate, epochs);
}

// Trains a fresh tiny_mlp with plain SGD and returns its weights.
std::vector<float> train_sgd(const data::Dataset& train, const data::Dataset& test, FitOptions o, double lr = 0.5) {
  auto model = test::tiny_mlp(11);
  optim::SGD opt(model->parameters(), {.lr = lr});
  Fitter f(*model, opt, nullptr, false, train, test, o);
  FitResult r = f.run();
  EXPECT_EQ(r.status, FitStatus::Completed) << r.message;
  return flat_weights(*model);
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, float tol) {
  ASSERT_EQ(a.size(), b.size());
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  EXPECT_LE(worst, tol);
}

// Records the stages and callbacks of a run as strings.
struct Recorder {
  std::vector<std::string> log;
};
struct RecordingPolicy : PrecisionPolicy {
  Recorder* r;
  explicit RecordingPolicy(Recorder* rec) : r(rec) {}
  Tensor forward(nn::Module& m, const Tensor& x) override {
    r->log.push_back("forward");
    return m(x);
  }
};
struct RecordingScaler : LossScalePolicy {
  Recorder* r;
  explicit RecordingScaler(Recorder* rec) : r(rec) {}
  Tensor scale(const Tensor& loss) override {
    r->log.push_back("backward");
    return loss;
  }
  bool unscale_and_check(optim::Optimizer&) override {
    r->log.push_back("unscale");
    return true;
  }
  void update(bool) override { r->log.push_back("scaler_update"); }
};
struct RecordingCallback : Callback {
  Recorder* r;
  explicit RecordingCallback(Recorder* rec) : r(rec) {}
  void on_train_begin(FitContext&) override { r->log.push_back("train_begin"); }
  void on_epoch_begin(FitContext&) override { r->log.push_back("epoch_begin"); }
  void on_step_end(FitContext& c) override { r->log.push_back("step_end " + std::to_string(c.step)); }
  void on_sync(FitContext&, const IntervalStats& s) override { r->log.push_back("sync " + std::to_string(s.last_step)); }
  void on_epoch_end(FitContext&, const EpochStats& s) override { r->log.push_back("epoch_end " + std::to_string(s.epoch)); }
  void on_train_end(FitContext&, const FitResult&) override { r->log.push_back("train_end"); }
};

}  // namespace

TEST(TrainEngine, StagesAndCallbacksRunInOrder) {
  const auto train = test::synthetic_dataset(32), test_set = test::synthetic_dataset(16, 3, 9);
  auto model = test::tiny_mlp(1);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  FitOptions o = base_options(8, 2);  // 32 samples: 2 optimizer steps of 2 micro-batches
  o.log_every = 1;
  Recorder rec;
  Fitter f(*model, opt, nullptr, false, train, test_set, o);
  f.step().set_precision(std::make_shared<RecordingPolicy>(&rec));
  f.step().set_loss_scaler(std::make_shared<RecordingScaler>(&rec));
  const Tensor w = model->parameters()[0];
  f.step().add_gradient_hook([&](nn::Module& m, optim::Optimizer&) {
    rec.log.push_back("hook");
    EXPECT_TRUE(m.parameters()[0].grad().defined());  // after backward, before the update
  });
  f.add_callback(std::make_shared<RecordingCallback>(&rec));
  FitResult r = f.run();
  ASSERT_EQ(r.status, FitStatus::Completed) << r.message;
  EXPECT_EQ(r.step, 2);
  const std::vector<std::string> step = {"forward", "backward", "forward", "backward", "hook", "unscale", "scaler_update"};
  std::vector<std::string> want = {"train_begin", "epoch_begin"};
  for (int s = 1; s <= 2; ++s) {
    want.insert(want.end(), step.begin(), step.end());
    want.push_back("step_end " + std::to_string(s));
    want.push_back("sync " + std::to_string(s));
  }
  want.insert(want.end(), {"sync 2", "epoch_end 1", "train_end"});
  EXPECT_EQ(rec.log, want);
}

TEST(TrainEngine, FourMicroBatchesOf16EqualOneBatchOf64) {
  const auto train = test::synthetic_dataset(64), test_set = test::synthetic_dataset(16, 3, 9);
  const auto big = train_sgd(train, test_set, base_options(64, 1, 3));
  const auto micro = train_sgd(train, test_set, base_options(16, 4, 3));
  expect_close(big, micro, 1e-5f);
  const auto plain = train_sgd(train, test_set, base_options(16, 1, 3));  // 4 steps per epoch: not the same
  float diff = 0;
  for (size_t i = 0; i < big.size(); ++i) diff = std::max(diff, std::abs(big[i] - plain[i]));
  EXPECT_GT(diff, 1e-3f);
}

TEST(TrainEngine, ASmallerLastStepIsWeightedByItsTrueSize) {
  // 100 samples, 64 per step: the second step holds 36 (micro-batches 16, 16, 4), as one batch of 36.
  const auto train = test::synthetic_dataset(100), test_set = test::synthetic_dataset(16, 3, 9);
  auto o = base_options(64, 1, 2);
  const auto big = train_sgd(train, test_set, o);
  const auto micro = train_sgd(train, test_set, base_options(16, 4, 2));
  expect_close(big, micro, 1e-5f);
  EXPECT_EQ(optimizer_steps_per_epoch(100, 16, 4), 2);
}

TEST(TrainEngine, ResumeAtAStepBoundaryIsBitwiseTheStraightRun) {
  test::TempDir dir("engine_resume");
  const auto train = test::synthetic_dataset(96), test_set = test::synthetic_dataset(16, 3, 9);
  auto run = [&](const fs::path& run_dir, int64_t stop_after, const Checkpoint* ck) {
    auto model = test::tiny_mlp(5, 32, 3, /*dropout=*/0.25);
    optim::AdamW opt(model->parameters(), {.lr = 0.01});
    optim::OneCycleLR sched(opt, 0.01, optimizer_steps_per_epoch(96, 8, 3) * 3);
    FitOptions o = base_options(8, 3, 3);  // 4 steps per epoch of 3 micro-batches
    o.run_dir = run_dir;
    o.log_every = 2;
    o.stop_after_steps = stop_after;
    Fitter f(*model, opt, &sched, true, train, test_set, o);
    FitResult r = f.run(ck);
    return std::make_pair(r, flat_weights(*model));
  };
  const auto [straight, w_straight] = run(dir.path() / "straight", 0, nullptr);
  ASSERT_EQ(straight.status, FitStatus::Completed);
  EXPECT_EQ(straight.step, 12);
  const auto [cut, w_cut] = run(dir.path() / "cut", 6, nullptr);  // mid-epoch 2
  ASSERT_EQ(cut.status, FitStatus::Interrupted);
  Checkpoint ck = load_checkpoint(dir.path() / "cut" / "checkpoints" / "latest.json");
  EXPECT_EQ(ck.manifest.step, 6);
  EXPECT_EQ(ck.manifest.epoch, 1);
  EXPECT_EQ(ck.manifest.batch_in_epoch, 6);  // 2 steps x 3 micro-batches
  const auto [resumed, w_resumed] = run(dir.path() / "cut", 0, &ck);
  ASSERT_EQ(resumed.status, FitStatus::Completed);
  EXPECT_EQ(resumed.step, 12);
  EXPECT_EQ(w_resumed, w_straight);  // bitwise
  EXPECT_EQ(resumed.epochs.back().train_loss, straight.epochs.back().train_loss);
}

// Checkpoints of earlier ember (manifest format 1) kept the loop's state as doubles among the
// "optimizer" scalars under "fit.": such a checkpoint still resumes, bit for bit, mid-epoch.
TEST(TrainEngine, AFormat1CheckpointResumesBitwiseTheStraightRun) {
  test::TempDir dir("engine_resume_format1");
  const auto train = test::synthetic_dataset(96), test_set = test::synthetic_dataset(16, 3, 9);
  auto run = [&](const fs::path& run_dir, int64_t stop_after, const Checkpoint* ck) {
    auto model = test::tiny_mlp(5, 32, 3, /*dropout=*/0.25);
    optim::AdamW opt(model->parameters(), {.lr = 0.01});
    FitOptions o = base_options(8, 3, 2);
    o.run_dir = run_dir;
    o.log_every = 2;
    o.stop_after_steps = stop_after;
    Fitter f(*model, opt, nullptr, false, train, test_set, o);
    FitResult r = f.run(ck);
    return std::make_pair(r, flat_weights(*model));
  };
  const auto [straight, w_straight] = run(dir.path() / "straight", 0, nullptr);
  ASSERT_EQ(straight.status, FitStatus::Completed);
  const auto [cut, w_cut] = run(dir.path() / "cut", 6, nullptr);  // 2 steps into epoch 2
  ASSERT_EQ(cut.status, FitStatus::Interrupted);
  const fs::path latest = dir.path() / "cut" / "checkpoints" / "latest.json";
  nlohmann::json j = nlohmann::json::parse(std::ifstream(latest));
  ASSERT_EQ(j["format"], 2);
  ASSERT_TRUE(j.contains("fit_state"));
  // As format 1 wrote it.
  const nlohmann::json fs_json = j["fit_state"];
  nlohmann::json& opt = j["optimizer"];
  for (const char* k : {"micro_batch", "accumulate", "val_split", "val_size", "best_epoch", "best_test_acc", "world_size"})
    opt[std::string("fit.") + k] = fs_json.at(k).get<double>();
  const nlohmann::json& e = fs_json.at("epoch");
  for (const char* k : {"loss_sum", "correct", "seen", "data_time", "train_time"})
    opt[std::string("fit.") + k] = e.at(k).get<double>();
  if (fs_json.contains("loss_scaler"))
    for (const auto& [k, v] : fs_json["loss_scaler"].items()) opt["fit." + k] = v;
  j.erase("fit_state");
  j["format"] = 1;
  std::ofstream(latest) << j.dump(2);

  Checkpoint ck = load_checkpoint(latest);
  EXPECT_EQ(ck.manifest.optimizer_scalars.size(), 1u);  // "lr": the "fit." scalars moved into FitState
  ASSERT_TRUE(ck.manifest.fit.epoch.has_value());
  EXPECT_EQ(ck.manifest.fit.epoch->seen, 48);  // 2 steps x 3 micro-batches x 8
  EXPECT_EQ(ck.manifest.fit.micro_batch, 8);
  const auto [resumed, w_resumed] = run(dir.path() / "cut", 0, &ck);
  ASSERT_EQ(resumed.status, FitStatus::Completed);
  EXPECT_EQ(w_resumed, w_straight);  // bitwise
  EXPECT_EQ(resumed.epochs.back().train_loss, straight.epochs.back().train_loss);
  // Written back in the current form.
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(latest))["format"], 2);
}

TEST(TrainEngine, DeviceToHostReadsArePerIntervalNotPerStep) {
  const auto train = test::synthetic_dataset(256), test_set = test::synthetic_dataset(32, 3, 9);
  auto model = test::tiny_mlp(2);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  FitOptions o = base_options(8, 1, 1);  // 32 steps
  o.log_every = 16;
  o.finite_check_seconds = 0;  // no inf/NaN probes between the reads (they would be about 1 s apart)
  Fitter f(*model, opt, nullptr, false, train, test_set, o);
  const uint64_t before = host_read_count();
  FitResult r = f.run();
  const uint64_t reads = host_read_count() - before;
  ASSERT_EQ(r.status, FitStatus::Completed);
  EXPECT_EQ(r.step, 32);
  EXPECT_EQ(r.host_reads, 3);  // steps 16 and 32, and the epoch's end
  EXPECT_LE(reads, 5u) << "the 32 steps read back " << reads << " values: one per step would be 32+";
}

TEST(TrainEngine, NanGuardNeverCheckpointsPoisonedWeights) {
  test::TempDir dir("engine_nan");
  const auto train = test::synthetic_dataset(32), test_set = test::synthetic_dataset(16, 3, 9);
  auto model = test::tiny_mlp(4);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  FitOptions o = base_options(8, 1, 3);  // 4 steps per epoch
  o.run_dir = dir.path();
  o.log_every = 100;  // reads only at epochs' ends: the step that poisons is the epoch's last
  Fitter f(*model, opt, nullptr, false, train, test_set, o);
  int64_t steps = 0;
  f.step().add_gradient_hook([&](nn::Module& m, optim::Optimizer&) {
    if (++steps == 8) {  // the last step of epoch 2: its loss was finite, the update is not
      Tensor g = m.parameters()[0].grad();
      g.fill_(INFINITY);
    }
  });
  FitResult r = f.run();
  EXPECT_EQ(r.status, FitStatus::NonFiniteLoss);
  EXPECT_NE(r.message.find("weights became inf/NaN"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("learning rate"), std::string::npos);
  EXPECT_EQ(r.epochs.size(), 1u);
  for (const char* tag : {"latest.json", "best.json"}) {
    Checkpoint ck = load_checkpoint(dir.path() / "checkpoints" / tag);
    EXPECT_EQ(ck.manifest.step, 4) << tag << ": the checkpoint of epoch 1, not the poisoned epoch 2";
    for (const auto& [name, t] : ck.tensors)
      if (t.dtype() == DType::Float32)
        for (float v : t.to_vector<float>()) ASSERT_TRUE(std::isfinite(v)) << tag << " " << name;
  }
}

TEST(TrainEngine, NanGuardStopsOnANonFiniteLoss) {
  const auto train = test::synthetic_dataset(64), test_set = test::synthetic_dataset(16, 3, 9);
  auto model = test::tiny_mlp(4);
  optim::SGD opt(model->parameters(), {.lr = 1e30});
  FitOptions o = base_options(8, 1, 5);
  o.log_every = 2;
  Fitter f(*model, opt, nullptr, false, train, test_set, o);
  FitResult r = f.run();
  EXPECT_EQ(r.status, FitStatus::NonFiniteLoss);
  EXPECT_NE(r.message.find("became"), std::string::npos) << r.message;
  EXPECT_LT(r.step, 40);
}

TEST(TrainEngine, EarlyStoppingAfterPatienceEpochsWithoutValidationGain) {
  const auto train = test::synthetic_dataset(48), test_set = test::synthetic_dataset(16, 3, 9);
  auto model = test::tiny_mlp(6);
  optim::SGD opt(model->parameters(), {.lr = 0.0});  // nothing improves after epoch 1
  FitOptions o = base_options(16, 1, 6);
  o.val_split = 0.25;
  o.early_stop_patience = 2;
  Fitter f(*model, opt, nullptr, false, train, test_set, o);
  FitResult r = f.run();
  EXPECT_EQ(r.status, FitStatus::EarlyStopped);
  EXPECT_EQ(r.epochs.size(), 3u);
  EXPECT_EQ(r.epoch, 3);
  EXPECT_EQ(r.best_epoch, 1);
  EXPECT_NE(r.message.find("no validation accuracy improvement for 2 epochs"), std::string::npos) << r.message;
}

TEST(TrainEngine, BestIsSelectedOnValidationNeverOnTest) {
  test::TempDir dir("engine_select");
  const auto train = test::synthetic_dataset(96), test_set = test::synthetic_dataset(48, 3, 9);
  // A validation set whose labels are shifted by one: the better the model, the worse it scores.
  data::Dataset val = test::synthetic_dataset(48, 3, 5);
  val.labels = add(val.labels, 1.0).to(DType::Int64);
  val.labels = sub(val.labels, mul(ge(val.labels, tensor(std::vector<int64_t>{3})).to(DType::Int64), 3.0)).to(DType::Int64);
  auto model = test::tiny_mlp(7);
  optim::SGD opt(model->parameters(), {.lr = 0.02});  // slow enough that the test accuracy climbs over epochs
  FitOptions o = base_options(16, 1, 6);
  o.val = &val;
  o.run_dir = dir.path();
  Fitter f(*model, opt, nullptr, false, train, test_set, o);
  FitResult r = f.run();
  ASSERT_EQ(r.status, FitStatus::Completed);
  EXPECT_EQ(r.selected_on, "val");
  size_t by_val = 0, by_test = 0;
  for (size_t i = 0; i < r.epochs.size(); ++i) {
    EXPECT_FALSE(std::isnan(r.epochs[i].val_acc));
    if (r.epochs[i].val_acc > r.epochs[by_val].val_acc) by_val = i;
    if (r.epochs[i].test_acc > r.epochs[by_test].test_acc) by_test = i;
  }
  ASSERT_NE(by_val, by_test) << "the shifted labels should make val and test disagree";
  EXPECT_EQ(r.best_epoch, int64_t(by_val) + 1);
  EXPECT_EQ(r.best_test_acc, r.epochs[by_val].test_acc);
  Checkpoint best = load_checkpoint(dir.path() / "checkpoints" / "best.json");
  EXPECT_EQ(best.manifest.epoch, int64_t(by_val) + 1);
  // Every epoch record carries the validation and the test numbers, and a wall-clock time.
  auto records = read_metrics(dir.path() / "metrics.jsonl");
  ASSERT_FALSE(records.empty());
  for (const auto& rec : records) {
    EXPECT_GT(rec.time, 1.7e9) << rec.kind;
    if (rec.kind == "epoch") {
      EXPECT_FALSE(std::isnan(rec.get("val_acc", NAN)));
      EXPECT_FALSE(std::isnan(rec.get("test_acc", NAN)));
    }
  }
}

TEST(TrainEngine, WithoutValidationTheTestSetSelectsAsBefore) {
  const auto train = test::synthetic_dataset(48), test_set = test::synthetic_dataset(24, 3, 9);
  auto model = test::tiny_mlp(8);
  optim::SGD opt(model->parameters(), {.lr = 0.5});
  Fitter f(*model, opt, nullptr, false, train, test_set, base_options(16, 1, 2));
  FitResult r = f.run();
  ASSERT_EQ(r.status, FitStatus::Completed);
  EXPECT_EQ(r.selected_on, "test");
  EXPECT_EQ(r.val_size, 0);
  for (const auto& e : r.epochs) EXPECT_TRUE(std::isnan(e.val_acc));
  EXPECT_EQ(r.best_metric, std::max(r.epochs[0].test_acc, r.epochs[1].test_acc));
}

TEST(TrainEngine, ValSplitIsRecordedAndAResumeWithAnotherSplitIsRefused) {
  test::TempDir dir("engine_split");
  const auto train = test::synthetic_dataset(80), test_set = test::synthetic_dataset(16, 3, 9);
  auto run = [&](double split, const Checkpoint* ck, int64_t epochs) {
    auto model = test::tiny_mlp(9);
    optim::SGD opt(model->parameters(), {.lr = 0.1});
    FitOptions o = base_options(16, 1, epochs);
    o.val_split = split;
    o.run_dir = dir.path();
    Fitter f(*model, opt, nullptr, false, train, test_set, o);
    EXPECT_EQ(f.train_set().size(), validation_split(train, split, o.seed).kept.size());
    return f.run(ck);
  };
  FitResult r = run(0.25, nullptr, 1);
  ASSERT_EQ(r.status, FitStatus::Completed);
  EXPECT_EQ(r.val_size, 21);  // 7 of each class of 27, 27 and 26 (stratified)
  EXPECT_EQ(r.step, 4);  // 59 training samples in steps of 16
  Checkpoint ck = load_checkpoint(dir.path() / "checkpoints" / "latest.json");
  EXPECT_EQ(ck.manifest.fit.val_size, 21);
  EXPECT_EQ(ck.manifest.fit.val_split, 0.25);
  EXPECT_EQ(run(0.25, &ck, 2).status, FitStatus::Completed);
  EXPECT_THROW(run(0.5, &ck, 3), ValueError);
}
