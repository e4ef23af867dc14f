// Watching the GPU while it trains, as the guides tell users to do with `nvidia-smi -l`: one
// background thread samples NVML (libnvidia-ml.so.1, loaded lazily with dlopen: absent, the monitor
// is simply not made) every few seconds: utilisation, memory used / total, power, temperature. The
// step never waits on it: the thread only takes a mutex to publish a sample. The engine starts one
// for a CUDA run only (FitOptions::gpu_sample_seconds); GpuMonitorCallback shows the samples in the
// progress line, records them in metrics.jsonl / TensorBoard ("gpu" records) and gives one hint
// when the GPU sits under 30% busy for a minute.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ember/io/report.h"
#include "ember/train/callbacks.h"
#include "ember/train/fit_types.h"

namespace ember::train {

struct GpuSample {
  double time = 0;                             // the monitor clock's seconds
  int utilization = -1;                        // % of the last period a kernel ran; -1 unknown
  uint64_t memory_used = 0, memory_total = 0;  // bytes; total 0 = unknown
  double power_w = -1, power_limit_w = -1;     // -1 unknown
  int temperature_c = -1;                      // -1 unknown
};

// Whether a run with these options is watched: a CUDA device and gpu_sample_seconds > 0.
bool watches_gpu(const FitOptions& o);

// "GPU 87% 12.1/80G 312W 61C": the progress line's field, unknown parts left out.
std::string gpu_sample_text(const GpuSample& s);

class GpuMonitor {
 public:
  using Sampler = std::function<bool(GpuSample&)>;  // fills what it can; false: nothing this time
  using Clock = std::function<double()>;            // seconds, monotonic
  struct Options {
    double period_seconds = 5;      // between samples
    int idle_below_percent = 30;    // a GPU under this utilisation ...
    double idle_for_seconds = 60;   // ... for this long gets the idle hint
    Clock clock;                    // empty: std::chrono::steady_clock
    bool start_thread = true;       // false: no thread; the caller drives sample_now() (tests)
  };

  // The monitor of cuda:`cuda_index` through NVML loaded from the first of `nvml_names` that
  // loads (the device found by its UUID, else by the same index); nullptr when NVML is absent, does
  // not initialise or does not know the device. Never throws. Empty names: $EMBER_NVML_LIBRARY
  // when set (a path: another driver's NVML, or the tests' fake), else libnvidia-ml.so.1.
  static std::unique_ptr<GpuMonitor> for_cuda_device(int cuda_index, Options o, std::vector<std::string> nvml_names = {});

  GpuMonitor(Sampler sampler, Options o);  // starts the thread unless o.start_thread is false
  ~GpuMonitor();                           // stop()
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  void stop();                   // wakes and joins the thread; idempotent
  bool running() const { return thread_.joinable(); }
  void sample_now();             // one sample on the calling thread
  std::optional<GpuSample> latest() const;
  std::vector<GpuSample> take_samples();  // the samples since the last call, oldest first
  // True once per monitor, at the first call after the GPU has been under idle_below_percent for
  // idle_for_seconds without a break (a sample at or above it restarts the count).
  bool take_idle_hint();
  int64_t samples_taken() const;
  const Options& options() const { return o_; }

 private:
  void loop();
  void record(const GpuSample& s);
  Sampler sampler_;
  Options o_;
  std::shared_ptr<void> keep_;  // what the sampler needs alive (the NVML library)
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<GpuSample> pending_;
  std::optional<GpuSample> latest_;
  double idle_since_ = -1;
  bool hint_due_ = false, hint_given_ = false;
  int64_t taken_ = 0;
  std::thread thread_;
};

// Puts a monitor's samples into a run: the latest one in the progress line (ProgressCallback::
// set_status), a "gpu" record per log interval (utilization, memory_used_gib, memory_total_gib,
// power_w, temperature_c: metrics.jsonl, and TensorBoard as gpu/<field>), and the idle hint, once,
// at the end of the epoch in which it came due, with the epoch's data_wait (the share of training
// time spent waiting for the loader) so the user sees whether the input pipeline starves the GPU.
class GpuMonitorCallback final : public Callback {
 public:
  using Print = std::function<void(const std::string&)>;  // default: a line on stderr
  GpuMonitorCallback(std::shared_ptr<GpuMonitor> monitor, std::vector<std::shared_ptr<MetricsSink>> sinks,
                     std::shared_ptr<ProgressCallback> progress, Print print = {});
  void on_sync(FitContext& ctx, const IntervalStats& s) override;
  void on_epoch_end(FitContext& ctx, const EpochStats& s) override;
  void on_train_end(FitContext& ctx, const FitResult& r) override;

  // The hint's text for an epoch's data_wait fraction (pure; tested).
  static std::string idle_hint(int idle_below_percent, double idle_for_seconds, double data_wait);

 private:
  std::shared_ptr<GpuMonitor> monitor_;
  std::vector<std::shared_ptr<MetricsSink>> sinks_;
  std::shared_ptr<ProgressCallback> progress_;
  Print print_;
  bool hint_pending_ = false;
};

// report.html's GPU charts from a run's "gpu" records: "GPU load" (utilisation and memory used, %)
// and "GPU power and temperature"; none when the run recorded no GPU sample (a CPU run).
std::vector<io::Chart> gpu_charts(const std::vector<MetricRecord>& recs, const std::string& x_label,
                                  const std::vector<io::Marker>& markers);

}  // namespace ember::train
