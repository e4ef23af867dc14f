// metrics.jsonl writer and reader (JSON Lines, one record per line, flushed per record).
#include "ember/train/metrics.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>

#include "ember/core/error.h"
#include "ember/io/tensorboard.h"
#include "ember/io/user_file.h"

namespace ember::train {

double MetricRecord::get(const std::string& name, double fallback) const {
  for (const auto& [k, v] : values)
    if (k == name) return v;
  return fallback;
}

std::string to_json_line(const MetricRecord& r) {
  nlohmann::ordered_json j;
  j["kind"] = r.kind;
  j["epoch"] = r.epoch;
  j["step"] = r.step;
  if (r.time > 0) j["time"] = r.time;
  for (const auto& [k, v] : r.values) j[k] = std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
  return j.dump();
}

std::string tensorboard_tag(const std::string& kind, const std::string& field) {
  static const std::map<std::pair<std::string, std::string>, std::string> kTags = {
      {{"step", "loss"}, "train/loss"},
      {{"step", "acc"}, "train/acc"},
      {{"step", "lr"}, "lr"},
      {{"step", "samples_per_s"}, "samples_per_s"},
      {{"epoch", "train_loss"}, "epoch/train_loss"},
      {{"epoch", "train_acc"}, "epoch/train_acc"},
      {{"epoch", "test_loss"}, "test/loss"},
      {{"epoch", "test_acc"}, "test/acc"},
      {{"epoch", "val_loss"}, "val/loss"},
      {{"epoch", "val_acc"}, "val/acc"},
      {{"epoch", "data_wait"}, "data_wait"},
      {{"epoch", "samples_per_s"}, "epoch/samples_per_s"},
      {{"epoch", "seconds"}, "epoch/seconds"},
      {{"epoch", "lr"}, "epoch/lr"},
      {{"step", "comm_ms_per_step"}, "dist/comm_ms_per_step"},  // data-parallel runs
      {{"epoch", "comm_wait"}, "dist/comm_wait"},
  };
  if (kind == "resume") return "";
  auto it = kTags.find({kind, field});
  return it != kTags.end() ? it->second : kind + "/" + field;
}

struct TensorBoardMetrics::Impl {
  io::TensorBoardWriter writer;
};

TensorBoardMetrics::TensorBoardMetrics(const std::filesystem::path& dir) : impl_(new Impl{io::TensorBoardWriter(dir)}) {}
TensorBoardMetrics::~TensorBoardMetrics() = default;
const std::filesystem::path& TensorBoardMetrics::path() const { return impl_->writer.path(); }

void TensorBoardMetrics::write(const MetricRecord& r) {
  const double t = r.time > 0 ? r.time : io::unix_time_now();
  if (r.kind == "resume") {
    // The checkpoint was at step r.step; what earlier files logged after it is logged again now.
    // TensorBoard purges points with step >= the restart's, so restart at r.step + 1.
    impl_->writer.write_restart(r.step + 1, t);
    impl_->writer.flush();
    return;
  }
  bool any = false;
  for (const auto& [field, value] : r.values)
    if (std::string tag = tensorboard_tag(r.kind, field); !tag.empty()) {
      impl_->writer.write_scalar(tag, r.step, value, t);
      any = true;
    }
  if (any) impl_->writer.flush();
}

MetricsWriter::MetricsWriter(const std::filesystem::path& path, bool tensorboard) : path_(path) {
  f_ = std::fopen(path.c_str(), "a+");
  if (!f_)
    throw IOError(fmt::format("cannot open metrics file '{}': {}", path.string(), std::strerror(errno)),
                  "check that the run directory is writable");
  // A run killed mid-line leaves a torn last line: end it so the next record starts clean.
  if (std::fseek(f_, -1, SEEK_END) == 0 && std::fgetc(f_) != '\n') std::fputc('\n', f_);
  if (tensorboard) {
    try {
      tensorboard_ = std::make_unique<TensorBoardMetrics>(path.parent_path());
    } catch (...) {
      std::fclose(f_);
      throw;
    }
  }
}

double unix_time() { return io::unix_time_now(); }

MetricsWriter::~MetricsWriter() {
  if (f_) std::fclose(f_);
}

void MetricsWriter::write(const MetricRecord& r_in) {
  MetricRecord r = r_in;
  if (r.time <= 0) r.time = io::unix_time_now();
  std::string line = to_json_line(r) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0)
    throw IOError(fmt::format("cannot write metrics file '{}': {}", path_.string(), std::strerror(errno)));
  if (tensorboard_) tensorboard_->write(r);
}

std::vector<MetricRecord> read_metrics(const std::filesystem::path& path) {
  std::vector<MetricRecord> out;
  if (io::path_type(path) == io::PathType::missing) return out;
  std::istringstream in(io::read_user_text(path, io::kMetricsFile));
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string()) continue;
    MetricRecord r;
    r.kind = j["kind"];
    r.epoch = j.value("epoch", int64_t(0));
    r.step = j.value("step", int64_t(0));
    for (const auto& [k, v] : j.items()) {
      if (k == "time" && v.is_number()) r.time = v.get<double>();
      if (k == "kind" || k == "epoch" || k == "step" || k == "time") continue;
      if (v.is_number()) r.values.emplace_back(k, v.get<double>());
      else if (v.is_null()) r.values.emplace_back(k, NAN);
    }
    // A resumed run appends records for steps already logged: keep the newest.
    while (!out.empty()) {
      auto it = std::find_if(out.rbegin(), out.rend(), [&](const MetricRecord& o) { return o.kind == r.kind; });
      if (it == out.rend() || it->step < r.step || (it->step == r.step && it->epoch < r.epoch)) break;
      // Two halvings at one step are both real (out of memory again at the smaller micro-batch).
      if (r.kind == "oom" && it->step == r.step && it->epoch == r.epoch) break;
      out.erase(std::next(it).base());
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ember::train
