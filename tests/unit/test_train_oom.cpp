// Out-of-memory recovery through the memory cap: the cap makes the CPU allocator throw
// OutOfMemoryError like a full GPU; the engine halves the micro-batch, doubles accumulation (same
// effective batch, same result), records it, and ends the run with the sizes at micro-batch 1.
#include <gtest/gtest.h>

#include "ember/core/memory.h"
#include "ember/ember.h"
#include "ember/train/fit.h"
#include "ember/train/metrics.h"
#include "support/files.h"
#include "support/train_cases.h"

using namespace ember;
using namespace ember::train;

namespace {

struct CapGuard {
  explicit CapGuard(uint64_t bytes) { set_memory_cap(bytes); }
  ~CapGuard() { set_memory_cap(0); }
};

FitOptions oom_options(int64_t batch, int64_t accumulate) {
  FitOptions o = ember::test::fit_options(batch, accumulate, /*epochs=*/1, /*seed=*/1);
  o.eval_batch_size = 4;
  return o;
}

struct Outcome {
  FitResult result;
  std::vector<float> weights;
  uint64_t peak = 0;  // live CPU bytes at the run's peak
};

// A wide hidden layer, so that a step's memory grows with the micro-batch.
Outcome fit(const data::Dataset& train, const data::Dataset& test_set, FitOptions o, uint64_t cap = 0) {
  auto model = test::tiny_mlp(3, /*hidden=*/2048);
  optim::SGD opt(model->parameters(), {.lr = 0.05});
  Fitter f(*model, opt, nullptr, false, train, test_set, o);
  Outcome out;
  empty_cache();
  reset_peak_memory(Device::cpu());
  {
    CapGuard g(cap);
    out.result = f.run();
  }
  out.peak = memory_usage(Device::cpu()).peak;
  for (const auto& p : model->parameters()) {
    auto v = p.to_vector<float>();
    out.weights.insert(out.weights.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace

TEST(MemoryCap, CpuAllocationsOverTheCapThrowOutOfMemory) {
  Tensor keep = zeros({1024});
  const uint64_t live = memory_usage(Device::cpu()).live;
  EXPECT_GE(live, 4096u);
  {
    CapGuard g(live + (64 << 10));
    EXPECT_EQ(memory_cap(), live + (64 << 10));
    Tensor small = zeros({1024});  // 4 KiB fits
    try {
      Tensor big = zeros({1 << 20});  // 4 MiB does not
      FAIL() << "no OutOfMemoryError";
    } catch (const OutOfMemoryError& e) {
      EXPECT_NE(std::string(e.what()).find("memory cap"), std::string::npos) << e.what();
      EXPECT_NE(e.hint().find("EMBER_MEMORY_CAP"), std::string::npos);
    }
    EXPECT_LE(memory_usage(Device::cpu()).live, live + (64 << 10));  // the failed block was not counted
  }
  Tensor big = zeros({1 << 20});  // no cap: fine
  EXPECT_GE(memory_usage(Device::cpu()).peak, memory_usage(Device::cpu()).live);
}

TEST(MemoryCap, ByteSizesParse) {
  EXPECT_EQ(parse_byte_size("4096", "X"), 4096u);
  EXPECT_EQ(parse_byte_size("64K", "X"), 65536u);
  EXPECT_EQ(parse_byte_size("512m", "X"), uint64_t(512) << 20);
  EXPECT_EQ(parse_byte_size("2G", "X"), uint64_t(2) << 30);
  for (const char* bad : {"", "G", "1.5G", "12T", "-1", "1GB", "99999999999999999999"}) {
    try {
      parse_byte_size(bad, "EMBER_MEMORY_CAP");
      ADD_FAILURE() << bad;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("EMBER_MEMORY_CAP"), std::string::npos);
    }
  }
}

TEST(TrainOom, HalvesTheMicroBatchAndKeepsTheEffectiveBatch) {
  test::TempDir dir("engine_oom");
  const auto train = test::synthetic_dataset(128), test_set = test::synthetic_dataset(8, 3, 9);
  const Outcome at64 = fit(train, test_set, oom_options(64, 1));
  const Outcome at32 = fit(train, test_set, oom_options(32, 2));
  ASSERT_EQ(at64.result.status, FitStatus::Completed);
  ASSERT_GT(at64.peak, at32.peak + (256 << 10)) << "a step of 64 should need clearly more than one of 32";
  FitOptions o = oom_options(64, 1);
  o.run_dir = dir.path();
  std::vector<OomEvent> said;
  const uint64_t cap = (at64.peak + at32.peak) / 2;
  auto model_out = [&] {
    auto model = test::tiny_mlp(3, 2048);
    optim::SGD opt(model->parameters(), {.lr = 0.05});
    Fitter f(*model, opt, nullptr, false, train, test_set, o);
    f.on_oom = [&](const OomEvent& e) { said.push_back(e); };
    empty_cache();
    CapGuard g(cap);
    FitResult r = f.run();
    std::vector<float> w;
    for (const auto& p : model->parameters()) {
      auto v = p.to_vector<float>();
      w.insert(w.end(), v.begin(), v.end());
    }
    return std::make_pair(r, w);
  };
  const auto [r, w] = model_out();
  ASSERT_EQ(r.status, FitStatus::Completed) << r.message;
  ASSERT_EQ(r.oom_events.size(), 1u);
  EXPECT_EQ(r.oom_events[0].micro_batch, 64);
  EXPECT_EQ(r.oom_events[0].new_micro_batch, 32);
  EXPECT_EQ(r.oom_events[0].new_accumulate, 2);
  EXPECT_EQ(said.size(), 1u);  // said once
  EXPECT_EQ(r.micro_batch, 32);
  EXPECT_EQ(r.accumulate, 2);
  EXPECT_EQ(r.step, 2);  // optimizer steps of 64 samples, as planned
  ASSERT_EQ(w.size(), at64.weights.size());
  float worst = 0;
  for (size_t i = 0; i < w.size(); ++i) worst = std::max(worst, std::abs(w[i] - at64.weights[i]));
  EXPECT_LE(worst, 1e-5f);
  bool recorded = false;
  for (const auto& rec : read_metrics(dir.path() / "metrics.jsonl"))
    if (rec.kind == "oom") recorded = rec.get("micro_batch") == 32 && rec.get("previous_micro_batch") == 64;
  EXPECT_TRUE(recorded);
  Checkpoint ck = load_checkpoint(dir.path() / "checkpoints" / "latest.json");
  EXPECT_EQ(ck.manifest.fit.micro_batch, 32);
}

TEST(TrainOom, AtMicroBatchOneTheRunEndsWithTheSizes) {
  const auto train = test::synthetic_dataset(64), test_set = test::synthetic_dataset(8, 3, 9);
  auto model = test::tiny_mlp(3, 2048);
  optim::SGD opt(model->parameters(), {.lr = 0.05});
  Fitter f(*model, opt, nullptr, false, train, test_set, oom_options(8, 1));
  empty_cache();
  FitResult r;
  {
    CapGuard g(memory_usage(Device::cpu()).live + 1024);  // nothing of a step fits
    r = f.run();
  }
  EXPECT_EQ(r.status, FitStatus::OutOfMemory);
  EXPECT_EQ(r.oom_events.size(), 3u);  // 8 -> 4 -> 2 -> 1
  EXPECT_NE(r.message.find("micro-batch 1"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("memory cap"), std::string::npos) << r.message;
  EXPECT_EQ(r.step, 0);
}
