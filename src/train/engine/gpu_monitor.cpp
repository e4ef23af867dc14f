// GpuMonitor: NVML sampled on one background thread while a CUDA run trains, and the callback that
// shows, records and judges the samples (gpu_monitor.h). NVML is reached through env/nvml.h (the
// doctor's loader), in-process: training already holds a CUDA context, so there is no forking here.
#include "ember/train/gpu_monitor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "backends/runtime.h"
#include "env/nvml.h"

namespace ember::train {

bool watches_gpu(const FitOptions& o) { return o.device.is_cuda() && o.gpu_sample_seconds > 0; }

std::string gpu_sample_text(const GpuSample& s) {
  std::string t = "GPU";
  if (s.utilization >= 0) t += fmt::format(" {}%", s.utilization);
  if (s.memory_total > 0) {
    const double gib = double(1ull << 30);
    t += fmt::format(" {:.1f}/{:.0f}G", double(s.memory_used) / gib, double(s.memory_total) / gib);
  }
  if (s.power_w >= 0) t += fmt::format(" {:.0f}W", s.power_w);
  if (s.temperature_c >= 0) t += fmt::format(" {}C", s.temperature_c);
  return t == "GPU" ? "" : t;
}

std::unique_ptr<GpuMonitor> GpuMonitor::for_cuda_device(int cuda_index, Options o, std::vector<std::string> nvml_names) {
  if (nvml_names.empty()) {
    const char* override_path = std::getenv("EMBER_NVML_LIBRARY");
    nvml_names = {override_path != nullptr && *override_path != '\0' ? override_path : "libnvidia-ml.so.1"};
  }
  auto nvml = std::make_shared<env::detail::Nvml>();
  if (!nvml->open(nvml_names)) return nullptr;
  // CUDA numbers devices fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID and after
  // CUDA_VISIBLE_DEVICES; NVML in PCI order over every GPU. The UUID names the same device in both.
  env::detail::Nvml::Dev dev = nullptr;
  if (const std::string uuid = cuda_device_arch(cuda_index).uuid; !uuid.empty()) dev = nvml->device_by_uuid(uuid);
  if (dev == nullptr) dev = nvml->device(unsigned(cuda_index));  // no CUDA to ask (tests): same index
  if (dev == nullptr) return nullptr;
  Sampler sampler = [nvml, dev](GpuSample& s) {
    env::detail::Nvml::Sample x;
    if (!nvml->sample(dev, x)) return false;
    s.utilization = x.utilization_gpu, s.memory_used = x.memory_used, s.memory_total = x.memory_total;
    s.power_w = x.power_mw >= 0 ? x.power_mw / 1000.0 : -1;
    s.power_limit_w = x.power_limit_mw >= 0 ? x.power_limit_mw / 1000.0 : -1;
    s.temperature_c = x.temperature_c;
    return true;
  };
  auto m = std::make_unique<GpuMonitor>(std::move(sampler), std::move(o));
  m->keep_ = nvml;
  return m;
}

GpuMonitor::GpuMonitor(Sampler sampler, Options o) : sampler_(std::move(sampler)), o_(std::move(o)) {
  if (!o_.clock) {
    const auto t0 = std::chrono::steady_clock::now();
    o_.clock = [t0] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  }
  if (o_.start_thread) thread_ = std::thread([this] { loop(); });
}

GpuMonitor::~GpuMonitor() { stop(); }

void GpuMonitor::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GpuMonitor::loop() {
  const auto period = std::chrono::duration<double>(o_.period_seconds);
  for (;;) {
    sample_now();
    std::unique_lock lock(mu_);
    if (wake_.wait_for(lock, period, [this] { return stopping_; })) return;
  }
}

void GpuMonitor::sample_now() {
  GpuSample s;
  if (!sampler_(s)) return;  // NVML outside the lock: a slow driver call never blocks a reader
  s.time = o_.clock();
  record(s);
}

void GpuMonitor::record(const GpuSample& s) {
  std::lock_guard lock(mu_);
  ++taken_;
  latest_ = s;
  if (pending_.size() < 10000) pending_.push_back(s);  // a reader that never drains holds at most this many
  if (s.utilization < 0) return;
  if (s.utilization >= o_.idle_below_percent) {
    idle_since_ = -1;
    return;
  }
  if (idle_since_ < 0) idle_since_ = s.time;
  if (!hint_given_ && s.time - idle_since_ >= o_.idle_for_seconds) hint_due_ = true;
}

std::optional<GpuSample> GpuMonitor::latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

std::vector<GpuSample> GpuMonitor::take_samples() {
  std::lock_guard lock(mu_);
  return std::exchange(pending_, {});
}

bool GpuMonitor::take_idle_hint() {
  std::lock_guard lock(mu_);
  if (!hint_due_ || hint_given_) return false;
  hint_given_ = true;
  return true;
}

int64_t GpuMonitor::samples_taken() const {
  std::lock_guard lock(mu_);
  return taken_;
}

// ---- the callback --------------------------------------------------------------------------------

GpuMonitorCallback::GpuMonitorCallback(std::shared_ptr<GpuMonitor> monitor, std::vector<std::shared_ptr<MetricsSink>> sinks,
                                       std::shared_ptr<ProgressCallback> progress, Print print)
    : monitor_(std::move(monitor)), sinks_(std::move(sinks)), progress_(std::move(progress)), print_(std::move(print)) {
  if (!print_) print_ = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
}

void GpuMonitorCallback::on_sync(FitContext& ctx, const IntervalStats& s) {
  if (const auto latest = monitor_->latest(); latest && progress_) progress_->set_status(gpu_sample_text(*latest));
  hint_pending_ = hint_pending_ || monitor_->take_idle_hint();
  if (!s.logged) return;
  // One record per log interval: the means of the samples taken in it, so the file grows with the
  // run's steps, not with its wall time.
  const std::vector<GpuSample> got = monitor_->take_samples();
  if (got.empty() || sinks_.empty()) return;
  double util = 0, used = 0, power = 0, temp = 0;
  int n_util = 0, n_power = 0, n_temp = 0;
  for (const GpuSample& g : got) {
    if (g.utilization >= 0) util += g.utilization, ++n_util;
    if (g.power_w >= 0) power += g.power_w, ++n_power;
    if (g.temperature_c >= 0) temp += g.temperature_c, ++n_temp;
    used = std::max(used, double(g.memory_used));  // the peak: what decides an out-of-memory
  }
  const double gib = double(1ull << 30);
  NamedValues v;
  if (n_util) v.push_back({"utilization", util / n_util});
  if (got.back().memory_total > 0)
    v.insert(v.end(), {{"memory_used_gib", used / gib}, {"memory_total_gib", double(got.back().memory_total) / gib}});
  if (n_power) v.push_back({"power_w", power / n_power});
  if (n_temp) v.push_back({"temperature_c", temp / n_temp});
  if (v.empty()) return;
  const MetricRecord r{"gpu", ctx.epoch + 1, s.last_step, v};
  for (auto& sink : sinks_) sink->write(r);
}

void GpuMonitorCallback::on_epoch_end(FitContext&, const EpochStats& s) {
  hint_pending_ = hint_pending_ || monitor_->take_idle_hint();
  if (!hint_pending_) return;
  hint_pending_ = false;
  print_(idle_hint(monitor_->options().idle_below_percent, monitor_->options().idle_for_seconds, s.data_wait));
}

void GpuMonitorCallback::on_train_end(FitContext&, const FitResult&) { monitor_->stop(); }

std::string GpuMonitorCallback::idle_hint(int idle_below_percent, double idle_for_seconds, double data_wait) {
  const std::string head = fmt::format("hint: the GPU was under {}% busy for {:.0f} s or more; ", idle_below_percent,
                                       idle_for_seconds);
  if (data_wait >= 0.2)
    return head + fmt::format(
                      "this epoch spent {:.0f}% of its time waiting for data (data_wait in metrics.jsonl): the input "
                      "pipeline starves it. Raise --workers, or keep the dataset on the GPU with --device-resident",
                      100 * data_wait);
  return head + fmt::format(
                    "the loader is not the cause (data_wait {:.0f}% of the epoch): each step gives the GPU too "
                    "little work. Raise --batch-size, or try a larger model",
                    100 * data_wait);
}

std::vector<io::Chart> gpu_charts(const std::vector<MetricRecord>& recs, const std::string& x_label,
                                  const std::vector<io::Marker>& markers) {
  io::Series util{"utilisation", {}, {}}, mem{"memory used (peak of the interval)", {}, {}};
  io::Series power{"power (W)", {}, {}}, temp{"temperature (C)", {}, {}};
  for (const MetricRecord& r : recs) {
    if (r.kind != "gpu") continue;
    const double x = double(r.step);
    util.x.push_back(x), util.y.push_back(r.get("utilization", NAN));
    const double total = r.get("memory_total_gib", NAN);
    mem.x.push_back(x), mem.y.push_back(total > 0 ? 100 * r.get("memory_used_gib", NAN) / total : NAN);
    power.x.push_back(x), power.y.push_back(r.get("power_w", NAN));
    temp.x.push_back(x), temp.y.push_back(r.get("temperature_c", NAN));
  }
  if (util.x.empty()) return {};
  return {{"GPU load", x_label, "% (of time busy; of memory)", {util, mem}, markers},
          {"GPU power and temperature", x_label, "W / C", {power, temp}, markers}};
}

}  // namespace ember::train
