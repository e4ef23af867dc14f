// The GPU watch of a training run (train/gpu_monitor.h): the background thread starts, samples and
// stops; the idle hint comes once after a minute under 30% (on a fake clock); NVML is reached
// through the fake libnvidia-ml; a CPU run starts no monitor; the progress line drops the GPU
// figures first. Every test runs in well under a second.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <cstdlib>
#include <thread>

#include "ember/ember.h"
#include "ember/train/gpu_monitor.h"
#include "ember/train/progress.h"
#include "ember/train/fit.h"
#include "support/files.h"
#include "support/train_cases.h"

using namespace ember::train;

namespace {

const std::string kFakeNvml = std::string(EMBER_FAKE_LIBS_DIR) + "/nvml/libnvidia-ml.so.1";

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// A sampler answering `util` and a clock the test moves.
struct Fake {
  std::atomic<int> util{10};
  std::atomic<double> now{0};
  GpuMonitor::Options options() {
    GpuMonitor::Options o;
    o.start_thread = false;
    o.clock = [this] { return now.load(); };
    return o;
  }
  GpuMonitor::Sampler sampler() {
    return [this](GpuSample& s) {
      s.utilization = util.load();
      s.memory_used = 3ull << 30, s.memory_total = 80ull << 30;
      s.power_w = 120, s.temperature_c = 50;
      return true;
    };
  }
};

struct RecordingSink final : MetricsSink {
  std::vector<MetricRecord> got;
  void write(const MetricRecord& r) override { got.push_back(r); }
};

}  // namespace

TEST(GpuMonitor, ThreadSamplesAndStops) {
  Fake fake;
  GpuMonitor::Options o;
  o.period_seconds = 0.002;
  GpuMonitor m(fake.sampler(), o);
  EXPECT_TRUE(m.running());
  for (int i = 0; i < 500 && m.samples_taken() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GE(m.samples_taken(), 3);
  ASSERT_TRUE(m.latest().has_value());
  EXPECT_EQ(m.latest()->utilization, 10);
  const auto t0 = std::chrono::steady_clock::now();
  m.stop();  // wakes the sleeping thread: no waiting out the period
  EXPECT_FALSE(m.running());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(200));
  const int64_t n = m.samples_taken();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(m.samples_taken(), n);
  m.stop();  // idempotent
  // A long period: stop() still returns at once.
  GpuMonitor slow(fake.sampler(), GpuMonitor::Options{.period_seconds = 3600});
  const auto t1 = std::chrono::steady_clock::now();
  slow.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t1, std::chrono::milliseconds(200));
}

TEST(GpuMonitor, IdleHintComesOnceAfterAMinuteUnderThirtyPercent) {
  Fake fake;
  GpuMonitor m(fake.sampler(), fake.options());
  EXPECT_FALSE(m.running());  // start_thread = false: the test drives it
  for (double t = 0; t <= 55; t += 5) fake.now = t, m.sample_now();
  EXPECT_FALSE(m.take_idle_hint()) << "55 s under 30% is not a minute";
  fake.util = 30;  // one busy sample restarts the count
  fake.now = 58, m.sample_now();
  fake.util = 29;
  for (double t = 60; t < 118; t += 5) fake.now = t, m.sample_now();
  EXPECT_FALSE(m.take_idle_hint());
  fake.now = 120, m.sample_now();
  EXPECT_TRUE(m.take_idle_hint());
  EXPECT_FALSE(m.take_idle_hint()) << "one hint per run";
  fake.now = 500, m.sample_now();
  EXPECT_FALSE(m.take_idle_hint());
}

TEST(GpuMonitor, HintPointsAtTheLoadersWaitTime) {
  const std::string starved = GpuMonitorCallback::idle_hint(30, 60, 0.62);
  EXPECT_HAS(starved, "under 30% busy for 60 s");
  EXPECT_HAS(starved, "62% of its time waiting for data (data_wait in metrics.jsonl)");
  EXPECT_HAS(starved, "--workers");
  const std::string small = GpuMonitorCallback::idle_hint(30, 60, 0.03);
  EXPECT_HAS(small, "the loader is not the cause (data_wait 3%");
  EXPECT_HAS(small, "--batch-size");
}

// The callback: the progress line's status, one "gpu" record per log interval (means of its
// samples, peak memory), and the hint printed once at the epoch's end with its data_wait.
TEST(GpuMonitor, CallbackRecordsShowsAndHints) {
  Fake fake;
  auto m = std::make_shared<GpuMonitor>(fake.sampler(), fake.options());
  auto sink = std::make_shared<RecordingSink>();
  auto progress = std::make_shared<ProgressCallback>(ProgressRule{});  // not a terminal: no redraws
  std::vector<std::string> printed;
  GpuMonitorCallback cb(m, {sink}, progress, [&](const std::string& s) { printed.push_back(s); });
  const FitOptions fo;
  auto model = ember::test::tiny_mlp(1);
  ember::optim::SGD opt(model->parameters(), {.lr = 0.1});
  FitContext ctx(fo, *model, opt);
  IntervalStats s;
  s.last_step = 50;
  fake.util = 10, fake.now = 0, m->sample_now();
  fake.util = 20, fake.now = 61, m->sample_now();
  cb.on_sync(ctx, s);
  ASSERT_EQ(sink->got.size(), 1u);
  EXPECT_EQ(sink->got[0].kind, "gpu");
  EXPECT_EQ(sink->got[0].step, 50);
  EXPECT_DOUBLE_EQ(sink->got[0].get("utilization"), 15);
  EXPECT_DOUBLE_EQ(sink->got[0].get("memory_used_gib"), 3);
  EXPECT_DOUBLE_EQ(sink->got[0].get("memory_total_gib"), 80);
  EXPECT_DOUBLE_EQ(sink->got[0].get("power_w"), 120);
  EXPECT_DOUBLE_EQ(sink->got[0].get("temperature_c"), 50);
  cb.on_sync(ctx, s);  // no new samples: no record
  EXPECT_EQ(sink->got.size(), 1u);
  EXPECT_TRUE(printed.empty()) << "the hint waits for the epoch's end";
  EpochStats e;
  e.data_wait = 0.5;
  cb.on_epoch_end(ctx, e);
  ASSERT_EQ(printed.size(), 1u);
  EXPECT_HAS(printed[0], "50% of its time waiting for data");
  cb.on_epoch_end(ctx, e);
  EXPECT_EQ(printed.size(), 1u);
}

TEST(GpuMonitor, SampleTextAndProgressLineDropItFirst) {
  GpuSample s;
  s.utilization = 87, s.memory_used = uint64_t(12.1 * (1ull << 30)), s.memory_total = 80ull << 30;
  s.power_w = 312, s.temperature_c = 61;
  EXPECT_EQ(gpu_sample_text(s), "GPU 87% 12.1/80G 312W 61C");
  EXPECT_EQ(gpu_sample_text(GpuSample{}), "");
  ProgressBar bar(100, false);
  bar.set_status(gpu_sample_text(s));
  const NamedValues v = {{"loss", 0.5}, {"acc", 0.9}};
  const std::string wide = bar.render(50, v, 2000, 1.0, 200);
  EXPECT_HAS(wide, "- 2000 samples/s - GPU 87% 12.1/80G 312W 61C");
  // Narrower: the GPU figures go before samples/s does.
  const std::string without = bar.render(50, v, 2000, 1.0, 200);
  const size_t cut = wide.size() - std::string(" - GPU 87% 12.1/80G 312W 61C").size() + 1;
  const std::string narrow = bar.render(50, v, 2000, 1.0, int(cut) + 1);
  EXPECT_EQ(narrow.find("GPU"), std::string::npos) << narrow;
  EXPECT_HAS(narrow, "samples/s");
  (void)without;
}

// NVML through the fake library: the monitor finds the device and samples its figures; with no
// NVML there is no monitor (and no thread), silently.
TEST(GpuMonitor, ForCudaDeviceUsesNvmlOrNothing) {
  setenv("FAKE_NVML_GPUS", "Fake H100:80:20:0:0:0", 1);
  setenv("FAKE_NVML_UTIL", "77:30", 1);
  setenv("FAKE_NVML_POWER", "250:700", 1);
  setenv("FAKE_NVML_TEMP", "55", 1);
  GpuMonitor::Options o;
  o.start_thread = false;
  auto m = GpuMonitor::for_cuda_device(0, o, {kFakeNvml});
  ASSERT_NE(m, nullptr);
  m->sample_now();
  const auto s = m->latest();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->utilization, 77);
  EXPECT_EQ(s->memory_used, 20ull << 30);
  EXPECT_EQ(s->memory_total, 80ull << 30);
  EXPECT_DOUBLE_EQ(s->power_w, 250);
  EXPECT_DOUBLE_EQ(s->power_limit_w, 700);
  EXPECT_EQ(s->temperature_c, 55);
  EXPECT_EQ(GpuMonitor::for_cuda_device(3, o, {kFakeNvml}), nullptr) << "no such GPU";
  for (const char* k : {"FAKE_NVML_GPUS", "FAKE_NVML_UTIL", "FAKE_NVML_POWER", "FAKE_NVML_TEMP"}) unsetenv(k);
  EXPECT_EQ(GpuMonitor::for_cuda_device(0, o, {"/nonexistent/libnvidia-ml.so.1"}), nullptr);
}

// Only a CUDA run is watched: a CPU run makes no monitor, so no thread and no NVML call.
TEST(GpuMonitor, OnlyCudaRunsAreWatched) {
  FitOptions o;
  EXPECT_FALSE(watches_gpu(o));
  o.device = ember::Device::cuda(0);
  EXPECT_TRUE(watches_gpu(o));
  o.gpu_sample_seconds = 0;
  EXPECT_FALSE(watches_gpu(o));
}

// report.html: two GPU charts from the "gpu" records; none for a run without them.
TEST(GpuMonitor, ReportChartsFromGpuRecords) {
  std::vector<MetricRecord> recs = {{"step", 1, 50, {{"loss", 1.0}}},
                                    {"gpu", 1, 50, {{"utilization", 20}, {"memory_used_gib", 8}, {"memory_total_gib", 80},
                                                    {"power_w", 150}, {"temperature_c", 50}}},
                                    {"gpu", 1, 100, {{"utilization", 90}, {"memory_used_gib", 40}, {"memory_total_gib", 80},
                                                     {"power_w", 600}, {"temperature_c", 70}}}};
  const auto charts = gpu_charts(recs, "step", {});
  ASSERT_EQ(charts.size(), 2u);
  EXPECT_EQ(charts[0].title, "GPU load");
  EXPECT_EQ(charts[0].series[0].y, (std::vector<double>{20, 90}));
  EXPECT_EQ(charts[0].series[1].y, (std::vector<double>{10, 50}));
  EXPECT_EQ(charts[1].series[0].y, (std::vector<double>{150, 600}));
  EXPECT_TRUE(gpu_charts({recs[0]}, "step", {}).empty());
}

// A CPU run is not watched even where NVML answers (the fake, through EMBER_NVML_LIBRARY): its
// metrics.jsonl has no "gpu" record.
TEST(GpuMonitor, CpuRunRecordsNoGpuSamples) {
  setenv("EMBER_NVML_LIBRARY", kFakeNvml.c_str(), 1);
  setenv("FAKE_NVML_GPUS", "Fake H100:80:20:0:0:0", 1);
  setenv("FAKE_NVML_UTIL", "5:5", 1);
  ember::test::TempDir dir("gpuwatch");
  const auto train = ember::test::synthetic_dataset(64), test_set = ember::test::synthetic_dataset(16, 3, 9);
  auto model = ember::test::tiny_mlp(2);
  ember::optim::SGD opt(model->parameters(), {.lr = 0.1});
  FitOptions o = ember::test::fit_options(8, 1, 1);
  o.log_every = 2;
  o.gpu_sample_seconds = 0.001;
  o.run_dir = dir.path();
  Fitter f(*model, opt, nullptr, false, train, test_set, o);
  const FitResult r = f.run();
  for (const char* k : {"EMBER_NVML_LIBRARY", "FAKE_NVML_GPUS", "FAKE_NVML_UTIL"}) unsetenv(k);
  EXPECT_EQ(r.status, FitStatus::Completed) << r.message;
  std::ifstream in(dir.path() / "metrics.jsonl");
  int steps = 0;
  for (std::string line; std::getline(in, line);) {
    EXPECT_EQ(line.find("\"gpu\""), std::string::npos) << line;
    steps += line.find("\"step\"") != std::string::npos;
  }
  EXPECT_GT(steps, 0);
}
